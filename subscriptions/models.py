"""Subscriptions: who gets a room's events, how (push or pull), and with which retry settings."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import connections, models
from django.db.models import F, Q, Value
from django.db.models.expressions import RawSQL
from django.utils import timezone

from dovecote.encryption import EncryptedTextField
from rooms.models import Room
from subscriptions.breaker_rules import BreakerPolicy
from subscriptions.retry import RetryPolicy


def new_signing_secret() -> str:
    """Return a Standard Webhooks secret: `whsec_` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


class SubscriptionQuerySet(models.QuerySet["Subscription"]):
    """The moves of a subscription's status, breaker and throttle: each one conditional UPDATE, True if it applied.

    These are the only writes of those columns (the methods of Subscription and the push session
    call them): each applies only to the row as its writer saw it, so two writers that cross
    (an operator and a worker, two sessions, the sweep and a probe) never overwrite each other.
    A reader that keeps subscriptions in memory learns of any write by the rows' versions (`row_version_sql`).
    """

    def move_status(self, pk: int, was: tuple[str, str], to: tuple[str, str], now: datetime) -> bool:
        """Set status and reason to `to` if they are still `was`."""
        return bool(self.filter(pk=pk, status=was[0], status_reason=was[1]).update(
            status=to[0], status_reason=to[1], updated_at=now))

    def move_breaker(self, pk: int, was: str, changes: dict[str, Any]) -> bool:
        """Apply a breaker transition's `changes` if the breaker is still in state `was`."""
        return bool(self.filter(pk=pk, breaker_state=was).update(**changes))

    def keep_open(self, pk: int, was: str, opened_at: datetime | None, reason: str) -> bool:
        """Hold the breaker open with no probe to come, if it is still `was` since `opened_at` (a disable's)."""
        return bool(self.filter(pk=pk, breaker_state=was, breaker_opened_at=opened_at).update(
            breaker_state=Subscription.Breaker.OPEN, breaker_next_probe_at=None, breaker_reason=reason))

    def add_failures(self, pk: int, added: int, *, reset: bool) -> int:
        """Add a push session's consecutive failures to the row's count (restart it at `added` after a success).

        An addition, never an overwrite: the sessions of a hot subscription on several workers count into
        one sum. Return the count as it is now.
        """
        count = Value(added) if reset else F("breaker_failures") + added
        self.filter(pk=pk).update(breaker_failures=count)
        return self.filter(pk=pk).values_list("breaker_failures", flat=True).first() or 0

    def throttle(self, pk: int, until: datetime) -> bool:
        """Pause pushes to the subscription until `until` (a receiver's Retry-After), never shortening a pause."""
        return bool(self.filter(Q(throttled_until__isnull=True) | Q(throttled_until__lt=until), pk=pk).update(
            throttled_until=until))

    def with_versions(self) -> SubscriptionQuerySet:
        """These subscriptions with their rooms, each with `row_version`: its row's and its room's (row_version_sql)."""
        rows = self.select_related("room")
        if connections[self.db].vendor != "postgresql":
            return rows.annotate(row_version=Value(None, output_field=models.TextField()))
        return rows.annotate(row_version=RawSQL(row_version_sql(Subscription._meta.db_table, Room._meta.db_table), ()))


def row_version_sql(subscription: str, room: str) -> str:
    """SQL for the version of a subscription's row with its room's (tables or aliases named): both rows' xmin.

    PostgreSQL gives a row a new xmin at every write, whoever writes it (these moves, a save, a routing
    change, an operator's SQL): a reader that keeps the version it read rereads a subscription only after
    a write (the push engine's renewal, every second, for every session; delivery/push/claims.py).
    Other databases have none: their readers always reread.
    """
    return f"{subscription}.xmin::text || '/' || {room}.xmin::text"


class Subscription(models.Model):
    """A consumer of a room's events, with its event-type filter and delivery overrides."""

    class Type(models.TextChoices):
        PUSH = "push"
        PULL = "pull"

    class Ordering(models.TextChoices):
        OFF = "off", "off (no order)"
        # One event per ordering key at a time, in publish order; a dead letter lets its key move on.
        ON = "on", "on (a dead letter lets its key move on)"
        # The same, but a dead letter parks its key until an operator replays it or releases the key.
        PARK = "park", "on (a dead letter parks its key)"

    class Status(models.TextChoices):
        ACTIVE = "active"
        PAUSED = "paused"
        DISABLED = "disabled"

    class Breaker(models.TextChoices):
        CLOSED = "closed"
        OPEN = "open"
        HALF_OPEN = "half_open"

    class OnDisable(models.TextChoices):
        HOLD = "hold"  # pending deliveries wait for a resume
        DEAD_LETTER = "dead_letter"  # pending deliveries are dead-lettered with the reason

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="subscriptions")
    name = models.CharField(max_length=200)
    type = models.CharField(max_length=10, choices=Type.choices)
    push_url = models.URLField(max_length=2000, blank=True, default="")
    # [{"name": "order.created", "version": "1"}]; empty: every event; no "version": every version.
    event_types = models.JSONField(default=list, blank=True)
    # A payload filter (subscriptions/filters.py) on top of the event types; null: none.
    payload_filter = models.JSONField(null=True, blank=True)
    # Per ordering key, one event at a time in publish order (delivery/sequencing.py).
    ordering = models.CharField(max_length=10, choices=Ordering.choices, default=Ordering.OFF)
    delivery_delay_ms = models.PositiveIntegerField(null=True, blank=True)
    delivery_delay_multiplier = models.FloatField(null=True, blank=True, validators=[MinValueValidator(1.0)])
    delivery_attempts = models.PositiveIntegerField(null=True, blank=True)
    max_delivery_delay_ms = models.PositiveBigIntegerField(null=True, blank=True)
    max_in_flight = models.PositiveIntegerField(default=10, validators=[MinValueValidator(1)])
    timeout_ms = models.PositiveIntegerField(default=10_000, validators=[MinValueValidator(1)])
    # POSTs per second at most, across every worker (delivery/push/rate.py); null: no limit.
    max_per_second = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    # A 429 or 503 with Retry-After pauses the whole subscription until then (delivery/push/session.py).
    throttled_until = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    status_reason = models.TextField(blank=True, default="")
    # Encrypted at rest with DOVECOTE_SECRETS_KEY (dovecote/encryption.py); plaintext on the instance.
    signing_secret = EncryptedTextField(default=new_signing_secret)
    # After a rotation, the secret it replaced keeps signing too (a second signature) until this time.
    previous_signing_secret = EncryptedTextField(blank=True, default="")
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    # Raised by every change of the secrets above. The push path reads it with each delivery it claims, and
    # a session holding older secrets rereads them before signing: a rotation counts from the next attempt.
    secret_version = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    last_error_at = models.DateTimeField(null=True, blank=True)
    # The circuit breaker (subscriptions/breaker_rules.py): overrides of the room's settings (null: the room's)…
    breaker_failure_threshold = models.PositiveIntegerField(null=True, blank=True)
    breaker_failure_ratio = models.FloatField(null=True, blank=True)
    breaker_window_s = models.PositiveIntegerField(null=True, blank=True)
    breaker_probe_delay_ms = models.PositiveIntegerField(null=True, blank=True)
    breaker_disable_after_s = models.PositiveIntegerField(null=True, blank=True)
    breaker_on_disable = models.CharField(max_length=12, choices=OnDisable.choices, default=OnDisable.HOLD)
    # …and its state, written only by SubscriptionQuerySet's moves (the failure count by the push session).
    breaker_state = models.CharField(max_length=10, choices=Breaker.choices, default=Breaker.CLOSED)
    breaker_reason = models.TextField(blank=True, default="")  # why it is in this state: the last transition's
    breaker_failures = models.PositiveIntegerField(default=0)  # consecutive failed attempts
    breaker_opened_at = models.DateTimeField(null=True, blank=True)
    breaker_probes = models.PositiveIntegerField(default=0)  # failed probes since it opened
    breaker_next_probe_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SubscriptionQuerySet.as_manager()

    class Meta:
        ordering = ["room_id", "name"]
        # Beside Django's add/change/delete: pausing stops deliveries without changing where they go.
        permissions = [("pause_subscription", "Can pause and resume subscriptions")]
        constraints = [
            models.UniqueConstraint(fields=["room", "name"], name="subscription_name_unique_per_room"),
            models.CheckConstraint(
                condition=Q(delivery_delay_multiplier__isnull=True) | Q(delivery_delay_multiplier__gte=1.0),
                name="subscription_multiplier_at_least_one",
            ),
            models.CheckConstraint(condition=Q(max_in_flight__gte=1), name="subscription_max_in_flight_positive"),
            models.CheckConstraint(condition=Q(timeout_ms__gte=1), name="subscription_timeout_positive"),
        ]
        indexes = [models.Index(fields=["room", "status"])]

    def __str__(self) -> str:
        return f"{self.room_id}/{self.name}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        if set(kwargs.get("update_fields") or ["all"]) - NOT_ROUTING:
            Room.routing_changed(self.room_id)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        deleted = super().delete(*args, **kwargs)
        Room.routing_changed(self.room_id)
        return deleted

    @property
    def destination(self) -> str:
        """Return the fully qualified broker queue name, `room-{r}::subscription-{s}`."""
        return f"room-{self.room_id}::subscription-{self.pk}"

    @property
    def retry_policy(self) -> RetryPolicy:
        """Return the effective delivery settings: each override, else the room's value."""
        room = self.room
        return RetryPolicy(
            delay_ms=_first_set(self.delivery_delay_ms, room.delivery_delay_ms),
            multiplier=_first_set(self.delivery_delay_multiplier, room.delivery_delay_multiplier),
            attempts=_first_set(self.delivery_attempts, room.delivery_attempts),
            max_delay_ms=_first_set(self.max_delivery_delay_ms, room.max_delivery_delay_ms),
        )

    @property
    def is_ordered(self) -> bool:
        return self.ordering != self.Ordering.OFF

    @property
    def breaker_policy(self) -> BreakerPolicy:
        """Return the effective breaker settings: each override, else the room's value."""
        room = self.room
        ratio = _first_set(self.breaker_failure_ratio, room.breaker_failure_ratio)
        return BreakerPolicy(
            failure_threshold=_first_set(self.breaker_failure_threshold, room.breaker_failure_threshold),
            failure_ratio=ratio or None,
            window_s=_first_set(self.breaker_window_s, room.breaker_window_s),
            probe_delay_ms=_first_set(self.breaker_probe_delay_ms, room.breaker_probe_delay_ms),
            disable_after_s=_first_set(self.breaker_disable_after_s, room.breaker_disable_after_s),
        )

    @property
    def breaker_is_closed(self) -> bool:
        return self.breaker_state == self.Breaker.CLOSED

    def move_breaker(self, to: str, reason: str, *, now: datetime, delivery_id: int | None = None,
                     attempt: int | None = None, failures: int | None = None) -> bool:
        """Move the breaker to `to` from this instance's state and record it; False if it moved meanwhile.

        Opening (from closed) starts the probe schedule; reopening (a failed probe) counts a failed
        probe and schedules the next; half-open probes now; closing forgets the outage.
        """
        Breaker = self.Breaker
        changes: dict[str, Any] = {"breaker_state": to, "breaker_reason": reason}
        if to == Breaker.OPEN:
            reopened = self.breaker_state != Breaker.CLOSED
            probes = self.breaker_probes + 1 if reopened else 0
            changes.update(breaker_probes=probes, breaker_opened_at=self.breaker_opened_at if reopened else now,
                           breaker_next_probe_at=now + timedelta(milliseconds=self.breaker_policy.probe_delay(probes)))
        elif to == Breaker.HALF_OPEN:
            changes.update(breaker_next_probe_at=None)
        else:
            changes.update(breaker_failures=0, breaker_probes=0, breaker_opened_at=None, breaker_next_probe_at=None)
        if failures is not None and to != Breaker.CLOSED:
            changes["breaker_failures"] = failures
        if not Subscription.objects.move_breaker(self.pk, self.breaker_state, changes):
            return False
        BreakerTransition.objects.create(subscription=self, at=now, from_state=self.breaker_state, to_state=to,
                                         reason=reason, delivery_id=delivery_id, attempt=attempt)
        for field, value in changes.items():
            setattr(self, field, value)
        return True

    def disable_by_breaker(self, reason: str, *, now: datetime) -> bool:
        """Disable the subscription because its breaker stayed open too long; the breaker stays open, recorded.

        False, and nothing done, if the breaker moved since this instance read it (a probe closed it,
        an operator's resume made it half-open): the outage it was read in is over.
        """
        if not Subscription.objects.keep_open(self.pk, self.breaker_state, self.breaker_opened_at, reason):
            return False
        BreakerTransition.objects.create(subscription=self, at=now, from_state=self.breaker_state,
                                         to_state=self.Breaker.OPEN, reason=reason)
        self.breaker_state, self.breaker_next_probe_at, self.breaker_reason = self.Breaker.OPEN, None, reason
        self.disable(reason)
        return True

    def breaker_history(self, limit: int = 50) -> list[BreakerTransition]:
        """The breaker's latest transitions, newest first."""
        return list(self.breaker_transitions.order_by("-at", "-pk")[:limit])

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE

    def matches(self, event_type: str, event_version: str) -> bool:
        """Say whether an event of this type and version passes the subscription's filter."""
        if not self.event_types:
            return True
        return any(
            f.get("name") == event_type and f.get("version") in (None, "", event_version)
            for f in self.event_types
        )

    def pause(self, *, by: str) -> None:
        """Hold this subscription's deliveries until it is resumed (what is published meanwhile is kept for it),
        saying who paused it, where and when (`by`: "by ann in the web UI"); a disabled one keeps the reason it
        was disabled."""
        def paused(status: str, reason: str) -> tuple[str, str] | None:
            if status == self.Status.PAUSED:
                return None
            if status == self.Status.ACTIVE:
                reason = f"paused {by} on {timezone.now():%Y-%m-%d %H:%M:%S} UTC"
            return self.Status.PAUSED, reason

        self.move_status(paused)

    def resume(self) -> None:
        """Make a paused or disabled subscription active again and forget why it stopped.

        An open breaker becomes half-open: the first attempt after the resume is its probe.
        """
        if self.breaker_state == self.Breaker.OPEN:
            self.move_breaker(self.Breaker.HALF_OPEN, "the subscription was resumed: the next attempt probes",
                              now=timezone.now())
        self.move_status(lambda status, reason: None if status == self.Status.ACTIVE and not reason
                         else (self.Status.ACTIVE, ""))

    def disable(self, reason: str) -> None:
        """Hold deliveries until resumed (as a pause does), keeping the reason for the operator."""
        self.move_status(lambda status, was: None if (status, was) == (self.Status.DISABLED, reason)
                         else (self.Status.DISABLED, reason))

    def move_status(self, to: Callable[[str, str], tuple[str, str] | None]) -> bool:
        """Move status and reason to what `to` makes of the row's, as a compare-and-set; False if nothing changed.

        An operator's pause in the web process and a 410's disable in a worker can cross: a move that
        finds the row changed since this instance read it reads it again and applies `to` to that, so
        neither overwrites the other (a pause after a 410 keeps the 410's reason; a 410 after a pause
        disables). Every move changes where events go (Room.routing_changed), as a save would.
        """
        for _ in range(STATUS_MOVE_TRIES):
            target = to(self.status, self.status_reason)
            if target is None:
                return False
            now = timezone.now()
            if Subscription.objects.move_status(self.pk, (self.status, self.status_reason), target, now):
                (self.status, self.status_reason), self.updated_at = target, now
                Room.routing_changed(self.room_id)
                return True
            self.refresh_from_db(fields=["status", "status_reason"])
        raise RuntimeError(f"subscription {self.pk}'s status kept changing under {STATUS_MOVE_TRIES} moves")

    def record_error(self, error: str) -> None:
        """Keep the last delivery error where the UI can show it."""
        self.last_error = error
        self.last_error_at = timezone.now()
        self.save(update_fields=["last_error", "last_error_at"])

    def masked_secret(self) -> str | None:
        """Return the start of a push subscription's signing secret, enough to tell secrets apart (None for pull)."""
        if self.type != self.Type.PUSH:
            return None
        return self.signing_secret[:SHOWN_SECRET_CHARS] + "…"

    def rotate_signing_secret(self, overlap: timedelta | None = None) -> str:
        """Replace the signing secret and return the new one; the old one keeps signing for `overlap`.

        `overlap` defaults to DOVECOTE_SECRET_OVERLAP_SECONDS; zero ends the old secret at once. A
        rotation during an overlap drops the oldest secret: at most two sign a push.
        """
        if overlap is None:
            overlap = timedelta(seconds=settings.DOVECOTE_SECRET_OVERLAP_SECONDS)
        if overlap > timedelta(0):
            self.previous_signing_secret = self.signing_secret
            self.previous_secret_until = timezone.now() + overlap
        else:
            self.previous_signing_secret, self.previous_secret_until = "", None
        self.signing_secret = new_signing_secret()
        self._save_secrets()
        return self.signing_secret

    def end_secret_overlap(self) -> None:
        """Stop signing with the previous secret now, before its overlap window ends."""
        self.previous_signing_secret, self.previous_secret_until = "", None
        self._save_secrets()

    def _save_secrets(self) -> None:
        """Save the signing secrets and raise their version, which tells every push session to reread them."""
        self.secret_version = models.F("secret_version") + 1
        self.save(update_fields=[*SECRET_FIELDS, "updated_at"])
        self.refresh_from_db(fields=["secret_version"])

    def old_secret_until(self, now: datetime | None = None) -> datetime | None:
        """When the previous secret stops signing, if it still does (None: only the current one signs)."""
        if self.previous_secret_until is None or not self.previous_signing_secret:
            return None
        return self.previous_secret_until if self.previous_secret_until > (now or timezone.now()) else None

    def signing_secrets(self, now: datetime | None = None) -> tuple[str, ...]:
        """The secrets a push is signed with now: the current one, and the previous one during its overlap."""
        if self.old_secret_until(now) is None:
            return (self.signing_secret,)
        return (self.signing_secret, self.previous_signing_secret)


class BreakerTransition(models.Model):
    """One change of a subscription's circuit breaker: when, from and to which state, why, and which attempt."""

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="breaker_transitions")
    at = models.DateTimeField()
    from_state = models.CharField(max_length=10, choices=Subscription.Breaker.choices)
    to_state = models.CharField(max_length=10, choices=Subscription.Breaker.choices)
    reason = models.TextField()
    # The attempt that caused it (none for a probe time that came, a resume, a disable); kept as plain
    # ids because deliveries live in delivery/, above this app.
    delivery_id = models.BigIntegerField(null=True, blank=True)
    attempt = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["subscription", "at"])]

    def __str__(self) -> str:
        return f"{self.subscription_id}: {self.from_state} → {self.to_state} at {self.at:%Y-%m-%d %H:%M:%S}"


# What signs a push: written together (Subscription._save_secrets), reread together by a push session.
SECRET_FIELDS = ("signing_secret", "previous_signing_secret", "previous_secret_until", "secret_version")
SHOWN_SECRET_CHARS = len("whsec_") + 4  # of a signing secret, where it is not shown in full
# Fields a save may change without changing where its room's events go (the last error, per failure).
NOT_ROUTING = frozenset({"last_error", "last_error_at"})
STATUS_MOVE_TRIES = 10  # a status move that finds the row changed reads it again, at most this often


def _first_set[T](override: T | None, default: T) -> T:
    return default if override is None else override
