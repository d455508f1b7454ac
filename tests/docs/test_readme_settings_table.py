"""Every setting the code reads from the environment is in the README's configuration table, and the
table names none the code does not read: a user finds each variable there, with its default."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Where the product reads its settings: the apps, the project package, manage.py, the process scripts and the
# Makefile's recipes.
CODE = ["api", "analytics", "console", "delivery", "demo", "dovecote", "rooms", "subscriptions"]
PYTHON_READS = [
    re.compile(r"""\benv_[a-z_]+\(\s*["']([A-Z][A-Z0-9_]+)["']"""),  # dovecote/env.py's helpers
    re.compile(r"""\bchecked_secret_key\(\s*["']([A-Z][A-Z0-9_]+)["']"""),
    re.compile(r"""\benviron(?:\.get\(|\[)\s*["']([A-Z][A-Z0-9_]+)["']"""),  # os.environ / an environ mapping
    re.compile(r"""\bos\.getenv\(\s*["']([A-Z][A-Z0-9_]+)["']"""),
]
SHELL_READ = re.compile(r"\$\{([A-Z][A-Z0-9_]*)(?::?[-=?+])")  # ${NAME:-default} in bin/
# Read by the code but not settings of Dovecote's: the system's PATH, and the name honcho gives each process it
# starts (bin/worker names its Celery node for it).
NOT_SETTINGS = {"PATH", "HONCHO_PROCESS_NAME"}
SECTION = "## Configuration"


def settings_read_by_the_code() -> dict[str, str]:
    """Each variable the product reads, with the first file that reads it."""
    found: dict[str, str] = {}
    files = [path for app in CODE for path in sorted((ROOT / app).rglob("*.py")) if "migrations" not in path.parts]
    for path in [*files, ROOT / "manage.py"]:
        for pattern in PYTHON_READS:
            for name in pattern.findall(path.read_text()):
                found.setdefault(name, str(path.relative_to(ROOT)))
    for path in [*sorted((ROOT / "bin").iterdir()), ROOT / "Makefile"]:  # make's $${NAME:-…} too (make run's)
        for name in SHELL_READ.findall(path.read_text()):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return {name: where for name, where in found.items() if name not in NOT_SETTINGS}


def settings_in_the_readme() -> set[str]:
    """The variables the first column of the README's configuration table names."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index(SECTION):]
    section = section[:section.index("\n## ", len(SECTION))]
    first_cells = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {name for cell in first_cells for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cell)}


def test_every_setting_the_code_reads_is_in_the_readmes_table() -> None:
    read, listed = settings_read_by_the_code(), settings_in_the_readme()
    missing = {name: where for name, where in read.items() if name not in listed}
    named = ", ".join(f"{name} (read in {where})" for name, where in sorted(missing.items()))
    assert not missing, ("settings read by the code but missing from the README's configuration table "
                         f"(add a row: | `NAME` | default | meaning |): {named}")


def test_the_readmes_table_names_no_setting_the_code_does_not_read() -> None:
    stale = settings_in_the_readme() - set(settings_read_by_the_code())
    assert not stale, f"the README's configuration table lists settings nothing reads: {', '.join(sorted(stale))}"
