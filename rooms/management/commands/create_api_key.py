"""Create an API key and print it as the last line (it is shown only once)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rooms.models import ApiKey, Room


class Command(BaseCommand):
    help = "Create an API key. --admin keys manage every room; others only the rooms named with --room."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="What the key is for, e.g. the publishing service.")
        parser.add_argument(
            "--room", dest="rooms", type=int, action="append", default=[], metavar="ROOM_ID",
            help="A room the key may publish to and read (repeat for several).",
        )
        parser.add_argument("--admin", action="store_true", help="The key may manage every room.")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["name"].strip()
        if not name:
            raise CommandError("--name must not be empty")
        room_ids: list[int] = options["rooms"]
        if not room_ids and not options["admin"]:
            raise CommandError("give --admin, or at least one --room ROOM_ID the key may use")
        rooms = list(Room.objects.filter(pk__in=room_ids))
        unknown = sorted(set(room_ids) - {room.pk for room in rooms})
        if unknown:
            raise CommandError(f"no room with id {', '.join(map(str, unknown))}")
        key, plaintext = ApiKey.issue(name, rooms=rooms, is_admin=options["admin"])
        scope = "admin (every room)" if key.is_admin else "rooms " + ", ".join(str(r.pk) for r in rooms)
        self.stdout.write(f"Created API key {key.name!r} ({scope}). Store it now: it is not shown again.")
        self.stdout.write(plaintext)
