"""The one place suggestions ("did you mean ...?") are phrased."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def suggest(word: str, options: Iterable[object], cutoff: float = 0.6) -> str:
    """' did you mean 'x'?' or '' — the one place suggestions are phrased."""
    names = [str(o) for o in options]
    close = difflib.get_close_matches(str(word), names, n=1, cutoff=cutoff)
    if not close and len(str(word)) >= 4:   # 'h100' -> 'h100-sxm5-80gb'; too short to guess from
        lowered = {o.lower(): o for o in names}
        for key, original in lowered.items():
            if str(word).lower() in key or key in str(word).lower():
                close = [original]
                break
    return f"; did you mean {close[0]!r}?" if close else ""
