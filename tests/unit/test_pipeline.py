"""The quote pipeline on small inline clusters: measured logs, nccl-tests, FX and missing prices."""

from decimal import Decimal
from pathlib import Path

import pytest

from procure import api

BASE = """\
schema: procure/v1
title: pipeline test
as_of: 2026-12-01
currency: {currency}
workload:
  model: llama3-8b
  seq_len: 8192
  global_batch: 512
  train_tokens: 1e11
assumptions:
  power_usd_per_kwh: 0.10
bids:
  - id: b
    vendor: V
    accelerator: h100-sxm5-80gb
    gpus: 64
    network: ib-ndr400
    pricing: {pricing}
    committed: {{step_time_s: 1.0}}
{extra}"""

NCCL = """\
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1  {t:.1f}  {alg:.2f}  {bus:.2f}      0  {t:.1f}  {alg:.2f}  {bus:.2f}      0
  2147483648     536870912     float     sum      -1  {t2:.1f}  {alg:.2f}  {bus:.2f}      0  {t2:.1f}  {alg:.2f}  {bus:.2f}      0
# Avg bus bandwidth    : {bus:.2f}
"""


def write(tmp_path: Path, currency="USD", pricing="{usd_per_gpu_hour: 2.50}", extra="", files=None) -> Path:
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / "cluster.yaml"
    path.write_text(BASE.format(currency=currency, pricing=pricing, extra=extra), encoding="utf-8")
    return path


def nccl(bus_gbs: float) -> str:
    alg = bus_gbs / (2 * 15 / 16)
    return NCCL.format(bus=bus_gbs, alg=alg, t=1073741824 / alg / 1e3, t2=2147483648 / alg / 1e3)


def megatron_log(step_ms: float, steps: int = 40) -> str:
    return "".join(f" iteration {i:8d}/    1000 | consumed samples: {i * 512:10d} | elapsed time per iteration (ms): "
                   f"{step_ms * (3 if i == 1 else 1):.1f} | learning rate: 1.0E-04 | global batch size:   512 |\n"
                   for i in range(1, steps + 1))


def only_bid(path: Path) -> dict:
    return api.quote_document(path).to_data()["bids"][0]


def test_measured_log_drives_the_economics_and_flags_an_sla_breach(tmp_path):
    bid = only_bid(write(tmp_path, extra="    measured: [burnin.log]\n", files={"burnin.log": megatron_log(1500.0)}))
    assert bid["step_time_basis"] == "measured"
    assert bid["step_time_s"] == pytest.approx(1.5, rel=1e-6)
    assert bid["modeled"]["step_time_s"] != pytest.approx(1.5, rel=1e-3)
    assert bid["tokens_per_s"] == pytest.approx(512 * 8192 / 1.5, rel=1e-6)
    assert "sla-breach" in {f["code"] for f in bid["flags"]}


def test_slow_nccl_tests_bandwidth_slows_the_modeled_step(tmp_path):
    fast = only_bid(write(tmp_path))["modeled"]["step_time_s"]
    bid = only_bid(write(tmp_path, extra="    measured: [nccl.txt]\n", files={"nccl.txt": nccl(40.0)}))
    assert bid["measured"]["busbw_used"] is True
    assert bid["step_time_basis"] == "modeled"          # nccl-tests hold no step times
    assert bid["modeled"]["step_time_s"] > fast


def test_nccl_tests_far_above_the_nics_is_not_used_for_the_inter_node_tier(tmp_path):
    plain = only_bid(write(tmp_path))["modeled"]["step_time_s"]
    bid = only_bid(write(tmp_path, extra="    measured: [nccl.txt]\n", files={"nccl.txt": nccl(2000.0)}))
    assert bid["measured"]["busbw_used"] is False and "single-node" in bid["measured"]["busbw_note"]
    assert bid["modeled"]["step_time_s"] == pytest.approx(plain)


def test_report_currency_converts_prices_and_power_with_the_dated_fx_table(tmp_path):
    from procure.catalog.load import default_catalog
    from datetime import date

    rate = default_catalog().fx_for(date(2026, 12, 1)).rates["EUR"]
    usd = only_bid(write(tmp_path, pricing="{price_book: aws-2026q3, term: on-demand}"))
    eur = only_bid(write(tmp_path, currency="EUR", pricing="{price_book: aws-2026q3, term: on-demand}"))
    assert usd["pricing"]["price_per_gpu_hour"] == Decimal("6.88")
    # the converted price: 6.88 × the rate, rounded half away from zero to 1e-6 (procure.money)
    assert eur["pricing"]["price_per_gpu_hour"] == (Decimal("6.88") * rate).quantize(Decimal("0.000001"))
    quoted = eur["pricing"]["quoted"][0]
    assert (quoted["key"], quoted["quoted"], quoted["currency"]) == ("price_per_gpu_hour", Decimal("6.88"), "USD")
    assert quoted["converted"] == eur["pricing"]["price_per_gpu_hour"] and quoted["fx_rate"] == rate
    assert eur["currency"] == "EUR"
    ratio = Decimal(str(eur["total_cost"])) / Decimal(str(usd["total_cost"]))
    assert abs(ratio - rate) < Decimal("0.0001")


def test_a_term_the_book_lacks_for_this_accelerator_is_price_missing_not_a_crash(tmp_path):
    path = write(tmp_path, pricing="{price_book: aws-2026q3, term: on-demand}")
    path.write_text(path.read_text().replace("h100-sxm5-80gb", "mi300x-oam-192gb"))
    bid = only_bid(path)
    assert bid["total_cost"] is None and bid["cost_per_million_tokens"] is None
    assert "price-missing" in {f["code"] for f in bid["flags"]}
    assert bid["step_time_s"] > 0


def test_document_is_byte_identical_across_runs(tmp_path):
    from procure.jsontext import to_json_bytes

    path = write(tmp_path)
    assert to_json_bytes(api.quote_document(path).to_data()) == to_json_bytes(api.quote_document(path).to_data())


def test_fail_on_policy_trips_after_reports_are_written(tmp_path):
    from procure.errors import PolicyError

    result = api.quote(write(tmp_path), tmp_path / "out", ["json"], fail_on=["optimistic"])
    assert result.written and result.written[0].exists()
    with pytest.raises(PolicyError):
        result.check_policy()


def test_nccl_tests_run_on_one_host_is_not_used_even_when_plausible(tmp_path):
    one_host = "".join(f"#  Rank {r:2d} Group  0 Pid {100 + r} on hostA device {r} [0x1b] NVIDIA H100\n"
                       for r in range(8)) + nccl(40.0)
    plain = only_bid(write(tmp_path))["modeled"]["step_time_s"]
    bid = only_bid(write(tmp_path, extra="    measured: [nccl.txt]\n", files={"nccl.txt": one_host}))
    assert bid["measured"]["busbw_used"] is False and "one host" in bid["measured"]["busbw_note"]
    assert bid["modeled"]["step_time_s"] == pytest.approx(plain)
