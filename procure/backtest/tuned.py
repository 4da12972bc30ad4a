"""The vendor-tuned recipes of the shipped corpus (hardware_catalog/published_runs/), read through
the catalog cache: parsing and validating the corpus costs ~200 ms that a quote need not pay twice."""

from __future__ import annotations

from typing import Any


def _read_tuned() -> list[dict[str, Any]]:
    from procure.backtest.runs import read_runs
    from procure.resources import catalog_dir

    return [run for path in sorted((catalog_dir() / "published_runs").glob("*.yaml"))
            for run in read_runs(path) if run.get("tuned_recipe")]


def tuned_recipes() -> list[dict[str, Any]]:
    """Every run of the shipped corpus marked `tuned_recipe`, as validated plain dicts."""
    from procure.catalog.cache import cached, default_roots

    return cached("tuned-recipes", default_roots(), _read_tuned)
