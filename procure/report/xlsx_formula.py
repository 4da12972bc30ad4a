"""Spreadsheet formulas as small expression trees: one tree gives the formula text the workbook
stores and the value it caches, so what a reader without a calculation engine sees is what the
formula computes.

Values are evaluated the way the economics computes them: numbers as ``Decimal`` in the money
context (34 digits), ``ROUND`` half away from zero as spreadsheets do, blanks as zero in
arithmetic. Only the functions the workbook uses are implemented.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from decimal import ROUND_FLOOR, ROUND_HALF_UP, ROUND_UP, Decimal, DivisionByZero, InvalidOperation, localcontext
from typing import Callable, Protocol, Sequence, Union

from procure.money import MONEY_CONTEXT

Scalar = Union[Decimal, str, bool, None]


class XlError(Exception):
    """A spreadsheet error value (#DIV/0!, #VALUE!, ...); the cell caches the code."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class Resolver(Protocol):
    def cell_value(self, sheet: str, row: int, col: int) -> Scalar: ...
    def name_value(self, name: str) -> Scalar: ...


def column_letter(col: int) -> str:
    """0-based column index -> letters (0 -> A)."""
    letters = ""
    col += 1
    while col:
        col, rem = divmod(col - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


def sheet_prefix(sheet: str, here: str) -> str:
    if sheet == here:
        return ""
    return "'" + sheet.replace("'", "''") + "'!"


class Expr:
    """A formula node; arithmetic operators build bigger nodes."""

    def prec(self) -> int:
        """Binding strength: a child binding less tightly than its parent is parenthesised."""
        return 9

    def text(self, here: str) -> str:
        raise NotImplementedError

    def value(self, env: Resolver) -> Scalar:
        raise NotImplementedError

    def __add__(self, other: Operand) -> Expr:
        return BinOp("+", self, lift(other))

    def __sub__(self, other: Operand) -> Expr:
        return BinOp("-", self, lift(other))

    def __mul__(self, other: Operand) -> Expr:
        return BinOp("*", self, lift(other))

    def __truediv__(self, other: Operand) -> Expr:
        return BinOp("/", self, lift(other))

    def __radd__(self, other: Operand) -> Expr:
        return BinOp("+", lift(other), self)

    def __rsub__(self, other: Operand) -> Expr:
        return BinOp("-", lift(other), self)

    def __rmul__(self, other: Operand) -> Expr:
        return BinOp("*", lift(other), self)

    def __rtruediv__(self, other: Operand) -> Expr:
        return BinOp("/", lift(other), self)

    def eq(self, other: Operand) -> Expr:
        return BinOp("=", self, lift(other))

    def gt(self, other: Operand) -> Expr:
        return BinOp(">", self, lift(other))

    def le(self, other: Operand) -> Expr:
        return BinOp("<=", self, lift(other))

    def power(self, other: Operand) -> Expr:
        return BinOp("^", self, lift(other))

    def __neg__(self) -> Expr:
        return Neg(self)


Operand = Union[Expr, int, Decimal, str]


@dataclass(frozen=True, eq=False)
class Num(Expr):
    number: Decimal

    def text(self, here: str) -> str:
        return format(Decimal(self.number).normalize(), "f")

    def value(self, env: Resolver) -> Scalar:
        return Decimal(self.number)


@dataclass(frozen=True, eq=False)
class Text(Expr):
    string: str

    def text(self, here: str) -> str:
        return '"' + self.string.replace('"', '""') + '"'

    def value(self, env: Resolver) -> Scalar:
        return self.string


@dataclass(frozen=True, eq=False)
class Name(Expr):
    """A defined name (an input or a named result)."""

    name: str

    def text(self, here: str) -> str:
        return self.name

    def value(self, env: Resolver) -> Scalar:
        return env.name_value(self.name)


@dataclass(frozen=True, eq=False)
class Ref(Expr):
    sheet: str
    row: int
    col: int

    def text(self, here: str) -> str:
        return f"{sheet_prefix(self.sheet, here)}{column_letter(self.col)}{self.row + 1}"

    def value(self, env: Resolver) -> Scalar:
        return env.cell_value(self.sheet, self.row, self.col)


@dataclass(frozen=True, eq=False)
class Range(Expr):
    """A rectangular range; ``absolute`` pins it with $ so it reads as one fixed block."""

    sheet: str
    first_row: int
    first_col: int
    last_row: int
    last_col: int
    absolute: bool = False

    def text(self, here: str) -> str:
        pin = "$" if self.absolute else ""
        a = f"{pin}{column_letter(self.first_col)}{pin}{self.first_row + 1}"
        b = f"{pin}{column_letter(self.last_col)}{pin}{self.last_row + 1}"
        return f"{sheet_prefix(self.sheet, here)}{a}:{b}"

    def value(self, env: Resolver) -> Scalar:
        raise XlError("#VALUE!")

    def values(self, env: Resolver) -> list[Scalar]:
        return [env.cell_value(self.sheet, r, c) for r in range(self.first_row, self.last_row + 1)
                for c in range(self.first_col, self.last_col + 1)]

    @property
    def rows(self) -> int:
        return self.last_row - self.first_row + 1


def lift(value: Operand) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, str):
        return Text(value)
    return Num(Decimal(value))


def number(value: Scalar) -> Decimal:
    """A value used in arithmetic: blanks count as zero, text is an error."""
    if value is None:
        return Decimal(0)
    if isinstance(value, bool):
        return Decimal(int(value))
    if isinstance(value, Decimal):
        return value
    raise XlError("#VALUE!")


_PRECEDENCE = {"=": 1, "<>": 1, "<": 1, ">": 1, "<=": 1, ">=": 1, "+": 2, "-": 2, "*": 3, "/": 3, "^": 5}


@dataclass(frozen=True, eq=False)
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr

    def prec(self) -> int:
        return _PRECEDENCE[self.op]

    def text(self, here: str) -> str:
        left = self.left.text(here)
        right = self.right.text(here)
        if self.left.prec() < self.prec():
            left = f"({left})"
        if self.right.prec() <= self.prec():   # keep the tree's order: a-(b-c), a/(b*c)
            right = f"({right})"
        return f"{left}{self.op}{right}"

    def value(self, env: Resolver) -> Scalar:
        a, b = self.left.value(env), self.right.value(env)
        if _PRECEDENCE[self.op] == 1:
            return _compare(self.op, a, b)
        x, y = number(a), number(b)
        with localcontext(MONEY_CONTEXT) as ctx:
            ctx.traps[DivisionByZero] = True
            ctx.traps[InvalidOperation] = True
            try:
                if self.op == "+":
                    return x + y
                if self.op == "-":
                    return x - y
                if self.op == "*":
                    return x * y
                if self.op == "^":
                    return x ** y
                return x / y
            except (DivisionByZero, InvalidOperation):
                raise XlError("#DIV/0!") from None


@dataclass(frozen=True, eq=False)
class Neg(Expr):
    operand: Expr

    def prec(self) -> int:
        return 4                  # binds tighter than * and /, looser than ^ (as spreadsheets do)

    def text(self, here: str) -> str:
        inner = self.operand.text(here)
        return f"-({inner})" if self.operand.prec() < 9 else f"-{inner}"

    def value(self, env: Resolver) -> Scalar:
        with localcontext(MONEY_CONTEXT):
            return -number(self.operand.value(env))


def _compare(op: str, a: Scalar, b: Scalar) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        x, y = str(a or "").lower(), str(b or "").lower()
        return {"=": x == y, "<>": x != y}.get(op, False)
    p, q = number(a), number(b)
    return {"=": p == q, "<>": p != q, "<": p < q, ">": p > q, "<=": p <= q, ">=": p >= q}[op]


@dataclass(frozen=True, eq=False)
class Call(Expr):
    function: str
    args: tuple[Expr, ...]

    def text(self, here: str) -> str:
        return f"{self.function}({','.join(a.text(here) for a in self.args)})"

    def value(self, env: Resolver) -> Scalar:
        return FUNCTIONS[self.function](env, self.args)


def _digits(env: Resolver, arg: Expr) -> Decimal:
    return Decimal(1).scaleb(-int(number(arg.value(env))))


def _round(env: Resolver, args: Sequence[Expr]) -> Scalar:
    with localcontext(MONEY_CONTEXT):
        return number(args[0].value(env)).quantize(_digits(env, args[1]), rounding=ROUND_HALF_UP)


def _roundup(env: Resolver, args: Sequence[Expr]) -> Scalar:
    with localcontext(MONEY_CONTEXT):
        return number(args[0].value(env)).quantize(_digits(env, args[1]), rounding=ROUND_UP)


def _if(env: Resolver, args: Sequence[Expr]) -> Scalar:
    test = args[0].value(env)
    chosen = args[1] if (test if isinstance(test, bool) else number(test) != 0) else args[2]
    return chosen.value(env)


def _numbers(env: Resolver, args: Sequence[Expr]) -> list[Decimal]:
    """Numbers among the arguments; a range contributes only its numeric cells, as in SUM."""
    out: list[Decimal] = []
    for arg in args:
        if isinstance(arg, Range):
            out += range_numbers(env, arg)
        else:
            out.append(number(arg.value(env)))
    return out


def range_numbers(env: Resolver, rng: Range, ordered: bool = False) -> list[Decimal]:
    """A range's numeric cells (sorted when ``ordered``), kept by a resolver that offers
    ``range_numbers``: a column of RANK formulas then reads its pool once, not once per row."""
    kept = getattr(env, "range_numbers", None)
    if kept is not None:
        found: list[Decimal] = kept(rng, ordered)
        return found
    values = [v for v in rng.values(env) if isinstance(v, Decimal)]
    return sorted(values) if ordered else values


def _sum(env: Resolver, args: Sequence[Expr]) -> Scalar:
    with localcontext(MONEY_CONTEXT):
        return sum(_numbers(env, args), Decimal(0))


def _sqrt(env: Resolver, args: Sequence[Expr]) -> Scalar:
    x = number(args[0].value(env))
    if x < 0:
        raise XlError("#NUM!")
    return x.sqrt(MONEY_CONTEXT)


def _rank(env: Resolver, args: Sequence[Expr]) -> Scalar:
    """RANK(x, range, 1): 1 + how many numbers in the range are smaller (ties share a rank)."""
    x = number(args[0].value(env))
    pool = (range_numbers(env, args[1], ordered=True) if isinstance(args[1], Range)
            else sorted(_numbers(env, args[1:2])))
    below = bisect_left(pool, x)
    if below == len(pool) or pool[below] != x:
        raise XlError("#N/A")
    return Decimal(1 + below)


def _rows(env: Resolver, args: Sequence[Expr]) -> Scalar:
    arg = args[0]
    if not isinstance(arg, Range):
        raise XlError("#VALUE!")
    return Decimal(arg.rows)


def _log10(env: Resolver, args: Sequence[Expr]) -> Scalar:
    x = number(args[0].value(env))
    if x <= 0:
        raise XlError("#NUM!")
    return x.log10(MONEY_CONTEXT)


FUNCTIONS: dict[str, Callable[[Resolver, Sequence[Expr]], Scalar]] = {
    "ROUND": _round,
    "ROUNDUP": _roundup,
    "IF": _if,
    "SUM": _sum,
    "MAX": lambda env, args: max(_numbers(env, args)),
    "MIN": lambda env, args: min(_numbers(env, args)),
    "SQRT": _sqrt,
    "ISNUMBER": lambda env, args: isinstance(args[0].value(env), Decimal),
    "N": lambda env, args: _n(args[0].value(env)),
    "COUNT": lambda env, args: Decimal(len(_numbers(env, args))),
    "RANK": _rank,
    "ROWS": _rows,
    "INT": lambda env, args: number(args[0].value(env)).to_integral_value(rounding=ROUND_FLOOR),
    "ABS": lambda env, args: abs(number(args[0].value(env))),
    "LOG10": _log10,
}


def _n(value: Scalar) -> Scalar:
    return value if isinstance(value, Decimal) else Decimal(0)


def call(function: str, *args: Operand) -> Expr:
    if function not in FUNCTIONS:
        raise ValueError(f"{function} is not a function the workbook evaluates")
    return Call(function, tuple(lift(a) for a in args))


def product(terms: Sequence[Expr]) -> Expr:
    """terms[0] * terms[1] * ..., left to right (the order the economics multiplies in)."""
    out = terms[0]
    for term in terms[1:]:
        out = out * term
    return out
