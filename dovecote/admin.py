"""The Django admin's rule for Dovecote's models: look, never write, never see a secret.

Rooms, subscriptions, keys and deliveries change only through the API and the console, which hold
the rules (push URLs that may be reached, the rooms' bounds, key scopes fixed at creation) and
the workflows (a deleted subscription's queue emptied, a revoked key). The admin is where an
operator inspects rows, grants permissions to users and groups, and takes the few actions a model
admin declares itself (revoking keys), each behind its own permission. It never shows a field that
holds a secret, encrypted or hashed: those are left out of every page, whatever the model admin lists.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from dovecote.encryption import EncryptedTextField


class InspectOnly:
    """Refuse adding, changing and deleting rows in the admin, and leave out every secret field.

    A secret field is an EncryptedTextField or one named in `secret_fields` (hashes, tokens).
    """

    secret_fields: tuple[str, ...] = ()

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        fields = super().get_fields(request, obj)  # type: ignore[misc]
        return [name for name in fields if not self.is_secret(name)]

    def is_secret(self, name: str) -> bool:
        model = self.model  # type: ignore[attr-defined]
        field = next((f for f in model._meta.concrete_fields if name in (f.name, f.attname)), None)
        return name in self.secret_fields or isinstance(field, EncryptedTextField)


class InspectOnlyAdmin(InspectOnly, admin.ModelAdmin):
    """A model admin that shows rows and changes none (see InspectOnly)."""


class InspectOnlyInline(InspectOnly, admin.TabularInline):
    """An inline that shows rows and changes none (see InspectOnly)."""

    extra = 0
    can_delete = False
