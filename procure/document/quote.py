"""``procure.quote/v2``: the one versioned result document every output is rendered from.

v2 renamed ``usd_per_million_tokens`` to ``cost_per_million_tokens`` (the figure is in the
report currency, which need not be USD); ``procure.document.upgrade`` reads v1 documents.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, Strict, StrictInt

from procure.money import FX_STALE_DAYS
from procure.document.base import Amount, Count, Frozen, Real, Tokens
from procure.document.bid import BidResult

SCHEMA = "procure.quote/v2"


class InputFingerprint(Frozen):
    path: str = Field(description="File name (no folders: the document must not leak paths).")
    role: Literal["cluster", "measured", "price-book", "response"]
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: Count


class MoESummary(Frozen):
    experts: Count
    top_k: Count
    expert_ffn_hidden: Count
    shared_experts: Count
    dense_layers: Count


class ModelSummary(Frozen):
    id: str
    name: str
    params: Count
    active_params: Count
    layers: Count
    hidden: Count
    heads: Count
    kv_heads: Count
    ffn_hidden: Count
    vocab: Count
    gated_mlp: bool
    moe: Optional[MoESummary]


class BatchRange(Frozen):
    min_seqs: Count
    max_seqs: Count
    min_tokens: Count
    max_tokens: Count


class CriticalBatch(Frozen):
    """The workload's critical batch under its model family's law (`methodology.statistical_efficiency`)."""

    family: str
    params: Real = Field(description="N as the law counts it (non-embedding; for MoE the active non-embedding).")
    reference_batch_tokens: Count = Field(description="The workload's batch, at which train_tokens is stated.")
    critical_batch_tokens: Real = Field(description="B_eff: the harmonic mean of B_crit over the run's tokens.")
    final_critical_batch_tokens: Real = Field(description="B_crit at the end of the run.")
    min_tokens: Real = Field(description="E_min: tokens to the same loss at a batch far below critical.")
    final_loss_nats: Real = Field(description="The law's loss at the end of the run (on its own data's scale).")
    b_star_sigma_log: Real = Field(description="Spread of ln(B_star) the band draws.")


class PhaseSummary(Frozen):
    name: str
    seq_len: Count
    global_batch_seqs: Count
    train_tokens: Tokens = Field(description="Tokens the phase trains on (exact, not rounded).")


class TaxSummary(Frozen):
    rate: Amount = Field(description="Income tax rate of the shield and of the tax on the sale.")
    vat_rate: Amount
    vat_recovered_after_months: Optional[Count] = Field(description="Unset: VAT is a cost.")
    import_duty_rate: Amount
    depreciation: Literal["straight_line"]


class WorkloadSummary(Frozen):
    model: ModelSummary
    seq_len: Count
    global_batch_seqs: Count
    global_batch_tokens: Count
    train_tokens: Tokens = Field(description="Tokens of the whole workload (every phase), exact; cost per million "
                                 "tokens divides by it.")
    precision: str
    deadline_days: Optional[Real] = Field(description="Days from `as_of` the run must finish in, however cluster.yaml "
                                                 "gave it (days or a date); null: no deadline.")
    model_flops_per_token: Real
    attention_flops_convention: str
    global_batch_range: Optional[BatchRange] = Field(None, description="Batches the plan search may choose from.")
    critical_batch: Optional[CriticalBatch] = None
    phases: list[PhaseSummary] = Field(default_factory=list, description="The main phase and the further ones "
                                       "(empty for a single-phase workload).")
    horizon_months: Optional[Count] = Field(None, description="`workload.horizon_months` as given (unset: the "
                                            "horizon is the longest commitment or run among the bids).")
    tax: Optional[TaxSummary] = Field(None, description="`workload.tax` as given (unset: no tax flows).")


class AssumptionRow(Frozen):
    key: str
    label: str
    # an int stays an int, a Decimal (money) stays exact, anything else is a float at precision
    value: Optional[Union[StrictInt, Annotated[Decimal, Strict()], Real]] = Field(union_mode="left_to_right")
    unit: str
    origin: str = Field(description="`default`, or the file that set it.")
    source: str


class FxSummary(Frozen):
    base: str
    as_of: date
    rates: dict[str, Amount]
    source: str
    verified: bool
    age_days: Optional[int] = Field(None, description="Days from the table's date to the report date (`as_of`).")
    warning: Optional[str] = Field(None, description=(
        f"Set when a price was converted with this table and its rates may not hold: the table is more than "
        f"{FX_STALE_DAYS} days older than `as_of`, or its rates are unverified (carried forward). Reports show it on the summary."))


CostBasis = Literal["present_value", "run", "commitment"]


class NamedBid(Frozen):
    """A costed bid the recommendation names beside the recommended one."""

    id: str = Field(description="The bid's id.")
    cost_per_million_tokens: Amount = Field(description="The bid's `cost_per_million_tokens` (on `basis`).")
    currency: str = Field(description="Currency of that cost (the report currency).")
    time_to_train_days: Optional[Real] = Field(description="The bid's time to train, days.")
    days_to_finish: Optional[Real] = Field(description="Lead time + time to train, in days from `as_of`.")
    misses_deadline: bool = Field(description="Whether it carries the `misses-deadline` flag.")


class RecommendedBid(NamedBid):
    """The recommended bid: its figures, and what it needs before the run."""

    vendor: str = Field(description="The bid's vendor, as the bid names it.")
    upfront_capex: Optional[Amount] = Field(description="A purchase's cash out before the run; null: none.")
    lead_time_days: Real = Field(description="Days from the RFQ date until the cluster is usable.")


class CostGap(Frozen):
    """How much more the runner-up costs than the recommended bid (negative: less); one of the two is set."""

    percent: Optional[Real] = Field(description="(runner-up / recommended − 1) × 100; null when the recommended "
                                                "bid costs below a cent per million tokens.")
    amount: Optional[Amount] = Field(description="Runner-up less recommended, per million tokens, when `percent` "
                                                 "is null.")


class FlagFact(Frozen):
    code: str = Field(description="The flag's code (`bids[].flags[].code`).")
    reason: str = Field(description="The flag's reason, in English.")


class BandFacts(Frozen):
    """The recommended bid's P10 and P90 (its `uncertainty`)."""

    cost_p10: Amount = Field(description="P10 cost per million tokens.")
    cost_p90: Amount = Field(description="P90 cost per million tokens.")
    days_p10: Real = Field(description="P10 days to train.")
    days_p90: Real = Field(description="P90 days to train.")
    day_places: Count = Field(description="Decimals the days are stated to (what the sample supports).")


class FlipFact(Frozen):
    """A move of the sensitivity that changes the recommended bid (the fields of its row)."""

    bid: str = Field(description="The bid whose sensitivity row it is.")
    factor: str = Field(description="The factor moved (as `bids[].sensitivity[].factor`).")
    change: Real = Field(description="The relative change tried (0 when `step` or `setting` says the move).")
    step: Optional[Real] = Field(description="An absolute step: days of delivery slip, share of leftover hours reused.")
    subject: Optional[str] = Field(description="For factor `fx`: the currency whose rate moved.")
    setting: Optional[str] = Field(description="For factor `cost_basis`: the basis every bid was ranked on.")
    scope: Literal["bid", "quote"] = Field(description="`bid`: the bid's own input moved; `quote`: an assumption "
                                                       "every bid shares.")


class HeldBid(Frozen):
    """A bid left uncosted, or ranked after others because it breaks a hard constraint."""

    id: str = Field(description="The bid's id.")
    codes: list[str] = Field(description="The flag codes that hold it back.")
    reasons: list[str] = Field(description="Those flags' reasons, in English (empty for an uncosted bid).")


class RecommendationFacts(Frozen):
    """What the recommendation states, decided once by the comparison: the English `text` and every other
    language's paragraph are written from these."""

    compared: Count = Field(description="How many bids were compared.")
    basis: CostBasis = Field(description="The cost basis that ranks.")
    winner: Optional[RecommendedBid] = Field(description="Null: no bid can be costed.")
    deadline_days: Optional[Real] = Field(description="The deadline the verdict is on; null: none.")
    cheapest: Optional[NamedBid] = Field(description="The cheapest costed bid, constraints aside, when it is not "
                                                     "the recommended one.")
    runner_up: Optional[NamedBid] = Field(description="The best-ranked other costed bid.")
    gap: Optional[CostGap] = Field(description="The runner-up against the recommended bid.")
    flags: list[FlagFact] = Field(description="The recommended bid's flags besides missing the deadline.")
    modeled_step_time: bool = Field(description="A flag doubts the commitment: the figures use the modeled step "
                                                "time.")
    band: Optional[BandFacts] = Field(description="The recommended bid's band; null: it has none.")
    flips: list[FlipFact] = Field(description="The moves that change the recommended bid, each once.")
    tested: list[str] = Field(description="The sensitivity factors tried (keys of `bids[].sensitivity[].factor`).")
    uncosted: list[HeldBid] = Field(description="The bids without a cost (infeasible or unpriced), in rank order.")
    constrained: list[HeldBid] = Field(description="Costed bids ranked after the others, in rank order.")
    other_basis: CostBasis = Field(description="The second basis the recommendation names the order on.")
    other_order: list[str] = Field(description="The costed bids, best first, on `other_basis`.")


class Recommendation(Frozen):
    bid: Optional[str] = Field(description="The recommended bid's id; null: none can be costed.")
    text: str = Field(description="The recommendation in English, written from `facts`.")
    facts: Optional[RecommendationFacts] = Field(None, description="What the recommendation states (absent in "
                                                 "documents written before it was recorded).")


class SensitivityTested(Frozen):
    factors: list[str]
    changes: list[Real]
    method: str


class SensitivitySummary(Frozen):
    winner: Optional[str]
    winner_changes_under: list[str]
    tested: SensitivityTested


class SourceRow(Frozen):
    key: str
    kind: str
    label: str
    source: list[str]
    as_of: str
    verified: bool


class KnobRow(Frozen):
    label: str = Field(description="Accelerator id, with `(default knobs)` when none were fitted for it.")
    values: dict[str, Union[Real, str]]


class RatioDefinition(Frozen):
    key: str = Field(description="The field of `bids[].ratios`.")
    label: str
    formula: str
    description: str


class StatisticalEfficiency(Frozen):
    family: str
    name: str
    form: str = Field(description="The law, its symbols and its papers.")
    parameters: dict[str, Real]
    sources: dict[str, list[str]] = Field(description="Each parameter's sources.")
    notes: str
    penalty_flag: Real = Field(description="Token penalty above which a bid is flagged `batch-beyond-critical`.")
    candidate_batches: str = Field(description="How the batches a range is searched at are chosen.")
    commitment_conversion: str = Field(description="How a commitment stated at other conditions is converted.")


class Methodology(Frozen):
    model: str
    fitted_on: list[str]
    fitted_at: str
    fit_mape: dict[str, Real]
    knobs: list[KnobRow]
    notes: list[str]
    ratios: list[RatioDefinition] = Field(default_factory=list, description="Definitions of `bids[].ratios`.")
    statistical_efficiency: Optional[StatisticalEfficiency] = Field(
        None, description="The statistical-efficiency law of the model's family, with each parameter's source.")


class QuoteDocument(Frozen):
    schema_: Literal["procure.quote/v2"] = Field(alias="schema")
    procure_version: str
    title: str
    as_of: date = Field(description="Pins prices, FX rates and the report date.")
    currency: str = Field(description="The report currency; every amount is in it.")
    mfu_convention: str = Field(description="How MFU and HFU are counted, for every bid.")
    inputs: list[InputFingerprint]
    workload: WorkloadSummary
    assumptions: list[AssumptionRow]
    fx: Optional[FxSummary]
    bids: list[BidResult]
    ranking: list[str] = Field(description="Bid ids, best first, on `cost_basis`: bids that break fewer "
                                           "hard constraints (deadline, cash budget, net-cost limit) first.")
    cost_basis: Literal["present_value", "run", "commitment"] = Field(
        "commitment", description="The cost basis that ranks (constraints first): `present_value` (dated cash over "
                                  "one horizon, discounted), `run` (the economic cost of this job on an amortised "
                                  "cluster) or `commitment` (the terms committed to, to the end of the run, "
                                  "undiscounted). Documents older than the present-value basis ranked on `commitment`.")
    rankings: dict[Literal["present_value", "run", "commitment"], list[str]] = Field(
        default_factory=dict, description="Bid ids, best first, on each basis.")
    recommendation: Recommendation
    sensitivity_summary: SensitivitySummary
    sources: list[SourceRow]
    methodology: Methodology

    def to_data(self) -> dict[str, Any]:
        """Plain data (Decimals stay Decimals, dates stay dates) with the JSON key names."""
        return self.model_dump(mode="python", by_alias=True)
