"""The parsed-catalog cache: read back when nothing changed, rebuilt when any catalog file changes,
ignored when corrupt, foreign or writable by others; browsing needs neither YAML nor pydantic."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from procure.catalog import cache
from procure.catalog.load import load_catalog
from procure.catalog.views import list_entries, show_entry
from procure.resources import catalog_dir, price_books_dir

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def roots(tmp_path) -> list[Path]:
    shutil.copytree(catalog_dir(), tmp_path / "hardware_catalog")
    shutil.copytree(price_books_dir(), tmp_path / "price_books")
    return [tmp_path / "hardware_catalog", tmp_path / "price_books"]


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("PROCURE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _build(roots: list[Path], calls: list[int]):
    def build():
        calls.append(1)
        return load_catalog(*roots)
    return build


def test_a_second_read_comes_from_the_cache(roots, folder):
    calls: list[int] = []
    first = cache.cached("parsed", roots, _build(roots, calls))
    second = cache.cached("parsed", roots, _build(roots, calls))
    assert calls == [1] and second == first
    (written,) = folder.glob("catalog-parsed-*.json")
    assert written.stat().st_mode & 0o077 == 0          # private to the user


def test_an_edited_added_or_removed_file_rebuilds_it(roots, folder):
    calls: list[int] = []
    cache.cached("parsed", roots, _build(roots, calls))
    book = roots[1] / "aws-2026q3.yaml"
    book.write_text(book.read_text(encoding="utf-8").replace('price_per_gpu_hour: "6.88"', 'price_per_gpu_hour: "5.5"'),
                    encoding="utf-8")
    edited = cache.cached("parsed", roots, _build(roots, calls))
    assert calls == [1, 1]
    assert str(edited.price_books["aws-2026q3"].line("h100-sxm5-80gb", "on-demand").price_per_gpu_hour) == "5.5"
    shutil.copy(roots[0] / "networks" / "efa-p5.yaml", roots[0] / "networks" / "efa-p5-copy.yaml")
    before = cache.catalog_key(roots)
    (roots[0] / "networks" / "efa-p5-copy.yaml").unlink()
    assert cache.catalog_key(roots) != before
    assert len(list(folder.glob("catalog-parsed-*.json"))) == 1      # the stale entry is replaced


def test_a_corrupt_or_foreign_cache_file_is_ignored(roots, folder):
    calls: list[int] = []
    cache.cached("parsed", roots, _build(roots, calls))
    (entry,) = folder.glob("catalog-parsed-*.json")
    entry.write_bytes(b"not a pickle")
    assert cache.cached("parsed", roots, _build(roots, calls)) is not None and calls == [1, 1]
    entry.chmod(0o666)                                     # writable by others: never unpickled
    assert cache.read(folder, "parsed", cache.catalog_key(roots)) is None


def test_the_cache_can_be_turned_off(roots, monkeypatch):
    monkeypatch.setenv("PROCURE_CACHE_DIR", "off")
    calls: list[int] = []
    cache.cached("parsed", roots, _build(roots, calls))
    cache.cached("parsed", roots, _build(roots, calls))
    assert calls == [1, 1]


def test_an_unwritable_cache_folder_costs_only_the_speed_up(roots, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("PROCURE_CACHE_DIR", str(blocker / "cache"))
    assert cache.cached("parsed", roots, lambda: load_catalog(*roots)).accelerators


def test_views_from_the_cache_equal_views_of_the_parsed_catalog(folder):
    parsed = load_catalog()
    assert list_entries() == list_entries(cat=parsed)
    assert show_entry("aws-2026q3") == show_entry("aws-2026q3", parsed)
    assert list_entries() == list_entries()                         # the second read is the cached one


def test_browsing_the_catalog_imports_neither_yaml_nor_pydantic(folder, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), PROCURE_CACHE_DIR=str(folder))
    code = ("import sys; from procure.cli import main; sys.argv = ['procure', 'catalog', 'list', '--format', 'json'];\n"
            "import atexit; atexit.register(lambda: print(sorted(m for m in ('yaml', 'pydantic', 'numpy') "
            "if m in sys.modules), file=sys.stderr))\nmain()")
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, check=True)   # fills the cache
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert second.returncode == 0 and second.stderr.strip().splitlines()[-1] == "[]", second.stderr


def test_knobs_and_software_stacks_come_from_the_cache_without_their_schemas(folder):
    """The second start reads the fitted knobs and the software stacks back from the cache: equal
    values, and neither schema module is imported (no YAML read, no pydantic model defined)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PROCURE_CACHE_DIR=str(folder), PYTHONHASHSEED="0")   # set reprs
    code = ("import sys\nfrom procure.catalog.calibration import load_knobs\n"
            "from procure.catalog.software import load_software\n"
            "knobs, stacks = load_knobs(), load_software()\n"
            "print(repr((sorted(knobs.by_accelerator), knobs.default, sorted(stacks), stacks['nemo'][-1])))\n"
            "print(sorted(m for m in ('procure.catalog.calibration_schema', 'procure.catalog.software_schema')"
            " if m in sys.modules))")
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert sorted(p.name.split("-")[1] for p in folder.glob("catalog-*.json")) == ["knobs", "software"]
    assert first.stdout.splitlines()[0] == second.stdout.splitlines()[0]
    assert first.stdout.splitlines()[1] != "[]"          # the first start parsed the files
    assert second.stdout.splitlines()[1] == "[]"


def test_tuned_recipes_come_from_the_cache_without_the_corpus_reader(folder):
    """A quote compares each plan with the nearest vendor-tuned recipe of the corpus: the second
    start reads the typed recipes back equal, without importing the published-runs reader (~200 ms
    of YAML parsing and validation a quote paid on every start)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PROCURE_CACHE_DIR=str(folder))
    code = ("import sys, json\nfrom procure.backtest.tuned import tuned_recipes\n"
            "runs = tuned_recipes()\n"
            "print(json.dumps([r.model_dump(mode='json') for r in runs], sort_keys=True))\n"
            "print('procure.backtest.runs' in sys.modules, {type(r).__name__ for r in runs})")
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    runs = first.stdout.splitlines()[0]
    assert runs == second.stdout.splitlines()[0] and '"tuned_recipe": true' in runs
    assert first.stdout.splitlines()[1] == "True {'PublishedRun'}"
    assert second.stdout.splitlines()[1] == "False {'PublishedRun'}"


def test_a_validated_record_reads_back_equal_and_a_forged_one_is_refused():
    """Pydantic records (the corpus's runs) are stored field by field and rebuilt as the same
    class; a tag naming a class that is no record, or fields the class lacks, is not read."""
    from procure.backtest.runs import read_runs

    runs = read_runs(catalog_dir() / "published_runs" / "moe_longctx.yaml")
    assert cache.decode(cache.encode(runs)) == runs
    record = cache.encode(runs[0])
    assert record["$model"] == "procure.backtest.published_run:PublishedRun"
    forged = [{"$model": "procure.catalog.types:Sourced", "f": {}},
              {"$model": "pydantic:BaseModel", "f": {}},
              {"$model": record["$model"], "f": {**record["f"], "extra": 1}}]
    for value in forged:
        with pytest.raises(cache.CacheMismatch):
            cache.decode(value)


def test_the_cache_key_covers_the_code_that_shapes_every_entry():
    package = REPO / "procure"
    missing = [name for name in cache._CODE if not (package / name).is_file()]
    assert not missing
    assert {"backtest/published_run.py", "backtest/runs.py", "backtest/tuned.py",
            "catalog/entries.py"} <= set(cache._CODE)
