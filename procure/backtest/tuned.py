"""The vendor-tuned recipes of the shipped corpus (hardware_catalog/published_runs/), read through
the catalog cache: parsing and validating the corpus costs ~200 ms that a quote need not pay twice."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from procure.backtest.published_run import PublishedRun


def _read_tuned() -> list[PublishedRun]:
    from procure.backtest.runs import read_runs
    from procure.resources import catalog_dir

    return [run for path in sorted((catalog_dir() / "published_runs").glob("*.yaml"))
            for run in read_runs(path) if run.tuned_recipe]


def tuned_recipes() -> list[PublishedRun]:
    """Every run of the shipped corpus marked `tuned_recipe`, as validated typed records."""
    from procure.catalog.cache import cached, default_roots

    return cached("tuned-recipes", default_roots(), _read_tuned)
