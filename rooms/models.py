"""Rooms (topics), the event types they accept, and the API keys that may use them."""

from __future__ import annotations

import functools
import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import connections, models, router
from django.db.models import F, Q
from django.utils import timezone

from rooms import samples
from rooms.schemas import VALIDATORS, BudgetSpent, SchemaRefused, payload_errors, schema_digest


class Room(models.Model):
    """A topic: publishers post events here and every matching subscription gets a copy."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True, default="")
    message_expiration_ms = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Messages not delivered within this many ms expire; null or 0: never."
    )
    delivery_delay_ms = models.PositiveIntegerField(default=1000)
    delivery_delay_multiplier = models.FloatField(default=2.0, validators=[MinValueValidator(1.0)])
    delivery_attempts = models.PositiveIntegerField(
        default=5, help_text="Redeliveries after the first attempt; 0: no redelivery."
    )
    max_delivery_delay_ms = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Cap on the redelivery delay; null: no cap."
    )
    # How long settled messages stay in PostgreSQL before the archive job moves them (delivery/retention.py).
    retention_ms = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Settled messages older than this move to the archive; null: the default."
    )
    # The circuit breaker's defaults for the room's push subscriptions (subscriptions/breaker_rules.py).
    breaker_failure_threshold = models.PositiveIntegerField(
        default=10, help_text="Consecutive failed attempts that open a subscription's breaker; 0: never on this rule."
    )
    breaker_failure_ratio = models.FloatField(
        default=0.5,
        help_text="Failed share of the attempts in the window that opens the breaker; 0: never on this rule.",
    )
    breaker_window_s = models.PositiveIntegerField(default=60, help_text="The failure ratio's window, in seconds.")
    breaker_probe_delay_ms = models.PositiveIntegerField(
        default=5000, help_text="Delay before the first probe of an open breaker, doubled after each failed probe."
    )
    breaker_disable_after_s = models.PositiveIntegerField(
        default=5 * 24 * 3600, help_text="A breaker open this long disables its subscription."
    )
    # Raised whenever the room's event types or subscriptions change: processes that cached what
    # the room's events go to (delivery/routing.py) see the new value and read them again.
    routing_version = models.PositiveBigIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(delivery_delay_multiplier__gte=1.0), name="room_multiplier_at_least_one"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def routing_changed(room_id: int) -> None:
        """Say that where room `room_id`'s events go has changed (a subscription or event type changed)."""
        Room.objects.filter(pk=room_id).update(routing_version=F("routing_version") + 1)

    @property
    def address(self) -> str:
        """Return the broker address of this room."""
        return f"room-{self.pk}"

    def unknown_event_types(self, filters: list[dict[str, Any]]) -> list[str]:
        """Describe each filter (`name`, optional `version`) naming no event type of this room."""
        known = set(self.event_types.values_list("name", "version"))
        names = {name for name, _ in known}
        return [
            f"room {self.pk} has no event type {f['name']!r}"
            + (f" version {f['version']!r}" if f.get("version") else "")
            for f in filters
            if ((f["name"], f["version"]) not in known if f.get("version") else f["name"] not in names)
        ]

    def has_event_type(self, name: str, version: str) -> bool:
        """Say whether this room already has the event type `name` in `version` (each is unique per room)."""
        return self.event_types.filter(name=name, version=version).exists()

    @property
    def effective_retention(self) -> timedelta:
        """Return how long this room's settled messages stay in PostgreSQL: its own retention, or the default."""
        if self.retention_ms is None:
            return timedelta(seconds=settings.DOVECOTE_RETENTION)
        return timedelta(milliseconds=self.retention_ms)

    def expires_at(self, published_at: datetime) -> datetime | None:
        """Return when a message published at `published_at` expires, or None if never."""
        if not self.message_expiration_ms:
            return None
        return published_at + timedelta(milliseconds=self.message_expiration_ms)


class EventType(models.Model):
    """A kind of event a room accepts, by name and version, with an optional JSON Schema."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="event_types")
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=50, default="1")
    schema = models.JSONField(null=True, blank=True)
    # Names the schema's compiled validator in each process (rooms/schemas.py), so that routing can
    # load event types without their schemas and fetch one only when no validator of it is kept.
    schema_digest = models.CharField(max_length=64, blank=True, default="", editable=False,
                                     help_text="SHA-256 of the schema's canonical JSON; empty: no schema.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [
            models.UniqueConstraint(fields=["room", "name", "version"], name="event_type_unique_per_room"),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if "schema" not in self.get_deferred_fields():
            self.schema_digest = schema_digest(self.schema)
            if kwargs.get("update_fields") is not None and "schema" in kwargs["update_fields"]:
                kwargs["update_fields"] = {*kwargs["update_fields"], "schema_digest"}
        super().save(*args, **kwargs)
        Room.routing_changed(self.room_id)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        deleted = super().delete(*args, **kwargs)
        Room.routing_changed(self.room_id)
        return deleted

    def schema_errors(self, payload: Any) -> list[str]:
        """Return what is wrong with `payload` under this type's schema (empty: valid or no schema).

        Inside a check budget (rooms/schemas.py) the payload shares it; a payload that needs more
        steps than are left is refused, saying so.
        """
        if not self.schema_digest:
            return []
        try:
            return payload_errors(VALIDATORS.get(self.schema_digest, self.stored_schema), payload)
        except SchemaRefused as refused:  # stored before today's checks, or by hand: a loop, a remote reference
            return [f"the schema of {self} cannot be applied: {refused}"[:500]]
        except BudgetSpent as spent:
            return [(f"checking the payload against the schema of {self} takes {spent}, more than a publish may "
                     f"spend on its payloads together (DOVECOTE_SCHEMA_CHECK_STEPS): send fewer or smaller "
                     f"payloads, or simplify the schema")]

    def stored_schema(self) -> Any:
        """Return the schema, read from the database when this row was loaded without it (as routing loads them)."""
        if "schema" in self.get_deferred_fields():
            return EventType.objects.filter(pk=self.pk).values_list("schema", flat=True).first()
        return self.schema

    def sample_payload(self) -> Any:
        """Return a payload this type's schema accepts, made from the schema (rooms/samples.py); {} if none is."""
        schema = self.stored_schema()
        if not schema:
            return {"test": True}
        payload = samples.sample(schema)
        return payload if payload is not None and not self.schema_errors(payload) else {}


API_KEY_PREFIX = "dvc_"
LAST_USED_GRANULARITY = timedelta(minutes=1)


def hash_api_key(plaintext: str) -> str:
    """Return the stored form of an API key (keys are random, so a fast hash is safe)."""
    return hashlib.sha256(plaintext.encode()).hexdigest()


class LiveKeyStatement(NamedTuple):
    """The SELECT of `ApiKey.authenticate`, its columns' attributes, and the converters the ORM applies to them."""

    sql: str
    attributes: list[str]
    converters: list[tuple[int, list[Any], Any]]  # (position, the converters, the column they are given)


@functools.cache
def live_key_statement(database: str) -> LiveKeyStatement:
    """The statement of `ApiKey.authenticate` on `database`: the key whose hash it is, not revoked.

    Every concrete column, converted as Django's SQL compiler converts a column it reads (the backend's
    converters, then the field's), so the key it builds is the one `ApiKey.objects.get` would return.
    """
    connection = connections[database]
    quote = connection.ops.quote_name
    table = ApiKey._meta.db_table
    fields = ApiKey._meta.concrete_fields
    quoted = {field.attname: quote(str(field.column)) for field in fields}
    sql = (f"SELECT {', '.join(quoted.values())} FROM {quote(table)}"
           f" WHERE {quoted['key_hash']} = %s AND {quoted['revoked_at']} IS NULL")
    columns = [field.get_col(table) for field in fields]
    converters = [(position, found, column) for position, column in enumerate(columns)
                  if (found := connection.ops.get_db_converters(column) + column.get_db_converters(connection))]
    return LiveKeyStatement(sql, list(quoted), converters)


class ApiKey(models.Model):
    """A bearer key for the REST API: admin keys manage everything, others only their rooms."""

    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=16, help_text="The first characters, to recognise a key.")
    key_hash = models.CharField(max_length=64, unique=True)
    is_admin = models.BooleanField(default=False)
    rooms = models.ManyToManyField(Room, blank=True, related_name="api_keys")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, name: str, *, rooms: list[Room] | None = None, is_admin: bool = False) -> tuple[ApiKey, str]:
        """Create a key and return it with its plaintext, which is never stored."""
        plaintext = API_KEY_PREFIX + secrets.token_urlsafe(30)
        key = cls.objects.create(
            name=name, prefix=plaintext[:12], key_hash=hash_api_key(plaintext), is_admin=is_admin
        )
        if rooms:
            key.rooms.set(rooms)
        return key, plaintext

    @classmethod
    def authenticate(cls, plaintext: str) -> ApiKey | None:
        """Return the live key for `plaintext`, or None.

        Every API request but a publish asks this (the publish lane keeps the keys it has read), so it
        runs a statement written once (`live_key_statement`) rather than a queryset built and compiled
        for each request: about 130 µs of a request's CPU against 400–470 on this project's two cores.
        """
        if not plaintext.startswith(API_KEY_PREFIX):
            return None
        database = router.db_for_read(cls)
        statement = live_key_statement(database)
        connection = connections[database]
        with connection.cursor() as cursor:
            cursor.execute(statement.sql, [hash_api_key(plaintext)])
            row = cursor.fetchone()
        if row is None:
            return None
        values = list(row)
        for position, converters, column in statement.converters:  # none on PostgreSQL; SQLite's dates and booleans
            for convert in converters:
                values[position] = convert(values[position], column, connection)
        return cls.from_db(database, statement.attributes, values)

    def mark_used(self, now: datetime | None = None) -> None:
        """Record when the key was last used, at most once a minute (a write per request is too many).

        The caller that finds the mark due takes it before it writes: the requests that share this
        (cached) key meanwhile find it done, rather than each writing the same row in turn.
        """
        now = now or timezone.now()
        last = self.last_used_at
        if last is None or now - last >= LAST_USED_GRANULARITY:
            self.last_used_at = now
            try:
                ApiKey.objects.filter(pk=self.pk).update(last_used_at=now)
            except BaseException:
                self.last_used_at = last  # not written: the next request tries again
                raise

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def revoke(self) -> None:
        """Stop this key from authenticating."""
        self.revoked_at = timezone.now()
        self.save(update_fields=["revoked_at"])

    def usable_rooms(self) -> models.QuerySet[Room]:
        """Return the rooms this key may use: all for an admin key, else those named on it."""
        if self.is_revoked:
            return Room.objects.none()
        return Room.objects.all() if self.is_admin else Room.objects.filter(api_keys=self)

    def can_use_room(self, room_id: int) -> bool:
        """Say whether this key may publish to and read room `room_id`."""
        if self.is_revoked:
            return False
        return self.is_admin or self.rooms.filter(pk=room_id).exists()
