"""Plain-data views of the catalog for `procure catalog list|show` (JSON-ready dicts).

For the shipped catalog they are built once per change of its files and kept in the catalog cache
as plain data, so browsing reads neither YAML nor the catalog's classes (see ``procure.catalog.cache``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, TypedDict, TypeVar, final

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from procure.catalog.load import Catalog
    from procure.catalog.types import Accelerator, ModelArch, Network, PriceBook

KINDS = {"accelerators": "accelerator", "networks": "network", "models": "model", "price-books": "price book"}

Row = dict[str, object]          # one line of `catalog list`: the kind's summary columns
Listing = dict[str, list[Row]]   # kind -> rows, by id
EntryT = TypeVar("EntryT")
T = TypeVar("T")


@final   # final, so that `"entry" in result` tells it from an EntryList
class Shown(TypedDict):
    """One entry of `catalog show`."""

    schema: str
    kind: str
    entry: dict[str, Any]   # the entry's fields as plain data (nested mappings and lists)
    file: str | None


@final
class EntryList(TypedDict):
    schema: str
    entries: Listing


def _accelerator_row(entry: Accelerator) -> Row:
    return {"id": entry.id, "name": entry.name, "vendor": entry.vendor, "bf16_tflops": entry.peak_tflops.get("bf16"),
            "hbm_gb": entry.hbm_gb, "hbm_bw_tbs": entry.hbm_bw_tbs, "tdp_w": entry.tdp_w}


def _network_row(entry: Network) -> Row:
    return {"id": entry.id, "name": entry.name, "kind": entry.kind,
            "scale_out_gbps_per_gpu": entry.scale_out_gbps_per_gpu, "latency_us": entry.latency_us}


def _model_row(entry: ModelArch) -> Row:
    return {"id": entry.id, "name": entry.name, "layers": entry.layers, "hidden": entry.hidden,
            "moe": entry.moe is not None}


def _price_book_row(entry: PriceBook) -> Row:
    return {"id": entry.id, "provider": entry.provider, "kind": entry.kind, "currency": entry.currency,
            "effective": entry.effective.isoformat(), "lines": len(entry.lines)}


def _rows(pool: Mapping[str, EntryT], row: Callable[[EntryT], Row]) -> list[Row]:
    return [row(e) for _, e in sorted(pool.items())]


def _pools(cat: Catalog) -> dict[str, Mapping[str, DataclassInstance]]:
    return {"accelerators": cat.accelerators, "networks": cat.networks, "models": cat.models,
            "price-books": cat.price_books}


def _plain(value: object) -> object:
    from dataclasses import asdict, is_dataclass

    if is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _plain_entry(entry: DataclassInstance) -> dict[str, Any]:
    """A catalog entry as a mapping of plain data."""
    from dataclasses import asdict

    return {k: _plain(v) for k, v in asdict(entry).items()}


def _listing(cat: Catalog) -> Listing:
    """Every listing row of ``cat``, as plain data."""
    return {"accelerators": _rows(cat.accelerators, _accelerator_row),   # in the order of KINDS
            "networks": _rows(cat.networks, _network_row),
            "models": _rows(cat.models, _model_row),
            "price-books": _rows(cat.price_books, _price_book_row)}


def _shown(cat: Catalog) -> dict[str, Shown]:
    """Every shown entry of ``cat``, by id, as plain data."""
    shown: dict[str, Shown] = {}
    pools = _pools(cat)
    for kind in KINDS:
        for entry_id, entry in pools[kind].items():
            shown.setdefault(entry_id, {"schema": "procure.catalog/v1", "kind": KINDS[kind], "entry": _plain_entry(entry),
                                        "file": cat.files.get(f"{KINDS[kind]}:{entry_id}")})
    return shown


def _default_views(part: str, build: Callable[[Catalog], T]) -> T:
    """``part`` ("list" or "show") of the shipped catalog's views, each part cached on its own, so
    `catalog list` reads back the short listing only."""
    from procure.catalog.cache import cached, default_roots

    def build_default() -> T:
        from procure.catalog.load import default_catalog

        return build(default_catalog())

    return cached(f"views-{part}", default_roots(), build_default)


def list_entries(kind: str = "all", cat: Catalog | None = None) -> EntryList:
    listing = _listing(cat) if cat is not None else _default_views("list", _listing)
    kinds = list(KINDS) if kind == "all" else [kind]
    return {"schema": "procure.catalog/v1", "entries": {k: listing[k] for k in kinds}}


def show_entry(entry_id: str, cat: Catalog | None = None) -> Shown:
    shown = _shown(cat) if cat is not None else _default_views("show", _shown)
    if entry_id in shown:
        return shown[entry_id]
    from procure.errors import input_error
    from procure.sources.suggest import suggest

    raise input_error("catalog", "unknown-id", f"no catalog entry {entry_id!r}{suggest(entry_id, list(shown))}")
