"""`procure sweep`: the JSON contract on stdout, reports, errors, and a point as a cluster.yaml."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from sweep_support import write_sweep

from procure.cli import main

TINY = """\
schema: procure.sweep/v1
title: Tiny sweep
as_of: 2026-12-01
workloads:
  - {id: 8b, model: llama3-8b, seq_len: 4096, global_batch_tokens: 2_097_152, train_tokens: 1e11}
accelerators: [h100-sxm5-80gb]
gpus: [64, 128]
terms: [aws-2026q3/on-demand, lambda-2026q3/on-demand]
"""
CONTRACT = {"accelerator", "gpus", "term", "feasible", "time_to_train_days", "total_cost",
            "cost_per_million_tokens", "on_frontier"}
DIAGNOSTIC = re.compile(r"^.+:\d+:\d+: error\[[a-z0-9-]+\]: .+$")


@pytest.fixture
def tiny(tmp_path):
    return write_sweep(tmp_path, TINY)


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_format_json_prints_the_sweep_document(tiny, tmp_path):
    result = run("sweep", str(tiny), "--format", "json", "--write", "", "--workers", "1", "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["schema"] == "procure.sweep/v1" and len(data["points"]) == 4
    assert all(CONTRACT <= set(point) for point in data["points"])
    assert not (tmp_path / "out" / "tiny-sweep.parts").exists()


def test_text_output_shows_the_ask_and_writes_the_reports(tiny, tmp_path):
    out = tmp_path / "out"
    result = run("sweep", str(tiny), "--write", "json,parquet,xlsx", "--workers", "1", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "Ask for" in result.output and "frontier" in result.output and "4 points in" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["tiny-sweep.json", "tiny-sweep.parquet", "tiny-sweep.xlsx"]
    again = run("sweep", str(tiny), "--write", "json,parquet,xlsx", "--workers", "1", "-o", str(out))
    assert again.exit_code == 0, again.output           # its own reports (fingerprinted) are replaced
    (out / "tiny-sweep.json").write_text('{"mine": true}\n', encoding="utf-8")
    refused = run("sweep", str(tiny), "--write", "json", "--workers", "1", "-o", str(out))
    assert refused.exit_code == 1 and "pass --force" in refused.output
    assert not (out / "tiny-sweep.parts").exists()    # refused before any point was computed


def test_bad_input_is_one_diagnostic_line_per_problem_and_exit_1(tmp_path):
    path = write_sweep(tmp_path, TINY.replace("h100-sxm5-80gb", "h100").replace("gpus: [64, 128]", "gpus: [0]"))
    result = run("sweep", str(path), "--write", "")
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 2 and all(DIAGNOSTIC.match(line) for line in lines), result.output
    assert "'h100' is not in the catalog; did you mean" in result.output and "GPU count 0" in result.output


def test_an_unknown_report_format_is_refused(tiny):
    result = run("sweep", str(tiny), "--write", "pdf,docx")
    assert result.exit_code == 1 and "unknown format 'docx'" in result.output


def test_emit_cluster_writes_a_cluster_yaml_that_validates(tiny, tmp_path):
    result = run("sweep", str(tiny), "--emit-cluster", "p0003")
    assert result.exit_code == 0, result.output
    assert "gpus: 128" in result.stdout and "term: on-demand" in result.stdout
    point = tmp_path / "point.yaml"
    point.write_text(result.stdout, encoding="utf-8")
    checked = run("validate", str(point))
    assert checked.exit_code == 0 and "ok" in checked.output
    missing = run("sweep", str(tiny), "--emit-cluster", "p0099")
    assert missing.exit_code == 1 and "error[unknown-point]" in missing.output
