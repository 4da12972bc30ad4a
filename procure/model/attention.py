"""The fused attention core's efficiency: sequence length, head dim, causal masking, kernel.

    eta_attn = gemm_top_16 x attention_ratio x kernel x f_seq x f_head x curve(size)

all factors <= 1, so the attention core never runs above the accelerator's measured 16-bit GEMM
ceiling, and fp8 never touches it (stacks run FlashAttention/cuDNN attention in bf16 for
training; the fp8 attention kernels are inference paths). The FLOPs it runs are the CAUSAL count
(half of the non-causal 4*s*q per token), the same count MFU uses (flops.MFU_CONVENTION).

- ``attention_ratio`` (a knob per accelerator): forward+backward throughput of the reference
  kernel at head dim 128 on long non-causal sequences, over the GEMM ceiling. FlashAttention-3
  paper (Shah et al. 2024, fig. 5-6, H100 SXM5, hd128, 16k): cuDNN 595 forward / 516 backward
  TFLOP/s (the backward counted as 2.5 x the forward's FLOPs) -> 536 combined = 0.675 of the
  794.5 bf16 ceiling.
- ``f_seq``: short sequences give each tile few key blocks to amortise its prologue, epilogue and
  softmax rescaling: f = 1 / (1 + (S_HALF / s)^SEQ_EXPONENT). Fitted to the same paper's FA3
  forward+backward at hd128 (512: 0.60 of its 16k rate, 1k: 0.78, 2k: 0.91, 4k: 0.97).
  A causal kernel runs row blocks of average length s/2 and wastes part of each diagonal block
  (n/(n+1) of the work is useful with n = s/128 key blocks), so f_causal(s) = f(s/2) x s/(s+128).
  Under context parallelism each ring step is a chunk of s/cp queries against s/cp keys.
- ``f_head``: the softmax (exp on the special-function units) is a fixed cost per score while the
  matmul work per score grows with head dim: f = min(1, (d/(d+D0)) / (128/(128+D0))), D0 = 55
  from the paper's hd64 vs hd128 forward at 16k (497 vs 648 TFLOP/s); hd256 is no faster than
  hd128 (642 vs 648), hence the cap at 1.
- local attention (``local_shape_factor``): a sliding window of w keys runs like a non-causal
  kernel of w keys with a partial block at each end of the band; causal chunks of w like a causal
  kernel of length w.
- ``kernel``: the stack's kernel against the reference kernel of the part (cuDNN on Hopper and
  Blackwell, FlashAttention-2 on Ampere, CK on AMD): FA3 583/536 = 1.09, FA2 on Hopper
  334/536 = 0.62 (FA2 370 forward / 322 backward in the same figures).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from procure.catalog.types import Accelerator

Vec = npt.NDArray[np.float64]

S_HALF = 440.0                 # tokens: f_seq = 1/2 at this sequence length (non-causal)
# Ideal time at the 16-bit peak of the work the reference ratio was measured on (FA3 paper fig. 5-6:
# 16k tokens, 16 heads of 128, non-causal; forward 4 x 16384^2 x 2048 FLOPs and the backward 2.5 x
# that, at H100's 989 TF/s): compute.attention_curve scales the size curve relative to it.
REFERENCE_CALL_S = 3.5 * 4.0 * 16384.0 ** 2 * 2048.0 / 989.4e12
SEQ_EXPONENT = 1.5
DIAGONAL_BLOCK = 128.0         # key block of the causal diagonal
HEAD_DIM_D0 = 55.0
REFERENCE_HEAD_DIM = 128.0
# Kernel throughput relative to the part's reference kernel (FlashAttention-3 paper figures).
HOPPER_PLUS_KERNELS = {"cudnn": 1.0, "fa3": 1.09, "fa2": 0.62, "ck": 1.0, "unfused": 1.0}
PRE_HOPPER = frozenset({"volta", "turing", "ampere", "ada lovelace"})
# FlashAttention's first version against FlashAttention-2 on the same part: half the throughput
# (flash-attention README, changelog "2.0: Complete rewrite, 2x faster").
FA1_OVER_FA2 = 0.5
HOPPER_PLUS_KERNELS["fa1"] = HOPPER_PLUS_KERNELS["fa2"] * FA1_OVER_FA2


def kernel_factor(kernel: str | None, accel: Accelerator) -> float:
    """The stack's attention kernel against the part's reference kernel (1.0 when unknown)."""
    if kernel is None or accel.vendor.upper() != "NVIDIA":
        return 1.0
    if accel.architecture.strip().lower() in PRE_HOPPER:
        return FA1_OVER_FA2 if kernel == "fa1" else 1.0    # FlashAttention-2 is the reference there
    return HOPPER_PLUS_KERNELS.get(kernel, 1.0)


def seq_factor(seq: Any) -> Vec:
    """f_seq of a non-causal kernel over ``seq`` keys per query row."""
    s = np.maximum(np.asarray(seq, dtype=float), 1.0)
    return np.asarray(1.0 / (1.0 + (S_HALF / s) ** SEQ_EXPONENT), dtype=float)


def causal_seq_factor(seq: Any) -> Vec:
    s = np.maximum(np.asarray(seq, dtype=float), 1.0)
    return np.asarray(seq_factor(s / 2.0) * (s / (s + DIAGONAL_BLOCK)), dtype=float)


def head_factor(head_dim: Any) -> Vec:
    d = np.maximum(np.asarray(head_dim, dtype=float), 1.0)
    ref = REFERENCE_HEAD_DIM / (REFERENCE_HEAD_DIM + HEAD_DIM_D0)
    return np.asarray(np.minimum(1.0, (d / (d + HEAD_DIM_D0)) / ref), dtype=float)


def shape_factor(seq: Any, head_dim: Any, cp: Any) -> Vec:
    """f_seq x f_head for a causal decoder: one causal kernel without CP, ring steps of s/cp
    otherwise (load-balanced CP runs mostly full blocks)."""
    s = np.asarray(seq, dtype=float)
    c = np.maximum(np.asarray(cp, dtype=float), 1.0)
    f_seq = np.where(c > 1, seq_factor(s / c), causal_seq_factor(s))
    return np.asarray(f_seq * head_factor(head_dim), dtype=float)


def local_shape_factor(window: Any, chunked: Any, head_dim: Any) -> Vec:
    """f_seq x f_head of a local-attention layer: a sliding window gives every query row a band of
    w keys, with a partial key block at each end (f(w) x w/(w+128)); causal chunks of w are each
    a causal kernel of length w."""
    w = np.maximum(np.asarray(window, dtype=float), 1.0)
    band = seq_factor(w) * (w / (w + DIAGONAL_BLOCK))
    f_seq = np.where(np.asarray(chunked, dtype=float) > 0, causal_seq_factor(w), band)
    return np.asarray(f_seq * head_factor(head_dim), dtype=float)


def attention_efficiency(seq: Any, head_dim: Any, cp: Any, gemm_top: Any, attention_ratio: Any,
                         kernel: Any = 1.0, window: Any = 0.0, chunked: Any = 0.0) -> Vec:
    """Fraction of the 16-bit peak the fused attention core reaches on large problems (the GEMM
    size curve multiplies it for small ones). Never above ``gemm_top``."""
    ratio = np.minimum(np.asarray(attention_ratio, dtype=float) * np.asarray(kernel, dtype=float), 1.0)
    shape = np.where(np.asarray(window, dtype=float) > 0,
                     local_shape_factor(window, chunked, head_dim), shape_factor(seq, head_dim, cp))
    return np.asarray(gemm_top * ratio * shape, dtype=float)
