"""The columns of a sweep point: one table read by the partial Parquet files, the final Parquet,
the XLSX and the JSON points (nested there: ``plan`` and ``band``).

A point row (what a worker returns, and a JSON point) nests the plan and the band; a record
(a Parquet or XLSX row) is flat. ``flatten``/``nest`` convert exactly, so a row written to a
partial file and read back is equal to the row computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from io import BytesIO
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from procure.sweep.document import SweepPoint

PLAN_FIELDS = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero_stage", "recompute",
               "sequence_parallel", "tp_comm_overlap", "overlap_grad_reduce")
BAND_FIELDS = (("cost_per_million_tokens", "cost"), ("time_to_train_days", "days"))
PERCENTILES = ("p10", "p50", "p90")


@dataclass(frozen=True)
class Column:
    name: str
    kind: str                # int | str | bool | float | decimal | strlist
    label: str               # the XLSX header
    scale: int = 0           # decimal places of a decimal column
    final: bool = False      # set by the analysis of the whole sweep, not by a worker


def _plan_columns() -> list[Column]:
    kinds = {"recompute": "str", "sequence_parallel": "bool", "tp_comm_overlap": "bool",
             "overlap_grad_reduce": "bool"}
    return [Column(f"plan_{k}", kinds.get(k, "int"), f"Plan {k.replace('_', ' ')}") for k in PLAN_FIELDS]


def _band_columns() -> list[Column]:
    out = []
    for _, short in BAND_FIELDS:
        for p in PERCENTILES:
            if short == "cost":
                out.append(Column(f"band_cost_{p}", "decimal", f"Cost per Mtok {p.upper()}", 4))
            else:
                out.append(Column(f"band_days_{p}", "float", f"Days {p.upper()}"))
    return out


COLUMNS: tuple[Column, ...] = (
    Column("index", "int", "Index"),
    Column("id", "str", "Point"),
    Column("workload", "str", "Workload"),
    Column("accelerator", "str", "Accelerator"),
    Column("network", "str", "Network"),
    Column("gpus", "int", "GPUs"),
    Column("term", "str", "Term"),
    Column("pricing_kind", "str", "Kind"),
    Column("feasible", "bool", "Plan fits"),
    Column("reason", "str", "Why not"),
    *_plan_columns(),
    Column("plans_evaluated", "int", "Plans searched"),
    Column("step_time_s", "float", "Step time (s)"),
    Column("mfu", "float", "MFU"),
    Column("tokens_per_s", "float", "Tokens/s"),
    Column("memory_gib", "float", "Memory (GiB/GPU)"),
    Column("goodput", "float", "Goodput"),
    Column("time_to_train_days", "float", "Time to train (days)"),
    Column("days_to_finish", "float", "Days to finish (lead time + training)"),
    Column("cost_basis", "str", "Cost basis"),
    Column("billed_hours", "decimal", "Billed hours", 2),
    Column("energy_mwh", "decimal", "Energy (MWh)", 3),
    Column("total_cost", "decimal", "Total cost", 2),
    Column("cost_per_million_tokens", "decimal", "Cost per million tokens", 4),
    Column("run_total_cost", "decimal", "Run basis: total cost", 2),
    Column("run_cost_per_million_tokens", "decimal", "Run basis: cost per million tokens", 4),
    Column("commitment_total_cost", "decimal", "Commitment basis: total cost", 2),
    Column("commitment_cost_per_million_tokens", "decimal", "Commitment basis: cost per million tokens", 4),
    Column("upfront_capex", "decimal", "Upfront capex", 2),
    Column("present_value", "decimal", "Present value (own horizon)", 2),
    Column("upfront_cash", "decimal", "Upfront cash", 2),
    Column("peak_cash_out", "decimal", "Peak cash out", 2),
    Column("currency", "str", "Currency"),
    Column("it_power_mw", "float", "IT power (MW)"),
    Column("flags", "strlist", "Flags"),
    *_band_columns(),
    Column("meets_constraints", "bool", "Meets constraints", final=True),
    Column("constraint_failures", "strlist", "Fails", final=True),
    Column("over_budget_by", "decimal", "Peak cash over the budget", 2, final=True),
    Column("over_net_cost_by", "decimal", "Total cost over the net-cost limit", 2, final=True),
    Column("on_frontier", "bool", "On frontier", final=True),
)
EVAL_COLUMNS = tuple(c for c in COLUMNS if not c.final)
BY_NAME = {c.name: c for c in COLUMNS}
DECIMAL_SCALES = {c.name: c.scale for c in COLUMNS if c.kind == "decimal"}


def quantized(name: str, value: Decimal | None) -> Decimal | None:
    """``value`` at its column's scale; refuses to round (the economics already rounded it)."""
    if value is None:
        return None
    exact = Decimal(value).quantize(Decimal(1).scaleb(-DECIMAL_SCALES[name]))
    if exact != value:
        raise ValueError(f"{name} {value} has more digits than its column keeps")
    return exact


def flatten(row: dict[str, Any]) -> dict[str, Any]:
    """A nested point row as a flat record (plan_*, band_* columns)."""
    record = {k: v for k, v in row.items() if k not in ("plan", "band")}
    plan = row.get("plan") or {}
    for k in PLAN_FIELDS:
        record[f"plan_{k}"] = plan.get(k)
    band = row.get("band") or {}
    for key, short in BAND_FIELDS:
        values = band.get(key) or [None] * len(PERCENTILES)
        for p, v in zip(PERCENTILES, values):
            record[f"band_{short}_{p}"] = v
    return record


def flat_point(point: SweepPoint) -> dict[str, Any]:
    """A typed point of the document as the flat record the Parquet file and the workbook hold."""
    return flatten(point.model_dump(mode="python"))


def nest(record: dict[str, Any]) -> dict[str, Any]:
    """A flat record as a nested point row (the inverse of ``flatten``)."""
    row = {k: v for k, v in record.items() if not k.startswith(("plan_", "band_"))}
    plan = {k: record[f"plan_{k}"] for k in PLAN_FIELDS}
    row["plan"] = plan if record["feasible"] else None
    band = {key: [record[f"band_{short}_{p}"] for p in PERCENTILES] for key, short in BAND_FIELDS}
    row["band"] = band if band["cost_per_million_tokens"][0] is not None else None
    return row


# ---------------------------------------------------------------- Arrow and Parquet (lazy pyarrow)

def _arrow_type(column: Column) -> Any:
    import pyarrow as pa

    return {"int": pa.int64(), "str": pa.string(), "bool": pa.bool_(), "float": pa.float64(),
            "strlist": pa.list_(pa.string()),
            "decimal": pa.decimal128(38, column.scale)}[column.kind]


GENERATOR_KEY = "procure.generator"   # Parquet footer metadata that marks procure's own table


def to_table(records: list[dict[str, Any]], columns: tuple[Column, ...]) -> Any:
    """A pyarrow Table of flat records, one column per ``Column`` in order."""
    import pyarrow as pa

    schema = pa.schema([pa.field(c.name, _arrow_type(c)) for c in columns],
                       metadata={GENERATOR_KEY: "procure"})   # the rerun fingerprint (report.writer)
    data = {c.name: [r.get(c.name) for r in records] for c in columns}
    return pa.Table.from_pydict(data, schema=schema)


def from_table(table: Any) -> list[dict[str, Any]]:
    return table.to_pylist()   # type: ignore[no-any-return]


def parquet_bytes(records: list[dict[str, Any]], columns: tuple[Column, ...] = COLUMNS) -> bytes:
    """Deterministic Parquet: same records, same bytes (no timestamps, no pandas metadata)."""
    import pyarrow.parquet as pq

    buffer = BytesIO()
    pq.write_table(to_table(records, columns), buffer, compression="zstd", row_group_size=65536)
    return buffer.getvalue()


def read_parquet(data: bytes) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    return from_table(pq.read_table(pa.BufferReader(data)))
