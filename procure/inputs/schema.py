"""The ``procure/v1`` schema of ``cluster.yaml``: frozen pydantic models, unknown keys refused.

Field names are the contract of product.md. Units are in the names. Every optional assumption
has a documented default (see ``procure.economics.inputs.Assumptions``).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, Optional, Union

from pydantic import Field, field_validator, model_validator

from procure.assumptions import BY_KEY as ASSUMPTION_DEFS
from procure.inputs.rules import (PURCHASE_TERMS, RENTAL_TERMS,  # noqa: F401 (the terms: re-exported)
                                  available_rules, batch_rules, bid_start_rules, deadline_rules,
                                  duplicate_ids, pricing_rules, raise_first, workload_rules)
from procure.catalog.arch_entries import ArchitectureSpec, MoESpec  # noqa: F401  (re-exported: the inline model schema)
from procure.sources.bounds import Fraction, FractionBelowOne, LifeYears, Price, Pue, StepSeconds
from procure.sources.fields import CalendarDate, Finite, Money, Strict  # noqa: F401

SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class SoftwareSpec(Strict):
    """The training stack a bid runs (hardware_catalog/software/); default: the mainstream stack of
    the accelerator's vendor, its newest release on or before ``date`` (else the quote's as_of)."""

    stack: Optional[str] = Field(None, description="A stack of `hardware_catalog/software/`: megatron-core (megatron-lm), nemo, megatron-bridge, torchtitan, deepspeed, fsdp, maxtext, primus, hai-llm, metaseq, llm-foundry or other; unset means the vendor's mainstream stack.")
    version: Optional[str] = Field(None, description="A release of that stack in the catalog (e.g. `25.09` for NeMo); unset means the newest released on or before `date`.")
    date: Optional[str] = Field(None, pattern=r"^\d{4}-\d{2}(-\d{2})?$", description="`YYYY-MM` or `YYYY-MM-DD`: pick the newest release on or before it; unset means the quote's `as_of`.")

    @field_validator("version", "date", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        if hasattr(value, "isoformat"):
            return value.isoformat()
        return getattr(value, "text", value) if not isinstance(value, (str, bool)) else value

    @model_validator(mode="after")
    def _known(self) -> SoftwareSpec:
        from procure.catalog.software import check_software

        check_software(self.stack, self.version, self.date)
        return self


# Magnitudes the arithmetic takes (numpy int64 plan grids, float64 FLOPs): far beyond any real run
MAX_TOKENS_PER_STEP = 10**12
MAX_ARCH_DIMENSION = 10**7          # ffn_hidden, expert_ffn_hidden, kv_heads ...
MAX_PARAMS = 10**16
MAX_TRAIN_TOKENS = 1e18


# Smallest values the goodput arithmetic takes (checkpoint time = bytes / bandwidth; a 1e-300 GB/s
# bandwidth makes every checkpoint last forever and the interval infinite): far below any real system
MIN_ASSUMPTIONS = {"checkpoint_write_gbs": (1e-3, "1 MB/s"), "checkpoint_interval_min": (0.01, "under a second")}


def check_assumption_magnitudes(spec: AssumptionsSpec) -> None:
    for name, (low, words) in MIN_ASSUMPTIONS.items():
        value = getattr(spec, name)
        if value is not None and value < low:
            raise ValueError(f"`{name}` {value:g} is below {low:g} ({words}): the goodput arithmetic cannot "
                             "take it")


def check_tokens_per_step(step: Workload | PhaseSpec) -> None:
    """The workload's (or a phase's) batch: sequences x seq_len within what the arithmetic takes."""
    if step.tokens_per_step > MAX_TOKENS_PER_STEP:
        raise ValueError(f"global batch of {step.global_batch_seqs:,} sequences x seq_len "
                         f"{step.seq_len:,} is more than {MAX_TOKENS_PER_STEP:.0e} tokens per step")


def check_magnitudes(workload: Workload) -> None:
    """Refuse values that validate one by one but overflow the model's arithmetic together."""
    check_tokens_per_step(workload)
    arch = workload.architecture
    if arch is None:
        return
    moe = arch.moe
    dims = {"architecture.ffn_hidden": arch.ffn_hidden, "architecture.kv_heads": arch.kv_heads,
            "architecture.moe.expert_ffn_hidden": moe.expert_ffn_hidden if moe else None,
            "architecture.moe.shared_expert_ffn_hidden": moe.shared_expert_ffn_hidden if moe else None,
            "architecture.moe.shared_experts": moe.shared_experts if moe else None,
            "architecture.moe.dense_layers": moe.dense_layers if moe else None}
    for name, value in dims.items():
        if value is not None and value > MAX_ARCH_DIMENSION:
            raise ValueError(f"`{name}` {value:.3g} is beyond what the model's arithmetic takes "
                             f"(at most {MAX_ARCH_DIMENSION:,})")
    ffn = max(arch.ffn_hidden or 4 * arch.hidden, moe.expert_ffn_hidden * (moe.experts + moe.shared_experts)
              if moe else 0)
    params = arch.layers * arch.hidden * (4 * arch.hidden + 3 * ffn) + 2 * arch.vocab * arch.hidden
    if params > MAX_PARAMS:
        raise ValueError(f"the architecture has about {params:.2g} parameters, more than the {MAX_PARAMS:.0e} "
                         "the model's arithmetic takes")


class PlanSpecModel(Strict):
    tp: Optional[int] = Field(None, ge=1, le=1024, description="Tensor-parallel degree.")
    pp: Optional[int] = Field(None, ge=1, le=4096, description="Pipeline-parallel stages.")
    dp: Optional[int] = Field(None, ge=1, le=10_000_000, description="Data-parallel replicas.")
    cp: Optional[int] = Field(None, ge=1, le=1024, description="Context-parallel degree (sequence split across GPUs).")
    ep: Optional[int] = Field(None, ge=1, le=4096, description="Expert-parallel degree (MoE).")
    vpp: Optional[int] = Field(None, ge=1, le=128, description="Virtual pipeline stages per rank (interleaved schedule).")
    micro_batch: Optional[int] = Field(None, ge=1, le=65536, description="Sequences per micro-batch.")
    zero_stage: Optional[Literal[0, 1, 2, 3]] = Field(None, description="ZeRO / distributed-optimizer stage: 0 none, 1 optimizer state, 2 + gradients, 3 + weights.")
    recompute: Optional[Literal["none", "selective", "full"]] = Field(None, description="Activation recomputation.")
    sequence_parallel: Optional[bool] = Field(None, description="Megatron sequence parallelism (with tensor parallelism).")
    tp_comm_overlap: Optional[bool] = Field(None, description="Overlap tensor-parallel communication with compute.")
    etp: Optional[int] = Field(None, ge=1, le=1024, description="Expert tensor parallelism (MoE), separate from attention TP: experts refold over tp x dp x cp (Megatron parallel folding).")
    a2a_overlap: Optional[bool] = Field(None, description="Hide the expert-parallel all-to-all under another micro-batch's compute (Megatron EP A2A overlap, DualPipe).")
    moe_dispatcher: Optional[Literal["alltoall", "deepep", "hybridep"]] = Field(None, description="MoE token dispatcher: `alltoall` (a copy per routed expert), `deepep` or `hybridep` (one copy per destination node).")
    cp_comm: Optional[Literal["p2p", "a2a", "allgather"]] = Field(None, description="Context-parallel communication: `p2p` ring of K/V chunks, `a2a` over heads, `allgather` of K/V.")
    pipeline_schedule: Optional[Literal["1f1b", "dualpipe"]] = Field(None, description="Pipeline schedule: `1f1b` (Megatron's, interleaved when vpp > 1) or `dualpipe` (DeepSeek-V3's bidirectional schedule; needs a stack that runs it, such as `hai-llm`).")
    recompute_modules: Optional[list[Literal["core_attn", "mlp", "moe", "mla_up_proj", "moe_act", "layernorm", "shared_experts"]]] = Field(None, description="Selective recomputation by module (Megatron --recompute-modules); unset: the stack's policy.")
    uneven_stages: Optional[bool] = Field(None, description="A custom pipeline layout whose first and last stages hold fewer layers (Megatron --pipeline-model-parallel-layout).")
    overlap_grad_reduce: Optional[bool] = Field(None, description="Overlap the data-parallel gradient reduction with the backward pass (unset: where the stack can).")
    activation_offload: Optional[bool] = Field(None, description="Move stored activations to host memory in the forward pass and back for the backward.")
    fsdp_shard_group: Optional[int] = Field(None, ge=1, le=10_000_000, description="Hybrid sharding: ZeRO-3/FSDP shards over groups of this many ranks (unset: all of dp x cp).")
    recompute_layers: Optional[int] = Field(None, ge=0, le=100_000, description="Full recomputation of only this many layers per pipeline stage (Megatron --recompute-num-layers).")


class _BatchRule:
    """The batch rule the workload and each further phase share: exactly one of tokens or
    sequences per step, and tokens a whole number of sequences."""

    if TYPE_CHECKING:
        seq_len: int
        global_batch_tokens: Optional[int]
        global_batch: Optional[int]

    def _check_batch(self) -> None:
        raise_first(batch_rules(vars(self)))

    @property
    def global_batch_seqs(self) -> int:
        if self.global_batch is not None:
            return self.global_batch
        return (self.global_batch_tokens or 0) // self.seq_len   # the validator set exactly one of the two

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch_seqs * self.seq_len


class PhaseSpec(_BatchRule, Strict):
    """A further training phase after the workload's main one (a long-context extension, for
    example): its own sequence length, batch and tokens; time to train and cost add up."""

    name: str = Field(min_length=1, max_length=100, description="Name of the phase, unique in the workload.")
    seq_len: int = Field(gt=0, le=10_000_000, description="Tokens per sequence in this phase.")
    global_batch_tokens: Optional[int] = Field(None, gt=0, le=MAX_TOKENS_PER_STEP, description="Tokens per step in this phase; a multiple of its `seq_len`. Give this or `global_batch`.")
    global_batch: Optional[int] = Field(None, gt=0, le=MAX_TOKENS_PER_STEP, description="Sequences per step in this phase. Give this or `global_batch_tokens`.")
    train_tokens: Optional[Finite] = Field(None, gt=0, le=MAX_TRAIN_TOKENS, description="Tokens this phase trains on. Give this or `steps`.")
    steps: Optional[int] = Field(None, gt=0, le=1_000_000_000, description="Optimizer steps of this phase. Give this or `train_tokens`.")
    plan: Optional[PlanSpecModel] = Field(None, description="Plan keys that change in this phase (for example `cp`); they override every bid's plan, and dp then follows the GPUs unless given.")

    @model_validator(mode="after")
    def _one_batch_one_length(self) -> PhaseSpec:
        self._check_batch()
        if (self.train_tokens is None) == (self.steps is None):
            raise ValueError("give exactly one of `train_tokens` or `steps`")
        check_tokens_per_step(self)
        if self.tokens > MAX_TRAIN_TOKENS:
            raise ValueError(f"{self.steps:,} steps of {self.tokens_per_step:,} tokens is more than "
                             f"{MAX_TRAIN_TOKENS:.0e} training tokens")
        return self

    @property
    def tokens(self) -> float:
        return float(self.train_tokens) if self.train_tokens is not None else float(self.steps or 0) * self.tokens_per_step


class BatchRangeSpec(Strict):
    """The global batches the search may choose from, in tokens or in sequences (each end one way);
    `min` defaults to the workload's batch ("grow with the cluster up to `max`")."""

    min_tokens: Optional[int] = Field(None, gt=0, le=MAX_TOKENS_PER_STEP, description="Smallest global batch, tokens (a multiple of `seq_len`); unset: the workload's batch.")
    max_tokens: Optional[int] = Field(None, gt=0, le=MAX_TOKENS_PER_STEP, description="Largest global batch, tokens (a multiple of `seq_len`).")
    min: Optional[int] = Field(None, gt=0, le=10**9, description="Smallest global batch, sequences; unset: the workload's batch.")
    max: Optional[int] = Field(None, gt=0, le=10**9, description="Largest global batch, sequences.")

    @model_validator(mode="after")
    def _one_form_per_end(self) -> BatchRangeSpec:
        if self.min is not None and self.min_tokens is not None:
            raise ValueError("give `min` (sequences) or `min_tokens`, not both")
        if self.max is not None and self.max_tokens is not None:
            raise ValueError("give `max` (sequences) or `max_tokens`, not both")
        if self.max is None and self.max_tokens is None:
            raise ValueError("a batch range needs `max` (sequences) or `max_tokens`")
        return self


class TaxSpec(Strict):
    """Taxes in the cash view (docs/economics.md, "Taxes"): off unless `workload.tax` is given."""

    rate: FractionBelowOne = Field(Decimal(0), description="Income tax rate: the tax shield of deductible costs (rental invoices, opex) and of the depreciation of owned hardware, in the month they arise; the sale's gain over the book value is taxed at it.")
    vat_rate: FractionBelowOne = Field(Decimal(0), description="VAT/GST on capex and on the expenses (rental invoices, opex), paid with them.")
    vat_recovered_after_months: Optional[int] = Field(None, ge=0, le=24, description="Months after payment when VAT is refunded as input tax; unset: VAT is not recovered (a cost, deductible and depreciated).")
    import_duty_rate: FractionBelowOne = Field(Decimal(0), description="Import duty on capex, paid with it; depreciated with it.")
    depreciation: Literal["straight_line"] = Field("straight_line", description="Tax depreciation of owned hardware: straight line to zero over the bid's `life_years`, from delivery, for the months held.")


class Workload(_BatchRule, Strict):
    model: Optional[str] = Field(None, description="A model preset id from `hardware_catalog/models/` (e.g. `llama3-70b`). Give this or `architecture`.")
    architecture: Optional[ArchitectureSpec] = Field(None, description="An inline model architecture instead of a preset.")
    seq_len: int = Field(gt=0, le=10_000_000, description="Tokens per training sequence.")
    global_batch_tokens: Optional[int] = Field(None, gt=0, le=MAX_TOKENS_PER_STEP, description="Tokens per optimizer step; a multiple of `seq_len`. Give this or `global_batch`.")
    global_batch: Optional[int] = Field(None, gt=0, le=MAX_TOKENS_PER_STEP, description="Sequences per optimizer step. Give this or `global_batch_tokens`.")
    train_tokens: Finite = Field(gt=0, le=MAX_TRAIN_TOKENS, description="Tokens to train on in total (e.g. `15e12`).")
    precision: Literal["bf16", "fp16", "fp8"] = Field("bf16", description="Training precision; picks the accelerator peak the model and MFU use.")
    deadline_days: Optional[Finite] = Field(None, gt=0, le=36500, description="Days from `as_of` the run must finish in (lead time plus time to train); later bids get the `misses-deadline` flag.")
    software: Optional[SoftwareSpec] = Field(None, description="The training stack every bid runs unless a bid says otherwise (`hardware_catalog/software/`); unset means the mainstream stack of each accelerator's vendor at `as_of`.")
    deadline: Optional[CalendarDate] = Field(None, description="The deadline as a date, instead of `deadline_days`.")
    cost_basis: Optional[Literal["present_value", "run", "commitment"]] = Field(
        None, description="The cost basis that ranks the bids: `present_value` (the default: every bid's dated cash over the same horizon, discounted at the cost of capital, resale and leftover hours included), `run` (the economic cost of this job on an amortised cluster: rented hours used, or depreciation, financing and opex for the hours used) or `commitment` (the terms committed to, to the end of the run, undiscounted: a reservation in full, or capex + opex + financing − resale at the end of the run). All three are always computed and shown; `procure quote --basis` overrides this.")
    budget: Optional[Money] = Field(None, gt=0, description="Largest cash out, in the report currency: a bid whose peak of cumulative cash out (capex, prepayments and deposits at signing included) is above it gets the `over-budget` flag, with the excess.")
    max_net_cost: Optional[Money] = Field(None, gt=0, description="Largest total cost on the ranking basis, in the report currency (a separate limit from the cash `budget`): a bid above it gets the `over-net-cost` flag, with the excess.")
    tax: Optional[TaxSpec] = Field(None, description="Taxes as dated flows of the cash view: import duty and VAT/GST as rates, the income-tax shield of costs and of straight-line depreciation. Off unless given.")
    horizon_months: Optional[int] = Field(
        None, ge=1, le=240, description="Months from `as_of` over which every bid is costed as dated cash (present value, upfront and peak cash): owned hardware is held to its end and then sold, reservations run their term. Unset: the longest commitment among the bids (a reservation's term after its delivery), or the latest end of a run where none is longer.")
    global_batch_range: Optional[BatchRangeSpec] = Field(
        None, description="Global batches the plan search may choose from (`train_tokens` stays stated at `global_batch_tokens`); a bid at another batch needs the equivalent tokens of the statistical-efficiency law.")
    name: str = Field("main", min_length=1, max_length=100, description="Name of the workload's main phase (the reports list it next to the further `phases`).")
    phases: list[PhaseSpec] = Field(default_factory=list, max_length=20, description="Further training phases after the main one (a long-context extension): time to train and cost add up over all of them.")
    moe_imbalance: Optional[Finite] = Field(None, ge=1.0, le=4.0, description="MoE: the busiest expert-parallel rank's load over the mean (1.0: a perfectly balanced router; default 1.63 for a learned dropless router, fitted on published forced-balance/dropless pairs).")
    fp8_dispatch: Optional[bool] = Field(None, description="MoE: dispatch tokens in fp8 (DeepSeek-V3); unset means when the stack has it and the run trains in fp8.")

    @model_validator(mode="after")
    def _one_model_one_batch(self) -> Workload:
        raise_first(workload_rules(vars(self)))
        names = [self.name] + [p.name for p in self.phases]
        if len(set(names)) != len(names):
            raise ValueError(f"phase names must be unique (the main phase is {self.name!r})")
        check_magnitudes(self)
        self._check_range()
        return self

    def _check_range(self) -> None:
        r = self.global_batch_range
        if r is None:
            return
        for name in ("min_tokens", "max_tokens"):
            value = getattr(r, name)
            if value is not None and value % self.seq_len:
                raise ValueError(f"global_batch_range.{name} {value} is not a multiple of seq_len {self.seq_len}")
        lo, hi = self.batch_range_seqs or (0, 0)
        if lo > hi:
            raise ValueError(f"global_batch_range: the minimum ({lo:,} sequences) is above the maximum "
                             f"({hi:,} sequences)")

    @property
    def batch_range_seqs(self) -> tuple[int, int] | None:
        """(min, max) global batch in sequences the search may choose from; None: the batch is fixed."""
        r = self.global_batch_range
        if r is None:
            return None
        lo = r.min if r.min is not None else (r.min_tokens // self.seq_len if r.min_tokens is not None
                                              else self.global_batch_seqs)
        hi = r.max if r.max is not None else (r.max_tokens or 0) // self.seq_len
        return lo, hi


def _assumption(key: str) -> Any:
    """The schema field of assumption ``key``: bounds and description from procure.assumptions."""
    spec = ASSUMPTION_DEFS[key]
    bounds: dict[str, Any] = {k: v for k, v in (("ge", spec.ge), ("gt", spec.gt), ("le", spec.le), ("lt", spec.lt)) if v is not None}
    return Field(None, description=f"{spec.description} Default: {spec.default_text or spec.default} "
                                   f"({spec.source}).", **bounds)


class AssumptionsSpec(Strict):
    """Overrides of the documented defaults in ``procure.assumptions`` (one field per settable key)."""

    power_usd_per_kwh: Optional[Money] = _assumption("power_usd_per_kwh")
    pue: Optional[Finite] = _assumption("pue")
    rental_pue: Optional[Money] = _assumption("rental_pue")
    failures_per_gpu_hour: Optional[Finite] = _assumption("failures_per_gpu_hour")
    restart_min: Optional[Finite] = _assumption("restart_min")
    checkpoint_write_gbs: Optional[Finite] = _assumption("checkpoint_write_gbs")
    checkpoint_write_gbs_per_gpu: Optional[Finite] = _assumption("checkpoint_write_gbs_per_gpu")
    storage_write_cap_gbs: Optional[Finite] = _assumption("storage_write_cap_gbs")
    eval_fraction: Optional[Finite] = _assumption("eval_fraction")
    data_stall_fraction: Optional[Finite] = _assumption("data_stall_fraction")
    checkpoint_interval_min: Optional[Finite] = _assumption("checkpoint_interval_min")
    checkpoint_bytes_per_param: Optional[Finite] = _assumption("checkpoint_bytes_per_param")
    gpu_utilisation_power: Optional[Finite] = _assumption("gpu_utilisation_power")
    mfu_ceiling: Optional[Finite] = _assumption("mfu_ceiling")
    committed_tolerance: Optional[Finite] = _assumption("committed_tolerance")
    step_time_cv: Optional[Finite] = _assumption("step_time_cv")
    monte_carlo_samples: Optional[int] = _assumption("monte_carlo_samples")
    seed: Optional[int] = _assumption("seed")
    cost_of_capital: Optional[Money] = _assumption("cost_of_capital")
    resale_decline_per_year: Optional[Money] = _assumption("resale_decline_per_year")
    value_of_time_per_day: Optional[Money] = _assumption("value_of_time_per_day")
    resale_haircut: Optional[Money] = _assumption("resale_haircut")
    resale_transaction_cost: Optional[Money] = _assumption("resale_transaction_cost")
    resale_months_to_sell: Optional[int] = _assumption("resale_months_to_sell")
    leftover_hours_reuse_share: Optional[Money] = _assumption("leftover_hours_reuse_share")

    @model_validator(mode="after")
    def _arithmetic(self) -> AssumptionsSpec:
        check_assumption_magnitudes(self)
        return self




class PricingSpec(Strict):
    kind: Literal["rental", "purchase"] = Field("rental", description="`rental` (GPU-hours) or `purchase` (capex, life, facility).")
    price_book: Optional[str] = Field(None, description="A price book id from `price_books/` (file name without `.yaml`).")
    term: Optional[str] = Field(None, description="A term of that book (`on-demand`, `reserved-1y`, `purchase`, ...).")
    usd_per_gpu_hour: Optional[Price] = Field(None, description="Inline price per GPU-hour in US dollars, instead of a book.")
    price_per_gpu_hour: Optional[Price] = Field(None, description="Inline price per GPU-hour in `currency`, instead of a book.")
    currency: Optional[str] = Field(None, pattern=r"^[A-Z]{3}$", description="Currency of `price_per_gpu_hour` and of every inline money term (ISO 4217); unset: the book's currency, else USD.")
    # rental terms (inline, or on top of a book's line; in `currency`)
    min_commit_months: Optional[int] = Field(None, ge=0, le=120, description="Rental: minimum billed months (replaces the book line's).")
    discount_fraction: Optional[FractionBelowOne] = Field(None, description="Rental: discount off the price per GPU-hour.")
    prepay_fraction: Optional[Fraction] = Field(None, description="Rental: share of the committed GPU-hours amount paid at signing; the commitment basis charges its cost of capital over half the term.")
    storage_per_gpu_hour: Optional[Money] = Field(None, description="Rental: storage charged per GPU-hour billed (replaces the book's adder).")
    network_per_gpu_hour: Optional[Money] = Field(None, description="Rental: network charged per GPU-hour billed (replaces the book's adder).")
    support_fraction: Optional[Fraction] = Field(None, description="Rental: support as a fraction of the GPU-hours amount (replaces the book's).")
    # one-time charges, either kind
    setup_fee: Optional[Money] = Field(None, description="One-time setup fee, on both bases.")
    egress_tb: Optional[Money] = Field(None, description="Terabytes moved out of the provider (with `egress_per_tb`).")
    egress_per_tb: Optional[Money] = Field(None, description="Price per TB of egress.")
    # purchase terms (inline, or replacing a purchase book's figures)
    capex_per_gpu: Optional[Money] = Field(None, description="Purchase: capex per GPU, its share of the server included unless `capex_per_node` is given.")
    capex_per_node: Optional[Money] = Field(None, description="Purchase: capex per node on top of the GPUs (chassis, CPUs, memory, NICs).")
    network_capex_per_gpu: Optional[Money] = Field(None, description="Purchase: fabric capex per GPU.")
    network_capex: Optional[Money] = Field(None, description="Purchase: fabric capex for the whole cluster (switches, optics, cables).")
    life_years: Optional[LifeYears] = Field(None, description="Purchase: depreciation life (the run basis depreciates over it).")
    residual_fraction: Optional[Fraction] = Field(None, description="Purchase: book value at the end of the life, as a fraction of capex (straight-line depreciation).")
    resale_decline_per_year: Optional[FractionBelowOne] = Field(None, description="Purchase: market resale value falls as (1 − this)^years (the commitment basis credits it at the end of the run); unset: the assumption.")
    power_per_kwh: Optional[Money] = Field(None, description="Purchase: electricity price per kWh, in the pricing's currency (wins over the workload's `power_usd_per_kwh`; both given and different: a note names both).")
    pue: Optional[Pue] = Field(None, description="Purchase: facility PUE, applied once, to power (wins over the workload's `pue`; both given and different: a note names both).")
    colo_per_kw_month: Optional[Money] = Field(None, description="Purchase: colocation per kW of IT load per month (no PUE).")
    kw_per_gpu: Optional[Money] = Field(None, gt=0, le=100, description="IT power per GPU in kW, instead of the catalog system's (node power / GPUs + fabric share).")
    staff_per_year: Optional[Money] = Field(None, description="Purchase: people to run the cluster, per year.")
    support_per_gpu_year: Optional[Money] = Field(None, description="Purchase: support contract per GPU per year.")
    cost_of_capital: Optional[Fraction] = Field(None, description="Purchase: annual cost of capital for this bid; unset: the assumption.")

    @model_validator(mode="after")
    def _book_or_inline(self) -> PricingSpec:
        raise_first(pricing_rules(vars(self)))
        for name in ("usd_per_gpu_hour", "price_per_gpu_hour"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"`{name}` must be above zero (the cost per token divides by it)")
        return self


class ServiceCreditSpec(Strict):
    """What a breached commitment costs the vendor: a share of the invoice per breached figure."""

    percent_per_breach: Finite = Field(gt=0, le=100, description="Percent of the invoice credited for each committed figure the acceptance test finds breached.")
    cap_percent: Optional[Finite] = Field(None, gt=0, le=100, description="The most credited for one acceptance test, in percent of the invoice; unset: no cap below 100%.")

    @model_validator(mode="after")
    def _cap_covers_one(self) -> ServiceCreditSpec:
        if self.cap_percent is not None and self.cap_percent < self.percent_per_breach:
            raise ValueError("`cap_percent` is below `percent_per_breach`: one breach would already exceed the cap")
        return self


class CommittedSpec(Strict):
    """What the vendor commits; optionally the conditions its step times were measured at (the
    global batch in tokens or sequences, the sequence length, the precision). Conditions not
    given are the workload's; procure converts to the workload's conditions with the model."""

    step_time_s: Optional[StepSeconds] = Field(None, description="Committed mean step time.")
    p99_step_time_s: Optional[StepSeconds] = Field(None, description="Committed 99th-percentile step time (checked against measured logs: `sla-breach`).")
    scaling_efficiency: Optional[Finite] = Field(None, gt=0, le=1.5, description="Committed scaling efficiency (throughput per GPU at this size over a small reference).")
    global_batch_tokens: Optional[int] = Field(None, gt=0, le=10**12,
                                               description="The global batch the committed step times were measured at, in tokens (a multiple of the sequence length); unset: the bid's.")
    global_batch: Optional[int] = Field(None, gt=0, le=10**9, description="The same in sequences.")
    seq_len: Optional[int] = Field(None, gt=0, le=10_000_000, description="The sequence length they were measured at; unset: the workload's.")
    precision: Optional[Literal["bf16", "fp16", "fp8"]] = Field(None, description="The precision they were measured at; unset: the workload's.")
    service_credit: Optional[ServiceCreditSpec] = Field(None, description="What a breach found by `procure accept` costs the vendor (percent of the invoice per breached figure).")

    @model_validator(mode="after")
    def _one_batch(self) -> CommittedSpec:
        if self.global_batch_tokens is not None and self.global_batch is not None:
            raise ValueError("give `global_batch_tokens` or `global_batch` (sequences), not both")
        if self.has_conditions and self.step_time_s is None and self.p99_step_time_s is None:
            raise ValueError("conditions (batch, seq_len, precision) describe a committed step time: give "
                             "`step_time_s` or `p99_step_time_s`")
        return self

    @property
    def has_conditions(self) -> bool:
        return any(v is not None for v in (self.global_batch_tokens, self.global_batch, self.seq_len, self.precision))

    def figures(self) -> dict[str, Any]:
        """The committed figures alone (what the economics' Commitment takes)."""
        return {"step_time_s": self.step_time_s, "p99_step_time_s": self.p99_step_time_s,
                "scaling_efficiency": self.scaling_efficiency}


class Bid(Strict):
    id: str = Field(pattern=SLUG.pattern, description="Unique id of the bid (letters, digits, `.`, `_`, `-`; up to 64 characters).")
    vendor: str = Field(min_length=1, max_length=200, description="Who offers it, as printed in the reports.")
    accelerator: str = Field(description="An accelerator id from `hardware_catalog/accelerators/` (e.g. `h100-sxm5-80gb`).")
    gpus: int = Field(gt=0, le=10_000_000, description="Accelerators offered.")
    network: Optional[str] = Field(None, description="A network id from `hardware_catalog/networks/`; unset means the accelerator's `default_network`.")
    pricing: PricingSpec = Field(description="How the bid is priced: a price-book line or an inline price.")
    committed: CommittedSpec = Field(CommittedSpec(), description="What the vendor promised; every field optional.")
    plan: Union[Literal["auto"], PlanSpecModel] = Field("auto", description="`auto` searches the parallel plan; a mapping fixes some or all of it (unset keys are searched).")
    measured: list[str] = Field(default_factory=list, max_length=10_000, description="Measured logs or traces of this offer (paths relative to the cluster.yaml folder); their step time replaces the model's.")
    software: Optional[SoftwareSpec] = Field(None, description="The training stack this bid runs, over the workload's: the plan search only proposes what it can run.")
    lead_time_days: Optional[Finite] = Field(None, ge=0, le=3650, description="Days from `as_of` until the capacity is usable; training starts then. Unset: the price line's lead time, else usable on `as_of`.")
    available_from: Optional[CalendarDate] = Field(None, description="The date the capacity is usable, instead of `lead_time_days`.")

    @model_validator(mode="after")
    def _one_start(self) -> Bid:
        raise_first(bid_start_rules(vars(self)))
        return self

    @field_validator("vendor")
    @classmethod
    def _printable(cls, value: str) -> str:
        value = "".join(ch for ch in value if ch.isprintable() or ch == " ").strip()
        if not value:
            raise ValueError("must contain visible characters (it holds only invisible or control characters)")
        return value


class Cluster(Strict):
    schema_: Literal["procure/v1"] = Field(alias="schema", description="Schema version of the file; `procure/v1` is the only one.")
    title: str = Field(min_length=1, max_length=300, description="Title of the RFQ; the report title and the report file name (slugified).")
    as_of: CalendarDate = Field(description="Date that pins the price books, the FX table and the report date: same inputs, same report.")
    currency: str = Field("USD", pattern=r"^[A-Z]{3}$", description="Report currency (ISO 4217). Books and inline prices in other currencies are converted with the FX table of `as_of`.")
    workload: Workload = Field(description="What is trained: model, batch, tokens, precision, deadline.")
    assumptions: AssumptionsSpec = Field(AssumptionsSpec(), description="Overrides of the economics and reliability defaults.")
    price_books: list[str] = Field(default_factory=list, max_length=100,
                                   description="Folders of your own price books (same file format as `price_books/`), relative to this file; their ids must be new.")
    bids: list[Bid] = Field(min_length=1, max_length=1000, description="The bids to compare (1 to 1,000), each a vendor's offer of accelerators, network and price.")

    @model_validator(mode="after")
    def _dates_after_as_of(self) -> Cluster:
        raise_first(deadline_rules(self.as_of, self.workload.deadline)
                    + [b for bid in self.bids for b in available_rules(self.as_of, bid.id, bid.available_from)])
        return self

    @property
    def deadline_days(self) -> float | None:
        """The deadline in days from as_of, whichever way it was given."""
        w = self.workload
        if w.deadline is not None:
            return float((w.deadline - self.as_of).days)
        return w.deadline_days

    def lead_time_days(self, bid: Bid) -> float | None:
        """Days from as_of until the bid's capacity is usable, when the bid says."""
        if bid.available_from is not None:
            return float((bid.available_from - self.as_of).days)
        return bid.lead_time_days

    @field_validator("bids")
    @classmethod
    def _unique_ids(cls, bids: list[Bid]) -> list[Bid]:
        raise_first([broken for _i, _first, broken in duplicate_ids([bid.id for bid in bids])])
        return bids


class RequestCluster(Cluster):
    """A cluster.yaml read for ``procure rfq``: the workload, before any bid has arrived."""

    bids: list[Bid] = Field(default_factory=list, max_length=1000, description="Bids already received (none is fine for an RFQ).")
