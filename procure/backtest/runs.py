"""Reading ``procure.published-runs/v1`` files (the schema: ``procure.backtest.published_run``) and
the rows of a vTrain ground-truth CSV, both reporting every problem as a ``file:line:col``
diagnostic (InputError), never a traceback.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Union

from procure.backtest.published_run import PublishedRun, PublishedRuns
from procure.errors import Diagnostic, InputError


def read_runs(path: Path | str) -> list[PublishedRun]:
    """The runs of a published-runs file (validated; defaults filled in). InputError with every
    problem's position otherwise (duplicate ids included)."""
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    doc = read_yaml(path)
    model = validate_document(doc, PublishedRuns)
    problems: list[Diagnostic] = []
    seen: dict[str, int] = {}
    for i, run in enumerate(model.runs):
        if run.id in seen:
            problems.append(doc.diagnostic(("runs", i, "id"), "duplicate-id",
                                           f"run id {run.id!r} appears twice (first as run {seen[run.id] + 1})"))
        seen.setdefault(run.id, i)
    if problems:
        raise InputError(problems)
    return list(model.runs)


# ---------------------------------------------------------------------------- vTrain CSV

VTRAIN_SINGLE_COLUMNS = 11
VTRAIN_INTEGER_COLUMNS = 10          # every column but the last (iteration time) is a count


def parse_vtrain_rows(text: str, multi: bool, source: str = "vtrain.csv") -> list[tuple[int, list[float]]]:
    """(line, values) of every data row; InputError listing every bad row (file:line:col)."""
    lines = text.lstrip("\ufeff")
    reader = csv.reader(io.StringIO(lines))
    header = next(reader, None)
    width = VTRAIN_SINGLE_COLUMNS + (1 if multi else 0)
    if header is None:
        raise InputError(Diagnostic(source, 1, 1, "empty", "the CSV has no header row"))
    if len(header) != width:
        raise InputError(Diagnostic(source, 1, 1, "bad-header",
                                    f"expected {width} columns (vTrain ground truth), found {len(header)}"))
    rows, problems = [], []
    for cells in reader:
        line = reader.line_num
        if not cells or all(not c.strip() for c in cells):
            continue
        if len(cells) != width:
            problems.append(Diagnostic(source, line, 1, "bad-row",
                                       f"expected {width} cells, found {len(cells)}"))
            continue
        values, ok = [], True
        for j, cell in enumerate(cells):
            col = sum(len(c) + 1 for c in cells[:j]) + 1
            value = _cell(cell, j, width, multi)
            if isinstance(value, str):
                problems.append(Diagnostic(source, line, col, "bad-value", value))
                ok = False
            else:
                values.append(value)
        if ok:
            rows.append((line, values))
    if problems:
        raise InputError(problems)
    return rows


def _cell(cell: str, j: int, width: int, multi: bool) -> Union[float, str]:
    """The number in a cell, or the message saying why it is not one."""
    try:
        value = float(cell)
    except ValueError:
        return f"column {j + 1} must be a number, got {cell.strip()!r}"
    if not math.isfinite(value) or value <= 0:
        return f"column {j + 1} must be a positive number, got {cell.strip()!r}"
    counts = range(1 if multi else 0, width - 1)
    if j in counts and value != int(value):
        return f"column {j + 1} must be a whole number, got {cell.strip()!r}"
    return value


def vtrain_run(data: dict[str, Any], line: int, source: str) -> PublishedRun:
    """A vTrain row, already stated as a run, validated like any published run; InputError at the
    row's line naming each field out of the schema's range."""
    from pydantic import ValidationError

    try:
        return PublishedRun.model_validate(data)
    except ValidationError as exc:
        raise InputError([Diagnostic(source, line, 1, "bad-value",
                                     f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}")
                          for err in exc.errors()]) from None
