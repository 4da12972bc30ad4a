"""The one error the measure package raises for bad logs."""

from __future__ import annotations

from procure.errors import ProcureError


class LogError(ProcureError):
    """A log or trace that cannot be used: unreadable, not UTF-8, too large, or without steps.

    The message always names the file (and, for decoding errors, the byte offset).
    """

    exit_code = 1
