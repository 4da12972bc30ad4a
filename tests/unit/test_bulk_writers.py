"""The writers' shortcuts for large documents give exactly what the long way gives: JSON strings
quoted without an encoder per string, formulas handed to XlsxWriter without its rewrite of
future-function names when they call none."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procure.jsontext import to_json_bytes


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), st.one_of(st.text(), st.lists(st.text(), max_size=3)), max_size=4))
def test_json_strings_are_written_as_json_dumps_writes_them(data):
    expected = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
    assert to_json_bytes(data) == expected.encode("utf-8")


FORMULAS = [
    "=ROUND(bid_a_gpus*scn_a_hours*IF(in_basis=\"run\",1,2),2)",
    "=RANK(Q3,$Q$2:$Q$6,1)", "=COUNT($Q$2:$Q$6)+ROWS($Q$5:$Q$6)", "=SUM('Cost lines'!F2:F9)",
    "=MAX(0,MIN(1,LOG10(x)))", "=SQRT(ABS(INT(N(a))))", "=ISNUMBER(A1)", "=A1", "=1+2",
    # not procure's, so XlsxWriter's own way: a future function, a dynamic array, a name in text
    "=XLOOKUP(A1,B:B,C:C)", "=STDEV.S(A1:A9)", "=FILTER(A1:A9,B1:B9>0)", "=IF(A1=\"MAP(\",1,0)",
    "=_xlfn.RANK.EQ(A1,B:B)", "{=SUM(A1:A3*B1:B3)}", "=LET(x,1,x)",
]


@pytest.mark.parametrize("formula", FORMULAS)
def test_formulas_reach_the_sheet_as_xlsxwriter_would_write_them(formula):
    from xlsxwriter.worksheet import Worksheet

    from procure.report.xlsx_cells import plain_formula_worksheet

    fast, slow = plain_formula_worksheet()(), Worksheet()
    for expand in (False, True):
        assert fast._prepare_formula(formula, expand) == slow._prepare_formula(formula, expand)
    slow.use_future_functions = fast.use_future_functions = True
    assert fast._prepare_formula(formula) == slow._prepare_formula(formula)
