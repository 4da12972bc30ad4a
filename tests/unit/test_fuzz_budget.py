"""The fuzz suite's size: at least 10,000 generated inputs across every input type at the default
budget (PROCURE_FUZZ_EXAMPLES scales it; see fuzz_budget)."""

from __future__ import annotations

import importlib

import fuzz_budget

MODULES = ["test_fuzz_validate", "test_fuzz_magnitudes", "test_fuzz_logs", "test_fuzz_tables",
           "test_fuzz_saved_results", "test_fuzz_templates"]
INPUT_TYPES = ("cluster.yaml", "logs: mutated kineto", "logs: seeded kineto", "logs: mutated nccl-tests",
               "logs: mutated mlperf", "tables", "saved results", "templates")


def test_the_fuzz_suite_checks_at_least_ten_thousand_inputs_across_every_input_type():
    for name in MODULES:
        importlib.import_module(name)
    total = sum(fuzz_budget.REGISTRY.values())
    assert total >= fuzz_budget.DEFAULT_TOTAL * fuzz_budget.scale(), fuzz_budget.REGISTRY
    for kind in INPUT_TYPES:
        assert any(name.startswith(kind) for name in fuzz_budget.REGISTRY), kind


def test_the_budget_is_one_environment_variable_away(monkeypatch):
    monkeypatch.setenv("PROCURE_FUZZ_EXAMPLES", "200000")
    assert fuzz_budget.examples(100) == 2000
    monkeypatch.delenv("PROCURE_FUZZ_EXAMPLES")
    assert fuzz_budget.examples(100) == 100
