from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from rooms.models import ApiKey
from tests.factories import make_room

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("create_api_key", *args, stdout=out)
    return out.getvalue()


def test_the_key_is_the_last_line_and_authenticates() -> None:
    room = make_room()
    plaintext = run("--name", "shop", "--room", str(room.pk)).strip().splitlines()[-1]
    key = ApiKey.authenticate(plaintext)
    assert key is not None and key.name == "shop" and not key.is_admin
    assert list(key.rooms.all()) == [room]


def test_an_admin_key_needs_no_room() -> None:
    plaintext = run("--name", "ops", "--admin").strip().splitlines()[-1]
    assert ApiKey.authenticate(plaintext).is_admin


def test_an_unknown_room_is_named_and_no_key_is_made() -> None:
    with pytest.raises(CommandError, match="no room with id 999"):
        run("--name", "shop", "--room", "999")
    assert not ApiKey.objects.exists()


def test_a_key_with_neither_rooms_nor_admin_is_refused() -> None:
    with pytest.raises(CommandError, match="--admin, or at least one --room"):
        run("--name", "shop")
