"""Errors a user can cause are values (Diagnostics) collected in one pass, then raised once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem in an input, printed as ``file:line:col: error[code]: message``."""

    source: str
    line: int
    col: int
    code: str
    message: str
    severity: str = "error"

    def format(self) -> str:
        return f"{self.source}:{self.line}:{self.col}: {self.severity}[{self.code}]: {self.message}"


class ProcureError(Exception):
    """Base class of every error procure reports without a traceback."""

    exit_code = 3


class InputError(ProcureError):
    """Bad input: one or more diagnostics. Exit code 1, nothing written."""

    exit_code = 1

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = sorted(diagnostics, key=lambda d: (d.source, d.line, d.col, d.code))
        super().__init__("\n".join(d.format() for d in self.diagnostics))


def input_error(source: str, code: str, message: str, line: int = 1, col: int = 1) -> InputError:
    return InputError(Diagnostic(str(source), line, col, code, message))


class PolicyError(ProcureError):
    """A ``--fail-on`` policy tripped. Exit code 2 (reports were still written)."""

    exit_code = 2
