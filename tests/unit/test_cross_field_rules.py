"""The rules of cluster.yaml across fields are stated once (procure/inputs/rules.py) and read by
the schema's validators and the raw pass alike (issue 29): each broken rule is reported once, at
its field, and every rule the schema can raise is one the raw pass checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from procure.errors import InputError
from procure.inputs.bundle import load_inputs
from procure.inputs.crossfield import check_cross_fields
from procure.inputs.schema import Cluster
from procure.sources.validate import validate_document
from procure.sources.yamlpos import read_yaml

HEAD = """schema: procure/v1
title: rules
as_of: 2026-12-01
workload:
  model: llama3-8b
  seq_len: 4096
{workload}
  train_tokens: 1e12
bids:
{bids}
"""
GOOD_BID = """  - id: a
    vendor: A
    accelerator: h100-sxm5-80gb
    gpus: 64
    pricing: {kind: rental, usd_per_gpu_hour: 2.0}
"""
BROKEN = {
    "batch given twice": ("  global_batch_tokens: 4194304\n  global_batch: 1024", GOOD_BID),
    "batch not whole sequences": ("  global_batch_tokens: 4194305", GOOD_BID),
    "two deadlines": ("  global_batch: 1024\n  deadline_days: 30\n  deadline: 2027-01-01", GOOD_BID),
    "phase batch given twice": ("  global_batch: 1024\n  phases:\n    - {name: long, seq_len: 8192, "
                                "global_batch: 64, global_batch_tokens: 524288, train_tokens: 1e9}", GOOD_BID),
    "purchase with a rental term": ("  global_batch: 1024", GOOD_BID.replace(
        "{kind: rental, usd_per_gpu_hour: 2.0}", "{kind: purchase, capex_per_gpu: 30000, life_years: 4, "
        "discount_fraction: 0.1}")),
    "two starts": ("  global_batch: 1024", GOOD_BID + "    lead_time_days: 10\n    available_from: 2027-01-01\n"),
    "duplicate ids": ("  global_batch: 1024", GOOD_BID + GOOD_BID),
    "available before as_of": ("  global_batch: 1024", GOOD_BID + "    available_from: 2026-01-01\n"),
}


def _write(tmp_path: Path, workload: str, bids: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(HEAD.format(workload=workload, bids=bids), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_the_schema_and_the_raw_pass_report_the_same_rule_once(tmp_path, case):
    path = _write(tmp_path, *BROKEN[case])
    doc = read_yaml(path, str(path))
    with pytest.raises(InputError) as schema:
        validate_document(doc, Cluster)
    schema_rules = {d.rule for d in schema.value.diagnostics if d.rule}
    raw_rules = {d.rule for d in check_cross_fields(doc)}
    assert schema_rules and schema_rules <= raw_rules
    with pytest.raises(InputError) as loaded:
        load_inputs(path)
    reported = [d for d in loaded.value.diagnostics if d.rule]
    assert len(reported) == len({(d.rule, d.line) for d in reported}), "a rule reported twice at one place"
    assert {d.rule for d in reported} == raw_rules


def test_a_phase_and_the_workload_breaking_one_rule_are_both_reported(tmp_path):
    workload = ("  global_batch_tokens: 4194304\n  global_batch: 1024\n  phases:\n    - {name: long, seq_len: 8192, "
                "global_batch: 64, global_batch_tokens: 524288, train_tokens: 1e9}")
    path = _write(tmp_path, workload, GOOD_BID)
    with pytest.raises(InputError) as info:
        load_inputs(path)
    lines = sorted(d.line for d in info.value.diagnostics if d.rule == "one-batch")
    assert len(lines) == 2 and lines[0] != lines[1]
