"""The procurement loop's first half (issue 31): `procure rfq` writes the request and the vendor's
forms; `quote --responses` / `validate --responses` read filled forms back as bids, and a hostile
response ends in exit 1 with a position, nothing written."""

from __future__ import annotations

import io
import typing
import zipfile
from pathlib import Path

import openpyxl
import pytest
import yaml
from pydantic import BaseModel

from procure import api
from procure.errors import InputError
from procure.inputs.form import form_fields
from procure.inputs.schema import Bid
from shared_root import REPO

EXAMPLE = REPO / "examples" / "cluster.yaml"
SLUG = "pretraining-cluster-for-a-70b-dense-model"
FILLED = {"vendor": "Acme GPU Cloud", "accelerator": "h200-sxm-141gb", "gpus": 2048, "network": "ib-ndr400",
          "pricing.kind": "rental", "pricing.price_per_gpu_hour": 2.95, "pricing.currency": "EUR",
          "committed.step_time_s": 3.1, "committed.p99_step_time_s": 3.4}


@pytest.fixture(scope="module", params=["en", "zh-TW"])
def forms(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"rfq-{request.param}")
    written = api.rfq(EXAMPLE, out, lang=request.param)
    return request.param, out, written


def fill_xlsx(form: Path, target: Path, values: dict) -> Path:
    """What another program does with the form: write column B by the keys in column A."""
    book = openpyxl.load_workbook(form)
    sheet = book["Response"]
    for row in sheet.iter_rows(min_row=2):
        if row[0].value in values:
            row[1].value = values[row[0].value]
    book.save(target)
    return target


def _model_at(path: tuple[str, ...]) -> bool:
    model: typing.Any = Bid
    for part in path:
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return False
        annotation = model.model_fields[part].annotation
        args = [a for a in typing.get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
        model = args[0] if args else annotation
    return True


def test_rfq_writes_the_request_and_both_forms(forms):
    lang, out, written = forms
    assert sorted(p.name for p in written) == sorted([f"{SLUG}-rfq.pdf", f"{SLUG}-response.xlsx", f"{SLUG}-response.yaml"])
    assert (out / f"{SLUG}-rfq.pdf").read_bytes().startswith(b"%PDF-")
    book = openpyxl.load_workbook(out / f"{SLUG}-response.xlsx")
    sheet = book["Response"]
    assert sheet.protection.sheet
    keys = [row[0].value for row in sheet.iter_rows(min_row=2)]
    assert keys[:4] == ["id", "vendor", "accelerator", "gpus"]
    for row in sheet.iter_rows(min_row=2):
        assert not row[1].protection.locked and row[0].protection.locked and row[3].protection.locked
    validated = {str(cell) for dv in sheet.data_validations.dataValidation for cell in dv.sqref.ranges}
    row_of = {k: i + 2 for i, k in enumerate(keys)}
    for key in ("accelerator", "network", "pricing.kind", "pricing.currency", "committed.precision"):
        assert f"B{row_of[key]}" in validated, key
    catalog = book.worksheets[1]
    assert "h100-sxm5-80gb" in {row[1].value for row in catalog.iter_rows(min_row=2)}
    text = (out / f"{SLUG}-response.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(text)["pricing"] == {f.path[1]: None for f in form_fields() if f.path[0] == "pricing"}
    if lang == "zh-TW":
        assert sheet["C1"].value == "單位" and "必填" in text
        vendor_row = keys.index("vendor") + 2
        assert "廠商" in sheet.cell(vendor_row, 4).value


def test_every_form_field_is_a_cluster_yaml_bid_key_and_every_required_one_is_asked():
    fields = form_fields()
    assert all(_model_at(f.path) for f in fields), [f.key for f in fields if not _model_at(f.path)]
    asked = {f.key for f in fields}
    required = {name for name, info in Bid.model_fields.items() if info.is_required() and name != "pricing"}
    assert required - {"id"} <= asked and "id" in asked
    assert "pricing.kind" in asked and "committed.p99_step_time_s" in asked


def test_the_rfq_is_deterministic(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    api.rfq(EXAMPLE, a)
    api.rfq(EXAMPLE, b)
    for name in (f"{SLUG}-response.xlsx", f"{SLUG}-response.yaml"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_a_rerun_replaces_its_own_forms_but_keeps_one_edited_under_its_header(tmp_path):
    api.rfq(EXAMPLE, tmp_path)
    api.rfq(EXAMPLE, tmp_path)                      # its own, unedited: replaced
    form = tmp_path / f"{SLUG}-response.yaml"
    edited = form.read_text(encoding="utf-8") + "# the vendor's note\n"
    form.write_text(edited, encoding="utf-8")       # the header still says procure; the hash does not
    with pytest.raises(InputError) as info:
        api.rfq(EXAMPLE, tmp_path)
    assert [d.code for d in info.value.diagnostics] == ["exists"]
    assert form.read_text(encoding="utf-8") == edited
    api.rfq(EXAMPLE, tmp_path, force=True)
    assert form.read_text(encoding="utf-8") != edited


def test_a_filled_workbook_and_a_yaml_response_are_quoted_next_to_the_inline_bids(forms, tmp_path):
    lang, out, _ = forms
    responses = tmp_path / "responses"
    responses.mkdir()
    fill_xlsx(out / f"{SLUG}-response.xlsx", responses / "Acme Cloud.xlsx", FILLED)
    form = yaml.safe_load((out / f"{SLUG}-response.yaml").read_text(encoding="utf-8"))
    form.update(vendor="Beta Compute", accelerator="h100-sxm5-80gb", gpus=4096)
    form["pricing"].update(kind="rental", usd_per_gpu_hour=2.1)
    (responses / "beta.yaml").write_text(yaml.safe_dump(form), encoding="utf-8")
    doc = api.quote_document(EXAMPLE, responses=responses)
    bids = {b.id: b for b in doc.bids}
    assert {"aws-p5", "acme-cloud", "beta"} <= set(bids)
    acme = bids["acme-cloud"].to_data() if hasattr(bids["acme-cloud"], "to_data") else bids["acme-cloud"].model_dump()
    assert acme["gpus"] == 2048 and acme["accelerator"]["id"] == "h200-sxm-141gb"
    assert acme["total_cost"] and float(acme["total_cost"]) > 0
    roles = {(i.path, i.role) for i in doc.inputs}
    assert ("Acme Cloud.xlsx", "response") in roles and ("beta.yaml", "response") in roles
    assert all(len(i.sha256) == 64 for i in doc.inputs)


def _problems(responses: Path) -> list[str]:
    with pytest.raises(InputError) as info:
        api.validate(EXAMPLE, responses=responses)
    return [d.format() for d in info.value.diagnostics]


def test_a_bad_price_is_reported_at_its_cell_and_nothing_is_written(forms, tmp_path):
    _, out, _ = forms
    responses = tmp_path / "responses"
    responses.mkdir()
    fill_xlsx(out / f"{SLUG}-response.xlsx", responses / "acme.xlsx",
              dict(FILLED, **{"pricing.price_per_gpu_hour": -3, "vendor": None}))
    rows = {row[0].value: row[0].row for row in openpyxl.load_workbook(responses / "acme.xlsx")["Response"].iter_rows(min_row=2)}
    found = _problems(responses)
    assert any(f"acme.xlsx: Response!B{rows['pricing.price_per_gpu_hour']}: error[out-of-range]" in p for p in found), found
    assert any(f"acme.xlsx: Response!B{rows['vendor']}: error[missing-field]" in p for p in found), found
    with pytest.raises(InputError):
        api.quote(EXAMPLE, tmp_path / "reports", ["json"], responses=responses)
    assert not (tmp_path / "reports" / f"{SLUG}.json").exists()


def _hostile(out: Path, responses: Path) -> None:
    form = out / f"{SLUG}-response.xlsx"
    formula = fill_xlsx(form, responses / "formula.xlsx", dict(FILLED, **{"pricing.price_per_gpu_hour": "=2*1.5"}))
    assert formula.exists()
    book = openpyxl.load_workbook(fill_xlsx(form, responses / "merged.xlsx", FILLED))
    book["Response"].merge_cells("B5:B6")
    book.save(responses / "merged.xlsx")
    book = openpyxl.load_workbook(fill_xlsx(form, responses / "hidden.xlsx", FILLED))
    book.worksheets[1].sheet_state = "hidden"
    book.save(responses / "hidden.xlsx")
    book = openpyxl.load_workbook(fill_xlsx(form, responses / "rows.xlsx", FILLED))
    book["Response"].cell(1_000_000, 1).value = "vendor"
    book.save(responses / "rows.xlsx")
    fill_xlsx(form, responses / "types.xlsx", dict(FILLED, gpus="lots", **{"committed.step_time_s": "fast"}))
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("xl/worksheets/sheet1.xml", b"\0" * 300_000_000)
    (responses / "bomb.xlsx").write_bytes(bomb.getvalue())
    (responses / "notxlsx.xlsx").write_bytes(b"PK\x03\x04 not really a workbook")
    (responses / "list.yaml").write_text("- just\n- a list\n")


def test_hostile_responses_end_in_input_errors_with_a_position(forms, tmp_path):
    _, out, _ = forms
    responses = tmp_path / "responses"
    responses.mkdir()
    _hostile(out, responses)
    found = "\n".join(_problems(responses))
    for expected in ("formula.xlsx: Response!B", "error[formula]", "merged.xlsx: Response!B5", "hidden.xlsx",
                     "error[hidden-sheet]", "rows.xlsx: Response!A", "error[too-large]", "types.xlsx: Response!B",
                     "error[bad-type]", "bomb.xlsx", "zip bomb", "notxlsx.xlsx", "list.yaml:1:1"):
        assert expected in found, expected


def test_hostile_responses_exit_1_without_a_traceback(forms, tmp_path):
    import subprocess
    import sys

    _, out, _ = forms
    responses = tmp_path / "responses"
    responses.mkdir()
    _hostile(out, responses)
    run = subprocess.run([sys.executable, "-m", "procure.cli", "quote", str(EXAMPLE), "--responses", str(responses),
                          "-o", str(tmp_path / "reports")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())


def test_an_rfq_needs_no_bids_but_a_quote_does(tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("schema: procure/v1\ntitle: No bids yet\nas_of: 2026-12-01\n"
                       "workload: {model: llama3-8b, seq_len: 8192, global_batch: 512, train_tokens: 1e12}\n")
    written = api.rfq(cluster, tmp_path / "rfq")
    assert len(written) == 3
    with pytest.raises(InputError):
        api.validate(cluster)
