"""Which bids get a detail page, and how the summary stays readable when there are many bids.

A report of up to ``LARGE_REPORT_BIDS`` bids prints a detail page for every bid, as it always
has. Past that (an RFQ answered by hundreds of offers) the committee reads the ranking, not a
thousand pages: detail pages go to the top ``DEFAULT_TOP`` bids in rank order (and the
recommended bid, wherever it ranks) unless ``--bid-pages`` asks for ``all``, ``none`` or
``top:N``; the summary says which. Charts draw at most ``CHART_MAX_BARS`` bars (a page), the flag
list names at most ``FLAG_INSTANCES_SHOWN`` bids per flag and the both-bases table the bids with a
detail page, each counting the rest; the ranking lists every bid and runs on over as many pages as
it needs (its header repeated on each).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from procure.document.bid import BidResult
    from procure.report.formatting import Formatter

Msg = Callable[..., str]             # Messages: key and values -> the report language's text
Integer = Callable[[object], str]    # Formatter.integer

LARGE_REPORT_BIDS = 50      # more bids than this: detail pages for the top bids only, by default
DEFAULT_TOP = 10            # detail pages of a large report unless --bid-pages says otherwise
CHART_MAX_BARS = 30         # bars per comparison chart: 30 rows of 22 px fill one A4 page
FLAG_INSTANCES_SHOWN = 10   # bids named under each flag in a large report's "Flags explained"
ORDER_IDS_SHOWN = 20        # ids printed in a large report's "Order on the ... basis" lines
MAX_TOP = 1000              # the schema's most bids
_TOP = re.compile(r"^top:([1-9][0-9]{0,3})$")


@dataclass(frozen=True)
class BidPages:
    """``mode``: all | none | top (the first ``top`` bids in rank order)."""

    mode: str
    top: int = 0


def parse_bid_pages(text: str | None) -> BidPages | None:
    """``all``, ``none`` or ``top:N`` (1 <= N <= 1000); None (not given) means the default for the
    report's size. Raises ValueError with the accepted forms."""
    if text is None or text == "":
        return None
    value = text.strip().lower()
    if value in ("all", "none"):
        return BidPages(value)
    match = _TOP.match(value)
    if match and int(match.group(1)) <= MAX_TOP:
        return BidPages("top", int(match.group(1)))
    raise ValueError(f"--bid-pages {text!r}: use all, none or top:N (N from 1 to {MAX_TOP})")


def resolve(choice: BidPages | None, bids: int) -> BidPages:
    """The choice in force: as given, else every page for up to LARGE_REPORT_BIDS bids, else the top."""
    if choice is not None:
        return choice
    return BidPages("top", DEFAULT_TOP) if is_large(bids) else BidPages("all")


def is_large(bids: int) -> bool:
    return bids > LARGE_REPORT_BIDS


def selected(ranked: list[BidResult], pages: BidPages, recommended: str | None) -> list[BidResult]:
    """The bids that get a detail page, in rank order: all, none, or the top N plus the
    recommended bid when it ranks below them."""
    if pages.mode == "all":
        return list(ranked)
    if pages.mode == "none":
        return []
    chosen = ranked[:pages.top]
    extra = [b for b in ranked[pages.top:] if recommended is not None and b.id == recommended]
    return chosen + extra[:1]


def note(msg: Msg, integer: Integer, pages: BidPages, shown: list[BidResult], bids: int,
         recommended: str | None) -> str:
    """The summary's sentence on which bids have a detail page ('' when every bid has one)."""
    if pages.mode == "all":
        return ""
    if pages.mode == "none":
        return msg("bid_pages.none", bids=integer(bids))
    top = min(pages.top, bids)
    with_recommended = len(shown) > top and recommended is not None
    key = "bid_pages.top_and_recommended" if with_recommended else "bid_pages.top"
    return msg(key, top=integer(top), bids=integer(bids), bid=recommended or "")


def shorten_flags(flags_view: list[dict[str, Any]], msg: Msg, integer: Integer) -> list[dict[str, Any]]:
    """Each flag's bids cut to the first FLAG_INSTANCES_SHOWN (rank order), the rest counted
    (``flags_view``: the view model's flag groups)."""
    out = []
    for group_view in flags_view:
        instances = group_view["instances"]
        more = len(instances) - FLAG_INSTANCES_SHOWN
        out.append(dict(group_view, instances=instances[:FLAG_INSTANCES_SHOWN],
                        more=msg("bid_pages.flag_more", count=integer(more), bids=integer(len(instances)))
                        if more > 0 else ""))
    return out


def shorten_orders(orders: list[tuple[str, str]], msg: Msg, integer: Integer) -> list[tuple[str, str]]:
    """Each basis's order (bid ids, which hold no ", ") cut to its first ORDER_IDS_SHOWN ids, the
    rest counted."""
    out = []
    for label, text in orders:
        ids = text.split(", ")
        if len(ids) > ORDER_IDS_SHOWN:
            text = ", ".join(ids[:ORDER_IDS_SHOWN]) + ", " + msg(
                "bid_pages.order_more", count=integer(len(ids) - ORDER_IDS_SHOWN))
        out.append((label, text))
    return out


def table_bids(ranked: list[BidResult], shown: list[BidResult]) -> list[BidResult]:
    """The bids of the both-bases table: every bid in a report of up to LARGE_REPORT_BIDS; in a
    larger one the bids with a detail page (the top DEFAULT_TOP when none has one). The ranking
    lists every bid, and the orders under the table rank every bid on each basis."""
    if not is_large(len(ranked)):
        return ranked
    return shown or ranked[:DEFAULT_TOP]


def bases_note(msg: Msg, integer: Integer, listed: int, bids: int) -> str:
    return "" if listed >= bids else msg("bid_pages.bases", listed=integer(listed), bids=integer(bids))


def chart_note(msg: Msg, integer: Integer, bids: int) -> str:
    """The caption's count when a chart draws only the first CHART_MAX_BARS bids."""
    if bids <= CHART_MAX_BARS:
        return ""
    return msg("bid_pages.chart_top", top=integer(CHART_MAX_BARS), bids=integer(bids))


def large_summary(view: dict[str, Any], ranked: list[BidResult], f: Formatter) -> dict[str, Any]:
    """The view of a large report: the ranking as one line per bid (accelerator and GPUs apart, so
    a cut name never hides the count; flags as words), the flag list and the basis orders
    shortened. ``ranked``: the document's bids in the ranking's order."""
    if not is_large(len(ranked)):
        return view
    msg, integer = f.msg, f.integer
    bases = dict(view["bases"], orders=shorten_orders(view["bases"]["orders"], msg, integer),
                 note=bases_note(msg, integer, len(view["bases"]["rows"]), len(ranked)))
    ranking = []
    for row, bid in zip(view["ranking"], ranked):
        accel = bid.accelerator
        ranking.append(dict(row, flags_text=", ".join(str(flag_view["code"]) for flag_view in row["flags"]),
                            accel=f.text(accel.name or accel.id), gpus=integer(bid.gpus)))
    return dict(view, flags=shorten_flags(view["flags"], msg, integer), bases=bases, ranking=ranking, large=True)
