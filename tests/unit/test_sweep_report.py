"""Sweep reports: JSON (the contract), Parquet, XLSX, HTML with the frontier chart, PDF, terminal."""

from __future__ import annotations

import io
from decimal import Decimal
import re
import shutil
import subprocess

import pytest
from sweep_support import SMALL_POINTS, write_sweep

from procure.jsontext import parse_json
from procure.report.sweep import render_sweep, render_sweep_bytes, sweep_html
from procure.report.sweep.chart import ChartPoint, frontier_chart, log_ticks
from procure.sweep import load_sweep, plan_sweep, run_sweep
from procure.sweep.columns import COLUMNS, flatten
from procure.sweep.document import SweepDocument

CONTRACT = {"accelerator", "gpus", "term", "feasible", "time_to_train_days", "total_cost",
            "cost_per_million_tokens", "on_frontier"}


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep")
    return run_sweep(plan_sweep(load_sweep(write_sweep(folder))), folder / "parts", workers=1).document


@pytest.fixture(scope="module")
def rendered(document):
    return render_sweep_bytes(document, ["json", "parquet", "xlsx", "html"])


def test_json_is_the_contract_and_reads_back_to_the_same_document(document, rendered):
    data = parse_json(rendered["json"], "sweep.json")
    assert data["schema"] == "procure.sweep/v1" and len(data["points"]) == SMALL_POINTS
    assert all(CONTRACT <= set(p) for p in data["points"])
    assert SweepDocument.model_validate(data) == document
    assert sum(p["on_frontier"] for p in data["points"]) == sum(len(f["frontier"]) for f in data["findings"]) > 0


def test_parquet_holds_every_point_flat_with_exact_money(document, rendered):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(rendered["parquet"]))
    assert table.column_names == [c.name for c in COLUMNS] and table.num_rows == SMALL_POINTS
    assert table.schema.field("total_cost").type == pa.decimal128(38, 2)
    rows = table.to_pylist()
    expected = [flatten(p) for p in document.to_data()["points"]]
    assert rows == expected


def test_the_workbook_lists_every_point_filterable_with_the_ask_first(document, rendered):
    from openpyxl import load_workbook

    wb = load_workbook(io.BytesIO(rendered["xlsx"]))
    assert wb.sheetnames == ["Ask", "Frontier", "Best", "Points", "Terms", "Inputs"]
    points = wb["Points"]
    assert points.max_row == SMALL_POINTS + 1 and points.freeze_panes == "C2"
    assert points.auto_filter.ref == f"A1:{points.cell(1, len(COLUMNS)).column_letter}{SMALL_POINTS + 1}"
    header = [c.value for c in points[1]]
    assert header[:6] == ["Index", "Point", "Workload", "Accelerator", "Network", "GPUs"]
    total = header.index("Total cost") + 1
    first_costed = next(p for p in document.points if p.total_cost is not None)
    assert Decimal(str(points.cell(first_costed.index + 2, total).value)) == first_costed.total_cost
    assert wb["Ask"]["B2"].value == document.findings[0].ask.text


def test_html_has_a_frontier_chart_per_workload_with_every_frontier_point_numbered(document, rendered):
    html = rendered["html"].decode("utf-8")
    assert html.count("<svg") == len(document.findings)
    frontier = sum(len(f.frontier) for f in document.findings)
    assert len(re.findall(r'<circle [^>]*r="4"', html)) == frontier
    assert document.findings[0].ask.text.split(" (")[0] in html
    assert "{{" not in html and "Suggested RFQ ask" in html


def test_pdf_is_made_from_the_html(document, tmp_path):
    written = render_sweep(document, ["pdf"], tmp_path, "small")
    data = written[0].read_bytes()
    assert data.startswith(b"%PDF")
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(written[0]), "-"], capture_output=True, text=True).stdout
        assert "Suggested RFQ ask" in text and "The frontier" in text


def test_same_document_same_bytes(document, rendered):
    again = render_sweep_bytes(document, ["json", "parquet", "xlsx", "html"])
    assert again == rendered


def test_the_frontier_chart_draws_a_staircase_through_the_frontier_in_time_order():
    pts = [ChartPoint(10.0, 3.0, 0, "1", (9.0, 11.0), (2.5, 3.5)), ChartPoint(40.0, 1.0, 1, "2"),
           ChartPoint(30.0, 5.0, 0)]
    svg = frontier_chart(pts, ["a", "b"], str, str, title="t", x_label="x", y_label="y", frontier_label="f",
                         deadline=("deadline", 35.0))
    assert svg.count('r="4"') == 2 and svg.count('r="1.8"') == 1 and svg.count("<polyline") == 1
    xs = [float(x) for x in re.findall(r'<circle cx="([\d.]+)" cy="[\d.]+" r="4"', svg)]
    assert xs == sorted(xs)
    assert ">deadline<" in svg
    dear = pts + [ChartPoint(20.0, 100.0, 1)]          # 20x the dearest frontier point: left out
    svg = frontier_chart(dear, ["a", "b"], str, str, title="t", x_label="x", y_label="y", frontier_label="f",
                         left_out=lambda n, cap: f"{n} left out above {cap:g}")
    assert svg.count('r="1.8"') == 1 and ">1 left out above 17.5<" in svg


def test_log_ticks_cover_the_range():
    assert log_ticks(8.0, 120.0) == [10.0, 20.0, 50.0, 100.0]
    assert log_ticks(0.11, 0.13) == [0.11, 0.13]


def test_terminal_shows_the_ask_and_the_frontier(document):
    from rich.console import Console

    for width in (80, 160):
        console = Console(record=True, width=width, force_terminal=False)
        from procure.report.sweep import print_sweep_terminal

        print_sweep_terminal(document, console)
        text = console.export_text()
        assert "Ask for" in text or "No point meets" in text
        assert all(pid in text for pid in document.findings[0].frontier)
        assert "\u200b" not in text


def test_sweep_html_escapes_user_text(document):
    hostile = document.model_copy(update={"title": "<script>alert(1)</script>"})
    assert "<script>alert" not in sweep_html(hostile)


def test_the_sweep_renderers_read_the_typed_document():
    """Issue 29: the sweep's views and writers take ``SweepDocument`` (mypy checks every field they
    read); only the JSON writer turns it into plain data."""
    import re
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "procure" / "report" / "sweep"
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\b(doc|document|point|findings)\[", text), path.name
        assert text.count("to_data()") == (1 if path.name == "__init__.py" else 0), path.name
