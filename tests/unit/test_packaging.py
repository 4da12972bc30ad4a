"""The shipped data folders travel inside the wheel and are found through procure.resources."""

import tomllib
from pathlib import Path

from procure import resources

REPO = Path(__file__).resolve().parents[2]


def test_every_data_folder_is_force_included_into_the_package():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    included = config["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert {src: dst for src, dst in included.items()} == {
        name: f"procure/_data/{name}" for name in resources.DATA_FOLDERS}


def test_resources_find_the_folders_in_a_source_checkout():
    for name in resources.DATA_FOLDERS:
        folder = resources.data_dir(name)
        assert folder.is_dir() and any(folder.iterdir()), name


def test_console_script_points_at_the_cli():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["project"]["scripts"]["procure"] == "procure.cli:main"
    assert "test" in config["project"]["optional-dependencies"]
