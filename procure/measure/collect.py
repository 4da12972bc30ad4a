"""``ingest``: read logs and traces, detect formats, parse, summarise, relate files.

Policy for files without step times: a recognised file that holds none is a source with
``steps: 0``, ``step_time_s: null`` and a note saying why (never zeros as step times). Files no
parser recognises are skipped with their reason in ``skipped``. When nothing at all was measured
(no step times, no bus bandwidth, no GPU count) ``ingest`` raises LogError naming every file
and why, so ``procure ingest one.log`` on such a file exits 1 with the reason.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Callable

import numpy as np

from procure.measure import readers
from procure.measure.detect import FORMATS, TABLE_FORMATS, detect_format, detect_in_body
from procure.measure.errors import LogError
from procure.measure.formats import BY_NAME
from procure.measure.ranktable import reduce_arrays, schema_for, step_rank_times
from procure.measure.result import IngestResult
from procure.measure.samples import Parsed, RankReduction, SampleArrays
from procure.measure.stats import Series, starts_at_training_start, warmup_count
from procure.measure.stragglers import analyse
from procure.measure.summarise import SourceSummary, per_step_max, summarise

Progress = Callable[[int, int], None]


def ingest(paths: Sequence[str | Path] | str | Path, fmt: str | None = None,
           scheduler: str | None = None, progress: Progress | None = None,
           limits: readers.Limits = readers.DEFAULT_LIMITS) -> IngestResult:
    """Read step times from files and folders (see the module docstring for the policy).

    ``fmt`` overrides detection for every file; ``scheduler`` (``"local"`` or a dask scheduler
    address) computes per-rank tables on dask; ``progress(done, total)`` is called per file.
    """
    if fmt is not None and fmt not in FORMATS:
        raise LogError(f"unknown log format {fmt!r}; known formats: {', '.join(FORMATS)}")
    files, missing, skipped = readers.expand(_as_list(paths), limits.max_files)
    if missing:
        raise LogError("\n".join(missing))
    if not files:
        raise LogError(f"no files found in {', '.join(str(p) for p in _as_list(paths))}")
    sources: list[SourceSummary] = []
    for done, path in enumerate(files, start=1):
        parsed = _parse_file(path, fmt, scheduler, limits)
        if parsed is None:
            skipped.append({"path": str(path), "reason": "no known log or trace format"})
        else:
            sources.append(summarise(parsed, str(path)))
        if progress is not None:
            progress(done, len(files))
    _attach_systems(sources)
    _attach_meta(sources)
    result = IngestResult(sources=sources, skipped=skipped, groups=_rank_groups(sources))
    _require_something(result)
    return result


def _as_list(paths: Sequence[str | Path] | str | Path) -> list[str | Path]:
    return [paths] if isinstance(paths, (str, Path)) else list(paths)


# The physical floor of one training step: a forward and backward pass over a batch, its optimizer
# step and a gradient all-reduce take milliseconds at the very least (kernel launches alone take
# tens of microseconds each). A log or trace stating less is corrupt or forged, and dividing by it
# (throughput, cost per token) would give figures that mean nothing.
MIN_STEP_TIME_S = 1e-3


def _parse_file(path: Path, fmt: str | None, scheduler: str | None,
                limits: readers.Limits) -> Parsed | None:
    parsed = _parse_file_unchecked(path, fmt, scheduler, limits)
    if parsed is not None:
        _check_plausible(parsed, path)
    return parsed


def _check_plausible(parsed: Parsed, path: Path) -> None:
    """Refuse step times below MIN_STEP_TIME_S (or not above zero) as an input error naming the file."""
    times = [parsed.samples.step_time_s]
    if parsed.reduction is not None:
        times.append(parsed.reduction.step_time_max_s)
    for values in times:
        values = np.asarray(values, dtype=float)
        low = values[np.isfinite(values) & (values < MIN_STEP_TIME_S)]
        if low.size:
            raise LogError(f"{path}: a step time of {float(low.min()):.3g} s is implausible: a training step "
                           f"takes at least {MIN_STEP_TIME_S * 1e3:g} ms (the physical floor procure "
                           f"uses); {low.size:,} step time(s) below it, refused")


def _parse_file_unchecked(path: Path, fmt: str | None, scheduler: str | None,
                          limits: readers.Limits) -> Parsed | None:
    fmt = fmt or _detect(path, limits)
    if fmt is None:
        return None
    if fmt in TABLE_FORMATS:
        return _parse_table(path, scheduler, limits)
    parse: Callable[[str, str], Parsed] = BY_NAME[fmt].parse_function()   # this format's module only

    text = readers.read_text(path, limits, fmt)
    try:
        return parse(text, str(path))
    except RecursionError:   # JSON nested thousands deep: the decoder's own recursion limit
        raise LogError(f"{path}: nested too deeply to be a {fmt} file") from None


def _detect(path: Path, limits: readers.Limits) -> str | None:
    head = readers.read_head(path)
    fmt = detect_format(path.name, head)
    if fmt is None and len(head) >= readers.HEAD_BYTES and not readers.is_table(path):
        data = readers.read_bytes(path, limits)
        readers.check_parse_budget(data, "", str(path), limits)
        fmt = detect_in_body(path.name, data)
    return fmt


def _parse_table(path: Path, scheduler: str | None, limits: readers.Limits) -> Parsed:
    schema = schema_for(readers.table_columns(path, limits), str(path))
    if scheduler:
        from procure.measure.scale import reduce_table

        red = reduce_table(path, schema, scheduler, limits)
        engine = f"dask ({scheduler})"
    else:
        table = readers.read_table(path, schema.columns(), limits)
        rows = len(table)
        arrays, invalid = step_rank_times(table, schema)
        del table  # the numpy copies are all that is needed from here (peak memory)
        if arrays["step"].size == 0:
            return Parsed(format="rank-table", notes=["the table has no rows with step times"])
        red = reduce_arrays(arrays, invalid=invalid, rows=rows)
        engine = "in-process"
    if red.steps.size == 0:
        return Parsed(format="rank-table", notes=["the table has no rows with step times"])
    return table_parsed(red, schema.kind, engine)


def table_parsed(red: RankReduction, kind: str, engine: str) -> Parsed:
    """A per-rank table's Parsed: the slowest rank per step is the step time."""
    n = red.steps.size
    samples = SampleArrays(red.steps, np.full(n, -1), red.step_time_max_s, np.ones(n))
    notes = [f"{red.rows:,} rows ({kind} table), {red.ranks.size} ranks, {n} steps, summarised "
             f"{engine}; step time = slowest rank per step"]
    if kind == "op":
        notes.append("op trace: step time = span of each rank's ops; stragglers compare busy "
                     "(compute) time, since every rank ends a synchronous step together")
    if red.duplicates:
        notes.append(f"{red.duplicates} duplicate (step, rank) rows merged (slowest kept)")
    if red.invalid:
        notes.append(f"{red.invalid} rows with missing or invalid values dropped")
    return Parsed(format="rank-table", variant=kind, samples=samples, reduction=red,
                  notes=notes)


_TOKEN = re.compile(r"[a-z0-9]+")
_GENERIC = {"nvidia", "dgx", "hgx", "gpu", "sxm", "sxm5", "80gb", "the", "x"}


def _tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.lower()) if t not in _GENERIC}


def _attach_systems(sources: list[SourceSummary]) -> None:
    """GPU count of MLPerf results from a system JSON ingested alongside.

    A system matches when its file stem is a folder of the result's path (the MLPerf layout
    ``results/<system>/<benchmark>/result_0.txt``), else when its node count equals the
    result's ``submission_platform`` count and the accelerator names share a token. Used only
    when all matching systems agree.
    """
    systems = [s for s in sources if s.format == "mlperf-system" and s.gpus]
    for result in (s for s in sources if s.format == "mlperf" and s.gpus is None):
        matches = _matching_systems(result, systems)
        facts = {(s.gpus, s.accelerator) for s in matches}
        if len(facts) == 1:
            result.gpus, result.accelerator = next(iter(facts))
            result.notes.append(f"GPU count from the system description "
                                f"{Path(matches[0].path).name} (number_of_nodes x "
                                "accelerators_per_node)")
        elif len(facts) > 1:
            result.notes.append("several system descriptions match with different GPU counts; "
                                "none was used")


def _matching_systems(result: SourceSummary, systems: list[SourceSummary]) -> list[SourceSummary]:
    folders = set(Path(result.path).parts[:-1])
    by_folder = [s for s in systems if Path(s.path).stem in folders]
    if by_folder:
        return by_folder
    nodes = result.info.get("platform_nodes")
    platform = _tokens(str(result.info.get("platform", "")))
    return [s for s in systems if nodes and s.info.get("system", {}).get("nodes") == nodes
            and platform & _tokens(s.accelerator or "")]


def _attach_meta(sources: list[SourceSummary]) -> None:
    """World size of a StragglerAnalysis trace from its ``meta`` file (``trace-X``/``meta-X``)."""
    metas = {Path(s.path).with_suffix("").name.replace("meta", "trace"): s
             for s in sources if s.format == "straggler-meta" and s.gpus}
    for table in (s for s in sources if s.format == "rank-table" and s.gpus is None):
        meta = metas.get(Path(table.path).with_suffix("").name)
        if meta is not None:
            table.gpus = meta.gpus
            table.notes.append(f"GPU count (world_size) from {Path(meta.path).name}")


def _rank_groups(sources: list[SourceSummary]) -> list[tuple[list[str], Series]]:
    """Kineto traces of several ranks of one job: shared straggler analysis and one series."""
    buckets: dict[tuple[object, str], list[SourceSummary]] = defaultdict(list)
    for s in sources:
        if s.format == "kineto" and s.info.get("rank") is not None and s.rank_samples is not None:
            buckets[(s.info.get("world_size"), str(Path(s.path).parent))].append(s)
    groups = []
    for members in buckets.values():
        if len({m.info["rank"] for m in members}) < 2:
            continue
        merged = SampleArrays.concat([m.rank_samples for m in members if m.rank_samples is not None])
        series, red = per_step_max(merged)
        if red is None or not _shared_steps(members):
            continue
        section = analyse(red)
        if section is not None:
            section["sources"] = [m.path for m in members]
        for m in members:
            m.stragglers = section
        k = warmup_count(series, starts_at_training_start(series))
        groups.append(([m.path for m in members], series.tail(k)))
    return groups




def _shared_steps(members: list[SourceSummary]) -> bool:
    sets = [set(m.rank_samples.step.tolist()) for m in members if m.rank_samples is not None]
    return bool(sets) and bool(set.intersection(*sets))


def _require_something(result: IngestResult) -> None:
    useful = [s for s in result.sources
              if s.samples or s.bus_bandwidth is not None or s.gpus is not None]
    if useful:
        return
    reasons = [f"  {s.path}: {s.format}: {'; '.join(s.notes) or 'no step times'}"
               for s in result.sources]
    reasons += [f"  {item['path']}: {item['reason']}" for item in result.skipped]
    raise LogError("nothing measured (no step times, bus bandwidth or GPU count):\n"
                   + "\n".join(reasons))
