"""Errors a user can cause are values (Diagnostics) collected in one pass, then raised once."""

from __future__ import annotations

from dataclasses import dataclass, field


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() or ch == " " else f"\\x{ord(ch):02x}" for ch in str(text))


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem in an input, printed as ``file:line:col: error[code]: message``."""

    source: str
    line: int
    col: int
    code: str
    message: str
    severity: str = "error"
    # the cluster.yaml rule across fields it reports (procure.inputs.rules), when it reports one:
    # how the schema's copy of a rule is told from the raw pass's (not part of the problem's identity)
    rule: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        # user text quoted in a message must not drive the terminal (ANSI escapes, NULs)
        object.__setattr__(self, "message", _printable(self.message))
        object.__setattr__(self, "source", _printable(self.source))

    def format(self) -> str:
        where = f"{self.source}:{self.line}:{self.col}" if self.line > 0 else self.source
        return f"{where}: {self.severity}[{self.code}]: {self.message}"


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


def input_error(source: str, code: str, message: str, line: int = 0, col: int = 0) -> InputError:
    """A problem not tied to a position in a file (an option, a missing id): no line:col printed."""
    return InputError(Diagnostic(str(source), line, col, code, message))


class PolicyError(ProcureError):
    """A ``--fail-on`` policy tripped. Exit code 2 (reports were still written)."""

    exit_code = 2
