"""One frozen set of render options, checked once per command, every problem at once (issue 29)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from procure import api
from procure.errors import InputError
from procure.report.options import RenderOptions

REPO = Path(__file__).resolve().parents[2]


def test_every_bad_option_is_reported_at_once_with_its_option():
    with pytest.raises(InputError) as info:
        RenderOptions.checked(["jsno", "html"], lang="fr", page_size="A3", bid_pages="top:x")
    where = sorted(d.source for d in info.value.diagnostics)
    assert where == ["--bid-pages", "--format", "--lang", "--page-size"]
    assert "did you mean 'json'" in str(info.value)


def test_the_options_are_frozen_and_keep_the_order_given_without_repeats():
    options = RenderOptions.checked(["pdf", "json", "pdf"])
    assert options.formats == ("pdf", "json")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.lang = "zh-TW"  # type: ignore[misc]


def test_a_quote_checks_its_options_once(tmp_path, monkeypatch):
    calls = []
    real = RenderOptions.checked.__func__

    def counting(cls, *args, **kwargs):
        calls.append(args)
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(RenderOptions, "checked", classmethod(counting))
    folder = tmp_path / "case"
    shutil.copytree(REPO / "tests" / "cases" / "measured-sla", folder, ignore=shutil.ignore_patterns("expected"))
    api.quote(folder / "cluster.yaml", tmp_path / "out", ["json", "html"])
    assert len(calls) == 1


def test_the_formats_the_options_know_are_the_renderers():
    from procure.report import RENDERERS
    from procure.report.options import FORMATS

    assert tuple(RENDERERS) == FORMATS
