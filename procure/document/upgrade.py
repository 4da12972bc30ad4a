"""Read older result documents: ``procure.quote/v1`` is upgraded to v2 before validation.

v1 -> v2: ``usd_per_million_tokens`` became ``cost_per_million_tokens`` (bid, sensitivity rows,
band), the MFU convention moved from every bid to the document, and the methodology's knob
table became typed rows.
"""

from __future__ import annotations

from typing import Any

V1 = "procure.quote/v1"
V2 = "procure.quote/v2"
RENAMED = {"usd_per_million_tokens": "cost_per_million_tokens"}
V1_METHOD_KEYS = {"fitted on": "fitted_on", "fitted at": "fitted_at", "fit MAPE": "fit_mape"}


def _renamed(row: Any) -> Any:
    if not isinstance(row, dict):
        return row
    return {RENAMED.get(k, k): v for k, v in row.items()}


def _bid_v1(bid: Any) -> tuple[Any, str | None]:
    if not isinstance(bid, dict):
        return bid, None
    out = _renamed(bid)
    convention = out.pop("mfu_convention", None)
    if isinstance(out.get("sensitivity"), list):
        out["sensitivity"] = [_renamed(r) for r in out["sensitivity"]]
    out["uncertainty"] = _renamed(out.get("uncertainty"))
    return out, convention if isinstance(convention, str) else None


def _methodology_v1(method: Any) -> Any:
    if not isinstance(method, dict) or not isinstance(method.get("knobs"), dict):
        return method
    knobs = dict(method["knobs"])
    out = {k: v for k, v in method.items() if k != "knobs"}
    for old, new in V1_METHOD_KEYS.items():
        out[new] = knobs.pop(old, None) or ([] if new == "fitted_on" else {} if new == "fit_mape" else "")
    out["knobs"] = [{"label": label, "values": values} for label, values in sorted(knobs.items())]
    return out


def upgrade(data: Any) -> Any:
    """The v2 form of a v1 document; anything else is returned unchanged for validation."""
    if not isinstance(data, dict) or data.get("schema") != V1:
        return data
    out = dict(data)
    out["schema"] = V2
    bids, conventions = [], []
    for bid in out.get("bids") or []:
        upgraded, convention = _bid_v1(bid)
        bids.append(upgraded)
        conventions.append(convention)
    if isinstance(out.get("bids"), list):
        out["bids"] = bids
    out["mfu_convention"] = next((c for c in conventions if c), "not stated (procure.quote/v1)")
    out["methodology"] = _methodology_v1(out.get("methodology"))
    return out
