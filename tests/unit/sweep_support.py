"""A small sweep the sweep tests share: two workloads, three accelerators, a few GPU counts,
book terms, a purchase and an inline price (fast: an 8B model's plan searches are small)."""

from __future__ import annotations

from pathlib import Path

SMALL_SWEEP = """\
schema: procure.sweep/v1
title: Small sweep
as_of: 2026-12-01
currency: USD
workloads:
  - {id: 8b-8k, model: llama3-8b, seq_len: 8192, global_batch_tokens: 4_194_304, train_tokens: 2e12,
     deadline_days: 60}
  - {id: 8b-4k, model: llama3-8b, seq_len: 4096, global_batch_tokens: 4_194_304, train_tokens: 2e12}
accelerators:
  - h100-sxm5-80gb
  - b200-sxm-180gb
  - {id: mi300x-oam-192gb, gpus: [128, 256]}
gpus: [64, 128, 256, 512]
terms:
  - aws-2026q3/on-demand
  - neocloud-reserved-2026q3/reserved-1y
  - purchase-2026/purchase
  - {id: broker, kind: rental, usd_per_gpu_hour: 1.85, accelerators: [h100-sxm5-80gb]}
constraints:
  deadline_days: 40
  budget: 3_000_000
assumptions: {power_usd_per_kwh: 0.08, pue: 1.3}
"""
SMALL_POINTS = 2 * (4 + 4 + 2) * 4
# 2 workloads x 2 accelerators (4 chunks) x 2 GPU counts x 2 terms: several chunks, quick to run
MINI_SWEEP = (SMALL_SWEEP.replace("  - {id: mi300x-oam-192gb, gpus: [128, 256]}\n", "")
              .replace("gpus: [64, 128, 256, 512]", "gpus: [64, 128]")
              .replace("  - purchase-2026/purchase\n", "").replace("  - neocloud-reserved-2026q3/reserved-1y\n", ""))
MINI_POINTS = 16


def write_sweep(folder: Path, text: str = SMALL_SWEEP, name: str = "sweep.yaml") -> Path:
    path = Path(folder) / name
    path.write_text(text, encoding="utf-8")
    return path
