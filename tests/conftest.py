"""Shared test setup: the --update-goldens flag and the location of ../shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared_root import REPO, SHARED  # noqa: E402,F401  (PROCURE_SHARED overrides ../shared)


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="rewrite golden outputs under tests/cases and tests/fixtures instead of comparing")


def pytest_configure(config):
    if config.getoption("--update-goldens"):
        os.environ["PROCURE_UPDATE_GOLDENS"] = "1"
    if "PROCURE_CACHE_DIR" not in os.environ:   # the parsed-catalog cache of a test run stays out of ~/.cache
        import tempfile

        os.environ["PROCURE_CACHE_DIR"] = tempfile.mkdtemp(prefix="procure-test-cache-")


@pytest.fixture
def shared_dir() -> Path:
    if not (SHARED / "data").is_dir():
        pytest.skip("../shared is absent (it holds the published runs and real logs)")
    return SHARED


@pytest.fixture
def update_goldens(request) -> bool:
    return bool(request.config.getoption("--update-goldens"))
