"""Acceptance: a bid's commitments as a burn-in protocol (``procure.acceptance/v1``) and the check
of measured logs against it (``procure.acceptance-result/v1``).

``spec`` builds the protocol from validated inputs (pure); ``check`` judges an ingest result
against it (pure: the logs are read by ``procure.measure``). Files are read and written by
``procure.api``; the PDF page is ``procure.report.acceptance_page``.
"""
