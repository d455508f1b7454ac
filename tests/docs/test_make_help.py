"""`make help` (what a bare `make` prints) lists every target of the Makefile, and only those."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def makefile_targets() -> set[str]:
    """The Makefile's named targets (not its files, not its variables)."""
    return set(re.findall(r"^([a-z][a-z0-9-]*):(?!=)", (ROOT / "Makefile").read_text(), re.MULTILINE))


def test_make_help_lists_every_target_of_the_makefile() -> None:
    result = subprocess.run(["make", "--no-print-directory", "help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, check=True)
    listed = set(re.findall(r"^make ([a-z][a-z0-9-]*)\b", result.stdout, re.MULTILINE))
    targets = makefile_targets()
    assert not targets - listed, f"make help does not list: {', '.join(sorted(targets - listed))}\n{result.stdout}"
    assert not listed - targets, f"make help lists targets the Makefile lacks: {', '.join(sorted(listed - targets))}"


def test_every_target_is_phony() -> None:
    phony = set(" ".join(re.findall(r"^\.PHONY:((?:.*\\\n)*.*)", (ROOT / "Makefile").read_text(),
                                    re.MULTILINE)).replace("\\\n", " ").split())
    assert not makefile_targets() - phony, f"not in .PHONY: {', '.join(sorted(makefile_targets() - phony))}"
