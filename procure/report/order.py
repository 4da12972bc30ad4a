"""The order every report lists bids in: the ranking, then any bid the ranking does not name."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from procure.document import QuoteDocument
    from procure.document.bid import BidResult


def ranked_bids(doc: QuoteDocument) -> list[BidResult]:
    """Bids in ranking order; bids the ranking forgot follow in input order."""
    by_id = {b.id: b for b in doc.bids}
    ranked = set(doc.ranking)
    return [by_id[i] for i in doc.ranking if i in by_id] + [b for b in doc.bids if b.id not in ranked]
