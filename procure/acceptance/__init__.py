"""Acceptance: a bid's commitments as a burn-in protocol (``procure.acceptance/v1``) and the check
of measured logs against it (``procure.acceptance-result/v1``).

``spec`` builds the protocol from validated inputs (pure); ``check`` judges an ingest result
against it (pure: the logs are read by ``procure.measure``). Files are read and written by
``procure.api``; the PDF page is ``procure.report.acceptance_page``.
"""

from __future__ import annotations

from typing import Any


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schemas of ``procure.acceptance/v1`` and ``procure.acceptance-result/v1``."""
    from procure.acceptance.check import RESULT_SCHEMA, AcceptanceResult
    from procure.acceptance.spec import SCHEMA, AcceptanceSpec

    out = {}
    for name, model in ((SCHEMA, AcceptanceSpec), (RESULT_SCHEMA, AcceptanceResult)):
        schema = model.model_json_schema(by_alias=True, mode="serialization")
        schema["$id"] = f"https://procure.dev/schemas/{name.replace('/', '.')}.json"
        out[name] = schema
    return out
