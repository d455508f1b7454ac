"""The documentation a user of the repository reads: it points only at what the repository holds,
explains its terms, and shows the screenshots it links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_a_page_points_at_no_file_a_user_does_not_have(page: Path) -> None:
    text = page.read_text()
    assert "CONTRACT" not in text and "shared folder" not in text and "§" not in text


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_every_relative_link_of_a_page_leads_to_a_file_of_the_repository(page: Path) -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
        assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


def test_the_architecture_explains_the_embedded_mode_ebr_and_the_poison_counter() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    embedded = text.split("## Embedded mode (`make demo`)", 1)[1].split("\n## ", 1)[0]
    for part in ("waitress", "SQLite", "in-memory broker", "beat", "worker", "PORT", "lock", "restart"):
        assert part in embedded, part
    assert "**EBR**, exponential backoff retry" in text and "min(d × m^k, cap)" in text
    assert "**poison counter** is\n`crashed_attempts`" in text
    assert "## Lost frames: the watchdog" in text


def test_the_readme_links_every_screenshot_and_each_link_has_its_image() -> None:
    readme = (ROOT / "README.md").read_text()
    linked = set(re.findall(r"\(docs/screenshots/([\w-]+\.png)\)", readme))
    on_disk = {path.name for path in (ROOT / "docs" / "screenshots").glob("*.png")}
    assert linked == on_disk
