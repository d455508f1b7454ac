"""Print a new key for DOVECOTE_SECRETS_KEY (a Fernet key)."""

from __future__ import annotations

from typing import Any

from cryptography.fernet import Fernet
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Print a new Fernet key for DOVECOTE_SECRETS_KEY (see docs/security.md for rotation)."
    # manage.py runs it without Dovecote's settings (production's refuse to load without the key it makes).
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(Fernet.generate_key().decode())
