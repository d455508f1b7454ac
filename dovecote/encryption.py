"""Secrets kept encrypted at rest: Fernet (AES-128-CBC with HMAC-SHA256) under the keys of DOVECOTE_SECRETS_KEY.

A stored value reads `fernet:<token>`. The first key encrypts; every key listed decrypts, so a key
is rotated by putting a new one first, re-encrypting (`manage.py reencrypt_secrets`), then dropping
the old one (docs/security.md). A value without the prefix is a plaintext row from before
encryption, read as it is until the migration or `reencrypt_secrets` encrypts it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models

PREFIX = "fernet:"


class SecretUnreadable(Exception):
    """A stored secret none of the configured keys decrypts."""


@lru_cache(maxsize=4)
def _cipher(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def cipher() -> MultiFernet:
    return _cipher(tuple(settings.DOVECOTE_SECRETS_KEYS))


def encrypt(plaintext: str) -> str:
    return PREFIX + cipher().encrypt(plaintext.encode()).decode()


def decrypt(stored: str) -> str:
    """Return the plaintext of a stored value (a legacy plaintext value is returned as it is)."""
    if not stored.startswith(PREFIX):
        return stored
    return _decrypted(tuple(settings.DOVECOTE_SECRETS_KEYS), stored)


# A push engine rereads its sessions' subscriptions every second: with a thousand of them, decrypting
# their secrets each time was ~5 % of the worker's CPU (make bench PROFILE=1). A token always
# decrypts to the same plaintext, which the sessions hold in memory anyway; keyed by the keys too.
@lru_cache(maxsize=8192)
def _decrypted(keys: tuple[str, ...], stored: str) -> str:
    try:
        return _cipher(keys).decrypt(stored.removeprefix(PREFIX).encode()).decode()
    except InvalidToken:
        raise SecretUnreadable("a stored secret was encrypted with a key that is not in DOVECOTE_SECRETS_KEY: "
                               "add that key back (after the current one)") from None


def is_encrypted_with_current_key(stored: str) -> bool:
    """Say whether `stored` is encrypted under the first (current) key."""
    if not stored.startswith(PREFIX):
        return False
    try:
        Fernet(settings.DOVECOTE_SECRETS_KEYS[0]).decrypt(stored.removeprefix(PREFIX).encode())
    except InvalidToken:
        return False
    return True


class EncryptedTextField(models.TextField):
    """A text column whose value is encrypted on the way to the database and decrypted on the way back.

    Lookups on it match nothing (every encryption differs): it holds secrets, which nothing searches.
    """

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        return None if value is None else decrypt(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        if value is None or value == "" or str(value).startswith(PREFIX):
            return value
        return encrypt(str(value))
