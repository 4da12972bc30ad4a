"""The statistical efficiency of the global batch (economics/statistical.py) and its catalog data."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.catalog.batch_scaling import load_batch_scaling
from procure.catalog.types import family_of
from procure.model.flops import embedding_params
from procure.catalog.load import default_catalog
from procure.catalog.types import BatchScalingLaw
from procure.economics import statistical as S
from procure.errors import Diagnostic
from procure.model import active_param_count, param_count


@pytest.fixture(scope="module")
def dense() -> BatchScalingLaw:
    return default_catalog().batch_scaling["dense"]


def llama70b_params(law: BatchScalingLaw) -> float:
    arch = default_catalog().models["llama3-70b"]
    return S.law_params(law, param_count(arch), active_param_count(arch), embedding_params(arch))


def test_the_catalog_has_a_sourced_law_per_family():
    laws = default_catalog().batch_scaling
    assert sorted(laws) == ["dense", "moe"]
    for law in laws.values():
        assert set(law.sources) == set(law.values())
        assert all(law.sources[name] and all(law.sources[name]) for name in law.sources)
        assert law.alpha_d < law.alpha_b
    assert laws["moe"].parameter_count == "active_non_embedding"
    assert laws["moe"].b_star_sigma_log > laws["dense"].b_star_sigma_log


def test_family_follows_the_architecture():
    models = default_catalog().models
    assert family_of(models["llama3-70b"]) == "dense"
    assert family_of(models["deepseek-v3"]) == "moe"


def test_token_factor_is_exactly_one_at_the_reference_batch(dense):
    critical = S.critical_batch(dense, llama70b_params(dense), 15e12, 16_777_216)
    assert critical.factor(16_777_216) == 1.0
    assert S.fixed_batch(2048, 16_777_216, critical).token_penalty == 0.0


def test_the_reference_batch_fixes_e_min(dense):
    critical = S.critical_batch(dense, llama70b_params(dense), 15e12, 16_777_216)
    assert critical.min_tokens * (1 + 16_777_216 / critical.effective_tokens) == pytest.approx(15e12, rel=1e-9)
    # the critical batch grows over the run: its harmonic mean is below its final value
    assert critical.effective_tokens < critical.final_tokens


def test_llama3_70b_on_15t_tokens(dense):
    """Kaplan's law at Llama 3 70B on 15T tokens: a critical batch of about 14M tokens, so the
    16M-token reference batch already needs about 2.2x the tokens of a very small batch."""
    critical = S.critical_batch(dense, llama70b_params(dense), 15e12, 16_777_216)
    assert critical.effective_tokens == pytest.approx(14.04e6, rel=2e-3)
    assert critical.final_tokens == pytest.approx(14.82e6, rel=2e-3)
    assert critical.reference_factor == pytest.approx(2.195, rel=2e-3)
    assert critical.factor(2 * 16_777_216) - 1 == pytest.approx(0.5445, rel=2e-3)


def test_harmonic_mean_matches_the_closed_form_without_the_model_term(dense):
    """With N far above N_c the loss law is (D_c / e)^alpha_D and the integral has a closed form:
    ∫_0^1 (c / u)^k du = c^k / (1 − k)."""
    law = replace(dense, n_c=1e-30)
    e_min = 7e12
    k = law.alpha_d / law.alpha_b
    c = law.d_c_tokens / e_min
    expected = law.b_star_tokens / (c ** k / (1 - k))
    assert S.harmonic_critical_batch(law, 7e10, e_min) == pytest.approx(expected, rel=1e-6)


def test_quadrature_is_converged(dense, monkeypatch):
    coarse = S.harmonic_critical_batch(dense, 6.8e10, 7e12)
    monkeypatch.setattr(S, "QUADRATURE_INTERVALS", 1 << 15)
    assert S.harmonic_critical_batch(dense, 6.8e10, 7e12) == pytest.approx(coarse, rel=1e-8)


laws = st.builds(
    lambda b, ab, nc, an, dc, ratio: BatchScalingLaw("dense", "t", "", b, ab, nc, an, dc, ab * ratio, 0.5),
    st.floats(1e6, 1e10), st.floats(0.1, 0.5), st.floats(1e10, 1e15), st.floats(0.01, 0.2),
    st.floats(1e10, 1e15), st.floats(0.05, 0.9))


@settings(max_examples=60, deadline=None)
@given(law=laws, params=st.floats(1e8, 1e12), train=st.floats(1e10, 1e14),
       reference=st.floats(1e5, 1e8), steps=st.lists(st.floats(1.01, 4.0), min_size=1, max_size=6))
def test_the_penalty_grows_monotonically_with_the_batch_beyond_critical(law, params, train, reference, steps):
    critical = S.critical_batch(law, params, train, reference)
    assert critical.factor(reference) == 1.0
    batch = max(critical.effective_tokens, reference)
    previous = critical.factor(batch) - 1.0
    for step in steps:
        batch *= step
        penalty = critical.factor(batch) - 1.0
        assert penalty > previous
        previous = penalty
    assert previous > 0.0


@settings(max_examples=40, deadline=None)
@given(law=laws, params=st.floats(1e8, 1e12), train=st.floats(1e10, 1e14), reference=st.floats(1e5, 1e8))
def test_the_effective_critical_batch_lies_between_its_start_and_end(law, params, train, reference):
    critical = S.critical_batch(law, params, train, reference)
    assert 0 < critical.effective_tokens <= critical.final_tokens * (1 + 1e-9)
    assert critical.min_tokens < train


def test_candidate_batches_at_100000_gpus():
    found = S.candidate_batches(2048, 8192, 100_000, 2048)
    assert 2048 in found                       # the reference, though no plan divides it
    assert {2500, 3125, 5000, 6250} <= set(found)
    assert all(2048 <= b <= 8192 for b in found) and list(found) == sorted(set(found))
    assert S.candidate_batches(1024, 8192, 4096, 2048) == (1024, 2048, 4096, 8192)


def test_candidate_batches_are_capped_and_keep_the_reference():
    found = S.candidate_batches(1, 10**6, 100_000, 3000)
    assert len(found) <= S.MAX_CANDIDATES and 3000 in found
    assert found[0] == 1 and found[-1] <= 10**6


def test_candidate_batches_refuse_an_empty_range():
    with pytest.raises(ValueError):
        S.candidate_batches(10, 5, 8, 8)


def _option(seqs: int, step_s: float | None) -> S.BatchOption:
    return S.BatchOption(seqs, seqs * 8192, step_s)


def test_the_shortest_time_to_target_wins(dense):
    critical = S.critical_batch(dense, llama70b_params(dense), 15e12, 16_777_216)
    # twice the batch in 1.2x the time per step: 1.67x the throughput, but 54% more tokens
    options = [_option(2048, 3.6), _option(4096, 3.6 * 1.2), _option(1024, None)]
    assert S.choose_batch(options, critical) == 1
    # twice the batch in 1.9x the time: the extra tokens cost more than the speed gains
    options = [_option(2048, 3.6), _option(4096, 3.6 * 1.9)]
    assert S.choose_batch(options, critical) == 0
    assert S.choose_batch([_option(2048, None)], critical) is None


def test_near_ties_go_to_the_smaller_batch(dense):
    critical = S.critical_batch(dense, llama70b_params(dense), 15e12, 16_777_216)
    small, large = _option(3125, 0.5818), _option(6250, 1.0)
    t_small = critical.factor(small.tokens_per_step) * 0.5818 / small.tokens_per_step
    # the larger batch 0.5% faster to the target: within the tolerance, the smaller batch wins
    step_large = t_small * (1 - 0.005) * large.tokens_per_step / critical.factor(large.tokens_per_step)
    large = _option(6250, step_large)
    assert S.choose_batch([large, small], critical) == 1
    faster = _option(6250, step_large * 0.95)
    assert S.choose_batch([faster, small], critical) == 0


BROKEN = """\
schema: procure.batch_scaling/v1
family: dense
name: "Broken"
form: "x"
as_of: "2020-01"
parameters:
  b_star_tokens: {value: 2.0e8, source: "a"}
  alpha_b: {value: 0.21, source: "a"}
  n_c: {value: 8.8e13, source: "a"}
  alpha_n: {value: 0.076, source: "a"}
  d_c_tokens: {value: 5.4e13, source: "a"}
  alpha_d: {value: 0.3, source: "a"}
  b_star_sigma_log: {value: 0.69, source: "a", note: "typo"}
"""


def test_a_broken_law_file_is_reported_at_its_line(tmp_path: Path):
    (tmp_path / "dense.yaml").write_text(BROKEN, encoding="utf-8")
    (tmp_path / "moe.yaml").write_text(BROKEN.replace("family: dense", "family: dense  # wrong"), encoding="utf-8")
    files: dict[str, str] = {}
    problems: list[Diagnostic] = []
    assert load_batch_scaling(tmp_path, files, problems) == {}
    text = "\n".join(p.format() for p in problems)
    assert f"{tmp_path / 'dense.yaml'}:13:" in text and "unknown-key" in text       # `note` for `notes`
    fixed = BROKEN.replace(', note: "typo"', "")
    (tmp_path / "dense.yaml").write_text(fixed, encoding="utf-8")
    (tmp_path / "moe.yaml").write_text(fixed.replace("value: 0.3", "value: 0.095"), encoding="utf-8")
    problems.clear()
    load_batch_scaling(tmp_path, files, problems)
    assert any("alpha_d" in p.message and p.source.endswith("dense.yaml") for p in problems)
    assert any(p.code == "id-mismatch" and p.source.endswith("moe.yaml") for p in problems)
    assert all(p.line >= 1 for p in problems)


def test_the_shipped_laws_load_through_the_catalog():
    cat = default_catalog()
    assert cat.files["batch-scaling:dense"].endswith("dense.yaml")
    assert math.isclose(cat.batch_scaling["dense"].b_star_tokens, 2.0e8)
