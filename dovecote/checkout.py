"""Give every process started in a checkout the settings `make run` uses (docs/security.md#local-runs).

A checkout is recognized by its services file, var/services.env, which `make services` writes with
the URLs of this machine's PostgreSQL, Apache Artemis and Redis (DOVECOTE_ENV_FILE names another
file; set but empty, none). Where the file is, `load()`:
1. sets each KEY=VALUE line of it that the environment does not set (the caller's environment wins);
2. sets DOVECOTE_HTTPS=false unless the environment sets it: the local services and web server speak
   plain HTTP, and the keys are made once and kept in var/.
Where it is not (a container image, a deployment), nothing is read and production's rules hold: no
DJANGO_SECRET_KEY, no start. The embedded demo (DOVECOTE_DEMO) uses no services and reads no file.

dovecote/settings.py calls `load()` before it reads a variable, so manage.py, the web server, the
Celery worker and beat all get it; the Makefile's targets export the same through
`python -m dovecote.checkout` (which prints `export KEY=VALUE` lines). Standard library only.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SERVICES_FILE = BASE_DIR / "var" / "services.env"
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LOCAL_DEFAULTS = {"DOVECOTE_HTTPS": "false"}


def services_file(environ: Mapping[str, str]) -> Path | None:
    """The services file that makes this a checkout, or None (not a checkout, or the demo)."""
    if environ.get("DOVECOTE_DEMO", "").strip().lower() in {"1", "true", "yes", "on"}:
        return None
    named = environ.get("DOVECOTE_ENV_FILE")
    path = SERVICES_FILE if named is None else Path(named) if named else None
    return path if path is not None and path.is_file() else None


def read(path: Path) -> dict[str, str]:
    """The KEY=VALUE lines of `path` (blank lines, comments and lines without a name are skipped)."""
    pairs = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and NAME.match(key):
            pairs[key] = value
    return pairs


def missing(environ: Mapping[str, str]) -> dict[str, str]:
    """What a checkout adds to `environ`: the services file's variables and the local defaults it lacks."""
    path = services_file(environ)
    if path is None:
        return {}
    return {key: value for key, value in {**read(path), **LOCAL_DEFAULTS}.items() if key not in environ}


def load(environ: MutableMapping[str, str] = os.environ) -> None:
    """Add to `environ` what a checkout adds (nothing outside a checkout)."""
    environ.update(missing(environ))


if __name__ == "__main__":
    sys.stdout.writelines(f"export {key}={shlex.quote(value)}\n" for key, value in missing(os.environ).items())
