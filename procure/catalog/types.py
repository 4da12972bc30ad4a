"""Typed catalog entries. Every number carries the source of the entry it came from.

These are plain frozen dataclasses so the pure core (model/, economics/) can use them without
importing YAML or pydantic. Loading and validation live in ``procure.catalog.load``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4")


@dataclass(frozen=True)
class Sourced:
    source: tuple[str, ...]
    as_of: str
    verified: bool = True


@dataclass(frozen=True)
class Accelerator:
    id: str                                   # e.g. "h100-sxm5-80gb"
    vendor: str
    name: str
    architecture: str
    release_year: int
    peak_tflops: dict[str, float]             # dense, per precision in PRECISIONS; missing = unsupported
    hbm_gb: float                             # capacity as marketed ("80 GB"); the model reads it as GiB, as the parts ship
    hbm_bw_tbs: float                         # TB/s (1e12 B/s)
    scale_up_bw_gbs: float                    # GB/s PER DIRECTION per accelerator inside the domain
    scale_up_domain: int                      # accelerators in one scale-up domain (node or rack)
    scale_up_tech: str
    tdp_w: float | None                       # None where the vendor publishes none (TPU, Trainium)
    matmul_ceiling_tflops: dict[str, float]   # measured max achievable matmul (MAMF) per precision
    default_network: str | None               # a networks/ id typical for this part
    sourced: Sourced
    notes: str = ""

    def peak_flops(self, precision: str) -> float:
        """Dense peak in FLOP/s for a matmul precision; fp8 falls back to bf16 where absent."""
        tflops = self.peak_tflops.get(precision)
        if tflops is None and precision == "fp8":
            tflops = self.peak_tflops.get("bf16")
        if tflops is None:
            raise KeyError(f"{self.id} has no {precision} peak")
        return tflops * 1e12


@dataclass(frozen=True)
class Network:
    id: str                                   # e.g. "ib-ndr400"
    name: str
    kind: str                                 # infiniband | roce | efa | tcpx | ici | ...
    scale_out_gbps_per_gpu: float             # Gb/s per direction per GPU (NIC share)
    latency_us: float                         # alpha per inter-node hop used by the alpha-beta model
    rail_optimised: bool
    sourced: Sourced
    notes: str = ""

    @property
    def scale_out_bw_gbs(self) -> float:
        """GB/s per direction per GPU."""
        return self.scale_out_gbps_per_gpu / 8.0


@dataclass(frozen=True)
class MoE:
    experts: int
    top_k: int
    expert_ffn_hidden: int
    shared_experts: int = 0
    dense_layers: int = 0                     # leading layers with a dense MLP instead of MoE
    # Expert capacity as a multiple of the balanced load: tokens over it are dropped and experts
    # are padded to it (Megatron --moe-expert-capacity-factor with pad-to-capacity). None:
    # dropless routing (every token reaches its experts; the hot expert sets the pace).
    capacity_factor: float | None = None
    layer_freq: int = 1                       # every n-th layer after the dense ones is MoE
    shared_expert_ffn_hidden: int | None = None   # None: shared_experts x expert_ffn_hidden
    # Group-limited routing (DeepSeek-V3: 8 groups, top 4): a token's experts come from at most
    # ``group_topk`` of ``groups`` expert groups; laid out one group per node, a token crosses to
    # at most that many nodes (DeepSeek-V3 sec. 2.1.2 "node-limited routing").
    groups: int | None = None
    group_topk: int | None = None

    def moe_layers(self, layers: int) -> int:
        """MoE layers of a ``layers``-layer model (the rest have a dense MLP)."""
        dense = min(self.dense_layers, layers)
        return -(-(layers - dense) // max(1, self.layer_freq))

    @property
    def shared_ffn(self) -> int:
        """Total MLP width of the shared experts (0 without)."""
        if self.shared_experts == 0:
            return 0
        return self.shared_expert_ffn_hidden or self.shared_experts * self.expert_ffn_hidden


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): queries and keys/values go through
    low-rank latents; per head, q and k are ``qk_nope + qk_rope`` wide, v is ``v_head_dim``."""

    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None            # None: queries projected directly from the hidden

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


@dataclass(frozen=True)
class AttentionWindow:
    """Local attention on some layers: ``sliding`` (each query sees the ``size`` keys before it:
    GPT-OSS, Mistral, Gemma) or ``chunked`` (causal inside fixed chunks of ``size``: Llama 4).
    ``global_every`` n: every n-th layer attends to the whole sequence (None: none does)."""

    size: int
    global_every: int | None = None
    kind: str = "sliding"

    @property
    def global_fraction(self) -> float:
        return 1.0 / self.global_every if self.global_every else 0.0


@dataclass(frozen=True)
class ModelArch:
    id: str
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    gated_mlp: bool
    tied_embeddings: bool = False
    moe: MoE | None = None
    max_seq_len: int | None = None
    sourced: Sourced | None = None
    notes: str = ""
    head_dim: int | None = None               # None: hidden / heads (Qwen3, Gemma decouple it)
    mla: MLA | None = None
    attention_window: AttentionWindow | None = None
    # Multi-token prediction modules (DeepSeek-V3: 1): each one more transformer layer, a 2h x h
    # projection and one more pass through the shared output head per token.
    mtp_layers: int = 0

    @property
    def head_width(self) -> int:
        """The per-head width of Q, K and V (MLA: of Q and K)."""
        if self.mla is not None:
            return self.mla.qk_head_dim
        return self.head_dim or self.hidden // self.heads

    @property
    def moe_layer_count(self) -> int:
        return 0 if self.moe is None else self.moe.moe_layers(self.layers)


@dataclass(frozen=True)
class PriceLine:
    accelerator: str                          # catalog id
    term: str                                 # on-demand | reserved-1y | reserved-3y | capacity-block | spot | purchase ...
    price_per_gpu_hour: Decimal | None        # in the book's currency; None for purchase lines
    min_commit_months: int = 0                # a reservation is paid for this long even if unused
    sku: str = ""
    region: str = ""
    # purchase lines (kind purchase): capex per GPU incl. its server share, life, network, support
    capex_per_gpu: Decimal | None = None
    network_capex_per_gpu: Decimal | None = None
    life_years: Decimal | None = None
    residual_fraction: Decimal | None = None  # book value at the end of the depreciation life, fraction of capex
    support_per_gpu_year: Decimal | None = None
    sourced: Sourced = field(default_factory=lambda: Sourced(("",), ""))
    notes: str = ""
    capex_per_node: Decimal | None = None     # chassis, CPUs, memory, NICs of one node, on top of the GPUs
    lead_time_days: float | None = None       # days from order to a usable cluster


@dataclass(frozen=True)
class PriceBook:
    id: str                                   # file stem, e.g. "aws-2026q3"
    provider: str
    kind: str                                 # rental | purchase
    currency: str
    effective: date
    lines: tuple[PriceLine, ...]
    # adders a rental book charges on top of GPU-hours, per GPU-hour, in the book currency
    storage_per_gpu_hour: Decimal = Decimal(0)
    network_per_gpu_hour: Decimal = Decimal(0)
    support_fraction: Decimal = Decimal(0)    # support as a fraction of the GPU bill
    # facility figures of a purchase book, in the book currency (the file's key says `usd`: a book
    # in another currency states its power price in that currency)
    power_per_kwh: Decimal | None = None
    pue: Decimal | None = None
    colo_per_kw_month: Decimal | None = None
    sourced: Sourced = field(default_factory=lambda: Sourced(("",), ""))

    def line(self, accelerator: str, term: str) -> PriceLine | None:
        for entry in self.lines:
            if entry.accelerator == accelerator and entry.term == term:
                return entry
        return None


@dataclass(frozen=True)
class System:
    """A node (or rack) an accelerator ships in; its IT power per GPU drives energy and the facility.

    IT power per GPU = node power / GPUs per node + the scale-out fabric's share per GPU (switches
    and optics), in kW. PUE is applied to it once, by the power line only."""

    id: str
    name: str
    accelerators: tuple[str, ...]
    gpus_per_node: int
    node_power_kw: Decimal
    fabric_w_per_gpu: Decimal
    sourced: Sourced
    notes: str = ""

    @property
    def kw_per_gpu(self) -> Decimal:
        return self.node_power_kw / self.gpus_per_node + self.fabric_w_per_gpu / 1000


@dataclass(frozen=True)
class FxTable:
    base: str                                 # "USD"
    as_of: date
    rates: dict[str, Decimal]                 # units of currency per 1 base unit
    sourced: Sourced

    def convert(self, amount: Decimal, from_ccy: str, to_ccy: str) -> Decimal:
        if from_ccy == to_ccy:
            return amount
        in_base = amount / self.rates[from_ccy]
        return in_base * self.rates[to_ccy]


BATCH_SCALING_PARAMETERS = ("b_star_tokens", "alpha_b", "n_c", "alpha_n", "d_c_tokens", "alpha_d", "b_star_sigma_log")


@dataclass(frozen=True)
class BatchScalingLaw:
    """One family's law as plain numbers (what the pure economics evaluates)."""

    family: str
    name: str
    form: str
    b_star_tokens: float
    alpha_b: float
    n_c: float
    alpha_n: float
    d_c_tokens: float
    alpha_d: float
    b_star_sigma_log: float
    parameter_count: str = "non_embedding"           # which N the loss law reads
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)   # parameter -> its sources
    sourced: Sourced = Sourced(("",), "")
    notes: str = ""

    def values(self) -> dict[str, float]:
        return {name: float(getattr(self, name)) for name in BATCH_SCALING_PARAMETERS}


def family_of(arch: ModelArch) -> str:
    """The family whose batch-scaling law applies to ``arch``: mixture-of-experts or dense."""
    return "moe" if arch.moe is not None else "dense"
