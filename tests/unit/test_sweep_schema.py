"""sweep.yaml: validated with file:line:col diagnostics, all at once; the quote's own checks of
price terms, with the sweep's line numbers."""

from __future__ import annotations

import pytest
from sweep_support import SMALL_SWEEP, write_sweep

from procure.errors import InputError
from procure.sweep import load_sweep, plan_sweep
from procure.sweep.expand import gpu_counts
from procure.sweep.schema import GpuRange


def problems(tmp_path, text: str) -> list[str]:
    with pytest.raises(InputError) as exc:
        load_sweep(write_sweep(tmp_path, text))
    return [d.format() for d in exc.value.diagnostics]


def test_the_small_sweep_loads_and_expands_shorthand_terms(tmp_path):
    sweep = load_sweep(write_sweep(tmp_path))
    first, purchase = sweep.spec.terms[0], sweep.spec.terms[2]
    assert (first.price_book, first.term, first.kind, first.label) == ("aws-2026q3", "on-demand", "rental",
                                                                        "aws-2026q3/on-demand")
    assert purchase.kind == "purchase"          # taken from the book, not the rental default
    assert sweep.spec.terms[3].label == "broker"


def test_catalog_problems_are_reported_at_their_line_all_at_once(tmp_path):
    text = (SMALL_SWEEP.replace("  - b200-sxm-180gb", "  - b200-sxm-18gb")
            .replace("aws-2026q3/on-demand", "aws-2026q3/on-demnd")
            .replace("model: llama3-8b, seq_len: 4096", "model: llama3-8x, seq_len: 4096"))
    found = problems(tmp_path, text)
    lines = {line.split(": ")[0]: line for line in found}
    assert any("error[unknown-accelerator]" in l and "did you mean 'b200-sxm-180gb'" in l for l in found), found
    assert f"{tmp_path}/sweep.yaml:11:5: error[unknown-accelerator]" in "\n".join(found)
    assert f"{tmp_path}/sweep.yaml:15:5: error[unknown-term]: price book 'aws-2026q3' has no term " \
           "'on-demnd'; did you mean 'on-demand'?" in "\n".join(found)
    assert f"{tmp_path}/sweep.yaml:8:24: error[unknown-model]" in "\n".join(found)
    assert len(lines) == 3


def test_schema_problems_name_the_field(tmp_path):
    text = SMALL_SWEEP.replace("gpus: [64, 128, 256, 512]", "gpus: {from: 512, to: 64}").replace(
        "{id: broker, kind: rental, usd_per_gpu_hour: 1.85, accelerators: [h100-sxm5-80gb]}",
        "{id: broker, kind: rental, usd_per_gpu_hour: 1.85}")
    found = "\n".join(problems(tmp_path, text))
    assert "error[invalid]" in found and "`to` (64) is below `from` (512)" in found
    assert "names the `accelerators` it applies to" in found


def test_the_ranking_basis_is_the_sweeps_else_the_workloads_else_the_quotes_default(tmp_path):
    from procure.economics.cost import DEFAULT_BASIS

    own = SMALL_SWEEP.replace("train_tokens: 2e12}", "train_tokens: 2e12, cost_basis: run}")
    plan = plan_sweep(load_sweep(write_sweep(tmp_path, own)))
    assert plan.context.bases == (DEFAULT_BASIS, "run")
    forced = plan_sweep(load_sweep(write_sweep(tmp_path, own.replace("currency: USD", "currency: USD\n"
                                                                        "cost_basis: commitment"))))
    assert forced.context.bases == ("commitment", "commitment")
    found = problems(tmp_path, SMALL_SWEEP.replace("currency: USD", "currency: USD\ncost_basis: cash"))
    assert any("error[bad-value]" in l and ":5:" in l and "cost_basis" in l for l in found), found


def test_unknown_keys_and_duplicate_workloads(tmp_path):
    text = SMALL_SWEEP.replace("id: 8b-4k", "id: 8b-8k").replace("constraints:", "constraint:")
    found = "\n".join(problems(tmp_path, text))
    assert "error[unknown-key]" in found and "did you mean 'constraints'" in found
    assert "workload id '8b-8k' appears twice" in found


def test_gpu_ranges_step_by_count_or_by_node(tmp_path):
    cat = load_sweep(write_sweep(tmp_path)).catalog
    h100, gb200 = cat.accelerators["h100-sxm5-80gb"], cat.accelerators["gb200-nvl72-186gb"]
    assert gpu_counts(GpuRange.model_validate({"from": 100, "to": 300, "step": 100}), h100) == (100, 200, 300)
    assert gpu_counts(GpuRange.model_validate({"from": 60, "to": 90, "step": "node"}), h100) == (64, 72, 80, 88)
    assert gpu_counts(GpuRange.model_validate({"from": 100, "to": 300}), gb200) == (144, 216, 288)


def test_points_expand_as_the_product_of_the_lists(tmp_path):
    plan = plan_sweep(load_sweep(write_sweep(tmp_path)))
    assert plan.total_points == 2 * (4 + 4 + 2) * 4
    assert [c.first_index for c in plan.chunks] == [0, 16, 32, 40, 56, 72]
    assert plan.context.id_width == 4
