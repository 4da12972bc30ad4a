"""The cores' records cross into the result document by attribute, never through a plain dict.

``procure/document/assemble.py`` reads each economics record (and the model's calibration, the
logs measure parsed) with ``model_validate(record, from_attributes=True)``, or a typed
constructor where the document reshapes it, so the record's names are the document's. That a document built from the records is the one the goldens hold is
``tests/unit/test_cases.py::test_case_json`` (byte for byte, every case); these tests keep the
seam itself honest.
"""

from __future__ import annotations

import ast
import dataclasses
from decimal import Decimal
from pathlib import Path

import pytest

from procure.catalog.knobs import Calibration, StepTimeError
from procure.document import bid as B
from procure.economics.bid import BasisCost
from procure.economics.commitment import Conditions, StatedCommitment, convert
from procure.economics.cost import CostLine
from procure.economics.flags import Flag
from procure.economics.goodput import Goodput
from procure.economics.negotiation import Lever, Negotiation
from procure.economics.ratios import Ratios
from procure.economics.sensitivity import SensitivityRow
from procure.economics.target import CandidateRow, TimeToTarget
from procure.economics.uncertainty import StepError
from procure.measure.bid import ParsedLog

ASSEMBLE = Path(__file__).resolve().parents[2] / "procure" / "document" / "assemble.py"

#: Every document model assemble fills by reading an economics record's attributes.
READ_BY_ATTRIBUTE = [(B.Flag, Flag), (B.CostLine, CostLine), (B.Goodput, Goodput), (B.SensitivityRow, SensitivityRow),
                     (B.Negotiation, Negotiation), (B.NegotiationLever, Lever), (B.Ratios, Ratios),
                     (B.TimeToTarget, TimeToTarget), (B.StatedCommitment, StatedCommitment),
                     (B.Conditions, Conditions), (B.BatchCandidate, CandidateRow), (B.BasisCost, BasisCost),
                     (B.StepTimeError, StepError), (B.Calibration, Calibration), (B.FamilyError, StepTimeError),
                     (B.MeasuredSource, ParsedLog)]


def _attributes(record: type) -> set[str]:
    """A dataclass's fields and properties: what ``from_attributes`` can read."""
    properties = {name for klass in record.__mro__ for name, value in vars(klass).items() if isinstance(value, property)}
    return {f.name for f in dataclasses.fields(record)} | properties


def test_assemble_makes_no_to_dict_call():
    tree = ast.parse(ASSEMBLE.read_text(encoding="utf-8"))
    calls = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and node.func.attr == "to_dict"]
    assert calls == [], f"assemble.py rebuilds a record from a plain dict at lines {calls}"


@pytest.mark.parametrize(("model", "record"), READ_BY_ATTRIBUTE, ids=lambda x: x.__name__)
def test_every_document_field_is_an_attribute_of_its_record(model, record):
    """A field the record lacks would fail validation, or silently take its default (an optional
    field): a rename on either side must be made on both."""
    missing = set(model.model_fields) - _attributes(record)
    assert not missing, f"{record.__name__} has no attribute for {model.__name__} field(s) {sorted(missing)}"


def test_a_stated_commitment_reads_with_its_conversion():
    """Stated at 1,024 × 8,192 tokens, modeled 1.0 s there and 1.9 s at the bid's 2,048: the factor
    is 1.9, so 2.0 s and 2.2 s become 3.8 s and 4.18 s."""
    stated, bid = Conditions(1024, 8192, "bf16"), Conditions(2048, 8192, "bf16")
    doc = B.StatedCommitment.model_validate(convert(2.0, 2.2, stated, bid, 1.0, 1.9), from_attributes=True)
    assert doc.conditions.global_batch_tokens == 8_388_608 and doc.bid_conditions.global_batch_tokens == 16_777_216
    assert doc.conversion_factor == 1.9 and doc.comparable and doc.reason is None
    assert doc.converted_step_time_s == 3.8 and doc.converted_p99_step_time_s == 4.18


def test_a_commitment_too_far_to_convert_reads_with_its_reason():
    far = convert(2.0, None, Conditions(16, 8192, "bf16"), Conditions(2048, 8192, "bf16"), 0.2, 3.0)
    doc = B.StatedCommitment.model_validate(far, from_attributes=True)
    assert not doc.comparable and doc.conversion_factor is None and doc.converted_step_time_s is None
    assert "beyond 8x" in (doc.reason or "")


def test_a_basis_cost_reads_its_lines_as_exact_money():
    line = CostLine("gpu_hours", "GPU-hours", Decimal("1000"), "GPU-h", Decimal("2.35"), Decimal("2350.00"),
                    "quantity × rate")
    cost = BasisCost("run", (line,), Decimal("2350.00"), Decimal("0.2350"), Decimal("10"), Decimal(0), None,
                     Decimal("0.2350"), None)
    doc = B.BasisCost.model_validate(cost, from_attributes=True)
    assert doc.cost_lines[0].amount == Decimal("2350.00") and doc.cost_lines[0].divisor == Decimal(1)
    assert doc.cost_lines[0].factors == {} and doc.total_cost == Decimal("2350.00")


def test_a_candidate_without_a_plan_reads_as_no_plan():
    row = CandidateRow(64, 524_288, False, False, "needs 97 GiB of 80", None, None, None, None, None)
    doc = B.BatchCandidate.model_validate(row, from_attributes=True)
    assert doc.plan is None and doc.ratios is None and doc.reason == "needs 97 GiB of 80"


def test_goodput_states_its_interval_in_minutes():
    gp = Goodput(0.9, 0.1, 1e-5, 24.0, 11.2, 1800.0, 10.0, False)
    assert B.Goodput.model_validate(gp, from_attributes=True).checkpoint_interval_min == 30.0


def test_the_models_calibration_reads_with_its_family_error():
    found = Calibration("h100-sxm5-80gb", True, ("corpus:mlperf-v4.0",), StepTimeError("dense-bf16-hopper", 0.05, 0.08, 41))
    doc = B.Calibration.model_validate(found, from_attributes=True)
    assert doc.fitted_on == ["corpus:mlperf-v4.0"] and doc.step_time_error.n == 41
    assert (doc.step_time_error.family, doc.step_time_error.bias, doc.step_time_error.sigma_log) == \
        ("dense-bf16-hopper", 0.05, 0.08)
