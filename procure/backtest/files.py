"""Reading a runs file for `procure backtest`: a published-runs YAML or a vTrain CSV.

Here rather than in ``runs`` (the schema) so that the schema module and the package's vTrain
reader do not import each other."""

from __future__ import annotations

from pathlib import Path

from procure.backtest import read_vtrain_csv
from procure.backtest.published_run import PublishedRun
from procure.backtest.runs import read_runs
from procure.sources.files import decode_utf8, read_bytes_limited


def load_runs_file(path: Path | str) -> list[PublishedRun]:
    """Runs of a published-runs YAML or a vTrain CSV (validated; InputError with positions)."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        text = decode_utf8(read_bytes_limited(path, str(path)), str(path))
        stripped = text.lstrip("\ufeff")
        first = stripped.splitlines()[0] if stripped.strip() else ""
        return read_vtrain_csv(text, multi="multi" in path.name or "Parameters" in first, source=str(path))
    return read_runs(path)
