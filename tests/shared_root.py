"""Where ../shared is (published runs, real logs, facts). `PROCURE_SHARED` names another folder, or
a missing one to run the suite as a fresh clone without it: tests that need it then skip with a reason."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PROCURE_SHARED") or REPO.parent / "shared")
