"""The numbers the vectorised core needs, gathered from the catalog types.

Every field is a float (or a numpy array of shape (n,) when many problems are evaluated at once,
as the calibration does: one row per published run). Units are SI: bytes, B/s, FLOP/s, seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from procure.catalog.types import Accelerator, ModelArch, Network
from procure.model.types import AccelKnobs, DEFAULT_GEMM_TOP, Workload

ACT_BYTES = 2.0                 # activations and TP/PP/CP messages in bf16/fp16 (fp8 too: TE keeps bf16 I/O)
WEIGHT_BYTES = 2.0              # bf16/fp16 model weights
OPTIMIZER_BYTES = 12.0          # fp32 master weights + two Adam moments
OPTIMIZER_STEP_BYTES = 32.0       # HBM traffic of the Adam step per parameter held (read+write states, grads)
# HBM capacities are quoted in binary units: an "80 GB" A100/H100 holds 80 GiB (5 stacks of
# 16 GiB; nvidia-smi 81920 / 81559 MiB), H200 "141 GB" 143771 MiB, B200 "180 GB" 183359 MiB.
HBM_UNIT_BYTES = 2.0 ** 30
# Pre-Hopper NVIDIA parts: Megatron/TE's TP comm-GEMM overlap (userbuffers: all-gather and
# reduce-scatter split into chunks pipelined with the GEMM, driven by copy engines and
# SM-light p2p kernels) is built and supported for Hopper and later; on these parts TP comm
# runs serially after the GEMM it feeds.
NO_TP_OVERLAP_ARCHS = frozenset({"volta", "turing", "ampere", "ada lovelace"})


def grad_bytes(precision: str) -> float:
    """Gradient bytes per parameter: Megatron keeps fp32 main grads for bf16 (and fp8) training;
    fp16 runs of the 2020-2023 era reduce fp16 gradients."""
    return 2.0 if precision == "fp16" else 4.0


def uses_dropout(workload: Workload) -> bool:
    if workload.dropout is not None:
        return bool(workload.dropout)
    return workload.attention == "unfused"


@dataclass
class Problem:
    # architecture
    layers: Any
    hidden: Any
    heads: Any
    kv_heads: Any
    ffn: Any
    vocab: Any
    mlp_mats: Any               # 2 plain, 3 gated
    tied: Any                   # 1.0 tied embeddings
    experts: Any                # 0 for dense
    top_k: Any
    expert_ffn: Any
    shared_experts: Any
    moe_layers: Any
    capacity: Any
    # workload
    seq: Any
    batch: Any                  # global batch in sequences
    flash: Any                  # 1.0 fused causal attention, 0.0 unfused (s x s in HBM)
    dropout: Any                # 1.0 when dropout masks are kept for the backward
    fp8: Any                    # 1.0 fp8 GEMMs (TE saves the fp8 cast of GEMM inputs)
    grad_bytes: Any
    ckpt_interval: Any          # steps; 0 = no checkpoint term
    storage_bw: Any             # B/s aggregate
    ckpt_async: Any
    data_stall_s: Any
    # hardware
    n_gpus: Any
    peak: Any                   # FLOP/s of the matmul precision
    hbm_bytes: Any
    hbm_bw: Any                 # B/s
    up_bw: Any                  # B/s per direction, raw
    gpn: Any                    # GPUs per node (scale-up domain)
    nic_bw: Any                 # B/s per GPU per direction, raw
    lat_net: Any                # s per inter-node hop
    nic_measured: Any           # 1.0 when nic_bw is a measured, already-achieved figure
    tp_overlap_ok: Any          # 1.0 where TP comm can overlap GEMMs (see NO_TP_OVERLAP_ARCHS)

    def as_arrays(self) -> "Problem":
        return Problem(**{f.name: np.asarray(getattr(self, f.name), dtype=float) for f in fields(self)})


@dataclass
class CoreKnobs:
    """AccelKnobs resolved to numbers (gemm_top filled in), scalar or per-row arrays."""

    gemm_top: Any
    curve_log_t: np.ndarray
    curve_frac: np.ndarray
    membound_factor: Any
    launch_overhead_s: Any
    scale_up_bw_eff: Any
    scale_out_bw_eff: Any
    overlap_efficiency: Any
    step_time_cv: Any


def gemm_top_for(accel: Accelerator, precision: str, knobs: AccelKnobs) -> float:
    """The calibrated top efficiency, else the measured matmul ceiling / peak, else a default."""
    if knobs.gemm_top is not None:
        return knobs.gemm_top
    matmul_prec = "fp8" if precision == "fp8" and "fp8" in accel.peak_tflops else "bf16"
    ceiling = accel.matmul_ceiling_tflops.get(matmul_prec)
    peak = accel.peak_tflops.get(matmul_prec) or accel.peak_tflops.get("fp16")
    if ceiling and peak:
        return min(1.0, ceiling / peak)
    return DEFAULT_GEMM_TOP


def core_knobs(knobs: AccelKnobs, gemm_top: float) -> CoreKnobs:
    pts = sorted(knobs.gemm_curve)
    return CoreKnobs(
        gemm_top=gemm_top,
        curve_log_t=np.log10([x for x, _ in pts]),
        curve_frac=np.array([y for _, y in pts], dtype=float),
        membound_factor=knobs.membound_factor,
        launch_overhead_s=knobs.launch_overhead_s,
        scale_up_bw_eff=knobs.scale_up_bw_eff,
        scale_out_bw_eff=knobs.scale_out_bw_eff,
        overlap_efficiency=knobs.overlap_efficiency,
        step_time_cv=knobs.step_time_cv,
    )


def matmul_peak_flops(accel: Accelerator, precision: str) -> float:
    prec = "fp8" if precision == "fp8" and "fp8" in accel.peak_tflops else (
        "fp16" if precision == "fp16" and "fp16" in accel.peak_tflops else "bf16")
    return accel.peak_flops(prec)


def build_problem(arch: ModelArch, accel: Accelerator, network: Network, gpus: int,
                  workload: Workload, measured_busbw_gbs: float | None = None) -> Problem:
    moe = arch.moe
    moe_layers = 0 if moe is None else max(0, arch.layers - moe.dense_layers)
    gpn = max(1, accel.scale_up_domain)
    if measured_busbw_gbs:
        # nccl-tests busbw of full nodes is the node's inter-node rate: share it per GPU.
        nic_bw, nic_measured = measured_busbw_gbs * 1e9 / gpn, 1.0
    else:
        nic_bw, nic_measured = network.scale_out_bw_gbs * 1e9, 0.0
    return Problem(
        layers=arch.layers, hidden=arch.hidden, heads=arch.heads, kv_heads=arch.kv_heads,
        ffn=arch.ffn_hidden, vocab=arch.vocab, mlp_mats=3 if arch.gated_mlp else 2,
        tied=1.0 if arch.tied_embeddings else 0.0,
        experts=moe.experts if moe else 0, top_k=moe.top_k if moe else 0,
        expert_ffn=moe.expert_ffn_hidden if moe else 0,
        shared_experts=moe.shared_experts if moe else 0, moe_layers=moe_layers,
        capacity=moe.capacity_factor if moe else 1.0,
        seq=workload.seq_len, batch=workload.global_batch,
        flash=0.0 if workload.attention == "unfused" else 1.0,
        dropout=1.0 if uses_dropout(workload) else 0.0,
        fp8=1.0 if workload.precision == "fp8" else 0.0,
        grad_bytes=grad_bytes(workload.precision),
        ckpt_interval=workload.checkpoint_interval_steps or 0,
        storage_bw=workload.checkpoint_storage_gbs * 1e9,
        ckpt_async=1.0 if workload.checkpoint_async else 0.0,
        data_stall_s=workload.data_stall_s,
        n_gpus=gpus, peak=matmul_peak_flops(accel, workload.precision),
        hbm_bytes=accel.hbm_gb * HBM_UNIT_BYTES, hbm_bw=accel.hbm_bw_tbs * 1e12,
        up_bw=accel.scale_up_bw_gbs * 1e9, gpn=gpn, nic_bw=nic_bw,
        lat_net=network.latency_us * 1e-6, nic_measured=nic_measured,
        tp_overlap_ok=0.0 if accel.architecture.strip().lower() in NO_TP_OVERLAP_ARCHS else 1.0,
    )


def stack(problems: list[Problem]) -> Problem:
    """One Problem whose fields are arrays with one row per input problem (batch evaluation)."""
    return Problem(**{f.name: np.array([float(getattr(p, f.name)) for p in problems])
                      for f in fields(Problem)})
