"""The burn-in protocol of one bid: the job to run, how long, and the thresholds it must hold.

Rules (also in docs/commands.md):

- steps: a P99 is meaningful only with steps above it, so at least ``MIN_MEASURED_STEPS`` (200:
  two steps lie above the 99th percentile) are measured after the warm-up;
- warm-up: the larger of ``WARMUP_STEPS_MIN`` steps and ingest's 2% of the run, a fixed count from
  each log's first step (no adaptive exclusion: a slow step is evidence, not warm-up), so the run is
  ``warm-up + measured`` steps;
- thresholds: the measured mean and P99 step time at most the committed figures. The committed
  tolerance of the assumptions (15%) is how far a commitment may sit from the model before it
  is flagged; it is no allowance on a signed figure, so the tolerance here is 0;
- scaling efficiency (when committed): the same job at 1/8 of the GPUs (else 1/4, 1/2: the
  largest fraction the plan's data parallelism divides), global batch fixed, as the model's
  scaling curve defines it: per-GPU throughput at full size over the reference's;
- stragglers (when the logs carry per-rank times): no rank more than 5% slower than the step's
  median rank in at least half of its steps or on average over them (ingest's straggler rule);
- a breach costs ``percent_per_breach`` of the invoice per breached figure, up to the cap.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from procure.inputs.bundle import Inputs
from procure.inputs.resolve import ResolvedBid
from procure.measure.formats import LOG_FORMATS
from procure.measure.stats import WARMUP_FRACTION
from procure.measure.stragglers import STRAGGLER_EXCESS

SCHEMA = "procure.acceptance/v1"
MIN_MEASURED_STEPS = 200            # ceil(2 / (1 - 0.99)): two measured steps above the P99
WARMUP_STEPS_MIN = 10
SCALING_FRACTIONS = (8, 4, 2)       # the model's scaling curve: 1/8, 1/4, 1/2 of the GPUs
STEPS_RULE = (f"at least {MIN_MEASURED_STEPS} steps measured after the warm-up (two steps above the 99th "
              f"percentile); the warm-up is the larger of {WARMUP_STEPS_MIN} steps and "
              f"{WARMUP_FRACTION:.0%} of the run, counted from each log's first step; no other step is excluded")
TOLERANCE_RULE = ("no tolerance on a signed figure: the committed tolerance of the assumptions is how far "
                  "a commitment may sit from the model, not an allowance on the commitment")

Figure = Literal["mean_step_time_s", "p99_step_time_s", "scaling_efficiency"]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BidTerms(_Doc):
    id: str = Field(max_length=64)
    vendor: str = Field(max_length=200)
    accelerator: str = Field(max_length=200)
    network: str = Field(max_length=200)
    gpus: int = Field(gt=0, le=10_000_000)


class Job(_Doc):
    """The job the burn-in runs: the committed conditions, else the workload's."""

    model: str = Field(max_length=200, description="Model preset id or the inline architecture's name.")
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    heads: int = Field(gt=0)
    seq_len: int = Field(gt=0)
    global_batch_seqs: int = Field(gt=0)
    global_batch_tokens: int = Field(gt=0)
    precision: Literal["bf16", "fp16", "fp8"]
    gpus: int = Field(gt=0, le=10_000_000)
    plan: Optional[dict[str, Any]] = Field(None, description="The parallel plan the bid states; unset: the vendor's choice.")


class Steps(_Doc):
    warmup_steps: int = Field(ge=0, le=10**9)
    measured_steps_min: int = Field(gt=0, le=10**9)
    total_steps: int = Field(gt=0, le=2 * 10**9)
    rule: str = Field(max_length=1000)


class Threshold(_Doc):
    figure: Figure
    statistic: Literal["mean", "p99", "efficiency"]
    committed: float = Field(gt=0, le=1e6)
    tolerance: float = Field(ge=0, le=1)
    limit: float = Field(gt=0, le=1e7)
    bound: Literal["at-most", "at-least"]


class Scaling(_Doc):
    gpus: int = Field(gt=0, le=10_000_000)
    reference_gpus: int = Field(gt=0, le=10_000_000)
    rule: str = Field(max_length=1000)


class Stragglers(_Doc):
    max_excess: float = Field(ge=0, le=10, description="A rank more than this slower than the step's median rank (in at least half of its steps or on average; at another value than ingest's 5%, judged on the slowest ranks' means) is a straggler.")
    max_straggler_ranks: int = Field(ge=0)


class ServiceCredit(_Doc):
    percent_per_breach: float = Field(gt=0, le=100)
    cap_percent: Optional[float] = Field(None, gt=0, le=100)


class AcceptanceSpec(_Doc):
    """``procure.acceptance/v1``: written by ``procure acceptance``, read by ``procure accept``."""

    schema_: Literal["procure.acceptance/v1"] = Field(alias="schema", description="Schema version of the file.")
    title: str = Field(max_length=300)
    as_of: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    bid: BidTerms
    job: Job
    steps: Steps
    thresholds: list[Threshold] = Field(min_length=1, max_length=10)
    tolerance_rule: str = Field(max_length=1000)
    scaling: Optional[Scaling] = None
    stragglers: Stragglers
    evidence_formats: list[str] = Field(min_length=1, max_length=100)
    service_credit: Optional[ServiceCredit] = None

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_data(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class NoCommitment(ValueError):
    """The bid commits no step time, P99 or scaling efficiency: there is nothing to accept."""


def run_steps() -> Steps:
    """Warm-up and measured steps by the module's rule (ingest's 2% warm-up of the whole run)."""
    measured = MIN_MEASURED_STEPS
    warmup = WARMUP_STEPS_MIN
    while warmup < math.floor(WARMUP_FRACTION * (warmup + measured)):
        warmup += 1
    return Steps(warmup_steps=warmup, measured_steps_min=measured, total_steps=warmup + measured, rule=STEPS_RULE)


def reference_gpus(gpus: int, dp: int | None) -> int | None:
    """The scaling test's smaller size: the largest fraction (1/8, else 1/4, 1/2) that divides the
    GPUs and the plan's data parallelism (when the bid states it)."""
    for fraction in SCALING_FRACTIONS:
        if gpus % fraction == 0 and gpus // fraction >= 1 and (dp is None or dp % fraction == 0):
            return gpus // fraction
    return None


def evidence_formats() -> list[str]:
    """The formats `procure ingest --list-formats` lists that carry step times."""
    return [f.name for f in LOG_FORMATS if f.name not in NO_STEP_TIMES]


NO_STEP_TIMES = frozenset({"mlperf-system", "nccl-tests", "straggler-meta"})


def build_spec(inputs: Inputs, bid_id: str) -> AcceptanceSpec:
    """The protocol for the bid ``bid_id`` of validated inputs (KeyError: no such bid;
    NoCommitment: it commits nothing a burn-in can test)."""
    rb = _find(inputs, bid_id)
    bid, cluster = rb.bid, inputs.cluster
    committed = bid.committed
    if committed.step_time_s is None and committed.p99_step_time_s is None and committed.scaling_efficiency is None:
        raise NoCommitment(f"bid {bid_id!r} commits no step time, P99 or scaling efficiency: there is nothing "
                           "for a burn-in to test")
    plan = None if bid.plan == "auto" else bid.plan.model_dump(exclude_none=True)
    thresholds: list[Threshold] = []
    for figure, statistic, value in (("mean_step_time_s", "mean", committed.step_time_s),
                                     ("p99_step_time_s", "p99", committed.p99_step_time_s)):
        if value is not None:
            thresholds.append(Threshold(figure=figure, statistic=statistic, committed=value, tolerance=0.0,
                                        limit=value, bound="at-most"))
    scaling = None
    if committed.scaling_efficiency is not None:
        ref = reference_gpus(bid.gpus, (plan or {}).get("dp"))
        if ref is not None and ref < bid.gpus:
            scaling = Scaling(gpus=bid.gpus, reference_gpus=ref,
                              rule=f"the same job (global batch fixed) on {ref:,} and on {bid.gpus:,} GPUs; "
                                   "efficiency = per-GPU throughput at full size over the reference's "
                                   "= (reference mean step time x reference GPUs) / (mean step time x GPUs)")
            thresholds.append(Threshold(figure="scaling_efficiency", statistic="efficiency",
                                        committed=committed.scaling_efficiency, tolerance=0.0,
                                        limit=committed.scaling_efficiency, bound="at-least"))
    if not thresholds:
        raise NoCommitment(f"bid {bid_id!r} commits a scaling efficiency only, and {bid.gpus} GPUs have no "
                           "smaller size to compare with")
    credit = committed.service_credit
    return AcceptanceSpec(
        schema_=SCHEMA, title=cluster.title, as_of=cluster.as_of.isoformat(),
        bid=BidTerms(id=bid.id, vendor=bid.vendor, accelerator=rb.accelerator.id, network=rb.network.id,
                     gpus=bid.gpus),
        job=_job(inputs, rb, plan),
        steps=run_steps(), thresholds=thresholds, tolerance_rule=TOLERANCE_RULE, scaling=scaling,
        stragglers=Stragglers(max_excess=STRAGGLER_EXCESS, max_straggler_ranks=0),
        evidence_formats=evidence_formats(),
        service_credit=None if credit is None else ServiceCredit(percent_per_breach=credit.percent_per_breach,
                                                                 cap_percent=credit.cap_percent))


def bid_ids(inputs: Inputs) -> list[str]:
    return [rb.bid.id for rb in inputs.bids]


def _find(inputs: Inputs, bid_id: str) -> ResolvedBid:
    for rb in inputs.bids:
        if rb.bid.id == bid_id:
            return rb
    raise KeyError(bid_id)


def _job(inputs: Inputs, rb: ResolvedBid, plan: dict[str, Any] | None) -> Job:
    workload, committed, arch = inputs.cluster.workload, rb.bid.committed, inputs.arch
    seq_len = committed.seq_len or workload.seq_len
    if committed.global_batch is not None:
        seqs = committed.global_batch
    elif committed.global_batch_tokens is not None:
        seqs = committed.global_batch_tokens // seq_len
    else:
        seqs = workload.global_batch_tokens // seq_len if workload.global_batch_tokens else workload.global_batch_seqs
    return Job(model=workload.model or arch.name, layers=arch.layers, hidden=arch.hidden, heads=arch.heads,
               seq_len=seq_len, global_batch_seqs=max(seqs, 1), global_batch_tokens=max(seqs, 1) * seq_len,
               precision=committed.precision or workload.precision, gpus=rb.bid.gpus, plan=plan)
