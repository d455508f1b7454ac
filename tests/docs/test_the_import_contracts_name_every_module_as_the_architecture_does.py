"""The layer contracts cover every module of their app, and docs/architecture.md lists them as they are."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# How docs/architecture.md introduces each app's layer list, up to the list's closing parenthesis.
DOCUMENTED = {"delivery": r"`delivery/` reads top-down \((.*?)\) and",
              "analytics": r"`analytics/` does too \((.*?)\)\."}


def contract_layers(app: str) -> list[set[str]]:
    """Return the layers of the import-linter contract whose container is `app`, top first."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c.get("containers") == [app]]
    return [{name.strip() for name in re.split(r"[|:]", layer)} for layer in contract["layers"]]


def documented_layers(app: str) -> list[set[str]]:
    """Return the layers docs/architecture.md names for `app`, top first."""
    text = " ".join((ROOT / "docs" / "architecture.md").read_text().split())
    found = re.search(DOCUMENTED[app], text)
    assert found, f"docs/architecture.md no longer introduces {app}'s layers as {DOCUMENTED[app]!r}"
    layers = [re.sub(r"^the paths ", "", step.strip()).strip("` ") for step in found.group(1).split("→")]
    return [{name.strip() for name in layer.split("|")} for layer in layers]


def modules_of(app: str) -> set[str]:
    """Return the modules and packages directly inside `app`, as a layer contract names them."""
    folder = ROOT / app
    modules = {path.stem for path in folder.glob("*.py") if path.name != "__init__.py"}
    return modules | {path.parent.name for path in folder.glob("*/__init__.py")}


@pytest.mark.parametrize("app", sorted(DOCUMENTED))
def test_the_layer_contract_of_an_app_names_every_module_of_it(app: str) -> None:
    named = set().union(*contract_layers(app))
    assert modules_of(app) - named == set(), f"modules of {app}/ outside its layer contract"
    assert named - modules_of(app) == set(), f"the layer contract of {app}/ names modules that do not exist"


@pytest.mark.parametrize("app", sorted(DOCUMENTED))
def test_the_architecture_lists_an_apps_layers_as_its_contract_has_them(app: str) -> None:
    assert documented_layers(app) == contract_layers(app)
