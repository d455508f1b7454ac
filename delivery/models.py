"""The delivery log: messages, one delivery per message and subscription, sends and attempts."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models
from django.utils import timezone

from rooms.models import Room
from subscriptions.models import Subscription


class Message(models.Model):
    """An event published to a room, with its payload; the outbox rows hang off it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="messages")
    event_type = models.CharField(max_length=200)
    event_version = models.CharField(max_length=50)
    payload = models.JSONField()
    correlation_id = models.CharField(max_length=200, db_index=True)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["room", "idempotency_key"], name="message_idempotency"),
            models.Index(fields=["room", "-created_at"], name="message_room_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.id}"

    def is_expired(self, now: datetime | None = None) -> bool:
        """Say whether the room's expiration has passed for this message."""
        return self.expires_at is not None and (now or timezone.now()) >= self.expires_at


class Delivery(models.Model):
    """One message on its way to one subscription: the outbox row and its current state."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending (not yet confirmed by the broker)"
        QUEUED = "queued"
        RETRYING = "retrying"
        DELIVERED = "delivered"
        LEASED = "leased"
        ACKED = "acked"
        DEAD_LETTERED = "dead_lettered", "dead-lettered"
        EXPIRED = "expired"

    FINAL_STATUSES = frozenset({Status.DELIVERED, Status.ACKED, Status.DEAD_LETTERED, Status.EXPIRED})

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="deliveries")
    # Kept (set null) when a subscription is deleted, so the log and the reports keep their history.
    subscription = models.ForeignKey(
        Subscription, on_delete=models.SET_NULL, null=True, related_name="deliveries"
    )
    destination = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts started so far.")
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Set while attempt `attempts` is under way, cleared when its outcome is recorded. A frame of
    # that attempt seen again with this still set means the worker died mid-attempt.
    attempt_started_at = models.DateTimeField(null=True, blank=True)
    # Attempts whose worker died before recording an outcome (Mosaic's poison-message counter).
    redelivery_count = models.PositiveIntegerField(default=0)
    # The outbox sweeper's claim on a pending row, so two sweepers never send it together.
    claimed_until = models.DateTimeField(null=True, blank=True)
    # Pull subscriptions: the lease a consumer holds (ack ids carry the token), and until when.
    lease_token = models.CharField(max_length=64, blank=True, default="", db_index=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Times a dead letter was replayed; each replay starts a new life with attempts from 1.
    replays = models.PositiveIntegerField(default=0)
    purged_at = models.DateTimeField(null=True, blank=True, help_text="Removed from the dead letters.")
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "deliveries"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["message", "subscription"], name="delivery_once_per_subscription"),
        ]
        indexes = [
            models.Index(fields=["status", "created_at"], name="delivery_status_age"),
            models.Index(fields=["subscription", "status"], name="delivery_subscription_status"),
            models.Index(fields=["subscription", "-created_at"], name="delivery_subscription_recent"),
            models.Index(fields=["status", "lease_expires_at"], name="delivery_lease_expiry"),
            models.Index(fields=["status", "updated_at"], name="delivery_status_changed"),
        ]

    def __str__(self) -> str:
        return f"{self.destination} {self.message_id} ({self.status})"

    @property
    def is_final(self) -> bool:
        """Say whether this delivery has reached an outcome no worker will change."""
        return self.status in self.FINAL_STATUSES


class PublishedMessage(models.Model):
    """One routing of a delivery: a send to the broker confirmed by its RECEIPT, or its move to the dead letters."""

    class Kind(models.TextChoices):
        PUBLISH = "publish"
        RETRY = "retry"
        # Moved to the dead letters, which PostgreSQL holds (no broker copy): `destination` is the
        # queue it left.
        DEAD_LETTER = "dead_letter", "dead letter"
        REPLAY = "replay"
        # The same attempt put back to be looked at later: another worker may still be on it.
        RECHECK = "recheck"
        # The same attempt sent again by the watchdog (delivery/watchdog.py): the broker had lost its frame.
        RESEND = "resend"

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="sends")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    destination = models.CharField(max_length=200)
    attempt = models.PositiveIntegerField(help_text="The attempt number the frame carries.")
    delay_ms = models.PositiveBigIntegerField(default=0)
    correlation_id = models.CharField(max_length=200)
    sent_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        db_table = "published_messages"
        ordering = ["sent_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.destination} attempt {self.attempt}"


class DeliveryAttempt(models.Model):
    """One try at handing a message to a subscriber: a push POST, or a pull lease."""

    class Outcome(models.TextChoices):
        SUCCESS = "success"
        FAILURE = "failure"  # a non-2xx answer
        TIMEOUT = "timeout"
        CONNECTION_ERROR = "connection_error", "connection error"
        LEASE_EXPIRED = "lease_expired", "lease expired"
        NACKED = "nacked"
        CRASHED = "crashed", "worker crashed"

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    correlation_id = models.CharField(max_length=200, db_index=True)
    life = models.PositiveIntegerField(default=1, help_text="1, then one more after each replay.")
    attempt = models.PositiveIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    duration_ms = models.PositiveIntegerField(default=0)
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    next_delay_ms = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        db_table = "delivery_attempts"
        ordering = ["started_at", "attempt"]
        indexes = [
            models.Index(fields=["delivery", "started_at"], name="attempt_timeline"),
            models.Index(fields=["started_at"], name="attempt_started"),
        ]

    def __str__(self) -> str:
        return f"attempt {self.attempt}: {self.outcome}"

    @property
    def succeeded(self) -> bool:
        return self.outcome == self.Outcome.SUCCESS


class IdempotencyKey(models.Model):
    """A publisher's idempotency key: the same key in the same room within 24 h returns the first reply."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["room", "key"], name="idempotency_key_unique_per_room")]

    def __str__(self) -> str:
        return self.key
