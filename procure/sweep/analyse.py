"""What a sweep says: which points meet the constraints, the frontier, the best point per
accelerator and per term, and the suggested RFQ ask. Pure: rows in, rows and findings out.

"Best" is the cheapest point that meets every constraint (ties: faster, then first). The ask
names up to ``ask.options`` alternatives, each a different accelerator: for the cheapest
(accelerator, term) pairs that meet the constraints, the range of GPU counts whose total cost is
within ``ask.within`` of that pair's best.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from procure.sweep.frontier import pareto_front
from procure.sweep.schema import AskSpec, Constraints

Row = dict[str, Any]
FAILURES = {
    "infeasible": "no plan fits in memory",
    "price-missing": "no price for this accelerator and term",
    "misses-deadline": "misses the deadline",
    "over-budget": "over the cash budget",
    "over-net-cost": "costs more than the net-cost limit",
    "too-many-gpus": "more GPUs than allowed",
    "over-power": "more IT power than allowed",
    "power-unknown": "no published system power or TDP to check the power limit",
}


def over_budget_by(row: Row, constraints: Constraints) -> Decimal | None:
    """How much the point's peak cash out exceeds the cash budget; None when within it (or unknown)."""
    cash = row.get("peak_cash_out")
    if constraints.budget is None or cash is None or cash <= constraints.budget:
        return None
    return Decimal(cash) - Decimal(constraints.budget)


def over_net_cost_by(row: Row, constraints: Constraints) -> Decimal | None:
    """How much the point's total cost exceeds ``max_net_cost``; None when within it (or unknown)."""
    cost = row["total_cost"]
    if constraints.max_net_cost is None or cost is None or cost <= constraints.max_net_cost:
        return None
    return Decimal(cost) - Decimal(constraints.max_net_cost)


def failures(row: Row, constraints: Constraints) -> list[str]:
    """The constraints a point fails, in a fixed order (empty: it meets them all)."""
    out = [code for code in ("infeasible", "price-missing", "misses-deadline") if code in row["flags"]]
    if over_budget_by(row, constraints) is not None:
        out.append("over-budget")
    if over_net_cost_by(row, constraints) is not None:
        out.append("over-net-cost")
    if constraints.max_gpus is not None and row["gpus"] > constraints.max_gpus:
        out.append("too-many-gpus")
    if constraints.max_power_mw is not None:
        power = row["it_power_mw"]
        if power is None:
            out.append("power-unknown")
        elif power > constraints.max_power_mw:
            out.append("over-power")
    return out


def costed(row: Row) -> bool:
    return row["feasible"] and row["total_cost"] is not None


def mark(rows: list[Row], constraints: Constraints) -> list[Row]:
    """Rows with ``meets_constraints``, ``constraint_failures`` and ``on_frontier`` set (the
    frontier is taken per workload over every costed point, whatever the constraints)."""
    out = []
    for row in rows:
        fails = failures(row, constraints)
        out.append({**row, "constraint_failures": fails, "meets_constraints": not fails,
                    "over_budget_by": over_budget_by(row, constraints),
                    "over_net_cost_by": over_net_cost_by(row, constraints), "on_frontier": False})
    by_workload: dict[str, list[int]] = {}
    for i, row in enumerate(out):
        if costed(row):
            by_workload.setdefault(row["workload"], []).append(i)
    for members in by_workload.values():
        front = pareto_front([(out[i]["time_to_train_days"], out[i]["total_cost"]) for i in members])
        for i, on in zip(members, front):
            out[i]["on_frontier"] = on
    return out


def _best_key(row: Row) -> tuple[Any, ...]:
    return (row["total_cost"], row["time_to_train_days"], row["index"])


def best_by(rows: Iterable[Row], field: str, keys: list[str]) -> list[dict[str, Any]]:
    """Per value of ``field`` (in ``keys`` order): the best point meeting the constraints."""
    best: dict[str, Row] = {}
    for row in rows:
        if row["meets_constraints"] and (row[field] not in best or _best_key(row) < _best_key(best[row[field]])):
            best[row[field]] = row
    return [{"key": k, "point": best[k]["id"] if k in best else None} for k in keys]


@dataclass(frozen=True)
class AskOption:
    accelerator: str
    term: str
    gpus_min: int
    gpus_max: int
    point: str
    gpus: int
    total_cost: Decimal
    cost_per_million_tokens: Decimal
    time_to_train_days: float
    upfront_cash: Decimal | None = None
    peak_cash_out: Decimal | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def ask_options(rows: list[Row], ask: AskSpec) -> list[AskOption]:
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if row["meets_constraints"]:
            groups.setdefault((row["accelerator"], row["term"]), []).append(row)
    ranked = sorted(groups.items(), key=lambda kv: _best_key(min(kv[1], key=_best_key)))
    out: list[AskOption] = []
    for (accel, term), members in ranked:
        if len(out) >= ask.options or any(o.accelerator == accel for o in out):
            continue
        best = min(members, key=_best_key)
        limit = best["total_cost"] * (1 + Decimal(repr(ask.within)))
        counts = [r["gpus"] for r in members if r["total_cost"] <= limit]
        out.append(AskOption(accel, term, min(counts), max(counts), best["id"], best["gpus"],
                             best["total_cost"], best["cost_per_million_tokens"],
                             best["time_to_train_days"], best.get("upfront_cash"), best.get("peak_cash_out")))
    return out


def _count_range(option: AskOption) -> str:
    if option.gpus_min == option.gpus_max:
        return f"{option.gpus_min:,}"
    return f"{option.gpus_min:,}–{option.gpus_max:,}"


def ask_text(options: list[AskOption], names: dict[str, str], currency: str, within: float,
             rows: list[Row], basis: str = "commitment") -> str:
    if not options:
        return _no_ask_text(rows, names, currency)
    parts = [f"{_count_range(o)} {names.get(o.accelerator, o.accelerator)} on {o.term} "
             f"(best {o.gpus:,} GPUs: {o.total_cost:,.0f} {currency}, "
             + (f"{o.upfront_cash:,.0f} {currency} upfront and {o.peak_cash_out:,.0f} {currency} at the peak of "
                "cash out, " if o.upfront_cash is not None and o.peak_cash_out is not None else "")
             + f"{o.cost_per_million_tokens} {currency} per million tokens, "
             f"{o.time_to_train_days:.1f} days)" for o in options]
    return ("Ask for " + "; or ".join(parts) + f". Costs are on the {basis} basis; ranges hold the GPU "
            f"counts within {within:.0%} of each option's cheapest point that meets every constraint.")


def _no_ask_text(rows: list[Row], names: dict[str, str], currency: str) -> str:
    usable = [r for r in rows if costed(r)]
    if not usable:
        return "No point can be costed: no plan fits or no term prices these accelerators."
    fastest = min(usable, key=lambda r: (r["time_to_train_days"], r["total_cost"], r["index"]))
    by = {"over-budget": fastest.get("over_budget_by"), "over-net-cost": fastest.get("over_net_cost_by")}
    why = ", ".join(FAILURES[c] + (f" by {by[c]:,.0f} {currency}" if by.get(c) is not None else "")
                    for c in fastest["constraint_failures"])
    return (f"No point meets every constraint. The fastest costed point, {fastest['id']} "
            f"({fastest['gpus']:,} {names.get(fastest['accelerator'], fastest['accelerator'])} on "
            f"{fastest['term']}), takes {fastest['time_to_train_days']:.1f} days at "
            f"{fastest['total_cost']:,.0f} {currency} ({why}).")


def workload_findings(rows: list[Row], workload: str, accelerators: list[str], terms: list[str],
                      ask: AskSpec, names: dict[str, str], currency: str,
                      basis: str = "commitment") -> dict[str, Any]:
    mine = [r for r in rows if r["workload"] == workload]
    front = sorted((r for r in mine if r["on_frontier"]),
                   key=lambda r: (r["time_to_train_days"], r["total_cost"], r["index"]))
    options = ask_options(mine, ask)
    return {
        "workload": workload,
        "points": len(mine),
        "feasible": sum(1 for r in mine if r["feasible"]),
        "costed": sum(1 for r in mine if costed(r)),
        "meeting_constraints": sum(1 for r in mine if r["meets_constraints"]),
        "frontier": [r["id"] for r in front],
        "best_per_accelerator": best_by(mine, "accelerator", accelerators),
        "best_per_term": best_by(mine, "term", terms),
        "ask": {"text": ask_text(options, names, currency, ask.within, mine, basis),
                "options": [o.to_dict() for o in options]},
    }
