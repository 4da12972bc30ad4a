from decimal import Decimal

import pytest

from procure.catalog.load import default_catalog, load_catalog
from procure.catalog.views import list_entries, show_entry
from procure.errors import InputError

REQUIRED_ACCELERATORS = {"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "b200-sxm-180gb",
                         "mi300x-oam-192gb"}
REQUIRED_MODELS = {"gpt3-175b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b",
                   "deepseek-v3", "bloom-176b", "megatron-1t"}


@pytest.fixture(scope="module")
def cat():
    return default_catalog()


def test_counts_and_required_ids(cat):
    assert len(cat.accelerators) >= 20
    assert len(cat.networks) >= 10
    assert len(cat.models) >= 10
    assert len(cat.price_books) >= 8
    assert REQUIRED_ACCELERATORS <= set(cat.accelerators)
    assert REQUIRED_MODELS <= set(cat.models)


def test_every_entry_carries_a_source(cat):
    entries = list(cat.accelerators.values()) + list(cat.networks.values())
    for entry in entries:
        assert entry.sourced.source and all(s.strip() for s in entry.sourced.source), entry.id
        assert entry.sourced.as_of, entry.id
    for model in cat.models.values():
        assert model.sourced and model.sourced.source, model.id
    for book in cat.price_books.values():
        assert book.sourced.source, book.id
        for line in book.lines:
            assert line.sourced.source and line.sourced.as_of, (book.id, line.accelerator, line.term)
    for table in cat.fx_tables:
        assert table.sourced.source


def test_accelerator_numbers_are_dense_and_per_direction(cat):
    h100 = cat.accelerators["h100-sxm5-80gb"]
    assert h100.peak_flops("bf16") == pytest.approx(989.4e12)
    assert h100.scale_up_bw_gbs == 450          # 900 GB/s bidirectional
    assert h100.hbm_bw_tbs == pytest.approx(3.35)
    a100 = cat.accelerators["a100-sxm4-80gb"]
    assert a100.peak_flops("fp8") == a100.peak_flops("bf16")   # no fp8 on Ampere: falls back


def test_every_accelerator_has_bf16_or_fp16_peak_and_default_network(cat):
    for acc in cat.accelerators.values():
        assert acc.peak_tflops.get("bf16") or acc.peak_tflops.get("fp16"), acc.id
        assert acc.default_network in cat.networks, acc.id


def test_price_lookup_is_exact_decimal(cat):
    book = cat.price_books["aws-2026q3"]
    line = book.line("h100-sxm5-80gb", "on-demand")
    assert line.price_per_gpu_hour == Decimal("6.88")
    assert isinstance(line.price_per_gpu_hour, Decimal)
    assert book.line("h100-sxm5-80gb", "no-such-term") is None


def test_fx_table_pinned_by_date(cat):
    from datetime import date

    table = cat.fx_for(date(2026, 12, 1))
    assert table is not None and table.as_of <= date(2026, 12, 1)
    for ccy in ("USD", "EUR", "GBP", "JPY", "CNY", "TWD"):
        assert ccy in table.rates and table.rates[ccy] > 0
    assert cat.fx_for(date(1990, 1, 1)) is None


def test_did_you_mean(cat):
    assert "h100-sxm5-80gb" in cat.did_you_mean("accelerator", "h100-sxm5")
    assert "llama3-70b" in cat.did_you_mean("model", "llama-3-70b")


def test_views(cat):
    listing = list_entries("accelerators")
    assert len(listing["entries"]["accelerators"]) == len(cat.accelerators)
    shown = show_entry("h100-sxm5-80gb")
    assert shown["kind"] == "accelerator" and shown["entry"]["hbm_gb"] == 80
    with pytest.raises(InputError) as info:
        show_entry("h100-sxm")
    assert "did you mean" in str(info.value)


def test_broken_catalog_entry_reported_with_position(tmp_path):
    acc = tmp_path / "cat" / "accelerators"
    acc.mkdir(parents=True)
    (acc / "x.yaml").write_text("id: x\nvendor: V\nname: X\nrelease_year: 2020\npeak_tflops: {bf16: fast}\n"
                                "hbm_gb: 1\nhbm_bw_tbs: 1\nscale_up: {tech: t, bw_gbs_per_direction: 1, domain_size: 1}\n"
                                "source: s\nas_of: now\n")
    books = tmp_path / "books"
    books.mkdir()
    with pytest.raises(InputError) as info:
        load_catalog(tmp_path / "cat", books)
    diag = info.value.diagnostics[0]
    assert diag.source.endswith("x.yaml") and diag.line == 5 and diag.code == "bad-type"


def test_missing_source_is_refused(tmp_path):
    nets = tmp_path / "cat" / "networks"
    nets.mkdir(parents=True)
    (nets / "n.yaml").write_text("id: n\nname: N\nkind: ib\nscale_out_gbps_per_gpu: 1\nlatency_us: 1\n"
                                 "source: ''\nas_of: now\n")
    (tmp_path / "books").mkdir()
    with pytest.raises(InputError) as info:
        load_catalog(tmp_path / "cat", tmp_path / "books")
    assert "source" in str(info.value)
