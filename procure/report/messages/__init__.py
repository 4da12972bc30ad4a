"""Message catalogs: one JSON file per language, the same keys in each (a test checks it)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

LANGUAGES = ("en", "zh-TW")
_HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def catalog(lang: str) -> dict[str, str]:
    if lang not in LANGUAGES:
        raise ValueError(f"unsupported language {lang!r}; use one of {', '.join(LANGUAGES)}")
    table: dict[str, str] = json.loads((_HERE / f"{lang}.json").read_text(encoding="utf-8"))
    return table


class Messages:
    """``msg("unit.days", value="61.3")`` -> "61.3 days"; a missing key is a bug, so it raises."""

    def __init__(self, lang: str):
        self.lang = lang
        self._table = catalog(lang)

    def __call__(self, key: str, **values: object) -> str:
        text = self._table[key]
        return text.format(**values) if values else text

    def get(self, key: str, default: str) -> str:
        return self._table.get(key, default)

    @property
    def table(self) -> dict[str, str]:
        return dict(self._table)
