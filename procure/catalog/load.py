"""Load the hardware catalog and price books (I/O edge) into the typed dataclasses of ``types``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from procure.catalog.types import (MLA, Accelerator, AttentionWindow, BatchScalingLaw, FxTable, ModelArch, MoE,
                                   Network, PriceBook, PriceLine, Sourced, System)
from procure.errors import Diagnostic, InputError
from procure.sources.suggest import suggest
from procure.resources import catalog_dir, price_books_dir

if TYPE_CHECKING:   # parsing needs pydantic and YAML; a catalog read from the cache needs neither
    from procure.catalog.arch_entries import ArchitectureSpec
    from procure.catalog.entries import (AcceleratorEntry, ModelEntry, NetworkEntry, PriceBookEntry, SourcedEntry,
                                         SystemEntry)
    from procure.sources.yamlpos import YamlDocument

# The catalog's file kinds: each is a pydantic model with an ``id`` equal to its file name
EntryT = TypeVar("EntryT", "AcceleratorEntry", "NetworkEntry", "ModelEntry", "PriceBookEntry", "SystemEntry")
ItemT = TypeVar("ItemT")


def _sourced(entry: SourcedEntry) -> Sourced:
    """An entry counts as verified only when all of it is: a source it cites as `verified: false`
    or a field it lists as unverified makes the whole entry unverified in every report."""
    items = tuple(str(s) for s in ([entry.source] if isinstance(entry.source, str) else entry.source))
    partly = bool(entry.unverified_fields) or any(UNVERIFIED_MARK in s.lower().replace(" ", "") for s in items)
    return Sourced(items, str(entry.as_of), entry.verified and not partly)


UNVERIFIED_MARK = "verified:false"


def _accelerator(e: AcceleratorEntry) -> Accelerator:
    return Accelerator(
        id=e.id, vendor=e.vendor, name=e.name, architecture=e.architecture, release_year=e.release_year,
        peak_tflops={str(k): v for k, v in e.peak_tflops.items()}, hbm_gb=e.hbm_gb, hbm_bw_tbs=e.hbm_bw_tbs,
        scale_up_bw_gbs=e.scale_up.bw_gbs_per_direction, scale_up_domain=e.scale_up.domain_size,
        scale_up_tech=e.scale_up.tech, tdp_w=e.tdp_w, matmul_ceiling_tflops=dict(e.matmul_ceiling_tflops),
        default_network=e.default_network, sourced=_sourced(e), notes=e.notes)


def _network(e: NetworkEntry) -> Network:
    return Network(id=e.id, name=e.name, kind=e.kind, scale_out_gbps_per_gpu=e.scale_out_gbps_per_gpu,
                   latency_us=e.latency_us, rail_optimised=e.rail_optimised, sourced=_sourced(e), notes=e.notes)


def model_arch(e: ModelEntry | ArchitectureSpec, sourced: Sourced | None = None, model_id: str | None = None) -> ModelArch:
    """A ModelArch from a catalog ModelEntry or an inline ArchitectureSpec."""
    moe = mla = window = None
    if e.moe is not None:
        m = e.moe
        moe = MoE(m.experts, m.top_k, m.expert_ffn_hidden, m.shared_experts, m.dense_layers,
                  m.capacity_factor, m.layer_freq, m.shared_expert_ffn_hidden, m.groups, m.group_topk)
    if e.mla is not None:
        a = e.mla
        mla = MLA(a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim, a.q_lora_rank)
    if e.attention_window is not None:
        w = e.attention_window
        window = AttentionWindow(w.size, w.global_every, w.kind)
    kv_heads = e.kv_heads or e.heads
    ffn = e.ffn_hidden or (int(8 * e.hidden / 3 / 256 + 0.999) * 256 if e.gated_mlp else 4 * e.hidden)
    from procure.catalog.arch_entries import ArchitectureSpec as _Inline   # loaded already: ``e`` may be one

    entry = None if isinstance(e, _Inline) else e   # an inline ArchitectureSpec has no id, length or notes
    return ModelArch(id=model_id or (entry.id if entry is not None else "custom"), name=e.name, layers=e.layers, hidden=e.hidden,
                     heads=e.heads, kv_heads=kv_heads, ffn_hidden=ffn, vocab=e.vocab, gated_mlp=e.gated_mlp,
                     tied_embeddings=e.tied_embeddings, moe=moe, max_seq_len=entry.max_seq_len if entry is not None else None,
                     sourced=sourced, notes=entry.notes if entry is not None else "", head_dim=e.head_dim, mla=mla,
                     attention_window=window, mtp_layers=e.mtp_layers)


def _price_book(e: PriceBookEntry) -> PriceBook:
    lines = tuple(PriceLine(
        accelerator=l.accelerator, term=l.term, price_per_gpu_hour=l.price_per_gpu_hour,
        min_commit_months=l.min_commit_months, sku=l.sku, region=l.region, capex_per_gpu=l.capex_per_gpu,
        network_capex_per_gpu=l.network_capex_per_gpu, life_years=l.life_years,
        residual_fraction=l.residual_fraction, support_per_gpu_year=l.support_per_gpu_year,
        sourced=_sourced(l), notes=l.notes, capex_per_node=l.capex_per_node,
        lead_time_days=l.lead_time_days) for l in e.lines)
    facility = e.facility
    return PriceBook(
        id=e.id, provider=e.provider, kind=e.kind, currency=e.currency, effective=e.effective, lines=lines,
        storage_per_gpu_hour=e.adders.storage_per_gpu_hour, network_per_gpu_hour=e.adders.network_per_gpu_hour,
        support_fraction=e.adders.support_fraction,
        power_per_kwh=facility.price_per_kwh if facility else None,
        pue=facility.pue if facility else None, colo_per_kw_month=facility.colo_per_kw_month if facility else None,
        sourced=_sourced(e))


def _system(e: SystemEntry) -> System:
    from procure.money import D

    return System(id=e.id, name=e.name, accelerators=tuple(e.accelerators), gpus_per_node=e.gpus_per_node,
                  node_power_kw=D(e.node_power_kw), fabric_w_per_gpu=D(e.fabric_w_per_gpu), sourced=_sourced(e),
                  notes=e.notes)


@dataclass(frozen=True)
class Catalog:
    accelerators: dict[str, Accelerator]
    networks: dict[str, Network]
    models: dict[str, ModelArch]
    price_books: dict[str, PriceBook]
    fx_tables: tuple[FxTable, ...]
    files: dict[str, str] = field(default_factory=dict)   # "accelerator:<id>" -> file path
    systems: dict[str, System] = field(default_factory=dict)
    user_price_books: frozenset[str] = frozenset()       # ids of the books the user brought
    batch_scaling: dict[str, BatchScalingLaw] = field(default_factory=dict)   # family -> law

    def system_for(self, accelerator_id: str) -> System | None:
        """The first system (by id) that ships this accelerator, or None."""
        return next((s for _, s in sorted(self.systems.items()) if accelerator_id in s.accelerators), None)

    def with_price_books(self, books: dict[str, PriceBook], files: dict[str, str]) -> "Catalog":
        """This catalog plus the user's price books (ids already checked to be new)."""
        from dataclasses import replace

        return replace(self, price_books={**self.price_books, **books}, files={**self.files, **files},
                       user_price_books=self.user_price_books | frozenset(books))

    def fx_for(self, as_of: date) -> FxTable | None:
        """The newest FX table dated on or before ``as_of`` (prices are pinned by as_of)."""
        usable = [t for t in self.fx_tables if t.as_of <= as_of]
        return max(usable, key=lambda t: t.as_of) if usable else None

    def did_you_mean(self, kind: str, word: str) -> str:
        pools: dict[str, Mapping[str, object]] = {
            "accelerator": self.accelerators, "network": self.networks, "model": self.models,
            "price book": self.price_books}
        return suggest(word, sorted(pools[kind]))


def _load_folder(folder: Path, entry_cls: type[EntryT], convert: Callable[[EntryT], ItemT], kind: str,
                 files: dict[str, str], diagnostics: list[Diagnostic], skip: tuple[str, ...] = ()) -> dict[str, ItemT]:
    from procure.catalog.entries import PriceBookEntry
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    result: dict[str, ItemT] = {}
    if not folder.is_dir():
        return result
    for path in sorted(folder.glob("*.yaml")):
        if path.name in skip:
            continue
        try:
            doc = read_yaml(path)
            entry = validate_document(doc, entry_cls)
        except InputError as exc:
            diagnostics.extend(exc.diagnostics)
            continue
        if entry.id != path.stem:
            diagnostics.append(Diagnostic(str(path), *doc.position(("id",)), "id-mismatch",
                                          f"id {entry.id!r} must equal the file name {path.stem!r}"))
            continue
        if isinstance(entry, PriceBookEntry):
            duplicates = duplicate_price_lines(entry, doc, path)
            if duplicates:
                diagnostics.extend(duplicates)
                continue
        result[entry.id] = convert(entry)
        files[f"{kind}:{entry.id}"] = str(path)
    return result


def _fx_tables(path: Path, diagnostics: list[Diagnostic]) -> tuple[FxTable, ...]:
    from procure.catalog.entries import FxEntry
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    if not path.is_file():
        return ()
    try:
        entry = validate_document(read_yaml(path), FxEntry)
    except InputError as exc:
        diagnostics.extend(exc.diagnostics)
        return ()
    return tuple(FxTable(base=entry.base, as_of=t.as_of, rates=dict(t.rates),
                         sourced=Sourced(tuple([t.source] if isinstance(t.source, str) else t.source),
                                         str(t.as_of), t.verified)) for t in entry.tables)


def _cross_check(cat: Catalog, diagnostics: list[Diagnostic]) -> None:
    for acc in cat.accelerators.values():
        if acc.default_network and acc.default_network not in cat.networks:
            diagnostics.append(Diagnostic(cat.files[f"accelerator:{acc.id}"], 1, 1, "unknown-network",
                                          f"default_network {acc.default_network!r} is not in the catalog"
                                          f"{cat.did_you_mean('network', acc.default_network)}"))
    for system in cat.systems.values():
        for accel in system.accelerators:
            if accel not in cat.accelerators:
                diagnostics.append(Diagnostic(cat.files[f"system:{system.id}"], 1, 1, "unknown-accelerator",
                                              f"system {system.id!r} names {accel!r}, which is not in the catalog"
                                              f"{cat.did_you_mean('accelerator', accel)}"))
    for book in cat.price_books.values():
        for line in book.lines:
            if line.accelerator not in cat.accelerators:
                diagnostics.append(Diagnostic(cat.files[f"price book:{book.id}"], 1, 1, "unknown-accelerator",
                                              f"line for {line.accelerator!r} names no catalog accelerator"
                                              f"{cat.did_you_mean('accelerator', line.accelerator)}"))


def load_catalog(catalog_root: Path | None = None, books_root: Path | None = None) -> Catalog:
    """Read every catalog and price-book file; raise InputError listing every problem at once."""
    from procure.catalog.entries import AcceleratorEntry, ModelEntry, NetworkEntry, PriceBookEntry, SystemEntry

    catalog_root = Path(catalog_root or catalog_dir())
    books_root = Path(books_root or price_books_dir())
    diagnostics: list[Diagnostic] = []
    files: dict[str, str] = {}
    accelerators = _load_folder(catalog_root / "accelerators", AcceleratorEntry, _accelerator, "accelerator",
                                files, diagnostics)
    networks = _load_folder(catalog_root / "networks", NetworkEntry, _network, "network", files, diagnostics)
    models = _load_folder(catalog_root / "models", ModelEntry, lambda e: model_arch(e, _sourced(e)), "model",
                          files, diagnostics)
    books = _load_folder(books_root, PriceBookEntry, _price_book, "price book", files, diagnostics,
                         skip=("fx.yaml",))
    systems = _load_folder(catalog_root / "systems", SystemEntry, _system, "system", files, diagnostics)
    from procure.catalog.batch_scaling import load_batch_scaling   # pydantic: only when parsing

    batch_scaling = load_batch_scaling(catalog_root / "batch_scaling", files, diagnostics)
    cat = Catalog(accelerators, networks, models, books, _fx_tables(books_root / "fx.yaml", diagnostics), files,
                  systems, batch_scaling=batch_scaling)
    _cross_check(cat, diagnostics)
    if diagnostics:
        raise InputError(diagnostics)
    return cat


@lru_cache(maxsize=4)
def default_catalog() -> Catalog:
    """The shipped catalog, parsed once per change of its files (see ``procure.catalog.cache``)."""
    from procure.catalog.cache import cached, default_roots

    return cached("parsed", default_roots(), load_catalog)


def load_user_price_books(folder: Path, cat: Catalog) -> tuple[dict[str, PriceBook], dict[str, str], list[Diagnostic]]:
    """The price books in a user's folder, read with the shipped books' schema and checks.

    Returns the books, their files and every problem at its file:line:col, all at once: a bad
    file, an id that is not its file name, an id the shipped books already use, a line for an
    accelerator the catalog lacks."""
    from procure.catalog.entries import PriceBookEntry
    from procure.sources.validate import validate_document
    from procure.sources.yamlpos import read_yaml

    folder = Path(folder)
    if not folder.is_dir():
        return {}, {}, [Diagnostic(str(folder), 0, 0, "not-found", f"price-book folder {folder} does not exist")]
    books: dict[str, PriceBook] = {}
    files: dict[str, str] = {}
    diagnostics: list[Diagnostic] = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            doc = read_yaml(path)
            entry = validate_document(doc, PriceBookEntry)
        except InputError as exc:
            diagnostics.extend(exc.diagnostics)
            continue
        problems = _user_book_problems(entry, doc, path, cat)
        diagnostics.extend(problems)
        if not problems:
            books[entry.id] = _price_book(entry)
            files[f"price book:{entry.id}"] = str(path)
    return books, files, diagnostics


def _user_book_problems(entry: PriceBookEntry, doc: YamlDocument, path: Path, cat: Catalog) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    if entry.id != path.stem:
        out.append(Diagnostic(str(path), *doc.position(("id",)), "id-mismatch",
                              f"id {entry.id!r} must equal the file name {path.stem!r}"))
    elif entry.id in cat.price_books:
        out.append(Diagnostic(str(path), *doc.position(("id",)), "duplicate-price-book",
                              f"price book {entry.id!r} is already shipped with procure; give yours another id "
                              "(and file name)"))
    out.extend(duplicate_price_lines(entry, doc, path))
    for i, line in enumerate(entry.lines):
        if line.accelerator not in cat.accelerators:
            out.append(Diagnostic(str(path), *doc.position(("lines", i, "accelerator")), "unknown-accelerator",
                                  f"line for {line.accelerator!r} names no catalog accelerator"
                                  f"{cat.did_you_mean('accelerator', line.accelerator)}"))
    return out


def duplicate_price_lines(entry: PriceBookEntry, doc: YamlDocument, path: Path) -> list[Diagnostic]:
    """A second line for the same (accelerator, term): an error at it that names the first line's
    position too (a bid would otherwise silently get the first line's price)."""
    first: dict[tuple[str, str], int] = {}
    out: list[Diagnostic] = []
    for i, line in enumerate(entry.lines):
        key = (line.accelerator, line.term)
        if key not in first:
            first[key] = i
            continue
        line0, col0 = doc.position(("lines", first[key]))
        out.append(Diagnostic(str(path), *doc.position(("lines", i)), "duplicate-price-line",
                              f"a second line for {line.accelerator!r} on term {line.term!r}; the first is at "
                              f"{path}:{line0}:{col0}: keep one of them"))
    return out
