"""Synthetic but realistic bids (a 70B dense model on H100 or A100) for tests and benchmarks.

The step time is what a model at a given MFU would predict: ``6·N·tokens / (gpus·peak·mfu)``.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

from procure.economics.inputs import BidCase, Commitment, Performance, Pricing

PARAMS_70B = 70_000_000_000
TOKENS_PER_STEP = 2048 * 8192               # B·s = 16,777,216 tokens
H100_BF16_FLOPS = 989.4e12
A100_BF16_FLOPS = 312e12
COMPUTE_SHARE = 0.85                        # the rest: exposed communication, bubble, optimizer


def performance(gpus: int, peak_flops: float, mfu: float = 0.4, params: int = PARAMS_70B,
                tokens_per_step: int = TOKENS_PER_STEP) -> Performance:
    model_flops = 6.0 * params * tokens_per_step
    step_s = model_flops / (gpus * peak_flops * mfu)
    terms = {"compute_s": COMPUTE_SHARE * step_s, "comm_exposed_s": (1 - COMPUTE_SHARE) * step_s}
    return Performance(step_time_s=step_s, step_time_terms=terms, p99_step_time_s=step_s * 1.05,
                       tokens_per_step=tokens_per_step, gpus=gpus,
                       model_flops_per_step=model_flops,
                       hardware_flops_per_step=model_flops * 4 / 3,  # full recomputation
                       peak_flops_per_gpu=peak_flops, modeled_step_time_s=step_s)


def rental(price: str | Decimal | None, min_commit_months: int = 0, currency: str = "USD",
           tdp_w: float | None = 700.0, **extra: Any) -> Pricing:
    price_d = None if price is None else Decimal(str(price))
    return Pricing(kind="rental", currency=currency, price_per_gpu_hour=price_d,
                   min_commit_months=min_commit_months, tdp_w=tdp_w, **extra)


def purchase(capex_per_gpu: str | Decimal = "30000", tdp_w: float | None = 700.0,
             **extra: Any) -> Pricing:
    fields: dict[str, Any] = {"network_capex_per_gpu": Decimal("3000"), "life_years": Decimal(5),
              "residual_fraction": Decimal("0.1"), "support_per_gpu_year": Decimal("1500"),
              "power_per_kwh": Decimal("0.08"), "pue": Decimal("1.3"),
              "colo_per_kw_month": Decimal("150")}
    fields.update(extra)
    return Pricing(kind="purchase", currency="USD", price_per_gpu_hour=None,
                   capex_per_gpu=Decimal(str(capex_per_gpu)), tdp_w=tdp_w, **fields)


def case(bid_id: str, gpus: int = 4096, peak_flops: float = H100_BF16_FLOPS,
         pricing: Pricing | None = None, mfu: float = 0.4, train_tokens: float = 1e12,
         deadline_days: float | None = None, commitment: Commitment | None = None,
         **perf_changes: Any) -> BidCase:
    perf = performance(gpus, peak_flops, mfu)
    if perf_changes:
        perf = replace(perf, **perf_changes)
    return BidCase(id=bid_id, vendor=f"Vendor {bid_id}", performance=perf,
                   pricing=pricing or rental("2.35"), commitment=commitment or Commitment(),
                   train_tokens=train_tokens, params=PARAMS_70B, deadline_days=deadline_days,
                   scaling_efficiency=None)
