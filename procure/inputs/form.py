"""The vendor's response form: every field a bid in cluster.yaml can state, as dotted keys.

The fields are derived by walking the pydantic ``Bid`` schema, so the RFQ form (``procure rfq``),
the response reader (``inputs.responses``) and cluster.yaml can never disagree on a key. A field
is a scalar leaf: nested mappings (``pricing``, ``committed``, ``plan``, ``software``) become
dotted prefixes; lists (``measured`` logs, recompute modules) are left to cluster.yaml, since a
response cannot ship logs and one cell holds one value.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, Literal, Union

from pydantic import BaseModel

# Keys a vendor fills in first: the order of the form (the rest follow in schema order).
LEADING = ("id", "vendor", "accelerator", "gpus", "network", "lead_time_days", "available_from")
# Fields a response cannot carry (paths to logs on the vendor's side).
NOT_ON_FORM = ("measured",)
# Choices that come from the catalog, not the schema.
CATALOG_CHOICES = {"accelerator": "accelerators", "network": "networks", "pricing.currency": "currencies"}


@dataclass(frozen=True)
class FormField:
    key: str                  # dotted cluster.yaml bid key: pricing.price_per_gpu_hour
    kind: str                 # text | integer | number | money | date | choice | yes/no
    unit: str
    meaning: str
    choices: tuple[str, ...] = ()
    required: bool = False

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.key.split("."))


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """The annotation without Optional/Annotated, and whether None was allowed."""
    optional = False
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            optional = optional or len(args) < len(typing.get_args(annotation))
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            annotation = models[0] if models else args[0]     # `plan: auto | {...}` fills the mapping
        else:
            return annotation, optional


def _kind(annotation: Any) -> tuple[str, tuple[str, ...]]:
    if typing.get_origin(annotation) is Literal:
        return "choice", tuple(str(a) for a in typing.get_args(annotation))
    if annotation is bool:
        return "yes/no", ("true", "false")
    if annotation is int:
        return "integer", ()
    if annotation is float:
        return "number", ()
    if annotation is Decimal:
        return "money", ()
    if annotation is date:
        return "date", ()
    return "text", ()


def unit_of(key: str, kind: str) -> str:
    """The unit a field's name carries (units are in names throughout procure)."""
    name = key.rsplit(".", 1)[-1]
    special = {"gpus": "GPUs", "pue": "ratio ≥ 1", "kw_per_gpu": "kW per GPU", "setup_fee": "currency",
               "network_capex": "currency", "staff_per_year": "currency per year", "cost_of_capital": "per year",
               "resale_decline_per_year": "fraction per year", "scaling_efficiency": "ratio",
               "global_batch": "sequences", "seq_len": "tokens", "egress_tb": "TB"}
    if name in special:
        return special[name]
    if key.startswith("plan.") and kind == "integer":
        return "degree" if name not in ("micro_batch", "fsdp_shard_group", "recompute_layers") else \
            {"micro_batch": "sequences", "fsdp_shard_group": "ranks", "recompute_layers": "layers"}[name]
    suffixes = (("_per_gpu_hour", "currency per GPU-hour"), ("_per_gpu_year", "currency per GPU per year"),
                ("_per_kw_month", "currency per kW-month"), ("_per_kwh", "currency per kWh"),
                ("_per_tb", "currency per TB"), ("_per_gpu", "currency per GPU"), ("_per_node", "currency per node"),
                ("_per_year", "currency per year"), ("_fraction", "fraction 0-1"), ("_s", "seconds"),
                ("_days", "days"), ("_months", "months"), ("_years", "years"), ("_tokens", "tokens"))
    for suffix, unit in suffixes:
        if name.endswith(suffix):
            return unit
    return "date (YYYY-MM-DD)" if kind == "date" else ""


def _walk(model: type[BaseModel], prefix: str, required_parent: bool) -> list[FormField]:
    out: list[FormField] = []
    for name, info in model.model_fields.items():
        key = f"{prefix}{info.alias or name}"
        if key in NOT_ON_FORM:
            continue
        annotation, optional = _unwrap(info.annotation)
        if typing.get_origin(annotation) in (list, tuple, dict):
            continue
        # the id is the response file's name unless the response states one
        required = required_parent and info.is_required() and not optional and key != "id"
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            out += _walk(annotation, key + ".", required)
            continue
        kind, choices = _kind(annotation)
        out.append(FormField(key, kind, unit_of(key, kind), (info.description or "").strip(), choices, required))
    return out


def form_fields(model: type[BaseModel] | None = None) -> list[FormField]:
    """Every field of the form, the leading ones first (``model``: the bid schema)."""
    if model is None:
        from procure.inputs.schema import Bid

        model = Bid
    fields = _walk(model, "", True)
    lead = {key: i for i, key in enumerate(LEADING)}
    return sorted(fields, key=lambda f: (lead.get(f.key, len(LEADING)), 0))


def by_key(fields: list[FormField] | None = None) -> dict[str, FormField]:
    return {f.key: f for f in (fields or form_fields())}


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys to the nested mapping cluster.yaml holds (``pricing.kind`` -> pricing: {kind})."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out
