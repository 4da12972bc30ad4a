"""procure acceptance (a bid's commitments as a burn-in protocol) and procure accept (logs against it)."""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from procure import api
from procure.acceptance import json_schemas
from procure.acceptance.check import RESULT_SCHEMA, AcceptanceResult
from procure.acceptance.spec import MIN_MEASURED_STEPS, SCHEMA, AcceptanceSpec, build_spec, run_steps
from procure.cli import main
from procure.errors import InputError
from procure.measure.errors import LogError
from procure.measure.formats import LOG_FORMATS

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "cluster.yaml"
BURNIN = REPO / "examples" / "logs" / "coreweave-burnin.log"
FIXTURES = REPO / "tests" / "fixtures" / "logs"
SHARED_LOGS = Path(__import__("os").environ.get("PROCURE_SHARED", "/work/shared")) / "data" / "logs"
BID = "coreweave-h100-1y"


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def megatron_log(times_s: list[float], gpus: int) -> str:
    """A Megatron-LM log: the world size, then one line per iteration."""
    n = len(times_s)
    lines = [f"using world size: {gpus}, data-parallel size: {max(gpus // 8, 1)}, context-parallel size: 1, "
             "tensor-model-parallel size: 8, pipeline-model-parallel size: 1"]
    lines += [f" iteration {i:8d}/{n:8d} | consumed samples: {i * 2048:12d} | elapsed time per iteration (ms): "
              f"{t * 1000:.1f} | global batch size:  2048 | lm loss: 2.1E+00 |" for i, t in enumerate(times_s, 1)]
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=1)
def _example_spec() -> AcceptanceSpec:
    return build_spec(api.load_inputs(EXAMPLE), BID)


@pytest.fixture(scope="module")
def example_spec() -> AcceptanceSpec:
    return _example_spec()


@pytest.fixture()
def spec_file(tmp_path) -> Path:
    result = run("acceptance", str(EXAMPLE), "--bid", BID, "-o", str(tmp_path / "out"), "-q")
    assert result.exit_code == 0, result.output
    return next((tmp_path / "out").glob("*-acceptance.yaml"))


def write_spec(folder: Path, spec: AcceptanceSpec, **update) -> Path:
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec.model_copy(update=update).to_data(), sort_keys=False), encoding="utf-8")
    return path


# ---------------------------------------------------------------- procure acceptance

def test_acceptance_writes_the_spec_and_its_pdf_for_the_example(tmp_path):
    result = run("acceptance", str(EXAMPLE), "--bid", BID, "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    stem = "pretraining-cluster-for-a-70b-dense-model-coreweave-h100-1y-acceptance"
    assert f"wrote {tmp_path / (stem + '.yaml')}" in result.output
    assert (tmp_path / f"{stem}.pdf").read_bytes().startswith(b"%PDF-")
    data = yaml.safe_load((tmp_path / f"{stem}.yaml").read_text(encoding="utf-8"))
    spec = AcceptanceSpec.model_validate(data)
    assert data["schema"] == SCHEMA
    by_figure = {t.figure: t for t in spec.thresholds}
    assert by_figure["mean_step_time_s"].committed == 2.6 and by_figure["mean_step_time_s"].bound == "at-most"
    assert by_figure["p99_step_time_s"].limit == 2.9
    assert by_figure["scaling_efficiency"].limit == 0.95 and by_figure["scaling_efficiency"].bound == "at-least"
    assert spec.scaling is not None and (spec.scaling.gpus, spec.scaling.reference_gpus) == (4096, 512)
    assert (spec.job.gpus, spec.job.seq_len, spec.job.global_batch_seqs, spec.job.precision) == (4096, 8192, 2048, "bf16")
    assert spec.steps.measured_steps_min >= 100 and spec.steps.warmup_steps >= 10
    assert "megatron" in spec.evidence_formats and "nccl-tests" not in spec.evidence_formats


def test_acceptance_pdf_renders_in_chinese(tmp_path):
    result = run("acceptance", str(EXAMPLE), "--bid", BID, "-o", str(tmp_path), "--lang", "zh-TW", "-q")
    assert result.exit_code == 0, result.output
    assert next(tmp_path.glob("*.pdf")).stat().st_size > 1000


def test_the_warmup_and_step_rule_leaves_a_meaningful_p99():
    steps = run_steps()
    assert steps.measured_steps_min == MIN_MEASURED_STEPS
    assert steps.measured_steps_min * 0.01 >= 2          # at least two measured steps above the P99
    assert steps.total_steps == steps.warmup_steps + steps.measured_steps_min
    assert steps.warmup_steps >= 0.02 * steps.total_steps


def test_an_unknown_bid_is_bad_input_with_a_suggestion(tmp_path):
    result = run("acceptance", str(EXAMPLE), "--bid", "coreweave-h100-1yr", "-o", str(tmp_path))
    assert result.exit_code == 1
    assert "error[unknown-bid]" in result.output and "did you mean 'coreweave-h100-1y'" in result.output
    assert not list(tmp_path.iterdir())


def test_a_bid_without_commitments_has_nothing_to_accept(tmp_path):
    result = run("acceptance", str(EXAMPLE), "--bid", "own-h100", "-o", str(tmp_path))
    assert result.exit_code == 1 and "error[no-commitment]" in result.output


def test_a_rerun_replaces_its_own_spec_but_keeps_an_edited_one_unless_forced(tmp_path, spec_file):
    out = spec_file.parent
    assert run("acceptance", str(EXAMPLE), "--bid", BID, "-o", str(out), "-q").exit_code == 0
    spec_file.write_text(spec_file.read_text(encoding="utf-8").replace("# procure acceptance spec\n", ""),
                         encoding="utf-8")
    assert run("acceptance", str(EXAMPLE), "--bid", BID, "-o", str(out)).exit_code == 1
    assert run("acceptance", str(EXAMPLE), "--bid", BID, "-o", str(out), "--force", "-q").exit_code == 0


def _with_credit(tmp_path: Path, credit: str) -> Path:
    text = EXAMPLE.read_text(encoding="utf-8").replace(
        "committed: {step_time_s: 2.6, p99_step_time_s: 2.9, scaling_efficiency: 0.95}",
        "committed: {step_time_s: 2.6, p99_step_time_s: 2.9, scaling_efficiency: 0.95, service_credit: " + credit + "}")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / BURNIN.name).write_bytes(BURNIN.read_bytes())
    path = tmp_path / "cluster.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_service_credits_are_stated_and_added_up_per_breach(tmp_path):
    cluster = _with_credit(tmp_path, "{percent_per_breach: 5, cap_percent: 12}")
    assert run("acceptance", str(cluster), "--bid", BID, "-o", str(tmp_path / "out"), "-q").exit_code == 0
    spec = next((tmp_path / "out").glob("*.yaml"))
    assert yaml.safe_load(spec.read_text())["service_credit"] == {"percent_per_breach": 5.0, "cap_percent": 12.0}
    result = run("accept", str(spec), str(BURNIN), "--format", "json")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert len([f for f in data["figures"] if f["status"] != "pass"]) == 3
    assert data["service_credit_percent"] == 12.0          # 3 x 5%, capped at 12%


def test_a_service_credit_cap_below_one_breach_is_refused(tmp_path):
    cluster = _with_credit(tmp_path, "{percent_per_breach: 5, cap_percent: 2}")
    result = run("validate", str(cluster))
    assert result.exit_code == 1 and "cap_percent" in result.output


# ---------------------------------------------------------------- procure accept

def test_accept_on_the_example_burnin_names_the_p99_breach(spec_file):
    result = run("accept", str(spec_file), str(BURNIN))
    assert result.exit_code == 2
    assert "P99 step time: measured 3.532 s vs committed 2.9 s (breach)" in result.output
    assert "mean step time: measured 3.402 s vs committed 2.6 s (breach)" in result.output
    assert "outlier steps: step 143 (6.35 s), step 244 (6.44 s)" in result.output


def test_accept_json_is_the_result_document(spec_file):
    result = run("accept", str(spec_file), str(BURNIN), "--format", "json")
    assert result.exit_code == 2
    doc = AcceptanceResult.model_validate(json.loads(result.stdout))
    assert doc.schema_ == RESULT_SCHEMA and not doc.passed
    p99 = next(f for f in doc.figures if f.figure == "p99_step_time_s")
    assert p99.status == "breach" and p99.committed == 2.9 and p99.measured == pytest.approx(3.531743)
    assert next(f for f in doc.figures if f.figure == "scaling_efficiency").status == "unverified"
    assert doc.run.warmup_excluded_steps == 10 and doc.run.steps_measured == 290


def _clean_logs(folder: Path, steps: int = 230) -> list[Path]:
    full = [40.0] + [2.40 + 0.01 * (i % 10) for i in range(steps - 1)]       # a compile step, then steady
    ref = [60.0] + [19.5 + 0.05 * (i % 7) for i in range(steps - 1)]         # 1/8 of the GPUs, same batch
    paths = [folder / "burnin-4096.log", folder / "burnin-512.log"]
    paths[0].write_text(megatron_log(full, 4096), encoding="utf-8")
    paths[1].write_text(megatron_log(ref, 512), encoding="utf-8")
    return paths


def test_a_clean_burnin_under_the_commitments_passes(spec_file, tmp_path):
    logs = _clean_logs(tmp_path)
    result = run("accept", str(spec_file), *map(str, logs), "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["passed"] and {f["status"] for f in doc["figures"]} == {"pass"}
    efficiency = next(f for f in doc["figures"] if f["figure"] == "scaling_efficiency")["measured"]
    assert efficiency == pytest.approx(doc["reference_run"]["mean_s"] * 512 / (doc["run"]["mean_s"] * 4096))
    assert doc["run"]["mean_s"] < 2.6 and doc["run"]["p99_s"] < 2.9


def test_a_slow_reference_run_breaches_the_scaling_efficiency(spec_file, tmp_path):
    full, ref = _clean_logs(tmp_path)
    ref.write_text(megatron_log([15.0] * 230, 512), encoding="utf-8")       # 15*512/(2.45*4096) = 77%
    result = run("accept", str(spec_file), str(full), str(ref))
    assert result.exit_code == 2 and "scaling efficiency: measured 76." in result.output


def test_too_few_steps_after_the_warmup_is_an_error_not_a_pass(spec_file, tmp_path):
    full, ref = _clean_logs(tmp_path, steps=150)
    result = run("accept", str(spec_file), str(full), str(ref))
    assert result.exit_code == 1
    assert "error[too-few-steps]" in result.output and "this is no pass" in result.output


def test_a_log_of_another_gpu_count_is_refused(spec_file, tmp_path):
    log = tmp_path / "other.log"
    log.write_text(megatron_log([2.0] * 230, 1024), encoding="utf-8")
    result = run("accept", str(spec_file), str(log))
    assert result.exit_code == 1 and "states 1,024 GPUs" in result.output


def test_slow_ranks_of_a_per_rank_table_are_named(example_spec, tmp_path):
    rows = ["step,rank,step_time_ms"]
    for step in range(1, 221):
        for rank in range(8):
            slow = rank == 5 and step % 2 == 0
            rows.append(f"{step},{rank},{2000.0 + rank + (400.0 if slow else 0.0)}")
    table = tmp_path / "ranks.csv"
    table.write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = write_spec(tmp_path, example_spec, scaling=None, thresholds=example_spec.thresholds[:2])
    result = run("accept", str(spec), str(table), "--format", "json")
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    stragglers = next(f for f in doc["figures"] if f["figure"] == "stragglers")
    assert stragglers["status"] == "breach" and "ranks 5" in stragglers["message"]
    assert doc["straggler_ranks"] == [5]
    top = doc["slow_ranks"][0]
    assert top["rank"] == 5 and top["times_slowest"] == 110 and top["steps"] == 220
    text = run("accept", str(spec), str(table)).output
    assert "rank 5 (" in text and "slowest in 110 of 220 steps" in text


# ---------------------------------------------------------------- hostile specs

@pytest.mark.parametrize("text, where", [
    ("- a\n- list\n", ":1:1: error["),
    ("schema: procure.acceptance/v1\nthresholds: many\n", ":2:13: error["),
    ("schema: procure/v1\ntitle: a cluster.yaml\n", ":1:9: error["),
    ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n", "error["),
    ("schema: procure.acceptance/v1\n\x00\x01 binary", "error["),
])
def test_a_bad_spec_is_reported_at_its_place(tmp_path, text, where):
    spec = tmp_path / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    result = run("accept", str(spec), str(BURNIN))
    assert result.exit_code == 1
    assert f"{spec}" in result.output and where in result.output
    assert "Traceback" not in result.output


def test_a_spec_with_a_negative_warmup_is_refused_at_its_key(tmp_path, example_spec):
    path = write_spec(tmp_path, example_spec)
    path.write_text(path.read_text().replace("warmup_steps: 10", "warmup_steps: -3"), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        api.accept(path, [BURNIN])
    assert any(d.code == "out-of-range" and d.line > 1 for d in caught.value.diagnostics)


# ---------------------------------------------------------------- schemas

def test_the_json_schemas_name_the_contract_fields(example_spec):
    schemas = json_schemas()
    spec, result = schemas[SCHEMA], schemas[RESULT_SCHEMA]
    assert spec["properties"]["schema"]["const"] == SCHEMA and "schema" in spec["required"]
    assert result["properties"]["schema"]["const"] == RESULT_SCHEMA
    for key in ("job", "steps", "thresholds", "stragglers", "evidence_formats"):
        assert key in spec["required"]
    for key in ("passed", "figures", "run", "slow_ranks", "outlier_steps"):
        assert key in result["properties"]
    assert set(example_spec.to_data()) <= set(spec["properties"])
    assert AcceptanceSpec.model_validate(example_spec.to_data()) == example_spec


# ---------------------------------------------------------------- every log format

TIMED = {f.name for f in LOG_FORMATS} - {"mlperf-system", "nccl-tests", "straggler-meta"}


def _accept_any(folder: Path, spec: AcceptanceSpec, log: Path):
    """accept on one log with a spec that any reading of it passes: it proves the log was read."""
    try:
        ingested = api.ingest([log])
    except LogError:                 # a log with nothing measured: `accept` is exit 1 on it, like ingest
        return None
    sources = [s for s in ingested["sources"] if s["step_time_s"]]
    if not sources:
        return None
    gpus = sources[0]["gpus"] or spec.job.gpus
    loose = spec.model_copy(update={
        "job": spec.job.model_copy(update={"gpus": gpus}), "scaling": None,
        "steps": spec.steps.model_copy(update={"warmup_steps": 0, "measured_steps_min": 1}),
        "thresholds": [spec.thresholds[0].model_copy(update={"limit": 1e6})],
        "stragglers": spec.stragglers.model_copy(update={"max_straggler_ranks": 10**6})})
    path = write_spec(folder, loose)
    return run("accept", str(path), str(log), "--format", "json"), sources[0]["format"]


def _fixture_logs() -> list[Path]:
    return sorted(p for p in FIXTURES.iterdir() if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("log", _fixture_logs(), ids=lambda p: p.name)
def test_accept_reads_every_fixture_format(tmp_path, example_spec, log):
    outcome = _accept_any(tmp_path, example_spec, log)
    if outcome is None:
        pytest.skip(f"{log.name} carries no step times (bandwidth, system or rank metadata)")
    result, fmt = outcome
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["passed"] and doc["run"]["steps_measured"] >= 1 and fmt in TIMED


def test_the_fixtures_cover_every_timed_format(example_spec, tmp_path):
    seen = set()
    for log in _fixture_logs():
        outcome = _accept_any(tmp_path, example_spec, log)
        if outcome is not None:
            seen.add(outcome[1])
    assert seen == TIMED


def _shared_logs() -> list[Path]:
    if not SHARED_LOGS.is_dir():
        return []
    return sorted(p for p in SHARED_LOGS.iterdir() if p.is_file() and p.name != "README.md")


@pytest.mark.skipif(not SHARED_LOGS.is_dir(), reason="the shared real-log corpus (PROCURE_SHARED/data/logs) is absent")
@pytest.mark.parametrize("log", _shared_logs() or [None], ids=lambda p: getattr(p, "name", "none"))
def test_accept_reads_the_real_logs(tmp_path, example_spec, log):
    outcome = _accept_any(tmp_path, example_spec, log)
    if outcome is None:
        pytest.skip(f"{log.name} carries no step times")
    result, _fmt = outcome
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------- monotonicity

LIMIT_MEAN, LIMIT_P99 = 3.0, 4.0


def _verdict(folder: Path, spec_path: Path, times: list[float]) -> dict[str, str]:
    log = folder / "burnin.log"
    log.write_text(megatron_log(times, 4096), encoding="utf-8")
    result = api.accept(spec_path, [log])
    return {f.figure: f.status for f in result.figures}


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.lists(st.floats(1.0, 6.0), min_size=30, max_size=60),
       slower=st.lists(st.floats(1.0, 3.0), min_size=60, max_size=60),
       extra=st.lists(st.floats(LIMIT_P99 + 0.01, 20.0), max_size=20))
def test_more_or_slower_steps_never_turn_a_breach_into_a_pass(base, slower, extra):
    spec = _example_spec()
    spec = spec.model_copy(update={
        "scaling": None,
        "steps": spec.steps.model_copy(update={"warmup_steps": 5, "measured_steps_min": 20}),
        "thresholds": [spec.thresholds[0].model_copy(update={"committed": LIMIT_MEAN, "limit": LIMIT_MEAN}),
                       spec.thresholds[1].model_copy(update={"committed": LIMIT_P99, "limit": LIMIT_P99})]})
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        spec_path = write_spec(folder, spec)
        before = _verdict(folder, spec_path, base)
        after = _verdict(folder, spec_path, [t * f for t, f in zip(base, slower)] + extra)
    for figure, status in before.items():
        if status == "breach":
            assert after[figure] == "breach", (figure, before, after)


def test_a_log_format_the_spec_does_not_accept_is_no_evidence(tmp_path, example_spec):
    spec = write_spec(tmp_path, example_spec, evidence_formats=["nemo"])
    result = run("accept", str(spec), str(BURNIN))
    assert result.exit_code == 1 and "megatron is not a format this spec accepts" in result.output
