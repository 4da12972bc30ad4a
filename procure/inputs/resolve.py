"""Turn a checked cluster.yaml into what the pure core needs: catalog objects and priced bids.

This is where price-book lines are picked by (accelerator, term), inline terms are laid over
them, and every price is converted to the report currency with the FX table pinned by
``as_of`` (``money.fx`` for the rate, ``money.convert`` for the price: 1e-6 of a unit). Each
price keeps what was quoted: value, currency, rate and origin. The economics never sees
another currency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from procure.assumptions import held_as
from procure.catalog.load import Catalog, model_arch
from procure.catalog.types import Accelerator, ModelArch, Network, PriceBook, PriceLine, System
from procure.inputs.checks import expand_measured
from procure.inputs.schema import Bid, Cluster
from procure.money import convert, fx

# money terms: (key, label, unit); converted to the report currency
MONEY_TERMS = (
    ("price_per_gpu_hour", "Price per GPU-hour", "GPU-h"),
    ("storage_per_gpu_hour", "Storage per GPU-hour", "GPU-h"),
    ("network_per_gpu_hour", "Network per GPU-hour", "GPU-h"),
    ("setup_fee", "One-time setup", "fee"),
    ("egress_per_tb", "Egress per TB", "TB"),
    ("capex_per_gpu", "Capex per GPU", "GPU"),
    ("capex_per_node", "Capex per node", "node"),
    ("network_capex_per_gpu", "Network capex per GPU", "GPU"),
    ("network_capex", "Fabric capex", "fabric"),
    ("power_per_kwh", "Power per kWh", "kWh"),
    ("colo_per_kw_month", "Colocation per kW-month", "kW-month"),
    ("staff_per_year", "Staff per year", "year"),
    ("support_per_gpu_year", "Support per GPU-year", "GPU-year"),
)
# terms that are not money (fractions, counts, physics): passed on as given
PLAIN_TERMS = ("min_commit_months", "discount_fraction", "prepay_fraction", "support_fraction", "egress_tb",
               "life_years", "residual_fraction", "resale_decline_per_year", "pue", "kw_per_gpu",
               "cost_of_capital")


@dataclass(frozen=True)
class QuotedPrice:
    """One price as quoted, and as converted to the report currency."""

    key: str
    label: str
    unit: str                        # what one unit of the price buys: GPU-h, GPU, kWh, ...
    quoted: Decimal
    currency: str
    fx_rate: Decimal                 # report-currency units per quoted unit (money.fx)
    converted: Decimal               # quoted × rate, to 1e-6 (money.convert)
    origin: str                      # "price book <id>" or "cluster.yaml"


@dataclass(frozen=True)
class PriceChoice:
    kind: str
    book: PriceBook | None
    line: PriceLine | None
    fx_rate: Decimal                 # report-currency units per unit of the quoted currency
    book_currency: str               # the currency the price was quoted in
    missing_reason: str | None
    quoted: tuple[QuotedPrice, ...] = ()
    plain: dict[str, Any] = field(default_factory=dict)   # the PLAIN_TERMS in force
    fx_as_of: date | None = None
    market: dict[str, Any] = field(default_factory=dict)  # purchase: the market price new (Pricing.market_*)

    @property
    def source_key(self) -> str | None:
        if self.book is None:
            return None
        return f"price:{self.book.id}/{self.line.accelerator}/{self.line.term}" if self.line else f"price-book:{self.book.id}"

    def converted(self, key: str) -> Decimal | None:
        return next((q.converted for q in self.quoted if q.key == key), None)

    def quote(self, key: str) -> QuotedPrice | None:
        return next((q for q in self.quoted if q.key == key), None)


@dataclass(frozen=True)
class ResolvedBid:
    bid: Bid
    accelerator: Accelerator
    network: Network
    price: PriceChoice
    measured_paths: tuple[Path, ...]
    system: System | None = None
    lead_time_days: float | None = None   # None: no lead time given anywhere (usable on as_of)
    lead_time_origin: str = ""


def workload_arch(cluster: Cluster, cat: Catalog) -> ModelArch:
    w = cluster.workload
    if w.model is not None:
        return cat.models[w.model]
    assert w.architecture is not None, "the schema requires a model or an architecture"
    return model_arch(w.architecture, None, model_id="inline")


def fx_rate(cat: Catalog, cluster: Cluster, from_ccy: str) -> Decimal:
    """Report-currency units per unit of ``from_ccy`` on as_of, at 12 significant digits."""
    if from_ccy == cluster.currency:
        return Decimal(1)
    table = cat.fx_for(cluster.as_of)
    if table is None:   # checks.check_currency and check_pricing report this before anything resolves
        raise ValueError(f"no FX table on or before {cluster.as_of} to convert {from_ccy}")
    return fx(table.rates[cluster.currency] / table.rates[from_ccy])


def _book_values(book: PriceBook, line: PriceLine | None) -> dict[str, Any]:
    """Every term a book (and its line) gives, by the PricingSpec names."""
    values: dict[str, Any] = {}
    if line is not None:
        values.update(price_per_gpu_hour=line.price_per_gpu_hour, min_commit_months=line.min_commit_months,
                      capex_per_gpu=line.capex_per_gpu, network_capex_per_gpu=line.network_capex_per_gpu,
                      life_years=line.life_years, residual_fraction=line.residual_fraction,
                      support_per_gpu_year=line.support_per_gpu_year, capex_per_node=line.capex_per_node)
    if book.kind == "rental":
        values.update(storage_per_gpu_hour=book.storage_per_gpu_hour,
                      network_per_gpu_hour=book.network_per_gpu_hour, support_fraction=book.support_fraction,
                      pue=book.pue)            # the provider's facility, when its book states it
    else:
        values.update(power_per_kwh=book.power_per_kwh, pue=book.pue, colo_per_kw_month=book.colo_per_kw_month)
    return {k: v for k, v in values.items() if v is not None}


def _inline_currency(bid: Bid, book: PriceBook | None) -> str:
    p = bid.pricing
    if p.usd_per_gpu_hour is not None:
        return "USD"
    if p.currency is not None:
        return p.currency
    return book.currency if book is not None else "USD"


def _price(bid: Bid, cluster: Cluster, cat: Catalog) -> PriceChoice:
    p = bid.pricing
    book = cat.price_books[p.price_book] if p.price_book is not None else None
    line = book.line(bid.accelerator, p.term) if book is not None and p.term is not None else None
    missing = None
    if book is not None and line is None:
        missing = (f"price book {book.id} has no {p.term!r} line for {bid.accelerator} "
                   f"(it prices: {', '.join(sorted({l.accelerator for l in book.lines}))})")
    given = {k: v for k, v in p.model_dump().items() if v is not None}
    if p.usd_per_gpu_hour is not None:
        given["price_per_gpu_hour"] = p.usd_per_gpu_hour
    inline_ccy = _inline_currency(bid, book)
    from_book = _book_values(book, line) if book is not None else {}
    quoted = []
    for key, label, unit in MONEY_TERMS:
        if key in given:
            value, ccy, origin = given[key], inline_ccy, "cluster.yaml"
        elif key in from_book and book is not None:
            value, ccy, origin = from_book[key], book.currency, f"price book {book.id}"
        else:
            continue
        rate = fx_rate(cat, cluster, ccy)
        quoted.append(QuotedPrice(key, label, unit, value, ccy, rate, convert(value, rate), origin))
    plain = {k: given.get(k, from_book.get(k)) for k in PLAIN_TERMS if k in given or k in from_book}
    headline = next((q for q in quoted if q.key in ("price_per_gpu_hour", "capex_per_gpu")), None)
    quoted_ccy = headline.currency if headline else (book.currency if book else inline_ccy)
    table = cat.fx_for(cluster.as_of)
    market = _market_price(bid, cluster, cat, book, line) if p.kind == "purchase" else {}
    return PriceChoice(p.kind, book, line, fx_rate(cat, cluster, quoted_ccy), quoted_ccy, missing,
                       tuple(quoted), plain, table.as_of if table is not None else None, market)


def _market_price(bid: Bid, cluster: Cluster, cat: Catalog, book: PriceBook | None,
                  line: PriceLine | None) -> dict[str, Any]:
    """The market's price of the bid's hardware new, in the report currency: the purchase book
    line the bid names, else the first shipped or given purchase book (by id, in force on as_of)
    that prices the accelerator. Resale is a share of it, not of what the bid paid."""
    if book is None or book.kind != "purchase" or line is None or line.capex_per_gpu is None:
        found = [(b, b.line(bid.accelerator, "purchase")) for _, b in sorted(cat.price_books.items())
                 if b.kind == "purchase" and b.effective <= cluster.as_of]
        book, line = next(((b, l) for b, l in found if l is not None and l.capex_per_gpu is not None), (None, None))
    if book is None or line is None or line.capex_per_gpu is None:
        return {}
    try:
        rate = fx_rate(cat, cluster, book.currency)
    except ValueError:        # no FX table converts that book: resale follows the price paid (a note says so)
        return {}
    return {"market_capex_per_gpu": convert(line.capex_per_gpu, rate),
            "market_network_capex_per_gpu": (None if line.network_capex_per_gpu is None
                                             else convert(line.network_capex_per_gpu, rate)),
            "market_source": f"price book {book.id} ({line.accelerator} {line.term})"}


def _lead_time(bid: Bid, cluster: Cluster, choice: PriceChoice) -> tuple[float | None, str]:
    given = cluster.lead_time_days(bid)
    if given is not None:
        return given, "available_from" if bid.available_from is not None else "lead_time_days"
    if choice.book is not None and choice.line is not None and choice.line.lead_time_days is not None:
        return choice.line.lead_time_days, f"price book {choice.book.id}"
    return None, ""


def resolve_bids(cluster: Cluster, cat: Catalog, base: Path, allowed: list[Path]) -> list[ResolvedBid]:
    resolved = []
    for bid in cluster.bids:
        accel = cat.accelerators[bid.accelerator]
        network_id = bid.network or accel.default_network
        if network_id is None:   # checks.check_hardware reports a bid with no network and no default
            raise ValueError(f"bid {bid.id!r} names no network and {accel.id} has no default")
        network = cat.networks[network_id]
        paths = expand_measured(bid.measured, base, allowed)   # folders as their files, each once
        choice = _price(bid, cluster, cat)
        lead, origin = _lead_time(bid, cluster, choice)
        resolved.append(ResolvedBid(bid, accel, network, choice, paths, cat.system_for(accel.id), lead, origin))
    return resolved


def _power_terms(rb: ResolvedBid) -> dict[str, Any]:
    """IT power per GPU: given inline, else the system spec's, else (in the economics) the TDP."""
    given = rb.price.plain.get("kw_per_gpu")
    if given is not None:
        return {"kw_per_gpu": given, "power_source": "given"}
    if rb.system is not None:
        return {"kw_per_gpu": rb.system.kw_per_gpu, "power_source": f"system:{rb.system.id}"}
    return {"power_source": "tdp" if rb.accelerator.tdp_w is not None else ""}


def price_terms(rb: ResolvedBid, report_currency: str) -> dict[str, Any]:
    """A bid's prices in the report currency, as the economics' Pricing fields.

    Conversion happened once, in ``_price``: the economics never sees another currency."""
    choice = rb.price
    terms: dict[str, Any] = {"kind": choice.kind, "currency": report_currency, "tdp_w": rb.accelerator.tdp_w,
                             "missing_reason": choice.missing_reason, "quoted_currency": choice.book_currency,
                             "fx_rate": choice.fx_rate,
                             "gpus_per_node": rb.system.gpus_per_node if rb.system else rb.accelerator.scale_up_domain}
    for q in choice.quoted:
        terms[q.key] = q.converted
    terms["quoted_amounts"] = tuple((q.key, q.quoted, q.currency, q.fx_rate) for q in choice.quoted)
    terms.setdefault("price_per_gpu_hour", None)
    for key, value in choice.plain.items():
        if key != "kw_per_gpu":
            terms[key] = value
    terms.update(_power_terms(rb))
    terms.update(choice.market)
    if choice.kind == "purchase" and choice.book is not None and choice.line is not None \
            and "capex_per_gpu" not in terms:
        terms["missing_reason"] = (f"price book {choice.book.id} prices {choice.line.accelerator} "
                                   f"{choice.line.term} without a capex per GPU")
    return terms


def assumption_overrides(cluster: Cluster, cat: Catalog, known: set[str]) -> dict[str, Any]:
    """The assumptions cluster.yaml sets, among ``known`` keys, in the report currency."""
    given = {held_as(k): v for k, v in cluster.assumptions.model_dump().items()
             if v is not None and held_as(k) in known}
    if "pue" in given:
        given["pue"] = Decimal(repr(given["pue"]))
    if "power_price_per_kwh" in given:   # given in USD; the economics holds it in the report currency
        given["power_price_per_kwh"] = convert(given["power_price_per_kwh"], fx_rate(cat, cluster, "USD"))
    return given
