"""What a bid's measured logs say, in the form the quote needs: step-time statistics, the
histogram, and whether an nccl-tests bandwidth may stand in for the catalog's inter-node rate.

The bandwidth decision belongs here because it is a judgement about a measurement: a
single-host nccl-tests run measures NVLink, not the network, and must not replace it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procure.measure.errors import LogError
from procure.sources.bounds import MAX_STEP_S, MIN_STEP_S

if TYPE_CHECKING:
    from procure.measure.summarise import SourceSummary

# A node's scale-out rate, as nccl-tests reports it for a multi-node all-reduce, shared by its
# GPUs, cannot much exceed the NICs; a figure far above them was measured inside one node (NVLink).
SCALE_OUT_PLAUSIBLE_FACTOR = 1.25


@dataclass(frozen=True)
class ScaleOutDecision:
    busbw_gbs: float | None      # the bus bandwidth the model uses for the inter-node tier
    note: str | None             # why it is (not) used


MAX_LISTED = 50   # stragglers and outlier steps carried into the quote, each


@dataclass(frozen=True)
class StragglerRank:
    """A rank ingest names as a straggler (see ``measure.stragglers`` for the rule)."""

    source: str              # the log (or the logs of a rank group) it was found in
    rank: int
    steps: int               # steps it ran
    times_slowest: int       # steps in which it was the slowest rank
    slow_steps: int          # steps in which it was more than 5% slower than the step's median rank
    slowdown: float          # its mean slowdown over the step's median rank (0.06: 6% slower)


@dataclass(frozen=True)
class OutlierStep:
    """A step ingest flags as an outlier (kept in the statistics; rule in ``measure.stats``)."""

    source: str
    step: int | None         # None where the log does not number its steps
    step_time_s: float


@dataclass(frozen=True)
class ParsedLog:
    """One log parsed for the bid, as the quote lists it."""

    path: str                  # the file's name
    format: str
    steps: int | float         # steps it covers (whole: the document refuses a fraction)
    warmup_excluded: int
    aggregation: str | None


@dataclass(frozen=True)
class MeasuredBid:
    summary: dict[str, Any] | None        # mean, p50, p95, p99, max, std, cv, count, aggregation
    histogram: dict[str, Any] | None
    busbw_gbs: float | None
    sources: tuple[ParsedLog, ...]
    gpus: int | None                      # the largest GPU count a source states
    busbw_nodes: int | None               # hosts the nccl-tests run spanned, when printed
    scale_out: ScaleOutDecision
    files: tuple[Path, ...] = ()          # the files parsed (not those skipped as no known format)
    global_batch: int | None = None       # sequences per step, where a log states it
    seq_len: int | None = None            # tokens per sequence, where a log states it
    ranks_compared: int | None = None     # ranks of the largest per-rank log (None: no per-rank times)
    stragglers: tuple[StragglerRank, ...] = ()
    outlier_steps: tuple[OutlierStep, ...] = ()

    @property
    def mean_s(self) -> float | None:
        return None if not self.summary or not self.summary.get("mean") else float(self.summary["mean"])

    @property
    def p99_s(self) -> float | None:
        return None if not self.summary or self.summary.get("p99") is None else float(self.summary["p99"])


def decide_scale_out(busbw_gbs: float | None, nodes: int | None, gpus: int | None, scale_up_domain: int,
                     nic_gbs_per_gpu: float, network_id: str) -> ScaleOutDecision:
    """The nccl-tests bus bandwidth to use for the inter-node tier, with why (not) in a note."""
    if not busbw_gbs:
        return ScaleOutDecision(None, None)
    per_gpu = busbw_gbs / max(1, scale_up_domain)
    if nodes == 1:
        return ScaleOutDecision(None, f"nccl-tests bus bandwidth {busbw_gbs:.1f} GB/s was measured on one "
                                      "host: a scale-up figure, not used for the inter-node tier")
    multi_node = (nodes or 0) > 1 or (gpus or 0) > scale_up_domain
    if multi_node or per_gpu <= SCALE_OUT_PLAUSIBLE_FACTOR * nic_gbs_per_gpu:
        return ScaleOutDecision(busbw_gbs, f"nccl-tests bus bandwidth {busbw_gbs:.1f} GB/s ({per_gpu:.1f} GB/s "
                                           f"per GPU) replaces the catalog's {nic_gbs_per_gpu:.1f} GB/s per GPU "
                                           "for the inter-node tier")
    return ScaleOutDecision(None, f"nccl-tests bus bandwidth {busbw_gbs:.1f} GB/s is "
                                  f"{per_gpu / nic_gbs_per_gpu:.1f}× the {network_id} NIC rate per GPU: a "
                                  "single-node (scale-up) measurement, not used for the inter-node tier")


def measure_bid(paths: list[Path], scale_up_domain: int, nic_gbs_per_gpu: float,
                network_id: str) -> MeasuredBid | None:
    """Ingest a bid's logs (format detected) and decide how they feed the model."""
    if not paths:
        return None
    from procure.measure import ingest

    result = ingest(list(paths))
    sources = tuple(ParsedLog(Path(s.path).name, s.format, s.steps, s.warmup_excluded, s.aggregation)
                    for s in result.sources)
    gpus = max((s.gpus for s in result.sources if s.gpus), default=None)
    nodes = max(((s.bus_bandwidth or {}).get("nodes") or 0 for s in result.sources), default=0) or None
    busbw = result.busbw_gbs()
    summary = result.step_time_summary()
    for key in ("mean", "p99"):
        value = (summary or {}).get(key)
        if value is not None and not MIN_STEP_S <= float(value) <= MAX_STEP_S:
            names = ", ".join(str(p) for p in paths)
            raise LogError(f"{names}: measured {key} step time {float(value):.3g} s is outside "
                           f"{MIN_STEP_S:g} to {MAX_STEP_S:g} s, the range a committed step time may take: "
                           "not a training step")
    stated = [s.info for s in result.sources]
    return MeasuredBid(summary, result.histogram(), busbw, sources, gpus, nodes,
                       decide_scale_out(busbw, nodes, gpus, scale_up_domain, nic_gbs_per_gpu, network_id),
                       tuple(Path(s.path) for s in result.sources),
                       max((int(i["global_batch"]) for i in stated if i.get("global_batch")), default=None),
                       max((int(i["seq_len"]) for i in stated if i.get("seq_len")), default=None),
                       max((int(s.stragglers["ranks"]) for s in result.sources if s.stragglers), default=None),
                       stragglers_of(result.sources), outlier_steps_of(result.sources))


def stragglers_of(sources: list[SourceSummary]) -> tuple[StragglerRank, ...]:
    """The stragglers each source's per-rank data names (a rank group's once), slowest first."""
    named: list[StragglerRank] = []
    seen: set[tuple[str, ...]] = set()
    for s in sources:
        section = s.stragglers
        key = tuple(Path(p).name for p in section.get("sources") or [s.path]) if section else ()
        if not section or key in seen:
            continue
        seen.add(key)
        named += [StragglerRank(", ".join(key), int(e["rank"]), int(e["steps"]), int(e["times_slowest"]),
                                int(e["slow_steps"]), float(e["slowdown"])) for e in section.get("stragglers") or []]
    return tuple(sorted(named, key=lambda r: (-r.slowdown, r.source, r.rank))[:MAX_LISTED])


def outlier_steps_of(sources: list[SourceSummary]) -> tuple[OutlierStep, ...]:
    """The outlier steps each source flags, in file then step order."""
    steps = [OutlierStep(Path(s.path).name, o["step"] if isinstance(o.get("step"), int) else None,
                         float(o["step_time_s"])) for s in sources for o in s.outliers]
    return tuple(steps[:MAX_LISTED])
