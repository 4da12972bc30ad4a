"""Attach only what was read (issue 30): the PDF carries, and the document lists with its SHA-256,
only the measured files procure parsed; a file of a measured folder skipped as not a log (a
``credentials.txt``) is neither listed nor attached, nor is a file changed since it was parsed; a
hard link in a measured or template folder is refused before it is read (nothing shows where its
other names lie)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from procure import api
from procure.errors import InputError

REPO = Path(__file__).resolve().parents[2]
SECRET = "aws_secret_access_key = TOP-SECRET\n"


@pytest.fixture
def case(tmp_path) -> Path:
    folder = tmp_path / "rfq"
    shutil.copytree(REPO / "examples", folder)
    (folder / "logs" / "credentials.txt").write_text(SECRET)
    text = (folder / "cluster.yaml").read_text(encoding="utf-8")
    assert "measured: [logs/coreweave-burnin.log]" in text
    (folder / "cluster.yaml").write_text(text.replace("measured: [logs/coreweave-burnin.log]", "measured: [logs]"),
                                         encoding="utf-8")
    return folder


def _attachments(case: Path) -> tuple[list[tuple[str, bytes]], object]:
    inputs = api.load_inputs(case / "cluster.yaml")
    from procure.pipeline import build_document

    document = build_document(inputs)
    return api._attachments(inputs, document), document


def test_a_file_skipped_as_not_a_log_is_neither_listed_nor_attached(case):
    attached, document = _attachments(case)
    names = [name for name, _data in attached]
    assert names == ["cluster.yaml", "coreweave-burnin.log"]
    assert all(b"TOP-SECRET" not in data for _name, data in attached)
    measured = [f for f in document.inputs if f.role == "measured"]
    log = case / "logs" / "coreweave-burnin.log"
    assert [(f.path, f.sha256, f.bytes) for f in measured] == [
        ("coreweave-burnin.log", hashlib.sha256(log.read_bytes()).hexdigest(), log.stat().st_size)]


def test_a_log_changed_after_it_was_parsed_is_not_attached(case):
    inputs = api.load_inputs(case / "cluster.yaml")
    from procure.pipeline import build_document

    document = build_document(inputs)
    (case / "logs" / "coreweave-burnin.log").write_text(SECRET)    # swapped between parse and render
    assert [name for name, _data in api._attachments(inputs, document)] == ["cluster.yaml"]


def test_a_hard_link_in_a_measured_folder_is_refused_before_reading(case, tmp_path):
    outside = tmp_path / "id_rsa"
    outside.write_text(SECRET)
    os.link(outside, case / "logs" / "rank0.log")
    with pytest.raises(InputError) as info:
        api.load_inputs(case / "cluster.yaml")
    assert [d.code for d in info.value.diagnostics] == ["path-not-allowed"]
    assert "rank0.log" in str(info.value) and "hard link (2 names" in str(info.value)
    assert "TOP-SECRET" not in str(info.value)


def test_a_hard_linked_measured_file_named_directly_is_refused(case, tmp_path):
    outside = tmp_path / "id_rsa"
    outside.write_text(SECRET)
    os.link(outside, case / "logs" / "rank0.log")
    text = (case / "cluster.yaml").read_text(encoding="utf-8").replace("measured: [logs]", "measured: [logs/rank0.log]")
    (case / "cluster.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="hard link"):
        api.load_inputs(case / "cluster.yaml")


def test_a_hard_linked_template_is_refused_before_reading(tmp_path):
    from procure.report.html_report import TemplateUnreadable, _confined_loader_class

    import jinja2

    templates = tmp_path / "templates"
    templates.mkdir()
    outside = tmp_path / "secret.html"
    outside.write_text(SECRET)
    os.link(outside, templates / "cover.html")
    (templates / "plain.html").write_text("<p>ok</p>")
    loader = _confined_loader_class()([str(templates)])
    env = jinja2.Environment(loader=loader)
    assert loader.get_source(env, "plain.html")[0] == "<p>ok</p>"
    with pytest.raises(TemplateUnreadable, match="hard link"):
        loader.get_source(env, "cover.html")
