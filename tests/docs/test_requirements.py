"""Production installs what Dovecote runs and nothing of the test tools; the venv of `make` gets both."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST_TOOLS = {"pytest", "pytest-django", "playwright", "pytest-playwright", "schemathesis", "ruff", "hypothesis",
              "import-linter", "mypy"}


def pins(name: str) -> dict[str, str]:
    """Return the `name==version` lines of a requirements file, by normalised name."""
    found = {}
    for line in (ROOT / name).read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            package, _, version = line.partition("==")
            found[re.sub(r"[-_.]+", "-", package.split("[")[0]).lower()] = version.strip()
    return found


def test_the_production_requirements_hold_no_test_tool() -> None:
    assert TEST_TOOLS.isdisjoint(pins("requirements.txt")), TEST_TOOLS & set(pins("requirements.txt"))
    assert TEST_TOOLS.isdisjoint(pins("requirements.in"))


def test_the_dev_requirements_add_the_test_tools_to_production() -> None:
    dev = (ROOT / "requirements-dev.txt").read_text()
    assert "-r requirements.txt" in dev.splitlines()
    assert TEST_TOOLS - {"hypothesis"} <= set(pins("requirements-dev.in"))
    assert set(pins("requirements-dev.txt")) >= TEST_TOOLS
    assert set(pins("requirements-dev.txt")).isdisjoint(pins("requirements.txt"))


def test_every_top_level_requirement_is_pinned_at_its_version() -> None:
    assert pins("requirements.in").items() <= pins("requirements.txt").items()


def test_the_image_installs_production_only_and_make_installs_both() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install -r requirements.txt" in dockerfile and "requirements-dev" not in dockerfile
    makefile = (ROOT / "Makefile").read_text()
    assert "-r requirements-dev.txt" in makefile
