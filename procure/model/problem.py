"""The numbers the vectorised core needs, gathered from the catalog types.

Every field is a numpy array: of shape () for one problem (the plan search broadcasts it over its
candidate plans) or (n,) when many problems are evaluated at once (the backtest and the refit:
one row per published run). Units are SI: bytes, B/s, FLOP/s, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from procure.catalog.knobs import DEFAULT_GEMM_TOP, AccelKnobs
from procure.catalog.software import SoftwareStack
from procure.catalog.types import Accelerator, ModelArch, Network
from procure.model import flops
from procure.model.attention import kernel_factor
from procure.model.types import Workload

Vec = npt.NDArray[np.float64]
Num = float | Vec               # a knob: one float, or one per problem row

ACT_BYTES = 2.0                 # activations and TP/PP/CP messages in bf16/fp16 (fp8 too: TE keeps bf16 I/O)
WEIGHT_BYTES = 2.0              # bf16/fp16 model weights
OPTIMIZER_BYTES = 12.0          # fp32 master weights + two Adam moments
OPTIMIZER_STEP_BYTES = 32.0     # HBM traffic of the Adam step per parameter held (read+write states, grads)
# HBM capacities are quoted in binary units: an "80 GB" A100/H100 holds 80 GiB (5 stacks of
# 16 GiB; nvidia-smi 81920 / 81559 MiB), H200 "141 GB" 143771 MiB, B200 "180 GB" 183359 MiB.
HBM_UNIT_BYTES = 2.0 ** 30
# Pre-Hopper NVIDIA parts: Megatron/TE's TP comm-GEMM overlap (userbuffers: all-gather and
# reduce-scatter split into chunks pipelined with the GEMM, driven by copy engines and
# SM-light p2p kernels) is built and supported for Hopper and later; on these parts TP comm
# runs serially after the GEMM it feeds.
NO_TP_OVERLAP_ARCHS = frozenset({"volta", "turing", "ampere", "ada lovelace"})
# fp8 casts, in 2-byte element accesses per GEMM-input element: read bf16 (1) + write fp8 (0.5)
# + the transposed fp8 copy Hopper's fp8 GEMMs need for the weight gradient (0.5). Current
# (per-tensor, just-in-time) scaling reads the input once more for its amax; MXFP8 writes row-
# and column-wise copies with 1-in-32 scales (Transformer Engine's cast_transpose kernels).
FP8_CAST_ACCESSES = {"fp8_delayed": 2.0, "fp8_current": 3.0, "mxfp8": 2.06, "fp8_blockwise": 2.1}
FP8_DEFAULT_RECIPE = "fp8_delayed"
SELECTIVE_POLICIES = ("attention_core", "dots_except_mlp_in", "qkv_proj")
DEFAULT_LOGIT_BYTES = 8.0       # fp32 logits and their gradient in the vocab-parallel cross entropy
PCIE_BW = 25e9                  # B/s host<->device per GPU (PCIe Gen4/5 x16 achieved, shared)
# fp8 MoE dispatch (DeepSeek-V3 sec. 3.3.2; DeepEP/HybridEP fp8 dispatch): 1 byte per element plus
# one fp32 scale per 128-element tile; the combine stays bf16.
FP8_DISPATCH_BYTES = 1.0 + 4.0 / 128.0
# Hot EP rank's load over the mean under dropless routing with a learned (not force-balanced)
# router, fitted by benchmarks/refit.py (calibration.yaml ``moe_imbalance``; a test keeps the two
# equal) on the fit split's only runs published both ways: the Megatron MoE Model Zoo's
# Qwen3-235B long-context rows, 256 H100, EP8, 16k-128k, where dropless routing runs 9-25% slower
# than forced balance (one factor reproduces all four to 0.5%). It is one number for every plan:
# the pairs do not separate how it varies with experts per rank or with training progress.
# A workload may state its own (Workload.moe_imbalance).
DEFAULT_MOE_IMBALANCE = 1.63


def grad_bytes(precision: str, software: SoftwareStack | None) -> float:
    """Gradient bytes per parameter: fp32 main grads (Megatron) or fp32 reduce (FSDP2) for bf16
    and fp8 training unless the stack says otherwise; fp16 runs of 2020-2023 reduce fp16."""
    if precision == "fp16":
        return 2.0
    return 4.0 if software is None or software.fp32_grads else 2.0


def _fp8_params(workload: Workload, software: SoftwareStack | None) -> bool:
    if workload.fp8_params is not None:
        return bool(workload.fp8_params)
    return workload.frozen_base or (software is not None and software.fp8_params)


def uses_dropout(workload: Workload) -> bool:
    if workload.dropout is not None:
        return bool(workload.dropout)
    return workload.attention == "unfused"


@dataclass(frozen=True)
class Problem:
    # architecture
    layers: Vec
    hidden: Vec
    heads: Vec
    kv_heads: Vec
    head_dim: Vec               # attention-kernel head width: mean of the q.k and v widths
    ffn: Vec
    vocab: Vec
    mlp_mats: Vec               # 2 plain, 3 gated
    tied: Vec                   # 1.0 tied embeddings
    experts: Vec                # 0 for dense
    top_k: Vec
    expert_ffn: Vec
    shared_ffn: Vec             # total width of the shared experts (0 without)
    moe_layers: Vec
    moe_freq: Vec               # every n-th layer is MoE (1: all but the dense ones)
    capacity: Vec               # expert capacity factor (token drop, padded); 0: dropless
    imbalance: Vec              # hot EP rank's load over the mean under dropless routing
    group_limit: Vec            # node/group-limited routing: at most this many groups per token (0: none)
    block_routing: Vec          # 1.0: each token goes to one aligned block of top_k consecutive experts
    attn_in: Vec                # weights producing Q, K, V per layer (MLA: the latent chains)
    attn_out: Vec               # output projection weights per layer
    mla_up: Vec                 # MLA up-projection weights (recomputed by "mla_up_proj"); 0 without MLA
    mla_latent: Vec             # MLA latents stored per token (q_lora + kv_lora + rope)
    qk_width: Vec               # heads x q.k head width
    v_width: Vec                # heads x v head width
    kv_width: Vec               # K and V elements per token (what a CP ring exchanges)
    win_size: Vec               # local-attention window (0: none)
    win_global: Vec             # share of layers that attend globally
    win_chunked: Vec            # 1.0 chunked (Llama 4), 0.0 sliding
    mtp: Vec                    # multi-token-prediction modules (last stage)
    # workload
    seq: Vec
    batch: Vec                  # global batch in sequences
    flushes: Vec                # pipeline schedules (fill and drain) per step: 1, or the GA steps
    flash: Vec                  # 1.0 fused causal attention, 0.0 unfused (s x s in HBM)
    dropout: Vec                # 1.0 when dropout masks are kept for the backward
    fp8: Vec                    # 1.0 fp8 linear-layer GEMMs (TE saves the fp8 cast of GEMM inputs)
    fp8_head: Vec               # 1.0 when the LM head runs in fp8 too
    fp8_cast: Vec               # element accesses per GEMM-input element for the fp8 casts (0 without)
    grad_bytes: Vec
    frozen: Vec                 # 1.0 LoRA-style: base weights frozen (no wgrad, grads, optimizer)
    weight_bytes: Vec           # bytes per model weight held for compute (2; 1 with fp8 parameters)
    ckpt_interval: Vec          # steps; 0 = no checkpoint term
    storage_bw: Vec             # B/s aggregate
    ckpt_async: Vec
    data_stall_s: Vec
    # hardware
    n_gpus: Vec
    peak: Vec                   # FLOP/s of the 16-bit matmul (attention core, LM head)
    lin_peak: Vec               # FLOP/s of the linear layers' GEMMs (fp8 peak under fp8)
    hbm_bytes: Vec
    hbm_bw: Vec                 # B/s
    up_bw: Vec                  # B/s per direction, raw
    gpn: Vec                    # GPUs per node (scale-up domain)
    nic_bw: Vec                 # B/s per GPU per direction, raw
    lat_net: Vec                # s per inter-node hop
    nic_measured: Vec           # 1.0 when nic_bw is a measured, already-achieved figure
    tp_overlap_ok: Vec          # 1.0 where TP comm can overlap GEMMs (see NO_TP_OVERLAP_ARCHS)
    # software
    attn_kernel: Vec            # the stack's attention kernel relative to the reference (attention.py)
    host_factor: Vec            # host time per layer-pass relative to the fitted launch overhead
    zero3_prefetch: Vec         # share of ZeRO-3 gathers the stack's prefetch can hide
    sel_mode: Vec               # "selective" keeps: 0 all but the core (Megatron), 1 GEMM outputs, 2 Q/K/V
    logit_bytes: Vec            # bytes per logit held by the cross entropy
    dispatch_bytes: Vec         # bytes per element of the MoE dispatch (2 bf16; about 1 in fp8)
    fp32_params: Vec            # 1.0 when FSDP shards fp32 parameters (optimizer: moments only)
    optimizer_bytes: Vec        # optimizer state bytes per parameter (fp32 master + moments)
    act_cache_fp8: Vec          # 1.0 when an fp8 run caches the SwiGLU input (fp8) and attention output (12-bit)



@dataclass(frozen=True)
class CoreKnobs:
    """AccelKnobs resolved to numbers (the GEMM tops filled in): floats for one accelerator, or
    arrays with one row per problem (``stack_knobs``).

    ``curve_log_t``/``curve_frac``: shape (k,) for one curve, or (n, k) for one curve per row."""

    gemm_top: Num               # 16-bit GEMMs
    gemm_top_lin: Num           # the linear layers' GEMMs (fp8 top under fp8)
    curve_log_t: Vec
    curve_frac: Vec
    membound_factor: Num
    launch_overhead_s: Num
    scale_up_bw_eff: Num
    scale_out_bw_eff: Num
    overlap_efficiency: Num
    step_time_cv: Num
    attention_ratio: Num
    grouped_gemm_scale: Num = 1.0
    moe_overhead_s: Num = 0.0
    a2a_overlap_efficiency: Num = 0.8


def _ceiling_fraction(accel: Accelerator, prec: str) -> float | None:
    ceiling = accel.matmul_ceiling_tflops.get(prec)
    peak = accel.peak_tflops.get(prec) or (accel.peak_tflops.get("fp16") if prec == "bf16" else None)
    return min(1.0, ceiling / peak) if ceiling and peak else None


def gemm_tops(accel: Accelerator, precision: str, knobs: AccelKnobs) -> tuple[float, float]:
    """(16-bit top, linear-layer top): the fraction of peak the largest GEMMs reach.

    The measured matmul ceiling / peak (MAMF), or the calibrated ``gemm_top`` (a 16-bit figure),
    times ``ceiling_scale``;
    an fp8 top is the 16-bit one scaled by the ratio of the measured fp8 and bf16 fractions (the
    bf16 fraction where no fp8 ceiling was measured). Never above the measured ceiling."""
    bf16 = _ceiling_fraction(accel, "bf16")
    top16 = knobs.gemm_top if knobs.gemm_top is not None else (bf16 or DEFAULT_GEMM_TOP)
    top16 *= knobs.ceiling_scale
    if bf16 is not None:
        top16 = min(top16, bf16)
    if precision != "fp8" or "fp8" not in accel.peak_tflops:
        return top16, top16
    fp8 = _ceiling_fraction(accel, "fp8")
    ratio = (fp8 / bf16) if (fp8 and bf16) else 1.0
    return top16, min(top16 * ratio * knobs.fp8_gemm_scale, fp8 or 1.0)


def _curve(knobs: AccelKnobs) -> tuple[Vec, Vec]:
    pts = sorted(knobs.gemm_curve)
    return (np.log10(np.array([x for x, _ in pts], dtype=float)),
            np.array([y for _, y in pts], dtype=float))


def core_knobs(knobs: AccelKnobs, tops: tuple[float, float] | float) -> CoreKnobs:
    top16, top_lin = (tops, tops) if isinstance(tops, float) else tops
    log_t, frac = _curve(knobs)
    return CoreKnobs(
        gemm_top=top16, gemm_top_lin=top_lin, curve_log_t=log_t, curve_frac=frac,
        membound_factor=knobs.membound_factor,
        launch_overhead_s=knobs.launch_overhead_s,
        scale_up_bw_eff=knobs.scale_up_bw_eff,
        scale_out_bw_eff=knobs.scale_out_bw_eff,
        overlap_efficiency=knobs.overlap_efficiency,
        step_time_cv=knobs.step_time_cv,
        attention_ratio=knobs.attention_ratio,
        grouped_gemm_scale=knobs.grouped_gemm_scale,
        moe_overhead_s=knobs.moe_overhead_s,
        a2a_overlap_efficiency=knobs.a2a_overlap_efficiency,
    )


def stack_knobs(per_row: list[tuple[AccelKnobs, tuple[float, float]]]) -> CoreKnobs:
    """One CoreKnobs whose every knob is an array with one row per problem (curves padded to
    one length by repeating their last point). Distinct rows are built once and indexed."""
    keys: dict[tuple[int, tuple[float, float]], int] = {}
    uniq: list[tuple[AccelKnobs, tuple[float, float]]] = []
    index = []
    for k, tops in per_row:
        key = (id(k), tops)
        if key not in keys:
            keys[key] = len(uniq)
            uniq.append((k, tops))
        index.append(keys[key])
    rows = np.array(index, dtype=np.int64)
    curves = [_curve(k) for k, _ in uniq]
    width = max(len(t) for t, _ in curves)

    def pad(a: Vec) -> Vec:
        return np.concatenate([a, np.full(width - len(a), a[-1])])

    def col(name: str) -> Vec:
        return np.array([float(getattr(k, name)) for k, _ in uniq])[rows]

    return CoreKnobs(
        gemm_top=np.array([t[0] for _, t in uniq])[rows], gemm_top_lin=np.array([t[1] for _, t in uniq])[rows],
        curve_log_t=np.array([pad(t) for t, _ in curves])[rows],
        curve_frac=np.array([pad(f) for _, f in curves])[rows],
        membound_factor=col("membound_factor"), launch_overhead_s=col("launch_overhead_s"),
        scale_up_bw_eff=col("scale_up_bw_eff"), scale_out_bw_eff=col("scale_out_bw_eff"),
        overlap_efficiency=col("overlap_efficiency"), step_time_cv=col("step_time_cv"),
        attention_ratio=col("attention_ratio"), grouped_gemm_scale=col("grouped_gemm_scale"),
        moe_overhead_s=col("moe_overhead_s"), a2a_overlap_efficiency=col("a2a_overlap_efficiency"))


def matmul_peak_flops(accel: Accelerator, precision: str) -> float:
    """The dense peak of the workload's matmul precision (the MFU denominator)."""
    prec = "fp8" if precision == "fp8" and "fp8" in accel.peak_tflops else (
        "fp16" if precision == "fp16" and "fp16" in accel.peak_tflops else "bf16")
    return accel.peak_flops(prec)


def _sixteen_bit_peak(accel: Accelerator, precision: str) -> float:
    prec = "fp16" if precision == "fp16" and "fp16" in accel.peak_tflops else "bf16"
    return accel.peak_flops(prec)


def fp8_recipe(accel: Accelerator, software: SoftwareStack | None) -> str | None:
    """The fp8 recipe a run on ``accel`` uses (None: fp8 GEMMs are not available)."""
    if "fp8" not in accel.peak_tflops:
        return None
    if software is None:
        blackwell = accel.architecture.lower().startswith("blackwell")
        return "mxfp8" if blackwell else FP8_DEFAULT_RECIPE
    return software.fp8_recipe(accel)


def _attention_shapes(arch: ModelArch) -> dict[str, float]:
    """The attention widths the core needs (see flops.py for MLA)."""
    qk, v = flops.head_width(arch), flops.v_head_width(arch)
    mla = arch.mla
    kv_heads = arch.heads if mla is not None else arch.kv_heads
    up = latent = 0.0
    if mla is not None:
        up = arch.heads * (mla.qk_head_dim * (mla.q_lora_rank or 0)
                           + (mla.qk_nope_head_dim + mla.v_head_dim) * mla.kv_lora_rank)
        latent = (mla.q_lora_rank or 0) + mla.kv_lora_rank + mla.qk_rope_head_dim
    return {"attn_in": flops.attention_in_params(arch), "attn_out": flops.attention_out_params(arch),
            "mla_up": up, "mla_latent": latent, "qk_width": arch.heads * qk, "v_width": arch.heads * v,
            "kv_width": kv_heads * (qk + v), "head_dim": (qk + v) / 2.0, "kv_heads": kv_heads}


def kv_width_at(pb: Problem, t: Any) -> Any:
    """K and V elements per token over the t tensor-parallel ranks. Where t exceeds the KV heads
    (multi-query or few-group attention), Megatron replicates each KV head on t / kv_heads ranks, so
    every rank holds at least one head: the replicas are counted on each rank that holds them."""
    return np.maximum(pb.kv_width, pb.kv_width * t / np.maximum(pb.kv_heads, 1.0))


def kv_divides_or_replicates(kv_heads: Any, t: Any) -> Any:
    """A TP degree the KV heads allow: it divides them, or is a multiple of them (each head
    replicated on t / kv_heads ranks, as Megatron does for multi-query attention)."""
    return (kv_heads % t == 0) | (t % kv_heads == 0)


def attn_in_at(pb: Problem, t: Any) -> Any:
    """The QKV projection's weights over t ranks, replicated KV heads included (see kv_width_at)."""
    return pb.attn_in + pb.hidden * (kv_width_at(pb, t) - pb.kv_width)


def moe_imbalance(stated: float | None) -> tuple[float, str]:
    """(the hot EP rank's load over the mean under dropless routing, where it comes from): the
    workload's own figure, else the fitted default."""
    return (stated, "stated") if stated is not None else (DEFAULT_MOE_IMBALANCE, "fitted-default")


def _moe_fields(arch: ModelArch, workload: Workload) -> dict[str, float]:
    moe = arch.moe
    if moe is None:
        return {"experts": 0, "top_k": 0, "expert_ffn": 0, "shared_ffn": 0, "moe_layers": 0,
                "moe_freq": 1, "capacity": 0.0, "imbalance": 1.0, "group_limit": 0, "block_routing": 0.0}
    imbalance, _ = moe_imbalance(workload.moe_imbalance)
    return {"experts": moe.experts, "top_k": moe.top_k, "expert_ffn": moe.expert_ffn_hidden,
            "shared_ffn": moe.shared_ffn, "moe_layers": moe.moe_layers(arch.layers),
            "moe_freq": moe.layer_freq, "capacity": moe.capacity_factor or 0.0,
            "imbalance": imbalance, "group_limit": moe.group_topk or 0,
            "block_routing": 1.0 if workload.moe_block_routing else 0.0}


def _window_fields(arch: ModelArch) -> dict[str, float]:
    win = arch.attention_window
    if win is None:
        return {"win_size": 0.0, "win_global": 1.0, "win_chunked": 0.0}
    return {"win_size": win.size, "win_global": win.global_fraction,
            "win_chunked": 1.0 if win.kind == "chunked" else 0.0}


def build_problem(arch: ModelArch, accel: Accelerator, network: Network, gpus: int,
                  workload: Workload, measured_busbw_gbs: float | None = None,
                  software: SoftwareStack | None = None) -> Problem:
    gpn = max(1, accel.scale_up_domain)
    if measured_busbw_gbs:
        # nccl-tests busbw of full nodes is the node's inter-node rate: share it per GPU.
        nic_bw, nic_measured = measured_busbw_gbs * 1e9 / gpn, 1.0
    else:
        nic_bw, nic_measured = network.scale_out_bw_gbs * 1e9, 0.0
    recipe = fp8_recipe(accel, software) if workload.precision == "fp8" else None
    fp8 = recipe is not None
    generation = accel.architecture.strip().lower()
    shapes = _attention_shapes(arch)
    fp8_dispatch = fp8 and (workload.fp8_dispatch if workload.fp8_dispatch is not None
                            else software is not None and software.has("fp8_dispatch"))
    numbers: dict[str, float] = dict(
        layers=arch.layers, hidden=arch.hidden, heads=arch.heads, kv_heads=shapes.pop("kv_heads"),
        ffn=arch.ffn_hidden, vocab=arch.vocab, mlp_mats=3 if arch.gated_mlp else 2,
        tied=1.0 if arch.tied_embeddings else 0.0, mtp=arch.mtp_layers,
        **shapes, **_moe_fields(arch, workload), **_window_fields(arch),
        seq=workload.seq_len, batch=workload.global_batch, flushes=workload.pipeline_flushes,
        flash=0.0 if workload.attention == "unfused" else 1.0,
        dropout=1.0 if uses_dropout(workload) else 0.0,
        fp8=1.0 if fp8 else 0.0, fp8_head=1.0 if fp8 and workload.fp8_lm_head else 0.0,
        fp8_cast=FP8_CAST_ACCESSES[recipe] if recipe else 0.0,
        grad_bytes=grad_bytes(workload.precision, software),
        frozen=1.0 if workload.frozen_base else 0.0,
        weight_bytes=1.0 if fp8 and _fp8_params(workload, software) else WEIGHT_BYTES,
        ckpt_interval=workload.checkpoint_interval_steps or 0,
        storage_bw=workload.checkpoint_storage_gbs * 1e9,
        ckpt_async=1.0 if workload.checkpoint_async else 0.0,
        data_stall_s=workload.data_stall_s,
        n_gpus=gpus, peak=_sixteen_bit_peak(accel, workload.precision),
        lin_peak=accel.peak_flops("fp8") if fp8 else _sixteen_bit_peak(accel, workload.precision),
        hbm_bytes=accel.hbm_gb * HBM_UNIT_BYTES, hbm_bw=accel.hbm_bw_tbs * 1e12,
        up_bw=accel.scale_up_bw_gbs * 1e9, gpn=gpn, nic_bw=nic_bw,
        lat_net=network.latency_us * 1e-6, nic_measured=nic_measured,
        tp_overlap_ok=0.0 if generation in NO_TP_OVERLAP_ARCHS else 1.0,
        attn_kernel=kernel_factor(software.attention_kernel if software else None, accel),
        host_factor=software.host_overhead_factor if software else 1.0,
        zero3_prefetch=software.zero3_prefetch_efficiency if software else 1.0,
        sel_mode=float(SELECTIVE_POLICIES.index(software.selective_policy)) if software else 0.0,
        logit_bytes=software.logit_bytes if software else DEFAULT_LOGIT_BYTES,
        dispatch_bytes=FP8_DISPATCH_BYTES if fp8_dispatch else ACT_BYTES,
        fp32_params=1.0 if software is not None and software.fp32_params else 0.0,
        optimizer_bytes=software.optimizer_bytes if software else OPTIMIZER_BYTES,
        act_cache_fp8=1.0 if fp8 and software is not None and software.fp8_activation_cache else 0.0,
    )
    return Problem(**{name: np.asarray(value, dtype=float) for name, value in numbers.items()})


def moe_load(pb: Problem) -> Any:
    """Routed copies per token on the slowest EP rank: top_k x ``load_factor`` (the capacity factor
    where tokens drop and experts pad to capacity, else the hot rank's dropless imbalance)."""
    return pb.top_k * np.where(pb.capacity > 0, pb.capacity, pb.imbalance)


def load_factor(capacity: float | None, stated_imbalance: float | None) -> tuple[float, str]:
    """``moe_load``'s factor over top_k for one model and workload, and where it comes from: the
    capacity factor, else the stated or fitted dropless imbalance (the document discloses it)."""
    if capacity:
        return capacity, "capacity-factor"
    return moe_imbalance(stated_imbalance)


def stack(problems: list[Problem]) -> Problem:
    """One Problem whose fields are arrays with one row per input problem (batch evaluation)."""
    names = [f.name for f in fields(Problem)]
    get = attrgetter(*names)
    table = np.array([get(p) for p in problems], dtype=float).reshape(len(problems), len(names))
    return Problem(**{name: table[:, j].copy() for j, name in enumerate(names)})
