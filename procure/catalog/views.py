"""Plain-data views of the catalog for `procure catalog list|show` (JSON-ready dicts).

For the shipped catalog they are built once per change of its files and kept in the catalog cache
as plain data, so browsing reads neither YAML nor the catalog's classes (see ``procure.catalog.cache``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from procure.catalog.load import Catalog

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


def _plain(value):
    from dataclasses import asdict, is_dataclass

    if is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def build_views(cat: Catalog) -> dict[str, Any]:
    """Every listing row and every shown entry of ``cat``, as plain data."""
    listing = {k: [_summary(k, e) for _, e in sorted(_pool(cat, k).items())] for k in KINDS}
    shown = {}
    for kind in KINDS:
        for entry_id, entry in _pool(cat, kind).items():
            shown.setdefault(entry_id, {"schema": "procure.catalog/v1", "kind": KINDS[kind], "entry": _plain(entry),
                                        "file": cat.files.get(f"{KINDS[kind]}:{entry_id}")})
    return {"list": listing, "show": shown}


def _views(cat: Catalog | None, part: str) -> dict[str, Any]:
    """``part`` ("list" or "show") of the views; for the shipped catalog each part is cached on its
    own, so `catalog list` reads back the short listing only."""
    if cat is not None:
        return build_views(cat)[part]
    from procure.catalog.cache import cached, default_roots

    def build() -> dict[str, Any]:
        from procure.catalog.load import default_catalog

        return build_views(default_catalog())[part]

    return cached(f"views-{part}", default_roots(), build)


def list_entries(kind: str = "all", cat: Catalog | None = None) -> dict:
    listing = _views(cat, "list")
    kinds = list(KINDS) if kind == "all" else [kind]
    return {"schema": "procure.catalog/v1", "entries": {k: listing[k] for k in kinds}}


def show_entry(entry_id: str, cat: Catalog | None = None) -> dict:
    shown = _views(cat, "show")
    if entry_id in shown:
        return shown[entry_id]
    from procure.errors import input_error
    from procure.sources.suggest import suggest

    raise input_error("catalog", "unknown-id", f"no catalog entry {entry_id!r}{suggest(entry_id, list(shown))}")
