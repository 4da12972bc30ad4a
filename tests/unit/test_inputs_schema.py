from decimal import Decimal
from pathlib import Path

import pydantic
import pytest

from procure.errors import InputError
from procure.sources.suggest import suggest
from procure.sources.validate import dotted, validate_document
from procure.inputs.schema import Cluster
from procure.sources.yamlpos import parse_yaml_text

BASE = """\
schema: procure/v1
title: t
as_of: 2026-12-01
workload:
  model: llama3-8b
  seq_len: 4096
  global_batch_tokens: 4_194_304
  train_tokens: 1e12
bids:
  - id: a
    vendor: A
    accelerator: h100-sxm5-80gb
    gpus: 64
    pricing: {usd_per_gpu_hour: 2.35}
"""


def load(text: str):
    return validate_document(parse_yaml_text(text, "c.yaml"), Cluster)


def problems(text: str):
    with pytest.raises(InputError) as info:
        load(text)
    return info.value.diagnostics


def test_minimal_cluster_and_defaults():
    c = load(BASE)
    assert c.workload.global_batch_seqs == 1024
    assert c.workload.train_tokens == 1e12
    assert c.bids[0].plan == "auto" and c.currency == "USD"
    price = c.bids[0].pricing.usd_per_gpu_hour
    assert price == Decimal("2.35") and isinstance(price, Decimal)


def test_model_is_frozen():
    c = load(BASE)
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        c.title = "x"


def test_every_problem_reported_with_position():
    text = BASE.replace("gpus: 64", "gpus: 0\n    colour: red").replace("seq_len: 4096", "seq_len: long")
    diags = problems(text)
    codes = {(d.code, d.line) for d in diags}
    assert ("bad-type", 6) in codes
    assert ("out-of-range", 13) in codes
    assert ("unknown-key", 14) in codes


def test_batch_must_be_a_multiple_of_seq_len():
    diags = problems(BASE.replace("4_194_304", "4_194_305"))
    assert any("not a multiple" in d.message for d in diags)


def test_pricing_needs_a_book_or_inline_price():
    diags = problems(BASE.replace("{usd_per_gpu_hour: 2.35}", "{term: on-demand}"))
    assert diags[0].code == "invalid" and "price_book" in diags[0].message


def test_plan_literal_typo_gets_a_suggestion():
    diags = problems(BASE + "    plan: aut0\n")
    assert len(diags) == 1 and "did you mean 'auto'" in diags[0].message


def test_plan_mapping_validated_field_by_field():
    diags = problems(BASE + "    plan: {tp: 8, recompute: sometimes, zero: 1}\n")
    assert {d.code for d in diags} == {"bad-value", "unknown-key"}
    assert any("did you mean 'zero_stage'" in d.message for d in diags)


def test_duplicate_bid_ids():
    text = BASE + "  - id: a\n    vendor: B\n    accelerator: h100-sxm5-80gb\n    gpus: 8\n" \
                  "    pricing: {usd_per_gpu_hour: 3}\n"
    assert any("appears twice" in d.message for d in problems(text))


def test_non_finite_numbers_refused():
    diags = problems(BASE.replace("train_tokens: 1e12", "train_tokens: .inf"))
    assert diags[0].line == 8


def test_vendor_control_characters_dropped():
    c = load(BASE.replace("vendor: A", 'vendor: "A\\x07B"'))
    assert c.bids[0].vendor == "AB"


def test_helpers():
    assert dotted(("bids", 0, "gpus")) == "bids[0].gpus"
    assert suggest("h100", ["h100-sxm5-80gb", "a100-sxm4-80gb"]) == "; did you mean 'h100-sxm5-80gb'?"
    assert suggest("zzz", ["abc"]) == ""


def test_example_is_valid():
    example = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"
    c = validate_document(parse_yaml_text(example.read_text(), "cluster.yaml"), Cluster)
    assert len(c.bids) >= 4
    assert {b.pricing.kind for b in c.bids} == {"rental", "purchase"}
