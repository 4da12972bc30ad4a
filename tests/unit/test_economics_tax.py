"""Taxes as dated flows (economics.tax), with figures worked by hand, and through a whole quote."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from procure import api
from procure.document import validate_quote
from procure.economics.tax import Tax, bid_tax_flows, tax_flows
from procure.report.xlsx_report import build_book

CASES = Path(__file__).resolve().parents[1] / "cases"
D = Decimal


def _by_kind(flows) -> dict[str, list[tuple[int, Decimal]]]:
    out: dict[str, list[tuple[int, Decimal]]] = {}
    for f in flows:
        out.setdefault(f.kind, []).append((f.month, f.amount))
    return out


def test_a_rental_pays_vat_on_its_invoices_and_deducts_them_with_the_vat():
    """Setup 1,000 at signing, invoices 10,000 and 5,000; VAT 10% not recovered, tax 25%:
    VAT 100, 1,000, 500; shield 25% × (expense + its VAT) = 275, 2,750, 1,375."""
    flows = [(0, D("1000"), "setup"), (1, D("10000"), "invoice"), (2, D("5000"), "invoice")]
    got = _by_kind(tax_flows(flows, Tax(rate=D("0.25"), vat_rate=D("0.1")), D(730)))
    assert got == {"vat": [(0, D("100.00")), (1, D("1000.00")), (2, D("500.00"))],
                   "tax-shield": [(0, D("-275.00")), (1, D("-2750.00")), (2, D("-1375.00"))]}


class Flow:
    def __init__(self, month: int, amount: str, kind: str) -> None:
        self.month, self.amount, self.kind = month, D(amount), kind


def test_a_purchase_pays_duty_and_vat_depreciates_and_is_taxed_on_its_sale():
    """Capex 1,200,000 at signing, held two months (1,460 h), sold in month 3 for 600,000; 5-year life
    (43,800 h); duty 5%, VAT 10% recovered a month later, tax 20%.
    Duty 60,000. VAT 120,000 on capex, 100 on each month's 1,000 of power, each refunded a month on.
    Depreciation base 1,260,000 (capex + duty; VAT is recovered): 1,260,000 × 730 / 43,800 = 21,000 a
    month. Shield 20% × (1,000 + 21,000) = 4,400 a month. Book value at the sale 1,260,000 − 42,000 =
    1,218,000: the sale's loss of 618,000 saves 123,600."""
    flows = [Flow(0, "1200000", "capex"), Flow(1, "1000", "power"), Flow(2, "1000", "power"),
             Flow(3, "-600000", "resale")]
    tax = Tax(rate=D("0.2"), vat_rate=D("0.1"), vat_recovered_after_months=1, import_duty_rate=D("0.05"))
    got = _by_kind(bid_tax_flows(flows, tax, D(730), lead_hours=D(0), hold_end_hours=D(1460), life_hours=D(43800)))
    assert got["import-duty"] == [(0, D("60000.00"))]
    assert got["vat"] == [(0, D("120000.00")), (1, D("100.00")), (2, D("100.00"))]
    assert got["vat-refund"] == [(1, D("-120000.00")), (2, D("-100.00")), (3, D("-100.00"))]
    assert got["tax-shield"] == [(1, D("-4400.00")), (2, D("-4400.00"))]
    assert got["tax-on-sale"] == [(3, D("-123600.00"))]


def test_vat_not_recovered_is_depreciated_with_the_capex():
    """Same purchase, VAT not recovered: base 1,200,000 + 60,000 + 120,000 = 1,380,000, so 23,000 a
    month; the shield adds the power's own VAT: 20% × (1,000 + 23,000 + 100) = 4,820."""
    flows = [Flow(0, "1200000", "capex"), Flow(1, "1000", "power"), Flow(2, "1000", "power"),
             Flow(3, "-600000", "resale")]
    tax = Tax(rate=D("0.2"), vat_rate=D("0.1"), import_duty_rate=D("0.05"))
    got = _by_kind(bid_tax_flows(flows, tax, D(730), lead_hours=D(0), hold_end_hours=D(1460), life_hours=D(43800)))
    assert "vat-refund" not in got
    assert got["tax-shield"] == [(1, D("-4820.00")), (2, D("-4820.00"))]
    assert got["tax-on-sale"] == [(3, D("-146800.00"))]            # 20% × (600,000 − 1,334,000)


def _with_tax(tmp_path: Path, tax: str) -> Path:
    target = tmp_path / "example"
    text = (CASES / "example" / "cluster.yaml").read_text(encoding="utf-8")
    (tmp_path / "example").mkdir()
    for log in (CASES / "example" / "logs").iterdir():
        (target / "logs").mkdir(exist_ok=True)
        (target / "logs" / log.name).write_bytes(log.read_bytes())
    assert "\n  cost_basis:" in text
    (target / "cluster.yaml").write_text(text.replace("\n  cost_basis:", f"\n  tax: {tax}\n  cost_basis:", 1),
                                         encoding="utf-8")
    return target / "cluster.yaml"


def test_a_quote_with_taxes_carries_them_as_flows_and_the_workbook_rebuilds_them(tmp_path):
    plain = {b["id"]: b for b in api.quote_document(CASES / "example" / "cluster.yaml").to_data()["bids"]}
    doc = api.quote_document(_with_tax(tmp_path, "{rate: 0.25, vat_rate: 0.1, vat_recovered_after_months: 2, "
                                                 "import_duty_rate: 0.02}")).to_data()
    assert doc["workload"]["tax"]["vat_recovered_after_months"] == 2
    own = next(b for b in doc["bids"] if b["id"] == "own-h100")
    kinds = {f["kind"] for f in own["cash"]["flows"]}
    assert {"import-duty", "vat", "vat-refund", "tax-shield", "tax-on-sale"} <= kinds
    capex = plain["own-h100"]["cash"]["upfront_cash"]
    # at signing: capex, 2% duty and 10% VAT on the capex
    assert own["cash"]["upfront_cash"] == capex + (capex * D("0.02")).quantize(D("0.01")) + \
        (capex * D("0.1")).quantize(D("0.01"))
    rental = next(b for b in doc["bids"] if b["id"] == "aws-p5")
    assert rental["cash"]["present_value"] < plain["aws-p5"]["cash"]["present_value"]   # VAT back, shield kept
    book, result = build_book(validate_quote(doc, "taxed"))
    assert result.mismatches == ()
    assert result.checked > 100


def test_without_a_tax_block_there_are_no_tax_flows():
    doc = api.quote_document(CASES / "example" / "cluster.yaml").to_data()
    assert doc["workload"]["tax"] is None
    assert not {f["kind"] for b in doc["bids"] for f in (b["cash"] or {}).get("flows") or []} & \
        {"import-duty", "vat", "vat-refund", "tax-shield", "tax-on-sale"}
