#!/usr/bin/env python
"""Django's command-line utility for administrative tasks.

In a checkout (var/services.env), every command uses the services and settings `make run` uses
(dovecote/checkout.py); run it with the project's virtualenv: `.venv/bin/python manage.py …`.
"""

from __future__ import annotations

import os
import sys

# It prints a new key of the kind production's settings refuse to start without: it must not need them.
KEY_MAKER = "generate_secrets_key"


def main() -> None:
    try:
        from django.conf import settings
        from django.core.management import execute_from_command_line
    except ImportError:
        sys.exit(f"Django is not installed for {sys.executable}: run `make venv`, then `.venv/bin/python manage.py "
                 f"{' '.join(sys.argv[1:])}`")
    if sys.argv[1:2] == [KEY_MAKER]:
        settings.configure()  # Django's defaults: no key, no database, no app
        from subscriptions.management.commands.generate_secrets_key import Command

        Command().run_from_argv(sys.argv)
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dovecote.settings")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
