"""The typed result of one bid in ``procure.quote/v2``: every field has one producer.

Producers: the inputs (identity, hardware, pricing as quoted), the step-time model (plan,
terms, memory, FLOPs, scaling), measure (measured step times), economics (throughput, goodput,
time, cost, flags, band, sensitivity) and compare (rank). ``assemble`` fills each field once.
"""

from __future__ import annotations

from datetime import date
from typing import Literal, Optional, Union

from decimal import Decimal

from pydantic import Field

from procure.economics.commitment import MAX_FACTOR, MAX_SEQ_RATIO   # the limits the text states
from procure.document.base import Amount, Count, Degree, Frozen, Real, Tokens


class AcceleratorRef(Frozen):
    id: str = Field(description="Catalog id of the accelerator.")
    name: str
    peak_tflops: Real = Field(description="Dense peak at the workload precision, TFLOP/s.")
    hbm_gb: Real = Field(description="HBM capacity as marketed, GB.")
    tdp_w: Optional[Real] = Field(description="Thermal design power, W (null where unpublished).")


class NetworkRef(Frozen):
    id: str
    name: str
    scale_out_gbps_per_gpu: Real = Field(description="Inter-node bandwidth per GPU, Gb/s per direction.")


class QuotedPrice(Frozen):
    key: str = Field(description="The pricing term: price_per_gpu_hour, capex_per_gpu, setup_fee, power_per_kwh, ...")
    label: str
    unit: str = Field(description="What one unit of the price buys: GPU-h, GPU, node, kWh, kW-month, TB, fee, ...")
    quoted: Amount = Field(description="The price as quoted, in `currency`.")
    currency: str = Field(description="The currency it was quoted in.")
    fx_rate: Amount = Field(description="Report-currency units per quoted unit (12 significant digits).")
    converted: Amount = Field(description="quoted × fx_rate in the report currency, rounded half away from zero "
                                          "to 1e-6: the figure the cost lines use.")
    origin: str = Field(description="`price book <id>` or `cluster.yaml` (an inline term).")


class PricingRef(Frozen):
    kind: Literal["rental", "purchase"]
    price_book: Optional[str] = Field(description="Price book id, null for an inline price.")
    term: Optional[str]
    price_per_gpu_hour: Optional[Amount] = Field(
        description="Rental price per GPU-hour in the report currency (converted when quoted in another).")
    book_currency: str = Field(description="Currency the price was quoted in.")
    fx_rate: Amount = Field(description="Report-currency units per unit of the quoted currency.")
    min_commit_months: Count
    capex_per_gpu: Optional[Amount] = Field(description="Purchase: capex per GPU in the report currency.")
    missing_reason: Optional[str]
    quoted: list[QuotedPrice] = Field(default_factory=list, description=(
        "Every price of the bid as quoted (value, currency, rate, origin) and as converted; a workbook "
        "keeps `quoted` as the input and converts it with a formula over `fx_rate`."))
    fx_as_of: Optional[date] = Field(None, description="Date of the FX table the rates come from.")
    terms: dict[str, Amount] = Field(default_factory=dict, description=(
        "The terms in force that are not prices: min_commit_months, discount_fraction, prepay_fraction, "
        "support_fraction, egress_tb, life_years, residual_fraction, resale_decline_per_year, pue, "
        "kw_per_gpu, cost_of_capital (those given by the book or cluster.yaml)."))


class Plan(Frozen):
    tp: Degree
    pp: Degree
    dp: Degree
    cp: Degree
    ep: Degree
    vpp: Degree
    micro_batch: Degree
    zero_stage: Literal[0, 1, 2, 3]
    recompute: Literal["none", "selective", "full"]
    sequence_parallel: bool
    tp_comm_overlap: bool
    overlap_grad_reduce: bool
    activation_offload: Optional[bool] = Field(None, description="Activations offloaded to host memory.")
    fsdp_shard_group: Optional[Count] = Field(None, description="Hybrid sharding: ranks one FSDP shard spans.")
    recompute_layers: Optional[Count] = Field(None, description="Layers per stage recomputed (partial recompute).")
    etp: Optional[Count] = Field(None, description="Expert tensor parallelism (separate from attention TP; MoE).")
    a2a_overlap: Optional[bool] = Field(None, description="EP all-to-all hidden under another micro-batch's compute.")
    moe_dispatcher: Optional[Literal["alltoall", "deepep", "hybridep"]] = Field(
        None, description="MoE token dispatcher: one copy per routed expert, or deduplicated per node.")
    cp_comm: Optional[Literal["p2p", "a2a", "allgather"]] = Field(
        None, description="Context-parallel communication: p2p ring, all-to-all over heads, or all-gather of K/V.")
    uneven_stages: Optional[bool] = Field(None, description="A custom pipeline layout lightens the output stage.")
    recompute_modules: Optional[list[str]] = Field(None, description="Modules re-run by selective recomputation.")


class SoftwareRef(Frozen):
    stack: str = Field(description="Training stack (megatron-core, nemo, torchtitan, deepspeed, ...).")
    version: str
    released: str
    features: list[str] = Field(description="Features the plan search may use with this release.")
    attention_kernel: str


class FamilyError(Frozen):
    family: str = Field(description="Evaluation family whose backtest residuals set the error.")
    bias: Real = Field(description="Mean of ln(measured / predicted) on that family's backtests.")
    sigma_log: Real = Field(description="Spread of ln(measured / predicted) for a run from a source the fit never "
                                        "saw: cross-validated by leaving one source family out at a time (plus "
                                        "the between-source spread when `unseen_stack` is set).")
    n: Count = Field(description="Backtest runs behind it (0: a default for an uncalibrated part).")
    unseen_stack: str = Field("", description="The bid's stack and release year (`<stack> <year>`) when no fit "
                                              "run used them: the spread then includes the between-source spread. "
                                              "Empty: the fit saw them, or the bid states no stack.")


class Calibration(Frozen):
    accelerator: str
    fitted: bool = Field(description="Whether the step-time knobs were fitted for this accelerator.")
    fitted_on: list[str]
    step_time_error: FamilyError


class TunedRecipe(Frozen):
    """The nearest published vendor-tuned recipe of the same model, sequence length and precision,
    next to the bid's plan: how the plan search compares with what the vendor tuned."""

    recipe_id: str
    recipe_source: Optional[str]
    recipe_url: Optional[str]
    recipe_gpus: Count
    recipe_accelerator: str
    recipe_plan: dict[str, Union[Count, bool, str, list[str]]]
    recipe_measured_step_time_s: Real = Field(description="The recipe's published (measured) step time.")
    recipe_predicted_step_time_s: Optional[Real] = Field(description="The model's time for the recipe's own plan.")
    search_plan_at_recipe_scale: Optional[Plan]
    search_step_time_at_recipe_scale_s: Optional[Real]
    search_to_measured: Optional[Real] = Field(
        description="Searched plan's time over the recipe's measured time at the recipe's scale (< 1: the search "
                    "claims to beat the vendor's tuning).")
    bid_plan: Plan
    bid_step_time_s: Real


class ExpertParallel(Frozen):
    """How the experts of an MoE model are laid out and what their all-to-all costs."""

    ep: Count = Field(description="Expert-parallel size: the experts are split over this many ranks.")
    etp: Count = Field(description="Expert tensor parallelism (each expert split over this many ranks).")
    edp: Count = Field(description="Expert-data-parallel size (replicas of each expert).")
    ranks_per_domain: Count = Field(description="EP ranks inside one scale-up domain (node, NVL72 rack).")
    domains: Count = Field(description="Scale-up domains one EP group spans (1: all-to-all over NVLink only).")
    inside_scale_up: bool
    dispatcher: str = Field(description="Token dispatcher: alltoall, deepep or hybridep (deduplicated per node).")
    a2a_overlap: bool = Field(description="All-to-all hidden under another micro-batch's compute.")
    a2a_total_s: Real = Field(description="Dispatch and combine all-to-all per step, hidden or not, s.")
    a2a_exposed_s: Real = Field(description="The part on the critical path (the ep_comm_s term), s.")
    load_imbalance: Real = Field(
        description="The busiest EP rank's routed load over the mean that the step time assumes "
                    "(1.0: force-balanced; capacity factor when tokens drop).")
    load_imbalance_origin: Literal["stated", "fitted-default", "capacity-factor"] = Field(
        description="Where it comes from: workload.moe_imbalance, the default fitted on published "
                    "forced-balance/dropless pairs, or the model's capacity factor.")


class PhaseResult(Frozen):
    """One further phase of the workload (a long-context extension) on this bid."""

    name: str
    seq_len: Count
    global_batch_seqs: Count
    train_tokens: Tokens = Field(description="Tokens the phase trains on (exact, not rounded).")
    plan: Optional[Plan] = Field(description="The plan modeled for the phase; null when none fits.")
    step_time_s: Optional[Real] = Field(description="Modeled step time of the phase, s.")
    time_to_train_days: Optional[Real] = Field(description="The phase's share of the time to train, days.")
    infeasible_reason: Optional[str]


class RunnerUp(Frozen):
    plan: Plan
    step_time_s: Real


class Search(Frozen):
    plans_evaluated: Count = Field(description="Candidate plans the search evaluated (1 for a fixed plan).")
    feasible: Count = Field(description="Of those, the plans that fit in memory.")


class Modeled(Frozen):
    step_time_s: Real
    p50_s: Optional[Real] = None
    p95_s: Optional[Real] = None
    p99_s: Optional[Real] = None


class Conditions(Frozen):
    global_batch_seqs: Count
    global_batch_tokens: Count
    seq_len: Count
    precision: str


class StatedCommitment(Frozen):
    """The commitment as the vendor stated it, at its own conditions, and its conversion."""

    step_time_s: Optional[Real] = Field(description="The committed step time as stated.")
    p99_step_time_s: Optional[Real] = Field(description="The committed P99 as stated.")
    conditions: Conditions = Field(description="What the vendor measured at (conditions it did not state are "
                                               "the bid's; an unstated batch keeps the bid's tokens per step).")
    bid_conditions: Conditions = Field(description="What the bid is evaluated at: its global batch, the "
                                                   "workload's sequence length and precision.")
    modeled_at_stated_s: Optional[Real] = Field(description="The model's step time for this bid at the stated "
                                                            "conditions (null: no plan, or not tried).")
    modeled_at_bid_s: Optional[Real] = Field(description="The model's step time for this bid at its own conditions.")
    conversion_factor: Optional[Real] = Field(description="modeled_at_bid_s / modeled_at_stated_s: the committed "
                                                          "figures are multiplied by it (null: not comparable).")
    comparable: bool = Field(description="False when the conversion is too far to trust (flag `not-comparable`): "
                                         f"no plan at either condition, a factor beyond {MAX_FACTOR:g}x either way, or a "
                                         f"sequence length changed more than {MAX_SEQ_RATIO:g}x.")
    reason: Optional[str] = Field(description="Why the commitment is not comparable.")
    converted_step_time_s: Optional[Real] = Field(description="step_time_s × conversion_factor.")
    converted_p99_step_time_s: Optional[Real] = Field(description="p99_step_time_s × conversion_factor.")


class Committed(Frozen):
    step_time_s: Optional[Real] = Field(None, description="Committed step time at the bid's conditions: as given, "
                                                          "or converted from the vendor's (see `stated`); null "
                                                          "when not comparable.")
    p99_step_time_s: Optional[Real] = Field(None, description="Committed P99 at the bid's conditions.")
    scaling_efficiency: Optional[Real] = None
    stated: Optional[StatedCommitment] = Field(None, description="When the vendor stated the batch, sequence "
                                                                 "length or precision it measured at: its words "
                                                                 "and their conversion.")


class MeasuredSource(Frozen):
    path: str
    format: str
    steps: Optional[Count]
    warmup_excluded: Optional[Count]
    aggregation: Optional[str]


class StepTimeSummary(Frozen):
    mean: Real
    p50: Real
    p95: Real
    p99: Real
    max: Real
    std: Optional[Real] = None
    cv: Optional[Real] = None
    count: Count
    aggregation: Optional[str] = None


class Histogram(Frozen):
    edges_s: list[Real]
    counts: list[Count]


class MeasuredStraggler(Frozen):
    source: str = Field(description="The log (or the logs of one job's ranks) it was found in.")
    rank: Count = Field(description="The rank's id in the job (its global rank).")
    steps: Count = Field(description="Steps the rank ran.")
    times_slowest: Count = Field(description="Steps in which it was the slowest rank (the step waited for it).")
    slow_steps: Count = Field(description="Steps in which it was more than 5% slower than the step's median rank.")
    slowdown: Real = Field(description="Its mean slowdown over the step's median rank (0.06: 6% slower).")


class OutlierStep(Frozen):
    source: str = Field(description="The log it was flagged in.")
    step: Optional[Count] = Field(description="The step number (null where the log does not number steps).")
    step_time_s: Real = Field(description="The step's time, s: slower than the median by more than five robust "
                                          "standard deviations and more than 5% (kept in the statistics).")


class Measured(Frozen):
    sources: list[MeasuredSource]
    step_time_s: Optional[StepTimeSummary] = Field(description="Combined statistics of the measured steps.")
    histogram: Optional[Histogram]
    busbw_gbs: Optional[Real] = Field(description="nccl-tests large-message bus bandwidth, GB/s.")
    busbw_used: bool = Field(description="Whether that bandwidth replaced the catalog's inter-node figure.")
    busbw_note: Optional[str]
    ranks_compared: Optional[Count] = Field(None, description="Ranks the largest per-rank log compares (null: the "
                                                              "logs carry no per-rank times, so no rank can be named).")
    stragglers: list[MeasuredStraggler] = Field(
        default_factory=list, description="Ranks the per-rank logs name as stragglers: more than 5% slower than the "
                                          "step's median rank in at least half of their steps or on average (the "
                                          "first 50, slowest first; empty without per-rank data).")
    outlier_steps: list[OutlierStep] = Field(default_factory=list,
                                             description="Steps flagged as outliers after the warm-up (the first 50).")


class Memory(Frozen):
    fits: bool
    hbm_gib: Real
    used_gib: Optional[Real]
    parts_gib: dict[str, Real]


class Flops(Frozen):
    model_per_step: Real
    hardware_per_step: Real


class ScalingPoint(Frozen):
    gpus: Count
    step_time_s: Real
    tokens_per_s_per_gpu: Real
    efficiency: Real


class Scaling(Frozen):
    reference_gpus: Optional[Count]
    efficiency: Optional[Real] = Field(description="Per-GPU throughput at the bid's size over the reference size.")
    curve: list[ScalingPoint]
    note: str


class Goodput(Frozen):
    fraction: Real
    lost_fraction: Real
    failures_per_gpu_hour: Real
    job_mtti_h: Optional[Real]
    checkpoint_write_s: Real
    checkpoint_interval_min: Optional[Real]
    restart_min: Real
    clamped: bool
    checkpoint_write_gbs: Optional[Real] = Field(None, description="The aggregate write bandwidth the "
                                                 "checkpoints were costed at, GB/s.")
    steady_lost_fraction: Optional[Real] = Field(None, description="Evaluations and data stalls, as a share "
                                                 "of the time failures and checkpoints leave.")


class RealRun(Frozen):
    """The bid's run as published whole pre-training runs went: the model's compute hours with the
    run-level losses and the real-run gap fitted on the whole-run corpus
    (hardware_catalog/whole_runs/; benchmarks/refit_runs.py), and its band. The costs above use
    the model's own time; this is the reading of what labs' runs took."""
    time_to_train_days: Real
    gpu_hours: Real
    p10_gpu_hours: Real
    p90_gpu_hours: Real
    goodput: Real = Field(description="The run-level goodput (interruptions, checkpoint stalls, evaluations, "
                                      "data stalls, instabilities).")
    real_run_factor: Real = Field(description="Published whole runs' time over the model's, losses apart: "
                                              "exp of the fit runs' median ln(published / predicted).")
    fit_runs: Count = Field(description="How many published whole runs the factor was fitted on.")


class CostLine(Frozen):
    key: str
    label: str
    quantity: Amount
    unit: str
    rate: Amount
    amount: Amount = Field(description="cents(quantity × rate × Π factors / divisor).")
    formula: str
    factors: dict[str, Amount]
    divisor: Amount


class Flag(Frozen):
    code: str
    severity: Literal["error", "warning", "info"]
    reason: str
    numbers: dict[str, Real]


class SensitivityRow(Frozen):
    factor: str
    change: Real
    cost_per_million_tokens: Optional[Amount]
    time_to_train_days: Optional[Real]
    rank: Count
    winner_changes: bool
    setting: Optional[str] = Field(None, description="For factor `cost_basis`: the other basis every bid is "
                                                     "ranked on (change is then 0).")
    step: Optional[Real] = Field(None, description="An absolute step instead of a change (change is then 0): "
                                                   "days of delivery slip (`lead_time_slip`), share of the price of "
                                                   "leftover reserved hours reused (`leftover_reuse`).")
    subject: Optional[str] = Field(None, description="For factor `fx`: the quoted currency whose rate moved.")
    scope: Literal["bid", "quote"] = Field("bid", description="`bid`: this bid's own input moved, the others at "
                                                             "base; `quote`: an assumption every bid shares moved.")
    recommended: Optional[str] = Field(None, description="The bid a fresh quote with this input moved recommends.")
    gap: Optional[Amount] = Field(None, description="That quote's runner-up less its recommended bid, ranking "
                                                    "cost per million tokens.")
    gap_change: Optional[Amount] = Field(None, description="`gap` less the base quote's: how far the decision "
                                                           "moved.")


class Band(Frozen):
    p10: Real
    p50: Real
    p90: Real


class MoneyBand(Frozen):
    p10: Amount
    p50: Amount
    p90: Amount


class BandPrecision(Frozen):
    cost_per_million_tokens: Optional[Amount] = Field(description="Quantum the percentiles are rounded to: "
                                                                  "the decade of their standard error.")
    time_to_train_days: Real


class StepTimeError(Frozen):
    sigma_log: Real = Field(description="Spread of ln(measured / predicted) the band draws (0: measured).")
    bias: Real = Field(description="Mean of ln(measured / predicted) in the family's backtests: measured = "
                                   "predicted × exp(bias + sigma_log × z).")
    calibrated: bool = Field(description="Whether the model has fitted knobs for this accelerator.")
    family: str = Field(description="The backtest family the residuals come from (empty: fallback).")
    source: str


class Uncertainty(Frozen):
    seed: Count
    samples: Count
    cost_per_million_tokens: Optional[MoneyBand]
    time_to_train_days: Band
    distributions: dict[str, str]
    checkpoint_interval: str
    basis: Optional[Literal["present_value", "run", "commitment"]] = Field(None, description="The cost basis of the cost band.")
    precision: Optional[BandPrecision] = None
    step_time_error: Optional[StepTimeError] = None


class BasisCost(Frozen):
    basis: Literal["present_value", "run", "commitment"]
    cost_lines: list[CostLine] = Field(description="Every line: amount = cents(quantity × rate × Π factors / divisor).")
    total_cost: Optional[Amount] = Field(description="Sum of the cost lines, report currency (null: not costed).")
    cost_per_million_tokens: Optional[Amount] = Field(description="Total cost / train tokens × 1e6, to 1e-4.")
    billed_hours: Optional[Amount] = Field(description="Wall-clock hours paid for (a reservation's whole term on the "
                                                       "commitment basis).")
    idle_commitment_hours: Amount = Field(description="Billed but unused hours (per GPU, wall clock).")
    time_value: Optional[Amount] = Field(description="Value of time × days to finish, when a value of time is given.")
    ranking_cost_per_million_tokens: Optional[Amount] = Field(
        description="What ranks: (total cost + time value) / train tokens × 1e6.")
    resale_fraction: Optional[Amount] = Field(
        description="Purchase, commitment basis: resale value / capex = (1 − resale_decline_per_year)^(used hours / 8760).")


class CashFlow(Frozen):
    month: Count = Field(description="Months after `as_of` (0: signing); month k ends k × hours per month after it.")
    paid_on: date = Field(description="`as_of` plus the month's hours: the day the flow is paid.")
    amount: Amount = Field(description="Report currency; cash out positive, cash in (resale, reused hours) negative.")
    kind: Literal["capex", "prepayment", "setup", "invoice", "egress", "leftover-hours", "power", "colocation",
                  "support", "staff", "resale", "import-duty", "vat", "vat-refund", "tax-shield", "tax-on-sale"] = Field(
        description="What the flow is; the tax kinds (import duty, VAT and its refund, the income-tax shield of "
                    "costs and depreciation, the tax on the sale) appear only with `workload.tax`.")


class Cash(Frozen):
    """The bid as dated cash over the quote's horizon (docs/economics.md, "Cash over one horizon")."""

    horizon_months: Count = Field(description="The quote's horizon, the same for every bid: `workload.horizon_months`, "
                                              "else the longest commitment or run among the bids.")
    cost_of_capital: Amount = Field(description="Annual rate the flows are discounted at, compounded monthly.")
    nominal_total: Amount = Field(description="Sum of the flows, undiscounted.")
    present_value: Amount = Field(description="Sum of amount × (1 + cost of capital)^(−month / 12), each to the cent.")
    upfront_cash: Amount = Field(description="Cash at signing: capex, prepayment, setup fee (and import duty and VAT "
                                             "at signing, with `workload.tax`).")
    peak_cash_out: Amount = Field(description="The largest cumulative net cash out at the end of any month.")
    resale_fraction: Optional[Amount] = Field(description="Purchase: the sale's cash over capex, after market "
                                                          "decline, used-market haircut and transaction cost.")
    flows: list[CashFlow]


class Delivery(Frozen):
    lead_time_days: Real = Field(description="Days from as_of until the capacity is usable (0 when not given).")
    lead_time_origin: str = Field(description="lead_time_days, available_from, `price book <id>`, or empty "
                                              "(not given: usable on as_of).")
    available_from: date = Field(description="Delivery date: as_of + lead time.")
    days_to_finish: Optional[Real] = Field(description="Lead time + time to train (wall clock), days from as_of.")
    finish_date: Optional[date]
    deadline_date: Optional[date]


class PowerRef(Frozen):
    it_kw_per_gpu: Optional[Amount] = Field(description="Maximum IT power per GPU, kW: node power / GPUs + fabric "
                                                        "share (or the GPU TDP without a system spec).")
    source: str = Field(description="`system:<id>`, `given` (cluster.yaml) or `tdp`.")
    system: Optional[str] = Field(description="Catalog system id.")
    node_power_kw: Optional[Amount]
    gpus_per_node: Optional[Count]
    fabric_w_per_gpu: Optional[Amount]
    utilisation: Amount = Field(description="Average draw / maximum IT power (the power bill only).")
    pue: Amount = Field(description="Applied once, to the power line (not to colocation).")
    pue_given: bool
    price_per_kwh: Optional[Amount]


class Finance(Frozen):
    cost_of_capital: Amount = Field(description="Per year, in force for this bid.")
    resale_decline_per_year: Amount = Field(description="In force for this bid (resale = (1 − decline)^years).")
    months_hours: Amount = Field(description="Hours per billing month (minimum commitments, colocation).")
    nodes: Count = Field(description="ceil(gpus / gpus_per_node): the quantity of the node capex line.")
    gpus_per_node: Count
    market_value_new: Optional[Amount] = Field(
        None, description="Purchase: what the same hardware costs new on the market, report currency: GPUs (with "
                          "their server share) and network at a purchase book's reference prices, a whole fabric "
                          "at the price paid; null without a reference. Resale is a share of this or of the capex "
                          "paid, whichever is lower.")
    market_source: Optional[str] = Field(None, description="The purchase book line the market price comes from; "
                                                           "null when resale follows the price paid.")


class NegotiationLever(Frozen):
    key: Literal["price_per_gpu_hour", "capex_per_gpu", "term_months", "committed_share", "lead_time_days"]
    current: Amount
    proposed: Optional[Amount] = Field(description="The value at which the bid ties its target on the ranking basis "
                                                   "(`aim` ties-target; the longest term, the largest share, to 0.001) "
                                                   "or meets the deadline (`aim` meets-deadline: the latest delivery, "
                                                   "to 0.1 day); null when no value does.")
    unit: str
    aim: Literal["ties-target", "meets-deadline"]


class Negotiation(Frozen):
    basis: Literal["present_value", "run", "commitment"]
    target_bid: Optional[str] = Field(description="The bid to tie: the winner, or the runner-up for the winner.")
    target_cost_per_million_tokens: Optional[Amount]
    price_key: Optional[str] = Field(description="price_per_gpu_hour (rental) or capex_per_gpu (purchase).")
    current_price: Optional[Amount] = Field(description="Report currency.")
    break_even_price: Optional[Amount] = Field(description="The price at which the bid ties the target on the "
                                                           "ranking basis, report currency, to 1e-6.")
    break_even_quoted: Optional[Amount] = Field(description="The same in the quoted currency.")
    quoted_currency: str
    break_even_change: Optional[Real] = Field(description="break_even_price / current_price − 1.")
    step_time_s: Optional[Real]
    step_time_to_win_s: Optional[Real] = Field(description="The slowest step time at which the bid ties the target.")
    step_time_to_win_mfu: Optional[Real]
    credible_step_time_s: Optional[Real] = Field(description="The fastest commitment that is neither "
                                                             "`implausible` nor `optimistic`.")
    credible_bound: Optional[str]
    idle_commitment_hours: Amount
    idle_commitment_cost: Amount = Field(description="Commitment basis: the idle-commitment line.")
    notes: list[str]
    kind: Optional[Literal["on-demand", "reservation", "purchase"]] = Field(
        None, description="The kind of bid, which decides its levers.")
    levers: list[NegotiationLever] = Field(
        default_factory=list, description="The terms that matter for this kind of bid, the main one first: the "
                                          "price (on demand); the term and the committed share (reservation); the "
                                          "capex per GPU and the delivery (purchase).")


class Ratios(Frozen):
    """The ratios a bid committee reads, over the reported terms (definitions in
    `methodology.ratios`); null where a denominator is zero."""

    bubble_ratio: Optional[Real] = Field(description="bubble_s / modeled step time.")
    comm_to_compute: Optional[Real] = Field(
        description="(exposed + hidden communication) / compute_s; exposed = tp_comm_s + pp_comm_s + "
                    "dp_comm_exposed_s + ep_comm_s + cp_comm_s, hidden = max(comm_overlappable_s − comm_exposed_s, 0).")
    overlap_efficiency: Optional[Real] = Field(description="hidden communication / comm_overlappable_s.")
    exposed_comm_share: Optional[Real] = Field(description="exposed communication / modeled step time.")
    effective_tokens_per_s_per_gpu: Optional[Real] = Field(
        description="tokens per step / step time (the one that drives the economics) / GPUs × goodput / token "
                    "factor: tokens toward the target per GPU per second of wall clock.")


class BatchCandidate(Frozen):
    global_batch_seqs: Count
    global_batch_tokens: Count
    chosen: bool
    feasible: bool
    reason: Optional[str] = Field(description="Why no plan runs at this batch.")
    plan: Optional[Plan]
    step_time_s: Optional[Real] = Field(description="The best plan's modeled step time at this batch.")
    token_penalty: Optional[Real] = Field(description="Extra tokens to the target at this batch over the "
                                                      "workload's (negative: fewer).")
    time_to_target_days: Optional[Real] = Field(description="Train tokens × (1 + token_penalty) / throughput / "
                                                            "goodput at this batch, days.")
    ratios: Optional[Ratios]


class BatchSection(Frozen):
    """The global batch the bid is evaluated at and its statistical efficiency."""

    global_batch_seqs: Count
    global_batch_tokens: Count
    origin: Literal["workload", "range"] = Field(description="`workload`: the stated batch; `range`: chosen by "
                                                             "the search within `workload.global_batch_range`.")
    reference_batch_tokens: Count = Field(description="The workload's batch, at which train_tokens is stated.")
    token_factor: Real = Field(description="(1 + B / B_eff) / (1 + B_ref / B_eff): tokens to the target over "
                                           "train_tokens (exactly 1 at the workload's batch).")
    token_penalty: Real = Field(description="token_factor − 1.")
    critical_batch_tokens: Optional[Real] = Field(description="B_eff of `workload.critical_batch` (null: no law "
                                                              "for the model's family).")
    note: Optional[str] = None
    candidates: list[BatchCandidate] = Field(description="Every batch the plan search was run at (a range only).")


class TimeToTarget(Frozen):
    """Days and cost to the target loss: the train tokens at the workload's batch, or the equivalent
    tokens at the bid's; the statistical-efficiency penalty on its own line."""

    basis: Literal["present_value", "run", "commitment"] = Field(description="The cost basis of the costs.")
    target_tokens: Tokens = Field(description="The workload's train tokens, every phase (stated at their batches), "
                                  "exact.")
    token_factor: Real = Field(description="The main phase's: its batch is the one chosen or grown.")
    token_penalty: Real
    equivalent_tokens: Tokens = Field(description="target_tokens + the main phase's train tokens × token_penalty: "
                                      "the tokens this bid's run processes, exact.")
    penalty_tokens: Real = Field(description="equivalent_tokens − target_tokens: the penalty in tokens.")
    days_at_target_tokens: Real = Field(description="Days to process target_tokens at this bid's throughput and goodput.")
    penalty_days: Real = Field(description="days − days_at_target_tokens: the statistical-efficiency penalty in days.")
    days: Real = Field(description="Time to target (= time_to_train_days).")
    cost_at_target_tokens: Optional[Amount] = Field(description="Total cost of target_tokens alone, on `basis`.")
    penalty_cost: Optional[Amount] = Field(description="cost − cost_at_target_tokens.")
    cost: Optional[Amount] = Field(description="Total cost to the target (= total_cost).")


class BidResult(Frozen):
    # identity and hardware (inputs)
    id: str
    vendor: str
    accelerator: AcceleratorRef
    gpus: Count
    network: NetworkRef
    pricing: PricingRef
    committed: Committed
    sources: list[str] = Field(description="Keys of the sources appendix this bid's numbers come from.")
    # the step-time model
    plan: Optional[Plan] = Field(description="The plan modeled (searched or given); null when none fits.")
    plan_origin: Literal["auto", "given"]
    search: Search
    runners_up: list[RunnerUp]
    software: Optional[SoftwareRef] = Field(None, description="The software release modeled for this bid.")
    calibration: Optional[Calibration] = Field(None, description="Whether the model is fitted for this accelerator, "
                                                           "and its error on the bid's family.")
    tuned_recipe: Optional[TunedRecipe] = Field(None, description="The nearest published tuned recipe, when the corpus has one.")
    expert_parallel: Optional[ExpertParallel] = Field(
        None, description="The expert-parallel layout and its all-to-all, when the model is MoE and a plan fits.")
    idle_gpus: Count = Field(0, description="GPUs of the bid the plan leaves idle (still billed).")
    phases: list[PhaseResult] = Field(default_factory=list,
                                      description="The workload's further phases (long-context extensions).")
    step_time_terms: dict[str, Real] = Field(
        description="Seconds per step by term; the additive terms sum to the modeled step time.")
    modeled: Optional[Modeled]
    infeasible_reason: Optional[str]
    memory: Memory
    flops: Flops
    tokens_per_step: Count
    scaling: Optional[Scaling]
    # measurement
    measured: Optional[Measured]
    # economics
    step_time_basis: Literal["modeled", "measured"] = Field(
        description="Which step time drives throughput, time and cost.")
    step_time_s: Optional[Real] = Field(description="The step time that drives the economics, s.")
    tokens_per_s: Optional[Real]
    tokens_per_s_per_gpu: Optional[Real]
    mfu: Optional[Real] = Field(description="Model FLOPs utilisation (see `mfu_convention` of the document).")
    hfu: Optional[Real]
    goodput: Optional[Goodput]
    time_to_train_days: Optional[Real] = Field(description="Train tokens × token factor / throughput / goodput, "
                                                           "days (the token factor is 1 at the workload's batch).")
    billed_hours: Optional[Amount]
    energy_mwh: Optional[Amount]
    real_run: Optional[RealRun] = Field(None, description="A modeled bid's run as published whole runs went "
                                        "(null for a measured step time, which is a real run's own).")
    currency: str
    cost_lines: list[CostLine]
    total_cost: Optional[Amount] = Field(description="Sum of the cost lines, report currency.")
    residual_value: Optional[Amount] = Field(description="Purchase: book value left after this run "
                                                         "(capex minus the run basis' depreciation lines).")
    cost_per_million_tokens: Optional[Amount] = Field(
        description="Total cost / train tokens × 1e6, in the report currency.")
    flags: list[Flag]
    uncertainty: Optional[Uncertainty]
    sensitivity: list[SensitivityRow]
    notes: list[str]
    # compare
    rank: Count = Field(description="1 = best on the ranking basis.")
    # both cost bases (economics); the figures above are on `cost_basis`
    cost_basis: Literal["present_value", "run", "commitment"] = Field(
        "commitment", description="The basis of total_cost, cost_lines, billed_hours and cost_per_million_tokens.")
    cost_bases: dict[Literal["present_value", "run", "commitment"], BasisCost] = Field(
        default_factory=dict, description="Every basis for every bid: `present_value` (dated cash over the "
                                          "quote's horizon, discounted: one line per kind of flow), `run` (what this job consumes) and "
                                          "`commitment` (the terms committed to, to the end of the run); null figures when the bid has "
                                          "no cost (price-missing, infeasible).")
    upfront_capex: Optional[Amount] = Field(None, description="Purchase: every capital item bought outright.")
    idle_commitment_hours: Amount = Field(Decimal(0), description="Committed hours the run leaves unused "
                                                                  "(per GPU, wall clock).")
    used_hours: Optional[Amount] = Field(None, description="Wall-clock hours of the run, rounded up to 0.01 h.")
    delivery: Optional[Delivery] = None
    power: Optional[PowerRef] = None
    finance: Optional[Finance] = None
    negotiation: Optional[Negotiation] = None
    batch: Optional[BatchSection] = Field(None, description="The global batch evaluated and its token penalty.")
    ratios: Optional[Ratios] = Field(None, description="Bubble, communication and overlap ratios and the effective "
                                                       "throughput of the bid's plan.")
    time_to_target: Optional[TimeToTarget] = None
    cash: Optional[Cash] = Field(None, description="Dated cash over the quote's horizon, its present value and "
                                                   "cash needs; null when the bid has no cost.")
