"""Every assumption of a quote, declared once: key, label, unit, default, bounds and source.

The cluster.yaml schema (``AssumptionsSpec``), the economics defaults (``Assumptions``), the
document's assumption rows and the generated docs all read this table; a test checks that
they name the same keys. Layer 1: no project imports.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Literal, Union

Number = Union[int, float, Decimal, None]


@dataclass(frozen=True)
class AssumptionDef:
    key: str
    label: str
    unit: str
    default: Number
    source: str                      # where the default comes from
    description: str                 # what it does (the docs print it)
    kind: Literal["float", "int", "money", "fraction"] = "float"   # fraction: a rate, exact
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    settable: bool = True            # cluster.yaml may override it
    default_text: str = ""           # how a None default is filled in, for the docs


LLAMA3_FAILURES_PER_GPU_HOUR = 419 / 21_233_664   # 419 interruptions in 54 days on 16,384 GPUs
NODE_WRITE_GBS = 5.0            # checkpoint bytes one 8-GPU node writes per second (an estimate)
WRITING_GPUS_PER_NODE = 8

ASSUMPTIONS: tuple[AssumptionDef, ...] = (
    AssumptionDef("failures_per_gpu_hour", "Interruptions per GPU-hour", "1/GPU-h",
                  LLAMA3_FAILURES_PER_GPU_HOUR,
                  "Llama 3 Herd of Models, sec 3.3.4: 419 unplanned interruptions in 54 days on 16,384 H100",
                  "Job interruptions per GPU-hour; drives goodput.", ge=0, le=1),
    AssumptionDef("restart_min", "Restart cost", "min", 15.0,
                  "MegaScale (NSDI 2024): training catches up within ~15 min",
                  "Minutes lost per interruption (detect, restart, reload), on top of the work since "
                  "the last checkpoint.", ge=0, le=10_000),
    AssumptionDef("checkpoint_bytes_per_param", "Checkpoint bytes per parameter", "B", 16.0,
                  "bf16 weights + fp32 master + Adam m, v (VAST Data via glennklockwood.com)",
                  "Checkpoint bytes per model parameter (weights, master copy, optimizer state).",
                  gt=0, le=64),
    AssumptionDef("checkpoint_write_gbs", "Checkpoint write bandwidth", "GB/s", None,
                  "grows with the cluster when not given: each GPU's share up to the storage's aggregate",
                  "Aggregate checkpoint write bandwidth to storage; unset: the GPUs times the write bandwidth "
                  "per GPU, up to the storage system's aggregate.", gt=0, le=1e6,
                  default_text="GPUs × the write bandwidth per GPU, up to the storage's aggregate"),
    AssumptionDef("checkpoint_write_gbs_per_gpu", "Checkpoint write bandwidth per GPU", "GB/s",
                  NODE_WRITE_GBS / WRITING_GPUS_PER_NODE,
                  "estimate, not published: 5 GB/s written per 8-GPU node (a fifth of one 200 Gb/s storage "
                  "network card sustained)",
                  "What each GPU's share of a node writes to shared storage when the aggregate is not given.",
                  gt=0, le=1e4),
    AssumptionDef("storage_write_cap_gbs", "Storage aggregate write bandwidth", "GB/s", 2000.0,
                  "Llama 3 Herd of Models (2024), sec 3.3.4: Tectonic sustains 2 TB/s (peak 7 TB/s)",
                  "The storage system's aggregate write bandwidth: the cap on the GPUs' sum.", gt=0, le=1e6),
    AssumptionDef("eval_fraction", "In-loop evaluations", "of wall-clock", 0.003,
                  "estimate, not published: a few hundred evaluation batches every few thousand steps",
                  "Share of wall-clock spent on evaluations inside the training job.", ge=0, lt=1),
    AssumptionDef("data_stall_fraction", "Data-pipeline stalls", "of wall-clock", 0.002,
                  "estimate, not published: prefetching loaders hide most input time",
                  "Share of wall-clock the GPUs wait for input.", ge=0, lt=1),
    AssumptionDef("checkpoint_interval_min", "Checkpoint interval", "min", None,
                  "Young 1974 optimum when not given", "Minutes between checkpoints.", gt=0, le=1e6,
                  default_text="Young's optimum, computed per bid"),
    AssumptionDef("gpu_utilisation_power", "Average power draw", "fraction of IT power", 0.8,
                  "DGX H100: 6.5-8.5 kW typical of 10.2 kW max (supercluster.blog, NVIDIA DGX H100 spec)",
                  "Average power draw as a fraction of the system's maximum IT power per GPU (node power "
                  "/ GPUs plus the fabric's share; the GPU TDP where no system spec is known); energy "
                  "and power cost.", gt=0, le=1),
    AssumptionDef("power_usd_per_kwh", "Power price", "USD per kWh", None,
                  "purchase price book facility figure when not given",
                  "Electricity price per kWh, given in USD and converted to the report currency "
                  "(purchase bids whose pricing states no power price; a bid's own, inline or from its price "
                  "book, wins).", kind="money", ge=0, default_text="the purchase book's facility figure"),
    AssumptionDef("pue", "PUE", "", None, "purchase price book facility figure when not given",
                  "Power usage effectiveness of the buyer's facility (purchase bids whose pricing states no PUE; "
                  "a bid's own PUE, inline or from its price book, wins).", ge=1.0, le=3.0,
                  default_text="the purchase book's facility figure"),
    AssumptionDef("rental_pue", "PUE of a rented cluster (assumed)", "", Decimal("1.3"),
                  "estimate: the facility figure of the shipped purchase price book (2026), within the 1.2-1.3 of "
                  "modern data centers cited there (Uptime Institute Global Data Center Survey 2024)",
                  "Power usage effectiveness of a provider whose price book states none: rental energy counts "
                  "the facility like an owned cluster's, so the same hours give comparable MWh.",
                  kind="money", ge=1.0, le=3.0),
    AssumptionDef("mfu_ceiling", "Large-run MFU record (implausible above)", "", 0.65,
                  "largest published runs stay below ~0.55-0.6",
                  "The MFU large published runs have reached; a commitment implying more is "
                  "`implausible`, and one implying more than the accelerator's measured GEMM ceiling "
                  "(matmul_ceiling_tflops / peak) is `impossible`.",
                  gt=0, le=1),
    AssumptionDef("committed_tolerance", "Committed vs modeled tolerance", "", 0.15, "procure default: a product choice near the model's spread on fitted hardware (not a published figure)",
                  "Relative gap between committed and modeled step time beyond which a bid is "
                  "`optimistic` or `conservative`.", gt=0, le=1),
    AssumptionDef("step_time_cv", "Per-GPU step-time variation", "CV", None,
                  "the model's per-accelerator knob when not given",
                  "Per-GPU step-time coefficient of variation (stragglers and the P99 band).", ge=0, le=1,
                  default_text="the model's per-accelerator knob"),
    AssumptionDef("cost_of_capital", "Cost of capital", "per year", Decimal("0.08"),
                  "procure default, an estimate: a typical weighted average cost of capital of 7-10% a year "
                  "(not taken from a published table)",
                  "Annual cost of the money tied up in owned hardware (capex) or a prepayment; the "
                  "financing lines charge it for the hours held.", kind="fraction", ge=0, le=1),
    AssumptionDef("resale_decline_per_year", "Resale value decline", "per year", Decimal("0.33"),
                  "GPU secondary-market residuals of the MSRP: 60-65% after 1 year, 40-45% after 2, 25-35% after "
                  "3, 15-20% after 4, 10-15% after 5 (v2-pseo-ai.pages.dev/residual/h100-depreciation-calculator, "
                  "'GPU Lease Rate Index' analysis of 500+ secondary-market transactions, updated 2026-01-08, low "
                  "reliability; used H100s trade at $15,000-28,000 per Compute Forecast, 'The secondary market for "
                  "AI hardware', 2026); (1 - 0.33)^t gives 67%, 45%, 30%, 20%, 13%",
                  "Market value of owned hardware after t years is its market price new (a purchase book's line; "
                  "the price paid when lower or when no book prices it) x (1 - decline)^t; the commitment basis "
                  "credits it at the end of the run and the cash view at the sale, both less the haircut and "
                  "the transaction cost.", kind="fraction", ge=0, lt=1),
    AssumptionDef("resale_haircut", "Used-market haircut", "of market value", Decimal("0.15"),
                  "procure assumption, an estimate: a buyer of used datacenter GPUs discounts for warranty and "
                  "condition (not taken from a published survey)",
                  ("Share taken off the market value of owned hardware when it is sold: at the end of the run on "
                  "the commitment basis, at the horizon end in the cash view."),
                  kind="fraction", ge=0, lt=1),
    AssumptionDef("resale_transaction_cost", "Resale transaction cost", "of sale", Decimal("0.05"),
                  "procure assumption, not sourced: broker fee, de-installation, data wiping and shipping",
                  "Share of the sale price of owned hardware spent to sell it (both the commitment basis and the cash view).", kind="fraction", ge=0, lt=1),
    AssumptionDef("resale_months_to_sell", "Time to sell", "months", 3,
                  "procure assumption, not sourced: months from the end of the hold to the cash",
                  "Months from the horizon end (or the end of the run, when later) to the cash of the sale; "
                  "the hardware ages and the cash is discounted over them.", kind="int", ge=0, le=60),
    AssumptionDef("leftover_hours_reuse_share", "Reuse of leftover reserved hours", "of price", Decimal(0),
                  "procure default: nobody is assumed to use reserved hours the run leaves over",
                  "Share of the price of reserved hours left over after the run that the buyer recovers "
                  "(other work, resale of the capacity).", kind="fraction", ge=0, le=1),
    AssumptionDef("value_of_time_per_day", "Value of time", "per day", None,
                  "none unless given (a business figure only the buyer knows)",
                  "What finishing one day earlier is worth, in the report currency; when given, bids "
                  "are ranked on cost plus this value times the days to finish (delivery + training).",
                  kind="money", ge=0, default_text="not used"),
    AssumptionDef("step_time_sigma_calibrated", "Step-time error, calibrated (fallback)", "sigma of ln", 0.10,
                  "v1 fit: 4.7-7.0% MAPE on the calibration runs; a lognormal sigma of 0.10 puts ~80% of "
                  "errors within ±13%",
                  "Model step-time error the band draws for an accelerator with fitted knobs when the "
                  "estimate carries no calibration record (the model's family residuals are used "
                  "whenever it does).", ge=0, le=2, settable=False),
    AssumptionDef("step_time_sigma_uncalibrated", "Step-time error, uncalibrated (fallback)", "sigma of ln", 0.25,
                  "procure assumption: a wide prior for accelerators without fitted step-time parameters; "
                  "in procure's backtest the unfitted model predicted B200, GB200 and MI300X steps 30-60% too fast",
                  "Model step-time error the band draws for an accelerator without fitted knobs when "
                  "the estimate carries no calibration record.", ge=0, le=2, settable=False),
    AssumptionDef("months_hours", "Hours per billing month", "h", 730.0, "8760 / 12",
                  "Hours in one billing month (minimum commitments, colocation).", settable=False),
    AssumptionDef("monte_carlo_samples", "Monte Carlo samples", "", 2000, "procure default",
                  "Samples of the uncertainty band.", kind="int", ge=100, le=100_000),
    AssumptionDef("seed", "Monte Carlo seed", "", 20261201, "procure default: same inputs give the same band",
                  "Seed of the uncertainty sampling: same inputs, same band.", kind="int", ge=0,
                  le=2**63 - 1),
)

BY_KEY = {a.key: a for a in ASSUMPTIONS}

# The economics field that holds an input assumption once resolved, where the name must differ: the
# power price is given in USD and held in the report currency.
HELD_AS = {"power_usd_per_kwh": "power_price_per_kwh"}


def held_as(key: str) -> str:
    """The name of assumption ``key`` in the economics' resolved assumptions."""
    return HELD_AS.get(key, key)


def default(key: str) -> Number:
    """The documented default of assumption ``key``."""
    return BY_KEY[key].default


# Run-level losses of a whole run (the whole-run backtest and its band; procure.economics.goodput
# run_goodput). Not cluster.yaml settings: the quote's goodput still uses the rows above. Keys marked
# "fitted" are refitted by benchmarks/refit_runs.py on the whole-run fit split and published ETTR
# figures; the value here is the prior the fit starts from.
RSC1_FAILURES_PER_GPU_HOUR = 1 / (1.8 * 16_384)   # job MTTF 1.8 h projected at 16,384 A100

RUN_LOSS_ASSUMPTIONS: tuple[AssumptionDef, ...] = (
    replace(BY_KEY["failures_per_gpu_hour"], settable=False,
            description="Job interruptions per GPU-hour (the band's low end)."),
    AssumptionDef("failures_per_gpu_hour_high", "Interruptions per GPU-hour, research cluster", "1/GPU-h",
                  RSC1_FAILURES_PER_GPU_HOUR,
                  "Kokolis et al., Revisiting Reliability in Large-Scale ML Research Clusters (HPCA 2025, "
                  "arXiv 2410.21680): job MTTF projected 1.8 h at 16,384 A100 (7.9 h measured at 1,024), "
                  "via the shared reliability fact sheet",
                  "The band's high end of the interruption rate (an older, research-cluster fleet).",
                  ge=0, le=1, settable=False),
    AssumptionDef("restart_min", "Restart cost (fitted)", "min", 15.0,
                  "prior: MegaScale (NSDI 2024), training catches up within ~15 min; fitted to the Llama 3 "
                  "(>90% effective training time at 16,384 H100) and MegaScale (>90% ETTR at 12,288 GPUs) figures",
                  "Minutes lost per interruption on top of the rework since the last checkpoint.",
                  ge=0, le=10_000, settable=False),
    replace(BY_KEY["checkpoint_bytes_per_param"], settable=False),
    AssumptionDef("node_write_gbs", "Checkpoint write bandwidth per node", "GB/s", NODE_WRITE_GBS,
                  "estimate, not published: a fifth of one 200 Gb/s storage network card sustained per node",
                  "What one node writes to shared storage; the aggregate scales with the nodes.",
                  gt=0, le=1e4, settable=False),
    replace(BY_KEY["storage_write_cap_gbs"], settable=False),
    AssumptionDef("host_copy_gbs", "Device-to-host copy per GPU", "GB/s", 20.0,
                  "procure assumption, not sourced: a PCIe Gen4 x16 link (~25 GB/s) less overhead",
                  "What an asynchronous checkpoint blocks on: each GPU's shard copied to host memory "
                  "(MegaScale's two-stage checkpoint).", gt=0, le=1e4, settable=False),
    replace(BY_KEY["eval_fraction"], settable=False),
    replace(BY_KEY["data_stall_fraction"], settable=False),
    AssumptionDef("instability_fraction", "Early-run instabilities (fitted)", "of wall-clock", 0.0,
                  "fitted on the whole-run fit split (median log error), capped so a 128-GPU run keeps 99% "
                  "goodput; loss spikes and rollbacks (MegaScale sec 5; OPT logbook restarts) as context only",
                  "Share of wall-clock lost to loss spikes, rollbacks and restarts from an earlier checkpoint.",
                  ge=0, lt=1, settable=False),
)

RUN_LOSS_BY_KEY = {a.key: a for a in RUN_LOSS_ASSUMPTIONS}
