"""The cost totals in floats over arrays of draws (the Monte Carlo band only, never reported): the
same rules as the Decimal lines (``cost_rules``), each term a float or an array of draws, never
rounded. The present value's float twin is ``cashflow.present_value_float``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from procure.economics.cost import (COMMITTED_BASES, TERM_ON_BID, Terms, capex_total, check_basis, line_plan,
                                    market_reference)
from procure.economics.cost_rules import FloatPlan, Rule, float_plan


@dataclass(frozen=True)
class DrawnRates:
    """Per-sample scales of the financial terms (Monte Carlo only): each multiplies the term's own."""

    cost_of_capital: Any = 1.0
    resale_decline: Any = 1.0
    resale_haircut: Any = 1.0


NO_DRAWS = DrawnRates()     # every financial term at its own value


def total_cost_float(t: Terms, used_hours: Any, price_scale: Any = 1.0, power_scale: Any = 1.0,
                     basis: str = "run", rates: DrawnRates = DrawnRates()) -> Any:
    """The run or commitment total in floats (the present value's is ``cashflow.present_value_float``):
    the same rules as the lines, each term a float or an array of draws, never rounded."""
    check_basis(basis)
    if basis == "present_value":
        raise ValueError("the present value in floats is cashflow.present_value_float")
    plan = _plan_of(line_plan(t, basis))
    return plan.total(_FloatTerms(t, used_hours, price_scale, power_scale, basis, rates).values(plan))


_PLANS: dict[tuple[int, ...], FloatPlan] = {}     # by the rules' identities (module constants): few distinct plans


def _plan_of(rules: list[Rule]) -> FloatPlan:
    key = tuple(map(id, rules))
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = float_plan(rules, VARYING, _MOVED_BY)
    return plan


class _FloatTerms:
    """The terms of one bid in floats: the hours and the moved prices and rates are arrays of draws."""

    def __init__(self, t: Terms, used: Any, price_scale: Any, power_scale: Any, basis: str,
                 rates: DrawnRates) -> None:
        import numpy as np

        self.t, self.used, self.price_scale, self.power_scale, self.rates = t, used, price_scale, power_scale, rates
        committed = basis in COMMITTED_BASES and t.pricing.kind == "rental"
        self.billed = np.maximum(used, float(t.min_commit_hours)) if committed else used

    def values(self, plan: FloatPlan) -> dict[str, Any]:
        """The plain terms the plan reads, as floats, and every varying one (the hours, the draws)."""
        values = {name: float(TERM_ON_BID[name](self.t) or 0) for name in plan.numbers}
        for name in plan.arrays:
            values[name] = _VARYING[name](self)
        return values

    @property
    def depreciated(self) -> Any:
        import numpy as np

        return np.minimum(self.used, float(self.t.life_hours))

    def resale_fraction(self) -> Any:
        """(1 − decline)^years × (1 − haircut) × (1 − transaction cost), the drawn rates clipped to [0, 1]."""
        import numpy as np

        t, rates = self.t, self.rates
        haircut = np.clip(float(t.resale_haircut) * rates.resale_haircut, 0.0, 1.0)
        decline = np.clip(float(t.resale_decline_per_year) * rates.resale_decline, 0.0, 1.0)
        return (1.0 - decline) ** (self.used / 8760.0) * (1.0 - haircut) * float(1 - t.resale_transaction_cost)


# the terms a draw moves, and by which draw
_MOVED_BY = {"price_per_gpu_hour": "price_scale", "capex_per_gpu": "price_scale", "capex_per_node": "price_scale",
             "network_capex_per_gpu": "price_scale", "network_capex": "price_scale", "capex_total": "price_scale",
             "power_per_kwh": "power_scale", "cost_of_capital": "capital_scale"}

# what may be an array of draws: the terms of the hours, and the draws themselves
_VARYING: dict[str, Callable[[_FloatTerms], Any]] = {
    "used_hours": lambda e: e.used,
    "billed_hours": lambda e: e.billed,
    "idle_hours": lambda e: e.billed - e.used,
    "depreciated_hours": lambda e: e.depreciated,
    "market_value": lambda e: market_float(e.t, e.price_scale, float(e.t.capex) * e.price_scale),
    "resale_fraction": _FloatTerms.resale_fraction,
    "price_scale": lambda e: e.price_scale,
    "power_scale": lambda e: e.power_scale,
    "capital_scale": lambda e: e.rates.cost_of_capital,
}
VARYING = frozenset(_VARYING)


def market_float(t: Terms, price_scale: Any = 1.0, paid: Any = None) -> Any:
    """``market_value_new`` with the capex moved by ``price_scale`` (floats, Monte Carlo only);
    ``paid``: the moved capex, where the caller has it."""
    import numpy as np

    paid = float(capex_total(t)) * price_scale if paid is None else paid
    reference = market_reference(t)
    return paid if reference is None else np.minimum(float(reference), paid)


__all__ = ["NO_DRAWS", "DrawnRates", "market_float", "total_cost_float"]
