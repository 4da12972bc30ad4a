"""The one module that knows where the shipped data folders live.

Installed from a wheel, they sit inside the package as ``procure/_data/<name>``; in a source
checkout they are the top-level folders next to ``procure/``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
DATA_FOLDERS = ("templates", "price_books", "hardware_catalog")


@lru_cache(maxsize=None)
def data_dir(name: str) -> Path:
    """Return the folder ``templates``, ``price_books`` or ``hardware_catalog``."""
    if name not in DATA_FOLDERS:
        raise ValueError(f"unknown data folder {name!r}")
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"procure data folder {name!r} is missing from the installation")


def templates_dir() -> Path:
    return data_dir("templates")


def price_books_dir() -> Path:
    return data_dir("price_books")


def catalog_dir() -> Path:
    return data_dir("hardware_catalog")
