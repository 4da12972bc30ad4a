"""The XLSX report: contract, live formulas (recalculated by LibreOffice), text safety, determinism."""

from __future__ import annotations

import copy
import difflib
import io
import os
import shutil
import subprocess
import zipfile
from decimal import Decimal
from pathlib import Path

import openpyxl
import pytest

from procure.document import load_quote
from procure.report.xlsx_report import render_xlsx

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLE = FIXTURES / "quote_sample.json"
UPDATE = os.environ.get("PROCURE_UPDATE_GOLDENS") == "1"
SHEETS = ["Summary", "Assumptions", "Bids", "Cost lines", "Step time", "Ratios", "Time to target", "Measurements",
          "Sensitivity", "Sources"]
SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")


@pytest.fixture(scope="module")
def doc() -> dict:
    return load_quote(SAMPLE.read_bytes(), "sample").to_data()


@pytest.fixture(scope="module")
def xlsx(doc) -> bytes:
    return render_xlsx(doc)


def workbook(data: bytes, **kwargs):
    return openpyxl.load_workbook(io.BytesIO(data), **kwargs)


def cell_dump(data: bytes) -> str:
    """Every non-empty cell as 'Sheet!A1 | type | value | format', then the defined names."""
    wb = workbook(data)
    lines = []
    for ws in wb.worksheets:
        lines.append(f"== {ws.title} (freeze {ws.freeze_panes}, tables {sorted(ws.tables.keys())}, charts {len(ws._charts)})")
        for row in ws.iter_rows():
            for c in row:
                if c.value is not None:
                    lines.append(f"{ws.title}!{c.coordinate} | {c.data_type} | {c.value!r} | {c.number_format}")
    lines += [f"name {n} = {d.attr_text}" for n, d in sorted(wb.defined_names.items())]
    return "\n".join(lines) + "\n"


def test_cell_dump_matches_golden(xlsx):
    path = FIXTURES / "report" / "quote_sample.xlsx.txt"
    actual = cell_dump(xlsx)
    if UPDATE or not path.exists():
        path.write_text(actual, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"golden {path} was missing and has been written; review and commit it")
        return
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(list(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), str(path),
                                                 "actual"))[:80])
        pytest.fail(f"XLSX cell dump differs (rerun with --update-goldens if intended):\n{diff}")


def test_byte_identical_for_the_same_document(doc, xlsx):
    assert render_xlsx(copy.deepcopy(doc)) == xlsx
    with zipfile.ZipFile(io.BytesIO(xlsx)) as z:
        assert {i.date_time for i in z.infolist()} == {(2000, 1, 1, 0, 0, 0)}
        assert z.namelist()[0] == "[Content_Types].xml"
        core = z.read("docProps/core.xml").decode()
    assert "2026-12-01T00:00:00Z" in core and core.count("2026-12-01T00:00:00Z") == 2


def test_sheets_and_summary_contract(doc, xlsx):
    wb = workbook(xlsx)
    assert wb.sheetnames == SHEETS
    ws = wb["Summary"]
    head = [c.value for c in ws[1]]
    for column in ("Bid", "Total cost", "USD per million tokens", "Time to train (days)"):
        assert column in head
    total_col, usd_col = head.index("Total cost") + 1, head.index("USD per million tokens") + 1
    bids = {ws.cell(r, 2).value: r for r in range(2, ws.max_row + 1) if ws.cell(r, 2).value}
    assert set(bids) == {b["id"] for b in doc["bids"]}
    for bid in doc["bids"]:
        r = bids[bid["id"]]
        if bid["total_cost"] is None:
            assert ws.cell(r, total_col).value == "n/a"
        else:
            assert ws.cell(r, total_col).data_type == "f" and ws.cell(r, usd_col).data_type == "f"
    for name in ws.tables:
        assert ws.tables[name].ref.startswith("A1:")
    assert all(wb[s].freeze_panes for s in SHEETS)


def test_inputs_are_named_cells_holding_the_document_values(doc, xlsx):
    wb = workbook(xlsx)
    names = wb.defined_names
    acme = next(b for b in doc["bids"] if b["id"] == "acme")
    expected = {"bid_acme_gpus": acme["gpus"], "bid_acme_billed_hours": acme["billed_hours"],
                "bid_acme_price_per_gpu_hour": acme["pricing"]["price_per_gpu_hour"],
                "bid_acme_fx_rate": acme["pricing"]["fx_rate"], "in_pue": Decimal("1.3"),
                "in_power_usd_per_kwh": Decimal("0.08"), "in_train_tokens": doc["workload"]["train_tokens"],
                "fx_TWD": Decimal("32.15"), "bid_acme_failures_per_gpu_hour": acme["goodput"]["failures_per_gpu_hour"]}
    for name, value in expected.items():
        sheet, ref = next(names[name].destinations)
        assert sheet == "Assumptions"
        assert Decimal(str(wb[sheet][ref].value)) == Decimal(str(value)), name


def test_cost_lines_are_formulas_over_the_named_inputs(xlsx):
    ws = workbook(xlsx)["Cost lines"]
    rows = {(ws.cell(r, 1).value, ws.cell(r, 2).value): r for r in range(2, ws.max_row + 1)}
    gpu = rows[("acme", "GPU-hours")]
    assert ws.cell(gpu, 3).value == "=bid_acme_gpus*bid_acme_billed_hours"
    assert ws.cell(gpu, 5).value == "=bid_acme_price_per_gpu_hour*bid_acme_fx_rate"
    assert ws.cell(gpu, 8).value == f"=ROUND(C{gpu}*E{gpu}*F{gpu}/G{gpu},2)"
    assert ws.cell(rows[("acme", "Support")], 3).value == f"=H{gpu}"
    tw = rows[("tw-cloud", "GPU-hours")]
    assert ws.cell(tw, 5).value == "=ROUND(bid_tw_cloud_price_per_gpu_hour/bid_tw_cloud_fx_rate,4)"
    power = rows[("own-h200", "Power")]
    assert ws.cell(power, 5).value == "=in_power_usd_per_kwh" and ws.cell(power, 6).value == "=in_pue"
    capex = rows[("own-h200", "Servers (amortised)")]
    assert ws.cell(capex, 6).value == "=0.65*bid_own_h200_billed_hours" and ws.cell(capex, 7).value == 35040


def test_user_strings_are_text_never_formulas(doc):
    hostile = copy.deepcopy(doc)
    hostile["bids"][0]["vendor"] = "Acme\x07 Cl\x1boud\x00"
    hostile["bids"][1]["cost_lines"][0]["label"] = "@SUM(A1:A9)"
    hostile["title"] = "+cmd|' /C calc'!A0"
    data = render_xlsx(hostile)
    wb = workbook(data)
    summary = wb["Summary"]
    vendors = {summary.cell(r, 2).value: summary.cell(r, 3) for r in range(2, summary.max_row + 1)}
    link = vendors["own-h200"]
    assert link.value == '=HYPERLINK("http://x","y")' and link.data_type == "s" and link.quotePrefix
    assert vendors[hostile["bids"][0]["id"]].value == "Acme Cloud"
    assert vendors["blackwell"].value == '<img src="file:///etc/hostname">'
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        sheets = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/worksheets/sheet")]
    formulas = [f for s in sheets for f in s.split("<f>")[1:]]
    assert not any(f.startswith(("HYPERLINK", "SUM(A1", "cmd")) for f in formulas)


def _recalculate(data: bytes, tmp_path: Path):
    src = tmp_path / "in.xlsx"
    src.write_bytes(data)
    out = tmp_path / "out"
    profile = (tmp_path / "lo-profile").as_uri()
    subprocess.run([SOFFICE, f"-env:UserInstallation={profile}", "--headless", "--norestore",
                    "--convert-to", "xlsx", "--outdir", str(out), str(src)],
                   check=True, capture_output=True, timeout=180)
    return workbook((out / "in.xlsx").read_bytes(), data_only=True)


def _summary_values(wb) -> dict[str, tuple]:
    ws = wb["Summary"]
    head = [c.value for c in ws[1]]
    t, u = head.index("Total cost") + 1, head.index("USD per million tokens") + 1
    return {ws.cell(r, 2).value: (ws.cell(r, t).value, ws.cell(r, u).value) for r in range(2, ws.max_row + 1)
            if ws.cell(r, 2).value}


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_recalculates_every_summary_formula_to_the_json_value(doc, xlsx, tmp_path):
    values = _summary_values(_recalculate(xlsx, tmp_path))
    checked = 0
    for bid in doc["bids"]:
        total, usd = values[bid["id"]]
        if bid["total_cost"] is None:
            assert total == "n/a"
            continue
        for got, want in ((total, bid["total_cost"]), (usd, bid["cost_per_million_tokens"])):
            assert abs(Decimal(str(got)) - want) <= Decimal("0.0001") * abs(want), (bid["id"], got, want)
            checked += 1
    assert checked == 8


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_a_changed_price_flows_into_every_total(doc, xlsx, tmp_path):
    wb = workbook(xlsx)
    sheet, ref = next(wb.defined_names["bid_acme_price_per_gpu_hour"].destinations)
    wb[sheet][ref].value = 4.70                                     # double the 2.35 price
    buffer = io.BytesIO()
    wb.save(buffer)
    values = _summary_values(_recalculate(buffer.getvalue(), tmp_path))
    acme = next(b for b in doc["bids"] if b["id"] == "acme")
    lines = {line["key"]: line["amount"] for line in acme["cost_lines"]}
    expected = 2 * lines["gpu_hours"] + lines["storage"] + 2 * lines["support"]
    total, usd = values["acme"]
    assert abs(Decimal(str(total)) - expected) < Decimal("0.05")
    assert abs(Decimal(str(usd)) - expected / Decimal("15000000")) < Decimal("0.0001")
    other = next(b for b in doc["bids"] if b["id"] == "blackwell")
    assert abs(Decimal(str(values["blackwell"][0])) - other["total_cost"]) < Decimal("0.01")
