"""What the economics layer receives for one bid: plain frozen values the lead fills.

The step-time model and the measurement parser hand over numbers, not objects, so this layer
never imports ``procure.model`` or ``procure.measure``. Pricing is already converted to the
report currency; every money field is a ``Decimal``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import cast

from procure.assumptions import default
from procure.economics.commitment import StatedCommitment
from procure.economics.statistical import BatchChoice
from procure.economics.tax import Tax


@dataclass(frozen=True)
class MemoryShortfall:
    """Why no plan fits in memory, in numbers: the least memory a plan needs per GPU, what the GPU
    holds, and the share of it the verdict keeps free."""

    needed_gib: float
    capacity_gib: float
    headroom_fraction: float


@dataclass(frozen=True)
class Performance:
    """Step time and FLOPs of one bid, from the model (or from measured logs)."""

    step_time_s: float                      # the step time that drives the economics
    step_time_terms: dict[str, float]       # includes "compute_s" (model-efficiency sensitivity)
    p99_step_time_s: float | None
    tokens_per_step: int
    gpus: int
    model_flops_per_step: float
    hardware_flops_per_step: float
    peak_flops_per_gpu: float               # dense peak at the workload precision, FLOP/s
    modeled_step_time_s: float | None       # the model's own prediction (optimistic/conservative)
    feasible: bool = True
    infeasible_reason: str | None = None
    memory_shortfall: MemoryShortfall | None = None     # set when the reason is memory
    basis: str = "modeled"                  # modeled | measured
    measured_mean_s: float | None = None
    measured_p99_s: float | None = None
    measured_gpus: int | None = None        # the world size the measured logs state, when they state one
    measured_global_batch: int | None = None  # sequences per step the measured logs state
    measured_seq_len: int | None = None     # tokens per sequence the measured logs state
    seq_len: int | None = None              # the bid's own tokens per sequence (for the comparison)
    gemm_ceiling_mfu: float | None = None   # measured matmul ceiling / peak at the workload precision
    error: "StepTimeError | None" = None    # the model's own step-time error (None: calibrated default)


@dataclass(frozen=True)
class StepTimeError:
    """How wrong the step-time model is for this bid's family, as plain numbers, in the model's
    own terms (``procure.model.error_model``): measured = predicted × exp(bias + sigma_log × z).

    ``bias`` is the mean of ln(measured / predicted) over the family's backtests (+0.2: runs take
    22 % longer than predicted); ``sigma_log`` the spread of ln(measured / predicted). A
    ``sigma_log`` of None means "no record: use the documented fallback for a calibrated or an
    uncalibrated accelerator" (assumptions ``step_time_sigma_*``)."""

    calibrated: bool
    sigma_log: float | None = None
    bias: float = 0.0
    family: str = ""
    source: str = ""


@dataclass(frozen=True)
class Pricing:
    """Prices of one bid in the report currency. ``None`` price -> the bid is price-missing."""

    kind: str                               # rental | purchase
    currency: str
    price_per_gpu_hour: Decimal | None      # rental
    min_commit_months: int = 0
    storage_per_gpu_hour: Decimal = Decimal(0)
    network_per_gpu_hour: Decimal = Decimal(0)
    support_fraction: Decimal = Decimal(0)  # of the GPU-hours line
    capex_per_gpu: Decimal | None = None    # purchase
    network_capex_per_gpu: Decimal | None = None
    life_years: Decimal | None = None
    residual_fraction: Decimal | None = None
    support_per_gpu_year: Decimal | None = None
    power_per_kwh: Decimal | None = None    # purchase: from the book unless the workload overrides
    pue: Decimal | None = None
    colo_per_kw_month: Decimal | None = None
    tdp_w: float | None = None              # the GPU's TDP: IT power when no system spec is known
    missing_reason: str | None = None
    # IT power per GPU from the system spec (node power / GPUs + fabric share), kW; its origin
    kw_per_gpu: Decimal | None = None
    power_source: str = ""
    # rental terms (all in the report currency)
    discount_fraction: Decimal = Decimal(0)  # off the price per GPU-hour
    setup_fee: Decimal = Decimal(0)          # one-time
    egress_tb: Decimal = Decimal(0)
    egress_per_tb: Decimal = Decimal(0)
    prepay_fraction: Decimal = Decimal(0)    # of the committed GPU-hours amount, paid at signing
    # purchase terms
    capex_per_node: Decimal | None = None
    gpus_per_node: int = 8
    network_capex: Decimal | None = None     # the whole fabric, on top of network_capex_per_gpu
    staff_per_year: Decimal | None = None    # people to run the cluster, per year
    cost_of_capital: Decimal | None = None   # None -> the assumption
    resale_decline_per_year: Decimal | None = None  # None -> the assumption
    # the market's price of the same hardware new (a purchase book's line, report currency): what
    # resale is worth a share of, whatever this bid paid; None -> the price paid (stated as a note)
    market_capex_per_gpu: Decimal | None = None
    market_network_capex_per_gpu: Decimal | None = None
    market_source: str = ""
    committed_share: Decimal = Decimal(1)    # reservation: share of the term's GPU-hours paid whether used or not
    # the quote, for the negotiator: the quoted currency and report units per quoted unit
    quoted_currency: str = ""
    fx_rate: Decimal = Decimal(1)
    # every money term as quoted: (field, value, currency, report units per quoted unit), what a
    # moved price or exchange rate is converted again from (empty: only the converted figures)
    quoted_amounts: tuple[tuple[str, Decimal, str, Decimal], ...] = ()

    @property
    def it_kw_per_gpu(self) -> Decimal | None:
        """IT power per GPU: the system's when known, else the GPU's TDP (which understates it)."""
        if self.kw_per_gpu is not None:
            return self.kw_per_gpu
        return None if self.tdp_w is None else Decimal(repr(self.tdp_w)) / 1000


def _float(key: str) -> float:
    return float(cast(float, default(key)))


@dataclass(frozen=True)
class Assumptions:
    """Every assumption has a documented default (procure.assumptions); cluster.yaml may override."""

    failures_per_gpu_hour: float = _float("failures_per_gpu_hour")
    restart_min: float = _float("restart_min")
    checkpoint_bytes_per_param: float = _float("checkpoint_bytes_per_param")
    checkpoint_write_gbs: float | None = None             # None -> GPUs x per-GPU share, up to the storage cap
    checkpoint_write_gbs_per_gpu: float = _float("checkpoint_write_gbs_per_gpu")
    storage_write_cap_gbs: float = _float("storage_write_cap_gbs")
    eval_fraction: float = _float("eval_fraction")
    data_stall_fraction: float = _float("data_stall_fraction")
    checkpoint_interval_min: float | None = None          # None -> Young's optimum
    gpu_utilisation_power: float = _float("gpu_utilisation_power")
    power_price_per_kwh: Decimal | None = None            # report currency; None -> the purchase book's figure
    pue: Decimal | None = None                            # the buyer's facility (purchases)
    rental_pue: Decimal = cast(Decimal, default("rental_pue"))   # a provider's, when its book states none
    mfu_ceiling: float = _float("mfu_ceiling")            # the large-run MFU record
    cost_of_capital: Decimal = cast(Decimal, default("cost_of_capital"))
    resale_decline_per_year: Decimal = cast(Decimal, default("resale_decline_per_year"))
    resale_haircut: Decimal = cast(Decimal, default("resale_haircut"))
    resale_transaction_cost: Decimal = cast(Decimal, default("resale_transaction_cost"))
    resale_months_to_sell: int = int(cast(int, default("resale_months_to_sell")))
    leftover_hours_reuse_share: Decimal = cast(Decimal, default("leftover_hours_reuse_share"))
    horizon_months: int | None = None                     # None -> the longest commitment or run
    tax: Tax | None = None                                # workload.tax; None: no tax flows
    horizon_hours: Decimal | None = None                  # the quote's horizon, pinned by compare (else own end)
    value_of_time_per_day: Decimal | None = None          # report currency per day earlier
    step_time_sigma_calibrated: float = _float("step_time_sigma_calibrated")
    step_time_sigma_uncalibrated: float = _float("step_time_sigma_uncalibrated")
    committed_tolerance: float = _float("committed_tolerance")
    months_hours: float = _float("months_hours")
    monte_carlo_samples: int = int(cast(int, default("monte_carlo_samples")))
    seed: int = int(cast(int, default("seed")))


@dataclass(frozen=True)
class Commitment:
    """What the vendor promised, at the bid's conditions; every field optional. When the vendor
    stated other conditions, ``stated`` holds its words and the conversion, and the step times
    here are the converted ones (None when the conversion is not trusted)."""

    step_time_s: float | None = None
    p99_step_time_s: float | None = None
    scaling_efficiency: float | None = None
    stated: StatedCommitment | None = None

    @property
    def converted_from(self) -> str:
        """" (converted from 2.1 s at ...)" for flag reasons; empty when nothing was converted."""
        s = self.stated
        if s is None or not s.comparable or s.conversion_factor == 1.0 and s.conditions == s.bid_conditions:
            return ""
        return f" (converted from {s.describe()})"


@dataclass(frozen=True)
class Phase:
    """A further training phase of the workload (a long-context extension, say): its own step
    time and tokens per step (``performance``) and the tokens it trains on. A phase is billed like
    the main one: time and hours add up."""

    name: str
    performance: Performance
    train_tokens: float


@dataclass(frozen=True)
class BidCase:
    """One bid: everything the economics needs. ``train_tokens`` and ``performance`` are the
    workload's main phase; ``phases`` the further ones (time, hours and cost are summed)."""

    id: str
    vendor: str
    performance: Performance
    pricing: Pricing
    commitment: Commitment
    train_tokens: float
    params: int                             # for the checkpoint size
    deadline_days: float | None = None
    budget: Decimal | None = None            # largest peak cash out, report currency
    max_net_cost: Decimal | None = None      # largest total cost on the ranking basis
    scaling_efficiency: float | None = None  # modeled, from the scaling curve
    lead_time_days: float = 0.0              # days from as_of until the capacity is usable
    batch: BatchChoice | None = None         # the main phase's batch and its token factor (None: 1)
    main_phase: str = "main"
    phases: tuple[Phase, ...] = ()

    def all_phases(self) -> tuple[Phase, ...]:
        """The main phase followed by the further ones."""
        return (Phase(self.main_phase, self.performance, self.train_tokens),) + self.phases

    @property
    def token_factor(self) -> float:
        """Tokens the main phase needs over its train tokens (statistical efficiency of its batch)."""
        return 1.0 if self.batch is None else self.batch.token_factor

    @property
    def total_tokens(self) -> float:
        """Tokens of every phase: what cost per million tokens divides by."""
        return sum(p.train_tokens for p in self.all_phases())
