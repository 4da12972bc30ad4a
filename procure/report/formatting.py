"""The one place numbers become text, per locale ("en", "zh-TW"), written here without Babel.

Every function takes the raw document value (int, float, Decimal or None) and returns a
string; None becomes the locale's "n/a". Rounding follows the one money policy
(``procure.money``: half away from zero, on the exact Decimal value; a float goes through its
shortest repr), so a printed figure is the stored figure and the same digits print in every
language: only separators, symbols, dates and count words change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from procure.money import D, places


@dataclass(frozen=True)
class Locale:
    tag: str
    decimal_sep: str
    group_sep: str
    na: str
    currency_symbols: dict[str, str]
    compact_steps: tuple[tuple[int, str], ...]   # (power of ten, suffix), largest first
    months: tuple[str, ...] = ()

    def format_date(self, day: date) -> str:
        if self.tag == "zh-TW":
            return f"{day.year}年{day.month}月{day.day}日"
        return f"{self.months[day.month - 1]} {day.day}, {day.year}"


_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December")

LOCALES: dict[str, Locale] = {
    "en": Locale("en", ".", ",", "n/a",
                 {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "TWD": "NT$"},
                 ((12, "T"), (9, "B"), (6, "M"), (3, "K")), _MONTHS_EN),
    "zh-TW": Locale("zh-TW", ".", ",", "無資料",
                    {"USD": "US$", "EUR": "€", "GBP": "£", "JPY": "¥", "TWD": "$"},
                    ((12, "兆"), (8, "億"), (4, "萬"))),
}


def get_locale(tag: str) -> Locale:
    try:
        return LOCALES[tag]
    except KeyError:
        raise ValueError(f"unsupported language {tag!r}; use one of {sorted(LOCALES)}") from None


def _quantize(value: object, decimals: int) -> Decimal:
    return places(value, decimals)


def _group(digits: str, sep: str) -> str:
    head = len(digits) % 3 or 3
    parts = [digits[:head]] + [digits[i:i + 3] for i in range(head, len(digits), 3)]
    return sep.join(parts)


def number(value: object, loc: Locale, decimals: int = 2) -> str:
    """Fixed decimals with digit grouping: 1234.5 -> "1,234.50"."""
    if value is None:
        return loc.na
    q = _quantize(value, decimals)
    sign = "-" if q < 0 else ""
    text = f"{abs(q):f}"
    whole, _, frac = text.partition(".")
    out = sign + _group(whole, loc.group_sep)
    return out + (loc.decimal_sep + frac if frac else "")


def integer(value: object, loc: Locale) -> str:
    return number(value, loc, 0)


def money(value: object, currency: str, loc: Locale, decimals: int = 2) -> str:
    """A currency amount: "$84,312,345.67" (en), "US$84,312,345.67" (zh-TW), "CHF 12.00"."""
    if value is None:
        return loc.na
    text = number(value, loc, decimals)
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    symbol = loc.currency_symbols.get(currency)
    return f"{sign}{symbol}{digits}" if symbol else f"{sign}{currency} {digits}"


def percent(value: object, loc: Locale, decimals: int = 1) -> str:
    """A fraction as a percentage: 0.4123 -> "41.2%"."""
    if value is None:
        return loc.na
    return number(D(value) * 100, loc, decimals) + "%"


def signed_percent(value: object, loc: Locale, decimals: int = 0) -> str:
    """A change as a signed percentage: -0.2 -> "−20%", 0.1 -> "+10%"."""
    if value is None:
        return loc.na
    text = percent(value, loc, decimals)
    return text.replace("-", "\u2212") if text.startswith("-") else "+" + text


def compact(value: object, loc: Locale, decimals: int = 1) -> str:
    """A large count with the locale's count words: 7.06e10 -> "70.6B" / "705.5億"."""
    if value is None:
        return loc.na
    amount = D(value)
    for power, suffix in loc.compact_steps:
        if abs(amount) >= Decimal(10) ** power:
            return number(amount.scaleb(-power), loc, decimals) + suffix
    return number(amount, loc, 0 if amount == amount.to_integral_value() else decimals)


def significant(value: object, loc: Locale, digits: int = 3) -> str:
    """A measurement with about ``digits`` significant digits: 5.7134 -> "5.71", 41.03 -> "41.0"."""
    if value is None:
        return loc.na
    amount = D(value)
    if amount == 0:
        return number(0, loc, digits - 1)
    magnitude = amount.copy_abs().adjusted()   # 0 for 5.7, 1 for 41, -2 for 0.012
    return number(amount, loc, max(0, digits - 1 - magnitude))


def plain(value: object, loc: Locale, max_decimals: int = 12) -> str:
    """A number exactly as given, grouped, no padding zeros: 0.85 -> "0.85", 1.97e-5 -> "0.0000197"."""
    if value is None:
        return loc.na
    exact = D(value)
    decimals = max(0, -exact.normalize().as_tuple().exponent)  # type: ignore[operator]
    return number(exact, loc, min(decimals, max_decimals))


_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def scientific(value: object, loc: Locale, digits: int = 3) -> str:
    """A number in powers of ten: 1.97328e-5 -> "1.97 × 10⁻⁵" (for values too small to read as decimals)."""
    if value is None:
        return loc.na
    amount = D(value)
    if amount == 0:
        return number(0, loc, 0)
    exponent = amount.copy_abs().adjusted()
    mantissa = _quantize(amount.scaleb(-exponent), digits - 1)
    if mantissa.copy_abs() >= 10:          # 9.996e-5 rounds up to 10.0: one power more
        exponent += 1
        mantissa = _quantize(amount.scaleb(-exponent), digits - 1)
    return f"{number(mantissa, loc, digits - 1)} × 10{str(exponent).translate(_SUPERSCRIPT)}"


SMALL = Decimal("0.001")   # below this a decimal fraction is hard to read: powers of ten instead


def measure(value: object, loc: Locale) -> str:
    """An input quantity as given ("0.85", "730", "2,000"), a tiny one in powers of ten ("1.97 × 10⁻⁵")."""
    if value is None:
        return loc.na
    amount = D(value)
    if amount != 0 and amount.copy_abs() < SMALL:
        return scientific(amount, loc)
    return plain(amount, loc)


def iso_date(value: str | None, loc: Locale) -> str:
    """"2026-12-01" -> "December 1, 2026" / "2026年12月1日"; text that is not a date is kept."""
    if value is None:
        return loc.na
    try:
        day = date.fromisoformat(str(value)[:10])
    except ValueError:
        return str(value)
    return loc.format_date(day)


class Formatter:
    """Numbers of one report as text: locale, message catalog and report currency bound once."""

    def __init__(self, lang: str, currency: str):
        from procure.report.messages import Messages

        self.loc = get_locale(lang)
        self.msg = Messages(lang)
        self.currency = currency
        self.na = self.loc.na

    def text(self, value: object) -> str:
        return self.na if value is None or value == "" else str(value)

    def seconds(self, value: object) -> str:
        return self._unit("unit.seconds", significant(value, self.loc, 3), value)

    def days(self, value: object) -> str:
        return self._unit("unit.days", number(value, self.loc, 1), value)

    def hours(self, value: object) -> str:
        return self._unit("unit.hours", integer(value, self.loc), value)

    def minutes(self, value: object) -> str:
        return self._unit("unit.minutes", significant(value, self.loc, 3), value)

    def gib(self, value: object) -> str:
        return self._unit("unit.gib", number(value, self.loc, 1), value)

    def money(self, value: object, currency: str | None = None) -> str:
        return money(value, currency or self.currency, self.loc, 2)

    def rate(self, value: object, currency: str | None = None) -> str:
        """Unit prices and cost per million tokens: four decimals, as the document keeps them."""
        return money(value, currency or self.currency, self.loc, 4)

    def price(self, value: object, currency: str | None = None) -> str:
        """A unit price: cents when it has no finer digits ("$2.35"), else four decimals."""
        if value is None:
            return self.na
        exact = D(value)
        decimals = 2 if exact == _quantize(exact, 2) else 4
        return money(exact, currency or self.currency, self.loc, decimals)

    def unit_price(self, value: object, currency: str | None = None, as_quoted: bool = False) -> str:
        """A unit price with the decimals money needs: cents from one unit up ("$2.38"), four
        decimals below it ("$0.0875"). ``as_quoted``: a vendor's own figure, with every digit it
        carries (at least cents, at most six decimals), so a quote reads as written."""
        if value is None:
            return self.na
        exact = D(value)
        carried = -exact.normalize().as_tuple().exponent  # type: ignore[operator]
        if as_quoted:
            decimals = min(max(2, carried), 6)
        else:
            decimals = 2 if abs(exact) >= 1 else min(max(2, carried), 4)
        return money(exact, currency or self.currency, self.loc, decimals)

    def quantum(self, value: object, quantum: object) -> str:
        """A figure printed to the decimals of ``quantum`` (0.001 -> three decimals)."""
        if value is None:
            return self.na
        q = D(quantum) if quantum is not None else D("0.0001")
        decimals = max(0, -q.normalize().as_tuple().exponent) if q > 0 else 4  # type: ignore[operator]
        return number(value, self.loc, decimals)

    def percent(self, value: object, decimals: int = 1) -> str:
        return percent(value, self.loc, decimals)

    def change(self, value: object) -> str:
        return signed_percent(value, self.loc, 0)

    def integer(self, value: object) -> str:
        return integer(value, self.loc)

    def number(self, value: object, decimals: int = 2) -> str:
        return number(value, self.loc, decimals)

    def sig(self, value: object, digits: int = 3) -> str:
        return significant(value, self.loc, digits)

    def plain(self, value: object) -> str:
        return plain(value, self.loc)

    def fx_rate(self, value: object) -> str:
        """An FX rate with all of its (at most 12) significant digits: 0.0317279015166."""
        return plain(value, self.loc, 24)

    def compact(self, value: object) -> str:
        return compact(value, self.loc)

    def measure(self, value: object) -> str:
        return measure(value, self.loc)

    def date(self, value: object) -> str:
        return iso_date(None if value is None else str(value), self.loc)

    def _unit(self, key: str, text: str, value: object) -> str:
        return self.na if value is None else self.msg(key, value=text)
