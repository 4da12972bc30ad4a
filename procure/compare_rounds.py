"""`procure diff`: what moved between two rounds of bids (two procure.quote/v2 documents)."""

from __future__ import annotations

from decimal import Decimal

FIELDS = ("step_time_s", "time_to_train_days", "total_cost", "cost_per_million_tokens", "mfu", "gpus")


def _num(value):
    return None if value is None else (value if isinstance(value, Decimal) else Decimal(str(value)))


def _change(old, new) -> dict:
    o, n = _num(old), _num(new)
    delta = None if o is None or n is None else n - o
    rel = None if delta is None or o == 0 else float(delta / o)
    return {"old": old, "new": new, "delta": delta, "relative": rel}


def diff_documents(old: dict, new: dict) -> dict:
    old_bids = {b["id"]: b for b in old.get("bids", [])}
    new_bids = {b["id"]: b for b in new.get("bids", [])}
    changed = []
    for bid_id in [b for b in new_bids if b in old_bids]:
        a, b = old_bids[bid_id], new_bids[bid_id]
        moves = {f: _change(a.get(f), b.get(f)) for f in FIELDS if a.get(f) != b.get(f)}
        flags_a = sorted(f["code"] for f in a.get("flags", []))
        flags_b = sorted(f["code"] for f in b.get("flags", []))
        if moves or flags_a != flags_b:
            changed.append({"id": bid_id, "changes": moves,
                            "flags_added": sorted(set(flags_b) - set(flags_a)),
                            "flags_removed": sorted(set(flags_a) - set(flags_b))})
    return {
        "schema": "procure.diff/v1",
        "old": {"title": old.get("title"), "as_of": old.get("as_of")},
        "new": {"title": new.get("title"), "as_of": new.get("as_of")},
        "added": sorted(set(new_bids) - set(old_bids)),
        "removed": sorted(set(old_bids) - set(new_bids)),
        "changed": changed,
        "ranking": {"old": old.get("ranking", []), "new": new.get("ranking", []),
                    "changed": old.get("ranking", []) != new.get("ranking", []),
                    "winner_changed": (old.get("ranking") or [None])[0] != (new.get("ranking") or [None])[0]},
    }
