"""nccl-tests output (all_reduce_perf and the other collectives): bus bandwidth by size.

Columns are read from the header (old: ``size count type redop time algbw busbw error ...``;
new: ``... redop root time algbw busbw #wrong ...``); the first busbw is out-of-place, the
second in-place. Prefixes (``[1,0]<stdout>:``), gaps (``...``), NCCL INFO noise and several
tables per file are handled. The large-message figure the model uses: the median over rows of
at least 1 GiB of the mean of out-of-place and in-place busbw; the largest row when none is
that large.
"""

from __future__ import annotations

import re
from statistics import median
from typing import Any

from procure.measure.errors import LogError
from procure.measure.normalize import lines as split_lines
from procure.measure.normalize import parse_number
from procure.measure.samples import Parsed

LARGE_MESSAGE_BYTES = 1 << 30
_BINARY = re.compile(r"\b(all_reduce|all_gather|alltoall|reduce_scatter|broadcast|reduce|"
                     r"sendrecv|gather|scatter|hypercube)_perf\b")
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([\d.]+)")
_RANK = re.compile(r"^#\s*Rank\s+(\d{1,18})(?!\d)\s+Group(?:.*?\son\s+(\S+))?")
_CANONICAL = {"alltoall": "all_to_all", "sendrecv": "send_recv"}


def parse(text: str, name: str = "") -> Parsed:
    tables: list[dict[str, Any]] = []
    columns: list[str] | None = None
    collective: str | None = None
    ranks: set[int] = set()
    hosts: set[str] = set()
    for row in split_lines(text):
        line = row.text.strip()
        m = _BINARY.search(line)
        if m:
            collective = _CANONICAL.get(m.group(1), m.group(1))
        m_rank = _RANK.match(line)
        if m_rank:
            ranks.add(int(m_rank.group(1)))
            if m_rank.group(2):
                hosts.add(m_rank.group(2))
        header = _header(line)
        if header:
            columns = header
            tables.append({"collective": collective, "rows": [], "avg_busbw_gbs": None})
            continue
        m_avg = _AVG.search(line)
        if m_avg and tables:
            tables[-1]["avg_busbw_gbs"] = parse_number(m_avg.group(1))
        elif columns and tables and not line.startswith("#"):
            data = _row(line, columns)
            if data:
                _check_busbw(data, name, row.lineno)
                tables[-1]["rows"].append(data)
    return _result([t for t in tables if t["rows"]], len(ranks) or None, len(hosts) or None, name)


def _header(line: str) -> list[str] | None:
    if not line.startswith("#"):
        return None
    tokens = line.lstrip("#").split()
    if tokens[:2] == ["size", "count"] and "busbw" in tokens:
        return tokens
    return None


def _row(line: str, columns: list[str]) -> dict[str, Any] | None:
    tokens = line.split()
    if len(tokens) < columns.index("busbw") + 1 or not (tokens[0].isascii() and tokens[0].isdigit()) \
            or len(tokens[0]) > 18:
        return None
    busbw = [i for i, c in enumerate(columns) if c == "busbw"]
    times = [i for i, c in enumerate(columns) if c == "time"]
    values = {
        "size_bytes": int(tokens[0]),
        "time_us": _at(tokens, times, 0),
        "busbw_gbs": _at(tokens, busbw, 0),
        "busbw_inplace_gbs": _at(tokens, busbw, 1),
    }
    return values if values["busbw_gbs"] is not None else None


# nccl-tests prints bandwidths with two decimals: 0.00 for tiny messages, else at least 0.01 GB/s.
# A negative figure, or one between 0 and 0.01 (``1e-300``), is not its output.
MIN_PRINTED_GBS = 0.01


def _check_busbw(values: dict[str, Any], name: str, lineno: int) -> None:
    for key in ("busbw_gbs", "busbw_inplace_gbs"):
        value = values[key]
        if value is not None and (value < 0 or 0 < value < MIN_PRINTED_GBS):
            raise LogError(f"{name}:{lineno}: a bus bandwidth of {value:.3g} GB/s is not a measurement "
                           f"(nccl-tests prints 0.00 or at least {MIN_PRINTED_GBS} GB/s, never a negative "
                           "figure); refused")


def _at(tokens: list[str], indexes: list[int], which: int) -> float | None:
    if len(indexes) <= which or indexes[which] >= len(tokens):
        return None
    return parse_number(tokens[indexes[which]])


def _row_busbw(row: dict[str, Any]) -> float:
    both: list[float] = [v for v in (row["busbw_gbs"], row["busbw_inplace_gbs"]) if v is not None]
    return sum(both) / len(both)


def large_message_gbs(rows: list[dict[str, Any]]) -> float | None:
    sized = [r for r in rows if r["size_bytes"] > 0]
    if not sized:
        return None
    large = [_row_busbw(r) for r in sized if r["size_bytes"] >= LARGE_MESSAGE_BYTES]
    if large:
        return float(median(large))
    return _row_busbw(max(sized, key=lambda r: r["size_bytes"]))


def _result(tables: list[dict[str, Any]], gpus: int | None, nodes: int | None = None, name: str = "") -> Parsed:
    if not tables:
        return Parsed(format="nccl-tests", notes=["no nccl-tests result rows found"])
    for table in tables:
        table["large_message_gbs"] = large_message_gbs(table["rows"])
        if table["large_message_gbs"] is not None and table["large_message_gbs"] <= 0:
            raise LogError(f"{name}: the bus bandwidth at its largest messages is 0 GB/s: not a "
                           "measurement of a working network; refused")
    preferred = [t for t in tables if t["collective"] in ("all_reduce", None)] or tables
    figures = [t["large_message_gbs"] for t in preferred if t["large_message_gbs"] is not None]
    collective = "all_reduce" if preferred[0]["collective"] in ("all_reduce", None) \
        else preferred[0]["collective"]
    notes = ["nccl-tests: bus bandwidth only, no step times"]
    if any(t["collective"] is None for t in tables):
        notes.append("the collective is not named in the output (no *_perf command line); "
                     "tables are taken as all_reduce")
    bus = {
        "unit": "GB/s",
        "large_message_gbs": float(median(figures)) if figures else None,
        "collective": collective,
        "rule": "median over sizes >= 1 GiB of mean(out-of-place, in-place) busbw; "
                "the largest size when none reaches 1 GiB",
        "tables": tables,
        "nodes": nodes,   # distinct hosts in the `# Rank N ... on HOST` lines; None when not printed
    }
    return Parsed(format="nccl-tests", gpus=gpus, bus_bandwidth=bus, notes=notes)
