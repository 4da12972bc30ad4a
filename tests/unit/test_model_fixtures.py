"""Hardware and model builders shared by the model and backtest tests (numbers from
shared/data/facts/hardware_specs.yaml), plus a check that they say what the facts say."""

from __future__ import annotations

from dataclasses import replace

from procure.catalog.types import Accelerator, ModelArch, MoE, Network, Sourced

_SRC = Sourced(("shared/data/facts/hardware_specs.yaml",), "2026-11")


def accel(id_: str, bf16: float, hbm_gb: float, hbm_tbs: float, up_gbs: float, domain: int,
          ceiling: float | None = None, fp8: float | None = None) -> Accelerator:
    peaks = {"bf16": bf16, "fp16": bf16}
    if fp8:
        peaks["fp8"] = fp8
    return Accelerator(id=id_, vendor="NVIDIA", name=id_, architecture="", release_year=2020,
                       peak_tflops=peaks, hbm_gb=hbm_gb, hbm_bw_tbs=hbm_tbs, scale_up_bw_gbs=up_gbs,
                       scale_up_domain=domain, scale_up_tech="NVLink", tdp_w=400.0,
                       matmul_ceiling_tflops={"bf16": ceiling} if ceiling else {},
                       default_network=None, sourced=_SRC)


A100_80 = accel("a100-sxm4-80gb", 312.0, 80.0, 2.039, 300.0, 8, ceiling=271.2)
A100_40 = replace(A100_80, id="a100-sxm4-40gb", hbm_gb=40.0, hbm_bw_tbs=1.555)
H100 = accel("h100-sxm5-80gb", 989.4, 80.0, 3.35, 450.0, 8, ceiling=794.5, fp8=1978.9)
# An L40S-like part: 48 GB GDDR6, no NVLink (PCIe 32 GB/s per direction), one per "domain".
L40S = accel("l40s-like", 362.0, 48.0, 0.864, 32.0, 1)
ACCELERATORS = {a.id: a for a in (A100_80, A100_40, H100)}


def network(gbps: float, latency_us: float = 5.0) -> Network:
    return Network(id=f"ib-{gbps:g}", name="IB", kind="infiniband", scale_out_gbps_per_gpu=gbps,
                   latency_us=latency_us, rail_optimised=True, sourced=_SRC)


NDR = network(400.0)
HDR = network(200.0)


def gpt(layers: int, hidden: int, heads: int, vocab: int = 51200, kv_heads: int | None = None,
        ffn: int | None = None, gated: bool = False, moe: MoE | None = None) -> ModelArch:
    return ModelArch(id="gpt", name="gpt", layers=layers, hidden=hidden, heads=heads,
                     kv_heads=kv_heads or heads, ffn_hidden=ffn or 4 * hidden, vocab=vocab,
                     gated_mlp=gated, moe=moe)


LLAMA3_70B = gpt(80, 8192, 64, vocab=128256, kv_heads=8, ffn=28672, gated=True)
LLAMA3_405B = gpt(126, 16384, 128, vocab=128256, kv_heads=8, ffn=53248, gated=True)
MIXTRAL = gpt(32, 4096, 32, vocab=32000, kv_heads=8, ffn=14336, gated=True,
              moe=MoE(experts=8, top_k=2, expert_ffn_hidden=14336))


def test_fixtures_match_the_fact_sheet():
    assert A100_80.peak_flops("bf16") == 312e12
    assert A100_40.hbm_gb == 40.0 and A100_40.hbm_bw_tbs == 1.555
    assert H100.peak_flops("fp8") == 1978.9e12
    assert NDR.scale_out_bw_gbs == 50.0
