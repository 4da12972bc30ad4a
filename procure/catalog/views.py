"""Plain-data views of the catalog for `procure catalog list|show` (JSON-ready dicts)."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass

from procure.catalog.load import Catalog, default_catalog
from procure.errors import input_error

KINDS = {"accelerators": "accelerator", "networks": "network", "models": "model", "price-books": "price book"}


def _summary(kind: str, entry) -> dict:
    if kind == "accelerators":
        return {"id": entry.id, "name": entry.name, "vendor": entry.vendor, "bf16_tflops": entry.peak_tflops.get("bf16"),
                "hbm_gb": entry.hbm_gb, "hbm_bw_tbs": entry.hbm_bw_tbs, "tdp_w": entry.tdp_w}
    if kind == "networks":
        return {"id": entry.id, "name": entry.name, "kind": entry.kind,
                "scale_out_gbps_per_gpu": entry.scale_out_gbps_per_gpu, "latency_us": entry.latency_us}
    if kind == "models":
        return {"id": entry.id, "name": entry.name, "layers": entry.layers, "hidden": entry.hidden,
                "moe": entry.moe is not None}
    return {"id": entry.id, "provider": entry.provider, "kind": entry.kind, "currency": entry.currency,
            "effective": entry.effective.isoformat(), "lines": len(entry.lines)}


def _pool(cat: Catalog, kind: str) -> dict:
    return {"accelerators": cat.accelerators, "networks": cat.networks, "models": cat.models,
            "price-books": cat.price_books}[kind]


def list_entries(kind: str = "all", cat: Catalog | None = None) -> dict:
    cat = cat or default_catalog()
    kinds = list(KINDS) if kind == "all" else [kind]
    return {"schema": "procure.catalog/v1",
            "entries": {k: [_summary(k, e) for _, e in sorted(_pool(cat, k).items())] for k in kinds}}


def _plain(value):
    if is_dataclass(value):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def show_entry(entry_id: str, cat: Catalog | None = None) -> dict:
    cat = cat or default_catalog()
    for kind in KINDS:
        pool = _pool(cat, kind)
        if entry_id in pool:
            return {"schema": "procure.catalog/v1", "kind": KINDS[kind], "entry": _plain(pool[entry_id]),
                    "file": cat.files.get(f"{KINDS[kind]}:{entry_id}")}
    from procure.sources.suggest import suggest

    everything = [i for k in KINDS for i in _pool(cat, k)]
    raise input_error("catalog", "unknown-id", f"no catalog entry {entry_id!r}{suggest(entry_id, everything)}")
