"""Issue 12 end to end: quoted prices in their own currency, your own deal (inline terms and your
own price books, with line-numbered errors), both cost bases and the ranking basis, delivery
dates, and facility power from the system spec."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from procure import api
from procure.cli import main
from procure.errors import InputError

CLUSTER = """\
schema: procure/v1
title: commercial test
as_of: 2026-12-01
currency: USD
{top}workload:
  model: llama3-8b
  seq_len: 8192
  global_batch: 512
  train_tokens: 1e11
  deadline_days: 60
{workload}assumptions:
  power_usd_per_kwh: 0.08
  pue: 1.3
bids:
  - id: b
    vendor: V
    accelerator: h100-sxm5-80gb
    gpus: 64
    network: ib-ndr400
    pricing: {pricing}
{extra}"""

BOOK = """\
id: {id}
provider: "Taipei DC"
kind: rental
currency: TWD
effective: 2026-10-01
source: ["our quotation TDC-1"]
as_of: "2026-11"
lines:
  - accelerator: {accelerator}
    term: reserved-6m
    price_per_gpu_hour: "62"
    min_commit_months: 6
    source: "quotation TDC-1, line 1"
    as_of: "2026-11"
"""


def write(tmp_path: Path, pricing: str, top: str = "", workload: str = "", extra: str = "") -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER.format(pricing=pricing, top=top, workload=workload, extra=extra), encoding="utf-8")
    return path


def book(tmp_path: Path, folder: str = "books", book_id: str = "taipei-dc-2026q4",
         accelerator: str = "h100-sxm5-80gb") -> Path:
    (tmp_path / folder).mkdir(exist_ok=True)
    path = tmp_path / folder / f"{book_id}.yaml"
    path.write_text(BOOK.format(id=book_id, accelerator=accelerator), encoding="utf-8")
    return path


def problems(path: Path, **kwargs) -> list[str]:
    with pytest.raises(InputError) as exc:
        api.validate(path, **kwargs)
    return [d.format() for d in exc.value.diagnostics]


def bid_of(path: Path, **kwargs) -> dict:
    return api.quote_document(path, **kwargs).to_data()["bids"][0]


# --- money in any currency -------------------------------------------------------------------

def test_a_twd_price_keeps_its_quote_and_converts_once(tmp_path):
    bid = bid_of(write(tmp_path, "{kind: rental, price_per_gpu_hour: 75, currency: TWD}"))
    quoted = bid["pricing"]["quoted"][0]
    assert (quoted["quoted"], quoted["currency"]) == (Decimal("75"), "TWD")
    assert quoted["fx_rate"] == Decimal("0.0317279015166")            # 1 / 31.518, 12 digits
    assert quoted["converted"] == Decimal("2.379593") == bid["pricing"]["price_per_gpu_hour"]
    assert bid["pricing"]["book_currency"] == "TWD" and str(bid["pricing"]["fx_as_of"]) == "2026-06-30"
    line = bid["cost_bases"]["run"]["cost_lines"][0]
    assert line["rate"] == Decimal("2.379593")                        # the cost line uses the converted price


def test_the_pdf_view_shows_nt_75_and_the_converted_price(tmp_path):
    from procure.report.document import build_view

    doc = api.quote_document(write(tmp_path, "{kind: rental, price_per_gpu_hour: 75, currency: TWD}"))
    overview = dict(build_view(doc)["bids"][0]["overview"])
    assert overview["Price per GPU-hour (as quoted)"] == "NT$75.00"
    assert overview["Price per GPU-hour (in USD)"] == "$2.38"       # money: cents, not the conversion's 1e-6
    assert "0.0317279015166 USD per TWD" in overview["FX rate"]


# --- your own deal ---------------------------------------------------------------------------

def test_inline_capex_works_end_to_end(tmp_path):
    pricing = ("{kind: purchase, capex_per_gpu: 30000, capex_per_node: 60000, life_years: 5, "
               "residual_fraction: 0.1, colo_per_kw_month: 180, staff_per_year: 500000}")
    bid = bid_of(write(tmp_path, pricing, extra="    lead_time_days: 45\n"))
    assert bid["upfront_capex"] == Decimal("2400000.00")               # 64 × 30000 + 8 nodes × 60000
    keys = {line["key"] for line in bid["cost_bases"]["commitment"]["cost_lines"]}
    assert {"capex", "node_capex", "financing", "power", "colocation", "staff", "resale"} <= keys
    assert str(bid["delivery"]["available_from"]) == "2027-01-15"      # as_of + 45 days
    assert bid["delivery"]["lead_time_origin"] == "lead_time_days"


@pytest.mark.parametrize("pricing, words", [
    ("{kind: purchase, usd_per_gpu_hour: 1.20}", "a purchase is priced by `capex_per_gpu`"),
    ("{kind: purchase, capex_per_gpu: 30000}", "inline `capex_per_gpu` and `life_years`"),
    ("{kind: rental, usd_per_gpu_hour: 2.0, capex_per_gpu: 30000}", "purchase terms on a `kind: rental` bid"),
    ("{kind: purchase, capex_per_gpu: 1, life_years: 5, discount_fraction: 0.1}", "rental terms on a `kind: purchase`"),
])
def test_a_wrong_deal_is_a_line_numbered_error(tmp_path, pricing, words):
    found = problems(write(tmp_path, pricing))
    assert any(words in p and "cluster.yaml:20:" in p for p in found), found


def test_your_own_price_book_next_to_cluster_yaml_works_end_to_end(tmp_path):
    book(tmp_path)
    path = write(tmp_path, "{kind: rental, price_book: taipei-dc-2026q4, term: reserved-6m, discount_fraction: 0.1}",
                 top="price_books: [books]\n")
    doc = api.quote_document(path).to_data()
    bid = doc["bids"][0]
    assert bid["pricing"]["quoted"][0]["quoted"] == Decimal("62") and bid["pricing"]["book_currency"] == "TWD"
    assert bid["pricing"]["terms"]["min_commit_months"] == 6
    idle = bid["cost_bases"]["commitment"]["idle_commitment_hours"]
    assert idle > 0 and bid["idle_commitment_hours"] == idle
    assert bid["cost_bases"]["run"]["idle_commitment_hours"] == 0
    gpu_line = bid["cost_bases"]["run"]["cost_lines"][0]
    assert gpu_line["factors"] == {"discount_factor": Decimal("0.90")}
    assert any(i["role"] == "price-book" and i["path"] == "taipei-dc-2026q4.yaml" for i in doc["inputs"])


def test_price_books_from_the_command_line(tmp_path):
    folder = book(tmp_path, folder="elsewhere").parent
    path = write(tmp_path, "{kind: rental, price_book: taipei-dc-2026q4, term: reserved-6m}")
    assert any("unknown-price-book" in p for p in problems(path))
    assert api.validate(path, price_books=[folder]).bids[0].price.book.id == "taipei-dc-2026q4"


def test_a_broken_user_book_is_reported_at_its_file_line_and_column(tmp_path):
    bad = book(tmp_path, accelerator="h100-sxm")
    bad.write_text(bad.read_text().replace('min_commit_months: 6', 'min_commit_months: -1'))
    path = write(tmp_path, "{kind: rental, usd_per_gpu_hour: 2}", top="price_books: [books, missing]\n")
    found = problems(path)
    assert any(p.startswith(f"{bad}:12:") and "min_commit_months" in p for p in found), found
    assert any("cluster.yaml:5:" in p and "not-found" in p for p in found), found


def test_a_user_book_may_not_reuse_a_shipped_id_or_name_an_unknown_accelerator(tmp_path):
    book(tmp_path, book_id="aws-2026q3")
    book(tmp_path, book_id="mine-2026", accelerator="h100-sxm")
    found = problems(write(tmp_path, "{kind: rental, usd_per_gpu_hour: 2}", top="price_books: [books]\n"))
    assert any("aws-2026q3.yaml:1:" in p and "duplicate-price-book" in p for p in found), found
    assert any("mine-2026.yaml:9:" in p and "unknown-accelerator" in p and "h100-sxm5-80gb" in p
               for p in found), found


# --- two bases, one ranking basis ------------------------------------------------------------

def test_the_basis_comes_from_the_option_else_the_workload_else_present_value(tmp_path):
    path = write(tmp_path, "{kind: rental, usd_per_gpu_hour: 2}", workload="  cost_basis: run\n")
    assert api.quote_document(path).cost_basis == "run"
    assert api.quote_document(path, basis="commitment").cost_basis == "commitment"
    plain = write(tmp_path, "{kind: rental, usd_per_gpu_hour: 2}")
    doc = api.quote_document(plain)
    assert doc.cost_basis == "present_value"
    assert set(doc.bids[0].cost_bases) == {"present_value", "run", "commitment"}


def test_the_terminal_names_the_ranking_basis(tmp_path):
    path = write(tmp_path, "{kind: rental, usd_per_gpu_hour: 2}")
    result = CliRunner().invoke(main, ["quote", str(path), "-o", str(tmp_path / "out"), "--format", "json",
                                       "--basis", "run"])
    assert result.exit_code == 0, result.output
    assert "Ranked on the run basis" in result.output


def test_a_deadline_date_and_a_late_delivery(tmp_path):
    path = write(tmp_path, "{kind: rental, usd_per_gpu_hour: 2}", extra="    available_from: 2027-01-29\n")
    bid = bid_of(path)
    assert bid["delivery"]["lead_time_days"] == 59.0
    assert "misses-deadline" in {f["code"] for f in bid["flags"]}
    early = bid_of(write(tmp_path, "{kind: rental, usd_per_gpu_hour: 2}", extra="    lead_time_days: 1\n"))
    assert "misses-deadline" not in {f["code"] for f in early["flags"]}


# --- facility power from the system spec -----------------------------------------------------

def test_power_and_colocation_match_a_hand_calculation_from_the_dgx_h100_spec(tmp_path):
    """DGX H100: 10.2 kW per 8-GPU node, 81 W of fabric per GPU (hardware_catalog/systems/dgx-h100.yaml)."""
    path = write(tmp_path, "{kind: purchase, price_book: purchase-2026, term: purchase}")
    bid = bid_of(path)
    assert bid["power"]["system"] == "dgx-h100" and bid["power"]["it_kw_per_gpu"] == Decimal("1.356")
    lines = {line["key"]: line for line in bid["cost_bases"]["run"]["cost_lines"]}
    hours = bid["used_hours"]
    kw = Decimal("10.2") / 8 + Decimal("81") / 1000                       # 1.356 kW of IT load per GPU
    power = (64 * hours * kw * Decimal("0.8") * Decimal("1.3") * Decimal("0.08")).quantize(Decimal("0.01"))
    colo = (64 * kw * Decimal("200") * hours / Decimal("730")).quantize(Decimal("0.01"))   # no PUE
    assert lines["power"]["amount"] == power
    assert lines["colocation"]["amount"] == colo
    assert lines["colocation"]["factors"] == {"kw_per_gpu": kw, "used_hours": hours}
    assert lines["power"]["factors"]["pue"] == Decimal("1.3")             # PUE once, on power only
    assert bid["energy_mwh"] == (64 * kw * Decimal("0.8") * Decimal("1.3") * hours / 1000).quantize(Decimal("0.001"))


def test_every_total_is_the_sum_of_its_lines_on_both_bases(tmp_path):
    path = write(tmp_path, "{kind: purchase, price_book: purchase-2026, term: purchase}")
    bid = bid_of(path)
    for basis in ("run", "commitment"):
        found = bid["cost_bases"][basis]
        assert found["total_cost"] == sum(line["amount"] for line in found["cost_lines"])
    assert bid["total_cost"] == bid["cost_bases"][bid["cost_basis"]]["total_cost"]
