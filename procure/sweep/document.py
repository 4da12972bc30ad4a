"""``procure.sweep/v1``: the typed result of a sweep, from which JSON, Parquet, XLSX, HTML and
PDF are rendered. Frozen pydantic models, unknown keys refused, floats at the document's
precision, money exact (the building blocks of ``procure.document``).

The JSON contract: ``{"schema": "procure.sweep/v1", "points": [...]}`` where every point has at
least ``accelerator``, ``gpus``, ``term``, ``feasible``, ``time_to_train_days``, ``total_cost``,
``cost_per_million_tokens`` and ``on_frontier``.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal, Optional

from pydantic import Field

from procure.document.base import Amount, Count, Frozen, Real, Tokens

SCHEMA = "procure.sweep/v1"


class Plan(Frozen):
    tp: Count
    pp: Count
    dp: Count
    cp: Count
    ep: Count
    vpp: Count
    micro_batch: Count
    zero_stage: Count
    recompute: str
    sequence_parallel: bool
    tp_comm_overlap: bool
    overlap_grad_reduce: bool


class PointBand(Frozen):
    cost_per_million_tokens: list[Amount] = Field(description="P10, P50, P90.")
    time_to_train_days: list[Real] = Field(description="P10, P50, P90.")


class SweepPoint(Frozen):
    index: Count
    id: str = Field(description="`procure sweep ... --emit-cluster ID` writes this point's cluster.yaml.")
    workload: str
    accelerator: str
    network: str
    gpus: Count
    term: str = Field(description="The price term: `book/term`, or the id of an inline price.")
    pricing_kind: Literal["rental", "purchase"]
    feasible: bool = Field(description="The plan search found a plan that fits in memory.")
    reason: Optional[str] = Field(description="Why the point has no plan or no price.")
    plan: Optional[Plan]
    plans_evaluated: Count
    step_time_s: Optional[Real]
    mfu: Optional[Real]
    tokens_per_s: Optional[Real]
    memory_gib: Optional[Real] = Field(description="Memory per GPU of the plan, GiB.")
    goodput: Optional[Real]
    time_to_train_days: Optional[Real]
    days_to_finish: Optional[Real] = Field(description="Lead time of the capacity, then the run.")
    cost_basis: Literal["present_value", "run", "commitment"] = Field(description="The basis of total_cost and of the ranking.")
    billed_hours: Optional[Amount]
    energy_mwh: Optional[Amount]
    total_cost: Optional[Amount] = Field(description="On the ranking basis (`cost_basis`), in the sweep currency.")
    cost_per_million_tokens: Optional[Amount]
    run_total_cost: Optional[Amount] = Field(description="What this job consumes.")
    run_cost_per_million_tokens: Optional[Amount]
    commitment_total_cost: Optional[Amount] = Field(description="The terms the buyer commits to, costed to the end of the run (not cash: undiscounted, no timing).")
    commitment_cost_per_million_tokens: Optional[Amount]
    upfront_capex: Optional[Amount] = Field(description="A purchase's capex, paid before the run.")
    present_value: Optional[Amount] = Field(None, description="Dated cash over the point's own horizon (its run or "
                                                              "term), discounted at the cost of capital.")
    upfront_cash: Optional[Amount] = Field(None, description="Cash at signing: capex, prepayment, setup fee.")
    peak_cash_out: Optional[Amount] = Field(None, description="The largest cumulative net cash out at any month end; "
                                                              "what `budget` limits.")
    currency: str
    it_power_mw: Optional[Real] = Field(description="GPUs x IT power per GPU (the system power, as the quotes use; the GPU TDP only where no system figure is published), MW (no PUE).")
    flags: list[str]
    band: Optional[PointBand] = Field(description="The quote's seeded Monte-Carlo P10/P50/P90.")
    meets_constraints: bool
    constraint_failures: list[str]
    over_budget_by: Optional[Amount] = Field(None, description="Peak cash out above `budget`; null when within it.")
    over_net_cost_by: Optional[Amount] = Field(None, description="Total cost above `max_net_cost`; null when within it.")
    on_frontier: bool = Field(description="No other point of the workload is as fast and as cheap, and better in one.")


class WorkloadPhase(Frozen):
    """A further phase of a workload (a long-context extension): each point trains it too."""

    name: str
    seq_len: Count
    global_batch_seqs: Count
    train_tokens: Tokens


class WorkloadRow(Frozen):
    id: str
    model: str
    params: Count
    seq_len: Count
    global_batch_seqs: Count
    tokens_per_step: Count
    train_tokens: Tokens = Field(description="Tokens of every phase (cost per million tokens divides by them).")
    precision: str
    deadline_days: Optional[Real] = Field(description="The workload's, else the sweep's constraint.")
    cost_basis: Literal["present_value", "run", "commitment"] = Field(description="The basis that ranks this workload's points.")
    phases: list[WorkloadPhase] = Field(default_factory=list, description="Further phases after the main one; time "
                                        "to train and cost of every point cover them all.")


class AcceleratorRow(Frozen):
    id: str
    name: str
    hbm_gb: Real
    tdp_w: Optional[Real]
    scale_up_domain: Count
    networks: list[str]
    gpu_counts: list[Count]


class TermPrice(Frozen):
    accelerator: str
    price_per_gpu_hour: Optional[Amount] = Field(description="Rental, in the sweep currency.")
    capex_per_gpu: Optional[Amount] = Field(description="Purchase, in the sweep currency.")
    min_commit_months: Count
    missing_reason: Optional[str]


class TermRow(Frozen):
    id: str
    kind: Literal["rental", "purchase"]
    price_book: Optional[str]
    term: Optional[str]
    provider: str
    prices: list[TermPrice]


class ConstraintsRow(Frozen):
    deadline_days: Optional[Real]
    budget: Optional[Amount]
    max_net_cost: Optional[Amount] = None
    max_gpus: Optional[Count]
    max_power_mw: Optional[Real]


class BestPoint(Frozen):
    key: str
    point: Optional[str] = Field(description="Cheapest point meeting every constraint; null if none.")


class AskOptionRow(Frozen):
    accelerator: str
    term: str
    gpus_min: Count
    gpus_max: Count
    point: str
    gpus: Count
    total_cost: Amount
    cost_per_million_tokens: Amount
    time_to_train_days: Real
    upfront_cash: Optional[Amount] = Field(None, description="The best point's cash at signing.")
    peak_cash_out: Optional[Amount] = Field(None, description="The best point's peak cumulative cash out.")


class Ask(Frozen):
    text: str
    options: list[AskOptionRow]


class WorkloadFindings(Frozen):
    workload: str
    points: Count
    feasible: Count
    costed: Count
    meeting_constraints: Count
    frontier: list[str] = Field(description="Point ids on the frontier, fastest first.")
    best_per_accelerator: list[BestPoint]
    best_per_term: list[BestPoint]
    ask: Ask


class UncertaintyNote(Frozen):
    scope: str
    seed: Count
    samples: Count
    distributions: dict[str, str]


class SweepDocument(Frozen):
    schema_: Literal["procure.sweep/v1"] = Field(alias="schema")
    procure_version: str
    title: str
    as_of: date
    currency: str
    cost_basis: Optional[Literal["present_value", "run", "commitment"]] = Field(
        description="The basis sweep.yaml sets for every workload; null: each workload's own.")
    sweep_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="Of the sweep.yaml bytes.")
    workloads: list[WorkloadRow]
    accelerators: list[AcceleratorRow]
    terms: list[TermRow]
    constraints: ConstraintsRow
    uncertainty: UncertaintyNote
    findings: list[WorkloadFindings]
    points: list[SweepPoint]

    def to_data(self) -> dict[str, Any]:
        """Plain data (Decimals stay Decimals, dates stay dates) with the JSON key names."""
        return self.model_dump(mode="python", by_alias=True)
