"""Turn a checked cluster.yaml into what the pure core needs: catalog objects and priced bids.

This is where price-book lines are picked by (accelerator, term) and converted to the report
currency with the FX table pinned by ``as_of``; the economics never sees another currency.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from procure.catalog.load import Catalog, model_arch
from procure.catalog.types import Accelerator, ModelArch, Network, PriceBook, PriceLine
from procure.inputs.checks import resolve_measured
from procure.inputs.schema import Bid, Cluster


@dataclass(frozen=True)
class PriceChoice:
    kind: str
    book: PriceBook | None
    line: PriceLine | None
    fx_rate: Decimal                 # report-currency units per book-currency unit
    book_currency: str
    inline_price: Decimal | None     # in the report currency
    missing_reason: str | None

    @property
    def source_key(self) -> str | None:
        if self.book is None:
            return None
        return f"price:{self.book.id}/{self.line.accelerator}/{self.line.term}" if self.line else f"price-book:{self.book.id}"


@dataclass(frozen=True)
class ResolvedBid:
    bid: Bid
    accelerator: Accelerator
    network: Network
    price: PriceChoice
    measured_paths: tuple[Path, ...]


def workload_arch(cluster: Cluster, cat: Catalog) -> ModelArch:
    w = cluster.workload
    if w.model is not None:
        return cat.models[w.model]
    return model_arch(w.architecture, None, model_id="inline")


def fx_rate(cat: Catalog, cluster: Cluster, from_ccy: str) -> Decimal:
    if from_ccy == cluster.currency:
        return Decimal(1)
    table = cat.fx_for(cluster.as_of)
    return table.rates[cluster.currency] / table.rates[from_ccy]


def _price(bid: Bid, cluster: Cluster, cat: Catalog) -> PriceChoice:
    p = bid.pricing
    if p.price_book is None:
        ccy = p.currency or "USD"
        raw = p.usd_per_gpu_hour if p.usd_per_gpu_hour is not None else p.price_per_gpu_hour
        if p.usd_per_gpu_hour is not None:
            ccy = "USD"
        rate = fx_rate(cat, cluster, ccy)
        return PriceChoice(p.kind, None, None, rate, ccy, raw * rate, None)
    book = cat.price_books[p.price_book]
    line = book.line(bid.accelerator, p.term)
    missing = None
    if line is None:
        missing = (f"price book {book.id} has no {p.term!r} line for {bid.accelerator} "
                   f"(it prices: {', '.join(sorted({l.accelerator for l in book.lines}))})")
    return PriceChoice(p.kind, book, line, fx_rate(cat, cluster, book.currency), book.currency, None, missing)


def resolve_bids(cluster: Cluster, cat: Catalog, base: Path, allowed: list[Path]) -> list[ResolvedBid]:
    resolved = []
    for bid in cluster.bids:
        accel = cat.accelerators[bid.accelerator]
        network = cat.networks[bid.network or accel.default_network]
        paths = tuple(resolve_measured(text, base, allowed) for text in bid.measured)
        resolved.append(ResolvedBid(bid, accel, network, _price(bid, cluster, cat), paths))
    return resolved


def price_terms(rb: ResolvedBid, report_currency: str) -> dict:
    """A bid's prices converted to the report currency, as the economics' Pricing fields.

    Conversion happens here and only here: the economics never sees another currency."""
    choice, tdp = rb.price, rb.accelerator.tdp_w
    if choice.book is None:
        return {"kind": choice.kind, "currency": report_currency, "price_per_gpu_hour": choice.inline_price,
                "tdp_w": tdp}
    book, line, fx = choice.book, choice.line, choice.fx_rate
    if line is None:
        return {"kind": choice.kind, "currency": report_currency, "price_per_gpu_hour": None, "tdp_w": tdp,
                "missing_reason": choice.missing_reason}

    def conv(value: Decimal | None) -> Decimal | None:
        return None if value is None else value * fx

    if choice.kind == "purchase":
        missing = None if line.capex_per_gpu is not None else (
            f"price book {book.id} prices {line.accelerator} {line.term} without a capex per GPU")
        return {"kind": "purchase", "currency": report_currency, "price_per_gpu_hour": None,
                "capex_per_gpu": conv(line.capex_per_gpu), "network_capex_per_gpu": conv(line.network_capex_per_gpu),
                "life_years": line.life_years, "residual_fraction": line.residual_fraction,
                "support_per_gpu_year": conv(line.support_per_gpu_year),
                "power_per_kwh": conv(book.power_usd_per_kwh), "pue": book.pue,
                "colo_per_kw_month": conv(book.colo_per_kw_month), "tdp_w": tdp, "missing_reason": missing}
    return {"kind": "rental", "currency": report_currency, "price_per_gpu_hour": conv(line.price_per_gpu_hour),
            "min_commit_months": line.min_commit_months, "storage_per_gpu_hour": conv(book.storage_per_gpu_hour),
            "network_per_gpu_hour": conv(book.network_per_gpu_hour), "support_fraction": book.support_fraction,
            "tdp_w": tdp, "missing_reason": choice.missing_reason}


def assumption_overrides(cluster: Cluster, cat: Catalog, known: set[str]) -> dict:
    """The assumptions cluster.yaml sets, among ``known`` keys, in the report currency."""
    given = {k: v for k, v in cluster.assumptions.model_dump().items() if v is not None and k in known}
    if "pue" in given:
        given["pue"] = Decimal(repr(given["pue"]))
    if "power_usd_per_kwh" in given:   # given in USD; the economics works in the report currency
        given["power_usd_per_kwh"] *= fx_rate(cat, cluster, "USD")
    return given
