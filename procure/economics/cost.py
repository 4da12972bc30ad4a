"""Cost lines in Decimal, in the report currency.

Every line obeys one rule, so a spreadsheet can rebuild it from the exposed inputs::

    amount = cents(quantity × rate × Π factors / divisor)

Physics (hours, kW) enters money once, through ``money.D`` at this boundary. Hours are
rounded UP to 0.01 h (36 s) before they are billed, so quantities have few digits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal, localcontext

from procure.economics.inputs import Assumptions, Pricing
from procure.money import MONEY_CONTEXT, D, cents, money_sum, rate

HOURS_PER_YEAR = Decimal(8760)
HOUR_QUANTUM = Decimal("0.01")
DEFAULT_PUE = Decimal(1)  # IT energy only, when neither the book nor the workload gives a PUE


@dataclass(frozen=True)
class CostLine:
    key: str
    label: str
    quantity: Decimal
    unit: str
    rate: Decimal
    amount: Decimal
    formula: str
    factors: dict[str, Decimal] = field(default_factory=dict)  # multiplied in, in this order
    divisor: Decimal = Decimal(1)

    def to_dict(self) -> dict:
        return {"key": self.key, "label": self.label, "quantity": self.quantity,
                "unit": self.unit, "rate": self.rate, "amount": self.amount,
                "formula": self.formula, "factors": dict(self.factors), "divisor": self.divisor}


def make_line(key: str, label: str, quantity: Decimal, unit: str, rate: Decimal, formula: str,
              factors: dict[str, Decimal] | None = None, divisor: Decimal = Decimal(1)) -> CostLine:
    """A line whose amount is the one rule of this module applied to its own fields."""
    factors = dict(factors or {})
    with localcontext(MONEY_CONTEXT):
        value = quantity * rate
        for factor in factors.values():
            value *= factor
        value /= divisor
    return CostLine(key, label, quantity, unit, rate, cents(value), formula, factors, divisor)


@dataclass(frozen=True)
class PowerBasis:
    """What energy and the power bill need; resolved once from the book and the workload."""

    kw_per_gpu: Decimal | None               # None: no published TDP
    utilisation: Decimal
    pue: Decimal
    pue_given: bool
    price_per_kwh: Decimal | None

    def usable(self) -> bool:
        return self.kw_per_gpu is not None


def power_basis(pricing: Pricing, assumptions: Assumptions) -> PowerBasis:
    """The workload's power price and PUE override the price book's facility figures."""
    pue = assumptions.pue if assumptions.pue is not None else pricing.pue
    price = (assumptions.power_usd_per_kwh if assumptions.power_usd_per_kwh is not None
             else pricing.power_per_kwh)
    return PowerBasis(
        kw_per_gpu=None if pricing.tdp_w is None else D(pricing.tdp_w) / 1000,
        utilisation=D(assumptions.gpu_utilisation_power),
        pue=DEFAULT_PUE if pue is None else D(pue),
        pue_given=pue is not None,
        price_per_kwh=None if price is None else D(price),
    )


def hours_from_seconds(seconds: float) -> Decimal:
    """Wall-clock hours as Decimal, rounded up to 0.01 h (a started hundredth is billed)."""
    with localcontext(MONEY_CONTEXT):
        return (D(seconds) / 3600).quantize(HOUR_QUANTUM, rounding=ROUND_CEILING)


def energy_mwh(gpus: int, power: PowerBasis, hours: Decimal) -> Decimal | None:
    """GPUs × TDP × utilisation × PUE × hours, in MWh; None without a TDP."""
    if power.kw_per_gpu is None:
        return None
    with localcontext(MONEY_CONTEXT):
        return gpus * power.kw_per_gpu * power.utilisation * power.pue * hours / 1000


def missing_price_reason(pricing: Pricing) -> str | None:
    """Why this bid cannot be costed, or None when it can."""
    if pricing.kind == "rental":
        if pricing.price_per_gpu_hour is None:
            return pricing.missing_reason or "no price per GPU-hour for this accelerator and term"
        return None
    if pricing.kind == "purchase":
        if pricing.capex_per_gpu is None:
            return pricing.missing_reason or "no capex per GPU for this accelerator"
        if pricing.life_years is None or pricing.life_years <= 0:
            return pricing.missing_reason or "no depreciation life for this purchase"
        return None
    raise ValueError(f"unknown pricing kind {pricing.kind!r}")


@dataclass(frozen=True)
class CostBasis:
    pricing: Pricing
    gpus: int
    power: PowerBasis
    months_hours: Decimal

    @property
    def min_commit_hours(self) -> Decimal:
        return self.pricing.min_commit_months * self.months_hours

    @property
    def life_hours(self) -> Decimal:
        return D(self.pricing.life_years) * HOURS_PER_YEAR

    @property
    def depreciable_fraction(self) -> Decimal:
        return 1 - D(self.pricing.residual_fraction or 0)


def cost_basis(pricing: Pricing, gpus: int, assumptions: Assumptions) -> CostBasis:
    return CostBasis(pricing, gpus, power_basis(pricing, assumptions), D(assumptions.months_hours))


def billed_hours(basis: CostBasis, used_hours: Decimal) -> Decimal:
    """Rental: a reservation is paid for its whole term; purchase: the hours used."""
    if basis.pricing.kind == "rental":
        return max(used_hours, basis.min_commit_hours)
    return used_hours


def rental_lines(basis: CostBasis, used_hours: Decimal) -> list[CostLine]:
    p = basis.pricing
    gpu_hours = basis.gpus * billed_hours(basis, used_hours)
    gpu = make_line("gpu_hours", "GPU-hours", gpu_hours, "GPU-h", D(p.price_per_gpu_hour),
                    "gpus × billed hours × price per GPU-hour")
    lines = [gpu]
    for key, label, per_gpu_hour in (("storage", "Storage", p.storage_per_gpu_hour),
                                     ("network", "Network", p.network_per_gpu_hour)):
        if per_gpu_hour:
            lines.append(make_line(key, label, gpu_hours, "GPU-h", D(per_gpu_hour),
                                   f"gpus × billed hours × {label.lower()} per GPU-hour"))
    if p.support_fraction:
        lines.append(make_line("support", "Support", gpu.amount, p.currency, D(p.support_fraction),
                               "GPU-hours amount × support fraction"))
    return lines


def _capex_line(basis: CostBasis, key: str, label: str, rate: Decimal,
                used_hours: Decimal) -> CostLine:
    factors = {"used_hours": min(used_hours, basis.life_hours),
               "depreciable_fraction": basis.depreciable_fraction}
    return make_line(key, label, Decimal(basis.gpus), "GPU", D(rate),
                     "gpus × capex per GPU × used hours × (1 − residual fraction) "
                     "/ (life years × 8760)", factors, basis.life_hours)


def _facility_lines(basis: CostBasis, used_hours: Decimal) -> list[CostLine]:
    power, p, lines = basis.power, basis.pricing, []
    if power.kw_per_gpu is None:
        return lines
    if power.price_per_kwh is not None:
        lines.append(make_line(
            "power", "Power", basis.gpus * used_hours, "GPU-h", power.price_per_kwh,
            "GPU-hours × TDP kW × utilisation × PUE × price per kWh",
            {"kw_per_gpu": power.kw_per_gpu, "utilisation": power.utilisation, "pue": power.pue}))
    if p.colo_per_kw_month is not None:
        lines.append(make_line(
            "colocation", "Colocation", Decimal(basis.gpus), "GPU", D(p.colo_per_kw_month),
            "gpus × TDP kW × PUE × price per kW-month × used hours / hours per month",
            {"kw_per_gpu": power.kw_per_gpu, "pue": power.pue, "used_hours": used_hours},
            basis.months_hours))
    return lines


def purchase_lines(basis: CostBasis, used_hours: Decimal) -> list[CostLine]:
    p = basis.pricing
    lines = [_capex_line(basis, "capex", "Hardware capex (amortised)", p.capex_per_gpu, used_hours)]
    if p.network_capex_per_gpu:
        lines.append(_capex_line(basis, "network_capex", "Network capex (amortised)",
                                 p.network_capex_per_gpu, used_hours))
    lines += _facility_lines(basis, used_hours)
    if p.support_per_gpu_year:
        lines.append(make_line("support", "Support", Decimal(basis.gpus), "GPU",
                               D(p.support_per_gpu_year),
                               "gpus × support per GPU-year × used hours / 8760",
                               {"used_hours": used_hours}, HOURS_PER_YEAR))
    return lines


def cost_lines(basis: CostBasis, used_hours: Decimal) -> list[CostLine]:
    if basis.pricing.kind == "rental":
        return rental_lines(basis, used_hours)
    return purchase_lines(basis, used_hours)


def total_cost(lines: list[CostLine]) -> Decimal:
    return money_sum(line.amount for line in lines)


def per_million_tokens(total: Decimal, train_tokens: float) -> Decimal:
    """Cost per million training tokens, to 1e-4 (``money.rate``)."""
    with localcontext(MONEY_CONTEXT):
        return rate(total / D(train_tokens) * 10**6)


def residual_value(basis: CostBasis, lines: list[CostLine]) -> Decimal | None:
    """Purchase: book value left after training (capex not yet amortised). Not in the total."""
    if basis.pricing.kind != "purchase":
        return None
    capex = [line for line in lines if line.key in ("capex", "network_capex")]
    with localcontext(MONEY_CONTEXT):
        return money_sum(cents(line.quantity * line.rate) - line.amount for line in capex)


def cost_notes(basis: CostBasis) -> list[str]:
    """Caveats a reader needs when a line is absent or a default was used."""
    notes, power = [], basis.power
    if power.kw_per_gpu is None:
        notes.append("no published TDP: energy, power and colocation are not computed")
    elif not power.pue_given:
        notes.append(f"no PUE given: energy uses PUE {power.pue} (IT energy only)")
    if basis.pricing.kind == "purchase" and power.kw_per_gpu is not None:
        if power.price_per_kwh is None:
            notes.append("no power price given: no power line")
        if basis.pricing.colo_per_kw_month is None:
            notes.append("no colocation price given: no colocation line")
    return notes


def total_cost_float(basis: CostBasis, used_hours, price_scale=1.0, power_scale=1.0):
    """The same total in floats over numpy arrays of hours (Monte Carlo only, never reported)."""
    import numpy as np

    p, gpus = basis.pricing, basis.gpus
    if p.kind == "rental":
        billed = np.maximum(used_hours, float(basis.min_commit_hours))
        gpu_amount = gpus * billed * float(p.price_per_gpu_hour) * price_scale
        adders = gpus * billed * float(p.storage_per_gpu_hour + p.network_per_gpu_hour)
        return gpu_amount * (1.0 + float(p.support_fraction)) + adders
    life_h = float(basis.life_hours)
    capex = float(p.capex_per_gpu + (p.network_capex_per_gpu or 0)) * price_scale
    total = (gpus * capex * float(basis.depreciable_fraction)
             * np.minimum(used_hours, life_h) / life_h)
    power = basis.power
    if power.kw_per_gpu is not None:
        kw = float(power.kw_per_gpu) * float(power.pue)
        if power.price_per_kwh is not None:
            total = total + (gpus * used_hours * kw * float(power.utilisation)
                             * float(power.price_per_kwh) * power_scale)
        if p.colo_per_kw_month is not None:
            total = total + (gpus * kw * float(p.colo_per_kw_month) * used_hours
                             / float(basis.months_hours))
    if p.support_per_gpu_year:
        total = total + gpus * float(p.support_per_gpu_year) * used_hours / 8760.0
    return total


__all__ = ["CostBasis", "CostLine", "PowerBasis", "billed_hours", "cost_basis",
           "cost_lines", "cost_notes", "energy_mwh", "hours_from_seconds", "make_line",
           "missing_price_reason", "per_million_tokens", "power_basis", "residual_value",
           "total_cost", "total_cost_float"]
