"""Whatever validates also computes: extreme numbers in every numeric field of a small cluster.yaml
(zero, 1e-300, one, 10**12, 10**30, the schema's own bounds) go through validation and, when they
pass it, through the whole quote pipeline to the JSON result. Each must end in a clean InputError
at validation or a document that can be written (no NaN, no infinity); never an exception from
inside the pipeline (exit 3).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml
from hypothesis import given, strategies as st

from fuzz_budget import fuzz_settings
from procure import api
from procure.catalog.load import default_catalog
from procure.errors import InputError
from procure.jsontext import to_json_bytes

BASE = {
    "schema": "procure/v1", "title": "Magnitudes", "as_of": "2026-12-01", "currency": "USD",
    "workload": {"model": "llama3-8b", "seq_len": 4096, "global_batch": 64, "train_tokens": 1e9},
    "assumptions": {},
    "bids": [{"id": "a", "vendor": "A", "accelerator": "h100-sxm5-80gb", "gpus": 8,
              "pricing": {"usd_per_gpu_hour": 2.0}, "plan": {"tp": 1, "pp": 1, "dp": 8, "micro_batch": 1}}],
}
ARCH = {"layers": 4, "hidden": 1024, "heads": 8, "kv_heads": 8, "ffn_hidden": 4096, "vocab": 32000}
FIELDS = [
    ("workload", "seq_len"), ("workload", "global_batch"), ("workload", "global_batch_tokens"),
    ("workload", "train_tokens"), ("workload", "deadline_days"),
    ("workload", "architecture", "layers"), ("workload", "architecture", "hidden"),
    ("workload", "architecture", "heads"), ("workload", "architecture", "kv_heads"),
    ("workload", "architecture", "ffn_hidden"), ("workload", "architecture", "vocab"),
    ("assumptions", "power_usd_per_kwh"), ("assumptions", "pue"), ("assumptions", "failures_per_gpu_hour"),
    ("assumptions", "restart_min"), ("assumptions", "checkpoint_write_gbs"),
    ("assumptions", "checkpoint_interval_min"), ("assumptions", "checkpoint_bytes_per_param"),
    ("assumptions", "gpu_utilisation_power"), ("assumptions", "mfu_ceiling"), ("assumptions", "committed_tolerance"),
    ("assumptions", "step_time_cv"), ("assumptions", "seed"),
    ("bids", 0, "gpus"), ("bids", 0, "pricing", "usd_per_gpu_hour"),
    ("bids", 0, "committed", "step_time_s"), ("bids", 0, "committed", "p99_step_time_s"),
    ("bids", 0, "committed", "scaling_efficiency"),
    ("bids", 0, "plan", "tp"), ("bids", 0, "plan", "pp"), ("bids", 0, "plan", "dp"),
    ("bids", 0, "plan", "micro_batch"), ("bids", 0, "plan", "vpp"), ("bids", 0, "plan", "cp"),
]
EXTREMES = [0, 1e-300, 1e-9, 0.001, 0.01, 0.5, 1, 1.0000001, 2, 3, 7, 8, 100, 1000, 65536, 1e6, 10 ** 7, 1e9,
            10 ** 12, 1e15, 1e18, 10 ** 18, 2 ** 63 - 1, 10 ** 30, 1e300, -1, 36500, 10_000_000, 3.0, 1.5]


def _set(doc: dict, path: tuple, value) -> None:
    node = doc
    for part in path[:-1]:
        if isinstance(part, str) and part not in node:
            node[part] = dict(ARCH) if part == "architecture" else {}
        node = node[part]
    node[path[-1]] = value
    workload = doc["workload"]
    if "architecture" in workload:
        workload.pop("model", None)
    if "global_batch_tokens" in workload and "global_batch" in workload:
        workload.pop("global_batch" if path[-1] == "global_batch_tokens" else "global_batch_tokens")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    default_catalog()
    return tmp_path_factory.mktemp("magnitudes")


def quote(folder: Path, doc: dict) -> None:
    path = folder / "cluster.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    try:
        document = api.quote_document(path)
    except InputError as exc:
        assert exc.diagnostics and all(d.message.strip() for d in exc.diagnostics)
        return
    to_json_bytes(document.to_data())      # raises on NaN or infinity anywhere in the result


@fuzz_settings("cluster.yaml: extreme magnitudes through the pipeline", 200, deadline_ms=20000)
@given(seed=st.integers(0, 2 ** 64 - 1))
def test_extreme_values_validate_and_compute_or_are_refused(folder, seed):
    import copy

    rng = random.Random(seed)
    doc = copy.deepcopy(BASE)
    for _ in range(rng.randint(1, 3)):
        _set(doc, rng.choice(FIELDS), rng.choice(EXTREMES))
    quote(folder, doc)


@pytest.mark.parametrize("path, value", [
    (("bids", 0, "pricing", "usd_per_gpu_hour"), 0), (("assumptions", "seed"), 10 ** 60),
    (("workload", "architecture", "ffn_hidden"), 10 ** 60), (("workload", "global_batch"), 10 ** 50),
    (("assumptions", "checkpoint_write_gbs"), 1e-300), (("bids", 0, "gpus"), True),
])
def test_the_reported_magnitudes_are_input_errors(folder, path, value):
    import copy

    doc = copy.deepcopy(BASE)
    _set(doc, path, value)
    with pytest.raises(InputError):
        api.quote_document(_write(folder, doc))


def test_a_date_with_a_time_of_day_is_an_input_error(folder):
    import copy

    doc = copy.deepcopy(BASE)
    text = yaml.safe_dump(doc, sort_keys=False).replace("as_of: '2026-12-01'", "as_of: 2026-12-01 10:00:00")
    path = folder / "cluster.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="time of day"):
        api.quote_document(path)


def test_a_vendor_of_zero_width_characters_is_an_input_error(folder):
    import copy

    doc = copy.deepcopy(BASE)
    doc["bids"][0]["vendor"] = "\u200b\u200c\u200d"
    with pytest.raises(InputError, match="visible characters"):
        api.quote_document(_write(folder, doc))


def _write(folder: Path, doc: dict) -> Path:
    path = folder / "cluster.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path
