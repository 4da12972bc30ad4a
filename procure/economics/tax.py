"""Taxes as extra dated flows of the cash view (``workload.tax``; off unless given).

Pure: Decimal money in the report currency, months from ``as_of``, on the flows ``cashflow``
already dated. Per month k (the workbook's Cash flow sheet computes the same, by formula):

* Import duty: ``import_duty_rate`` × capex, paid with the capex (month 0).
* VAT/GST: ``vat_rate`` × (capex + the month's expenses), paid with them; refunded
  ``vat_recovered_after_months`` later when recoverable, else a cost.
* Tax shield, at the income-tax ``rate``, in the month the deduction arises: the month's expenses
  (rental invoices, prepayment, setup, egress, power, colocation, support, staff; reused hours
  as income), their VAT when it is not recovered, and the depreciation of an owned cluster.
* Depreciation (``straight_line``): capex + import duty (+ the capex VAT when not recovered),
  to zero over ``life_years`` from delivery, by the hours of each month held; none after the hold.
* On the sale: tax at ``rate`` on the cash of the sale less the book value left (a loss is a refund).

A positive flow is cash out, as everywhere in the cash view; the shield is negative (cash kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Iterable, Literal, Protocol, Sequence

from procure.money import MONEY_CONTEXT, cents

NOT_EXPENSES = ("capex", "resale", "import-duty", "vat", "vat-refund", "tax-shield", "tax-on-sale")
TAX_KINDS = NOT_EXPENSES[2:]


@dataclass(frozen=True)
class Tax:
    rate: Decimal = Decimal(0)                       # income tax: the shield of deductions
    vat_rate: Decimal = Decimal(0)                   # VAT/GST on capex and on the expenses
    vat_recovered_after_months: int | None = None    # None: VAT is not recovered (a cost)
    import_duty_rate: Decimal = Decimal(0)           # on capex
    depreciation: Literal["straight_line"] = "straight_line"

    @property
    def vat_is_cost(self) -> bool:
        return self.vat_recovered_after_months is None


@dataclass(frozen=True)
class Owned:
    """What the tax of an owned cluster needs from its cash flows (hours from as_of)."""

    capex: Decimal
    life_hours: Decimal
    lead_hours: Decimal
    hold_end_hours: Decimal
    sale_month: int
    sale_cash: Decimal                               # positive: what the sale brings in


@dataclass(frozen=True)
class TaxFlow:
    month: int
    amount: Decimal
    kind: str


def expenses_by_month(flows: Iterable[tuple[int, Decimal, str]]) -> dict[int, Decimal]:
    """The deductible expenses of each month: every flow but capex, resale and the taxes."""
    out: dict[int, Decimal] = {}
    for month, amount, kind in flows:
        if kind not in NOT_EXPENSES:
            out[month] = out.get(month, Decimal(0)) + amount
    return out


def depreciation_by_month(owned: Owned, base: Decimal, months_hours: Decimal) -> dict[int, Decimal]:
    """Straight line: base × the month's hours in (delivery, min(delivery + life, hold end)] / life, to the cent."""
    end = min(owned.lead_hours + owned.life_hours, owned.hold_end_hours)
    out: dict[int, Decimal] = {}
    month = 1
    with localcontext(MONEY_CONTEXT):
        while (month - 1) * months_hours < end:
            hours = max(Decimal(0), min(end, month * months_hours) - max(owned.lead_hours, (month - 1) * months_hours))
            if hours > 0:
                out[month] = cents(base * hours / owned.life_hours)
            month += 1
    return out


def tax_flows(flows: Iterable[tuple[int, Decimal, str]], tax: Tax, months_hours: Decimal,
              owned: Owned | None = None) -> list[TaxFlow]:
    """The tax flows of one bid's cash flows (each month's at most one flow of a kind)."""
    expenses = expenses_by_month(flows)
    capex = owned.capex if owned is not None else Decimal(0)
    out: list[TaxFlow] = []
    with localcontext(MONEY_CONTEXT):
        duty = cents(capex * tax.import_duty_rate)
        vat_capex = cents(capex * tax.vat_rate)
        if duty:
            out.append(TaxFlow(0, duty, "import-duty"))
        vat = {m: cents((e + (capex if m == 0 else 0)) * tax.vat_rate) for m, e in expenses.items()}
        if capex and 0 not in vat:
            vat[0] = vat_capex
        for month, amount in sorted(vat.items()):
            if amount:
                out.append(TaxFlow(month, amount, "vat"))
                if not tax.vat_is_cost:
                    out.append(TaxFlow(month + int(tax.vat_recovered_after_months or 0), -amount, "vat-refund"))
        base = capex + duty + (vat_capex if tax.vat_is_cost else 0)
        depreciation = depreciation_by_month(owned, base, months_hours) if owned is not None and capex else {}
        for month in sorted(set(expenses) | set(depreciation)):
            expense = expenses.get(month, Decimal(0))
            deductible = expense + depreciation.get(month, Decimal(0))
            if tax.vat_is_cost:
                deductible += cents(expense * tax.vat_rate)
            shield = cents(deductible * tax.rate)
            if shield:
                out.append(TaxFlow(month, -shield, "tax-shield"))
        if owned is not None and capex and tax.rate:
            book = base - sum(depreciation.values(), Decimal(0))
            out.append(TaxFlow(owned.sale_month, cents((owned.sale_cash - book) * tax.rate), "tax-on-sale"))
    return out


class Flow(Protocol):
    @property
    def month(self) -> int: ...
    @property
    def amount(self) -> Decimal: ...
    @property
    def kind(self) -> str: ...


def bid_tax_flows(flows: Sequence[Flow], tax: Tax, months_hours: Decimal, lead_hours: Decimal, hold_end_hours: Decimal,
                  life_hours: Decimal | None) -> list[TaxFlow]:
    """The tax flows of one bid's dated cash (an owned cluster: its capex, life and sale from its flows)."""
    plain = [(f.month, f.amount, f.kind) for f in flows]
    capex = sum((f.amount for f in flows if f.kind == "capex"), Decimal(0))
    sale = next((f for f in flows if f.kind == "resale"), None)
    owned = None
    if capex and life_hours and sale is not None:
        owned = Owned(capex, life_hours, lead_hours, hold_end_hours, sale.month, -sale.amount)
    return tax_flows(plain, tax, months_hours, owned)


__all__ = ["bid_tax_flows", "NOT_EXPENSES", "TAX_KINDS", "Owned", "Tax", "TaxFlow", "depreciation_by_month", "expenses_by_month",
           "tax_flows"]
