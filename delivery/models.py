"""The delivery log: messages, one delivery per message and subscription, sends and attempts."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connection, connections, models, transaction
from django.db.models import Case, Count, F, OuterRef, Subquery, Value, When
from django.db.models.expressions import Col
from django.db.models.functions import Coalesce
from django.db.models.lookups import Exact, In
from django.db.models.sql import Query, UpdateQuery
from django.db.models.sql.where import AND
from django.utils import timezone

from delivery.statements import (
    CLAIM_FRESH_SQL,
    RECORD_DELIVERED_SQL,
    FreshClaim,
    claim_params,
    delivered_params,
)
from dovecote.lookups import AnyOf
from dovecote.pg_arrays import array
from rooms.models import Room
from subscriptions.models import Subscription


class Message(models.Model):
    """An event published to a room, with its payload; the outbox rows hang off it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own for a foreign key, here and below, where an index of the model leads with it.
    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="messages", db_index=False)
    event_type = models.CharField(max_length=200)
    event_version = models.CharField(max_length=50)
    payload = models.JSONField()
    correlation_id = models.CharField(max_length=200)  # indexed below: equality only, so no LIKE index
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - null: none given
    # Events of one key reach an ordered subscription one at a time, in publish order ("": none).
    ordering_key = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # The W3C trace context of its publish (dovecote/tracing.py), sent with each of its frames and pushes.
    traceparent = models.CharField(max_length=55, blank=True, default="", db_default="")

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["room", "idempotency_key"], name="message_idempotency"),
            models.Index(fields=["room", "-created_at"], name="message_room_recent"),
            models.Index(fields=["correlation_id"], name="message_correlation"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.id}"

    def is_expired(self, now: datetime | None = None) -> bool:
        """Say whether the room's expiration has passed for this message."""
        return self.expires_at is not None and (now or timezone.now()) >= self.expires_at


@dataclass(slots=True)
class MessageState:
    """What the delivery path reads of a message: everything but the payload, which its frames carry."""

    id: uuid.UUID
    correlation_id: str
    event_type: str
    event_version: str
    room_id: int
    expires_at: datetime | None
    created_at: datetime  # when it was published (the delivery latency counts from here)
    traceparent: str

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expires_at is not None and (now or timezone.now()) >= self.expires_at


@dataclass(slots=True)
class DeliveryState:
    """A delivery row as the frame rules and the recording of outcomes read it, without a model's cost.

    Push sessions judge and record thousands of these a second; reading them with `values_list`
    instead of as model instances saves most of the ORM's time per delivery. `Delivery.objects.states`
    reads them.
    """

    pk: int
    status: str
    subscription_id: int | None
    message_id: uuid.UUID
    destination: str
    attempts: int
    attempt_started_at: datetime | None
    crashed_attempts: int
    replays: int
    message: MessageState
    ordering_key: str = ""
    secret_version: int = 0  # its subscription's, when the row was read (Subscription.secret_version)

    @property
    def is_final(self) -> bool:
        return self.status in Delivery.FINAL_STATUSES


STATE_FIELDS = ("pk", "status", "subscription_id", "message_id", "destination", "attempts", "attempt_started_at",
                "crashed_attempts", "replays", "message__correlation_id", "message__event_type",
                "message__event_version", "message__room_id", "message__expires_at", "message__created_at",
                "message__traceparent", "ordering_key", "subscription__secret_version")


@dataclass(frozen=True)
class Retrying:
    """A failed attempt whose delivery waits for its next one (DeliveryQuerySet.mark_retrying)."""

    delivery_id: int
    attempt: int  # the attempt that failed
    next_attempt_at: datetime
    status_code: int | None
    error: str


class DeliveryQuerySet(models.QuerySet["Delivery"]):
    """Every change of a delivery's status, as conditional UPDATEs: the one writer of the state machine.

    Each method changes only the rows still in a status it may leave (an unsettled one, mostly),
    so a late or duplicate writer changes nothing; it returns how many rows it changed. The
    statuses and what moves between them: docs/delivery-semantics.md#statuses.

    On PostgreSQL every UPDATE first locks its rows in id order (`update`): the relay, the
    sweeper, the ledger and the bookkeeper change overlapping sets of rows at once, and two
    multi-row UPDATEs that lock the same rows in different orders deadlock (make bench saw it).
    """

    def update(self, **changes: Any) -> int:
        """UPDATE these rows, having locked them in id order (see the class's text).

        Rows named by id (a `pk`, `pk__in` or `pk__any_of` filter among the query's own conditions)
        are locked by id alone, and the other conditions are tested on the rows as locked
        (`_update_named`): a status condition on the table lets PostgreSQL read them through the
        status index instead, which reads every tenant's unsettled deliveries when its statistics
        say there are none (delivery/statements.py's text says more).
        """
        if connection.vendor != "postgresql":
            return super().update(**changes)
        with transaction.atomic(savepoint=False):  # FOR NO KEY UPDATE needs one (the caller's, if any)
            named = _named_ids(self.query)
            if named is not None:
                return self._update_named(*named, changes)
            in_order = self.order_by("pk").select_for_update(no_key=True).values("pk")
            return models.QuerySet.update(Delivery.objects.filter(pk__in=in_order), **changes)

    def _update_named(self, position: int, ids: list[int], changes: dict[str, Any]) -> int:
        """`update` of the rows the query's condition at `position` names by `ids`: lock them in id
        order through the primary key, then change those its other conditions hold for, as locked."""
        if not ids:
            return 0
        table = Delivery._meta.db_table
        assignments = Delivery.objects.all().query.chain(UpdateQuery)
        assignments.add_update_values(changes)
        compiler = assignments.get_compiler(self.db)
        set_sql, set_params = compiler.as_sql()  # UPDATE "delivery_delivery" SET …, with no condition
        if not set_sql:  # nothing to change, as Django's update
            return 0
        conditions = self.query.where.relabeled_clone({table: "locked"})
        del conditions.children[position]  # the lock's own
        try:
            condition_sql, condition_params = compiler.compile(conditions)
        except EmptyResultSet:
            return 0
        except FullResultSet:
            condition_sql, condition_params = "TRUE", ()
        sql = (f"WITH locked AS MATERIALIZED (SELECT * FROM {table} WHERE id = ANY(%s::bigint[]) ORDER BY id"
               f" FOR NO KEY UPDATE) {set_sql} FROM locked WHERE {table}.id = locked.id AND {condition_sql}")
        with connections[self.db].cursor() as cursor:
            cursor.execute(sql, [array(ids), *set_params, *condition_params])
            return cursor.rowcount

    def unsettled(self) -> DeliveryQuerySet:
        return self.filter(status__in=Delivery.UNSETTLED)

    def waiting(self) -> DeliveryQuerySet:
        return self.filter(status__in=Delivery.WAITING)

    def states(self) -> dict[int, DeliveryState]:
        """Read these deliveries as DeliveryState, with their messages, in one query, by id."""
        return states_from_rows(list(self.values_list(*STATE_FIELDS)))

    def mark_queued(self, now: datetime) -> int:
        """pending → queued: the broker confirmed the first send (the relay's recorder: rows.queue_sends, in SQL)."""
        return self.filter(status=Delivery.Status.PENDING).update(
            status=Delivery.Status.QUEUED, claimed_until=None, updated_at=now)

    def claim_attempt(self, attempt: int, now: datetime) -> int:
        """Start attempt `attempt` where no later one was started (the claim two workers race for)."""
        return self.unsettled().filter(attempts__lt=attempt).update(
            attempts=attempt, attempt_started_at=now, updated_at=now)

    def withdraw_attempt(self, attempt: int, started_at: datetime, now: datetime) -> int:
        """Undo the claim of attempt `attempt` made at `started_at`, before anything was sent: it starts again later."""
        return self.unsettled().filter(attempts=attempt, attempt_started_at=started_at).update(
            attempts=attempt - 1, attempt_started_at=None, updated_at=now)

    def mark_crashed(self, now: datetime) -> int:
        """Count an attempt whose worker died (the poison counter) and restart its clock."""
        return self.update(crashed_attempts=F("crashed_attempts") + 1, attempt_started_at=now, updated_at=now)

    def mark_delivered(self, status_code: int | None, now: datetime) -> int:
        """→ delivered: a push attempt got a 2xx."""
        return self.unsettled().update(
            status=Delivery.Status.DELIVERED, attempt_started_at=None, next_attempt_at=None, **NO_LEASE,
            last_status_code=status_code, last_error="", updated_at=now)

    def mark_retrying(self, retries: Iterable[Retrying], now: datetime) -> int:
        """→ retrying, each delivery while its failed attempt is still the current one (a fast consumer
        may have claimed the next).

        One UPDATE per (attempt, status code, error) among `retries` (usually one for a session's
        batch of failures), each delivery's next attempt time chosen by its id.
        """
        by_outcome: dict[tuple[int, int | None, str], dict[int, datetime]] = defaultdict(dict)
        for retry in retries:
            by_outcome[retry.attempt, retry.status_code, retry.error][retry.delivery_id] = retry.next_attempt_at
        changed = 0
        for (attempt, status_code, error), due in by_outcome.items():
            next_attempt_at = Case(*(When(pk=pk, then=Value(at)) for pk, at in due.items()),
                                   output_field=models.DateTimeField())
            changed += self.filter(pk__in=due).unsettled().filter(attempts=attempt).update(
                status=Delivery.Status.RETRYING, attempt_started_at=None, next_attempt_at=next_attempt_at,
                **NO_LEASE, last_status_code=status_code, last_error=error, updated_at=now)
        return changed

    def mark_held(self, until: datetime, now: datetime) -> int:
        """Keep status and attempt; the next attempt starts at `until` (an open circuit breaker holds it)."""
        return self.unsettled().update(next_attempt_at=until, updated_at=now)

    def mark_dead_lettered(self, reason: str, now: datetime, *, attempt: int | None = None,
                           status_code: int | None = None, including_held: bool = False) -> int:
        """→ dead_lettered (kept, replayable); with `attempt`, only while it is still the current one;
        `including_held`: held ones too (their subscription is going)."""
        rows = self.unsettled() if attempt is None else self.unsettled().filter(attempts=attempt)
        if including_held:
            rows = self.filter(status__in=[*Delivery.UNSETTLED, Delivery.Status.HELD])
        return rows.update(status=Delivery.Status.DEAD_LETTERED, attempt_started_at=None, next_attempt_at=None,
                           **NO_LEASE, last_status_code=status_code, last_error=reason, updated_at=now)

    def mark_expired(self, reason: str, now: datetime, *, including_held: bool = False) -> int:
        """→ expired: the room's expiration passed before delivery; `including_held`: held ones too (never sent)."""
        rows = self.filter(status__in=[*Delivery.UNSETTLED, Delivery.Status.HELD]) if including_held \
            else self.unsettled()
        return rows.update(status=Delivery.Status.EXPIRED, attempt_started_at=None, next_attempt_at=None,
                           **NO_LEASE, last_error=reason, updated_at=now)

    def mark_leased(self, attempt: int, token: str, expires_at: datetime, now: datetime) -> int:
        """→ leased: a pull consumer holds attempt `attempt` until `expires_at`."""
        return self.unsettled().filter(attempts=attempt).update(
            status=Delivery.Status.LEASED, lease_token=token, lease_expires_at=expires_at, next_attempt_at=None,
            updated_at=now)

    def mark_acked(self, token: str, now: datetime) -> int:
        """leased → acked, for the holder of the lease `token` only."""
        return self.filter(status=Delivery.Status.LEASED, lease_token=token).update(
            status=Delivery.Status.ACKED, attempt_started_at=None, **NO_LEASE, last_error="", updated_at=now)

    def take_lease(self, token: str) -> int:
        """Claim the lease `token` for a nack by clearing its token: a concurrent ack or nack of it then fails."""
        return self.filter(status=Delivery.Status.LEASED, lease_token=token).update(lease_token="")

    def extend_lease(self, token: str, expires_at: datetime) -> int:
        """Move the deadline of the lease `token` to `expires_at`, for its holder only."""
        return self.filter(status=Delivery.Status.LEASED, lease_token=token).update(lease_expires_at=expires_at)

    def claim_expired_leases(self, now: datetime, until: datetime, limit: int) -> list[int]:
        """Take up to `limit` leases that ran out by `now` (none another sweeper holds) until `until`; return ids.

        The token is cleared, so no ack, nack or other sweeper acts on them meanwhile; if the sweeper
        dies before settling them, another takes them once `until` passes.
        """
        with transaction.atomic():
            ids = list(self.select_for_update(skip_locked=True)
                       .filter(status=Delivery.Status.LEASED, lease_expires_at__lte=now)
                       .values_list("pk", flat=True)[:limit])
            if ids:
                Delivery.objects.filter(pk__in=ids).update(lease_token="", lease_expires_at=until)
        return ids

    def claim_stale_pending(self, older_than: datetime, now: datetime, until: datetime, limit: int) -> list[int]:
        """Claim up to `limit` pending rows unchanged since `older_than` that no outbox sweeper holds, until `until`."""
        with transaction.atomic():
            ids = list(
                self.select_for_update(skip_locked=True)
                .filter(status=Delivery.Status.PENDING, updated_at__lt=older_than)
                .exclude(claimed_until__gt=now)
                .order_by("updated_at")
                .values_list("pk", flat=True)[:limit]
            )
            if ids:
                Delivery.objects.filter(pk__in=ids).update(claimed_until=until)
        return ids

    def release_claims(self) -> int:
        """Drop the outbox sweeper's claim on these rows still pending: the next sweep takes them at once."""
        return self.filter(status=Delivery.Status.PENDING).update(claimed_until=None)

    def park_keys(self) -> int:
        """Make these dead letters park their ordering keys (delivery/sequencing.py) until replayed or released."""
        return self.filter(status=Delivery.Status.DEAD_LETTERED).update(parks_key=True)

    def unpark_keys(self, now: datetime) -> int:
        """Let the keys these dead letters park move on (the dead letters stay, replayable)."""
        return self.filter(parks_key=True).update(parks_key=False, updated_at=now)

    def mark_purged(self, now: datetime) -> int:
        """Remove these dead letters (delivery/dead_letters.py selects them) from the list; their log rows stay."""
        return self.update(purged_at=now)

    def discard_unroutable(self) -> int:
        """Delete these unroutable rows (locked by the caller), giving way to the deliveries of a re-publish."""
        return self.delete()[0]

    def release(self, now: datetime) -> int:
        """held → pending: the deliveries before it in its ordering key have settled (delivery/sequencing.py)."""
        return self.filter(status=Delivery.Status.HELD).update(status=Delivery.Status.PENDING, updated_at=now)

    def replay(self, now: datetime) -> int:
        """dead_lettered → pending, a new life with attempts from 1 (the outbox sends it)."""
        return self.filter(status=Delivery.Status.DEAD_LETTERED).update(
            status=Delivery.Status.PENDING, attempts=0, crashed_attempts=0, attempt_started_at=None,
            next_attempt_at=None, last_error="", last_status_code=None, claimed_until=None, parks_key=False,
            replays=F("replays") + 1, updated_at=now)


NO_LEASE = {"lease_token": "", "lease_expires_at": None}


def _named_ids(query: Query) -> tuple[int, list[int]] | None:
    """The first of a query's own conditions that names its rows by id (`pk=`, `pk__in=` or
    `pk__any_of=` ids): its position and the ids; None if none does.

    Only a query of the delivery table alone, whose conditions must all hold, names rows this way (not
    a slice of them).
    """
    if (len(query.alias_map) != 1 or query.is_sliced or query.combinator
            or query.where.connector != AND or query.where.negated):
        return None
    for position, condition in enumerate(query.where.children):
        ids = _ids_named_by(condition)
        if ids is not None:
            return position, ids
    return None


def _ids_named_by(condition: Any) -> list[int] | None:
    """The ids a condition names rows by (`pk=`, `pk__in=` or `pk__any_of=` ids), or None."""
    if not (isinstance(condition, (Exact, In, AnyOf)) and isinstance(condition.lhs, Col)
            and condition.lhs.target.primary_key):
        return None
    ids = [condition.rhs] if isinstance(condition, Exact) else condition.rhs
    if isinstance(ids, (list, tuple, set, frozenset, dict)) and all(type(pk) is int for pk in ids):
        return sorted(set(ids))
    return None


def claim_fresh_sql() -> str:
    """CLAIM_FRESH_SQL with this database's table names."""
    return CLAIM_FRESH_SQL.format(delivery=Delivery._meta.db_table, message=Message._meta.db_table,
                                  subscription=Subscription._meta.db_table)


def record_delivered_sql() -> str:
    """RECORD_DELIVERED_SQL with this database's table names."""
    return RECORD_DELIVERED_SQL.format(delivery=Delivery._meta.db_table, attempts=DeliveryAttempt._meta.db_table)


def states_from_rows(rows: list[tuple[Any, ...]]) -> dict[int, DeliveryState]:
    """Read CLAIM_FRESH_SQL's rows as DeliveryState, by id."""
    states = {}
    for (pk, status, subscription_id, message_id, destination, attempts, started, crashes, replays,
         correlation_id, event_type, event_version, room_id, expires_at, published_at, traceparent,
         ordering_key, secret_version) in rows:
        message = MessageState(message_id, correlation_id, event_type, event_version, room_id, expires_at,
                               published_at, traceparent)
        states[pk] = DeliveryState(pk, status, subscription_id, message_id, destination, attempts, started,
                                   crashes, replays, message, ordering_key, secret_version or 0)
    return states


class DeliveryManager(models.Manager.from_queryset(DeliveryQuerySet)):  # type: ignore[misc]
    """The queryset methods, and the two statements the push path runs most."""

    def record_delivered(self, rows: list[tuple[DeliveryState | Delivery, int, datetime, int, int | None]],
                         now: datetime) -> bool:
        """Log successful attempts (delivery, attempt, start, duration ms, status code) and mark them delivered.

        One statement on PostgreSQL; returns False elsewhere (the caller takes the portable way).
        """
        if connection.vendor != "postgresql":
            return False
        with connection.cursor() as cursor:
            cursor.execute(record_delivered_sql(), delivered_params(rows, now, Delivery.UNSETTLED))
        return True

    def claim_fresh(self, claims: list[FreshClaim], now: datetime) -> dict[int, DeliveryState] | None:
        """Claim, in one statement, each attempt the frame rules would let start at once; return their states.

        A claim is made only where frame_rules.judge would say CLAIM: the delivery is unsettled, of
        that subscription and message, its message has not expired, and no later attempt was started.
        The frames it does not claim are judged one by one (delivery/attempts.py). Returns None where
        the database cannot do it in one statement (SQLite, the embedded demo): judge them all.
        """
        if connection.vendor != "postgresql":
            return None
        with connection.cursor() as cursor:
            cursor.execute(claim_fresh_sql(), claim_params(claims, now, Delivery.UNSETTLED))
            return states_from_rows(cursor.fetchall())


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
        # The message matched no subscription when it was published: this row (no subscription,
        # no destination) keeps it findable in the log until it is re-published (delivery/publish.py).
        UNROUTABLE = "unroutable", "unroutable (no subscription matched)"
        # Ordered subscriptions: waiting, never sent, until the deliveries of its ordering key before it
        # settle (delivery/sequencing.py releases it: held → pending).
        HELD = "held", "held (behind an earlier event of its ordering key)"

    FINAL_STATUSES = frozenset({Status.DELIVERED, Status.ACKED, Status.DEAD_LETTERED, Status.EXPIRED,
                                Status.UNROUTABLE})
    UNSETTLED = (Status.PENDING, Status.QUEUED, Status.RETRYING, Status.LEASED)
    # Stored for its subscription and not yet delivered, leased or settled: what a subscription has
    # waiting (a paused one holds them until it is resumed).
    WAITING = (Status.PENDING, Status.QUEUED, Status.RETRYING, Status.HELD)

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="deliveries", db_index=False)
    # Kept (set null) when a subscription is deleted, so the log and the reports keep their history.
    subscription = models.ForeignKey(
        Subscription, on_delete=models.SET_NULL, null=True, related_name="deliveries", db_index=False
    )
    destination = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    # The message's ordering key where the subscription is ordered, else "" (delivery/sequencing.py).
    ordering_key = models.CharField(max_length=200, blank=True, default="")
    # A dead letter of a subscription whose ordering parks keys: its key waits until it is replayed or released.
    parks_key = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts started so far.")
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    # Set while attempt `attempts` is under way, cleared when its outcome is recorded. A frame of
    # that attempt seen again with this still set means the worker died mid-attempt.
    attempt_started_at = models.DateTimeField(null=True, blank=True)
    # Attempts whose worker died before recording an outcome (Mosaic's poison-message counter).
    crashed_attempts = models.PositiveIntegerField(default=0, db_column="redelivery_count")
    # The outbox sweeper's claim on a pending row, so two sweepers never send it together.
    claimed_until = models.DateTimeField(null=True, blank=True)
    # Pull subscriptions: the lease a consumer holds (ack ids carry the token), and until when. Not
    # indexed: a lease is always looked up with its delivery's id, and most rows hold "".
    lease_token = models.CharField(max_length=64, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # Times a dead letter was replayed; each replay starts a new life with attempts from 1.
    replays = models.PositiveIntegerField(default=0)
    purged_at = models.DateTimeField(null=True, blank=True, help_text="Removed from the dead letters.")
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = DeliveryManager()

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
            # Only leased rows: a push delivery never writes an entry (migration 0010).
            models.Index(fields=["lease_expires_at"], name="delivery_leased_expiry",
                         condition=models.Q(status="leased")),
            models.Index(fields=["status", "updated_at"], name="delivery_status_changed"),
            models.Index(fields=["subscription", "ordering_key", "status"], name="delivery_ordering_key",
                         condition=~models.Q(ordering_key="")),
        ]

    def __str__(self) -> str:
        return f"{self.destination} {self.message_id} ({self.status})"

    @property
    def is_final(self) -> bool:
        """Say whether this delivery has reached an outcome no worker will change."""
        return self.status in self.FINAL_STATUSES


class SendRecord(models.Model):
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

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log", db_index=False)
    correlation_id = models.CharField(max_length=200)
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
            models.Index(fields=["correlation_id"], name="attempt_correlation"),
        ]

    def __str__(self) -> str:
        return f"attempt {self.attempt}: {self.outcome}"

    @property
    def succeeded(self) -> bool:
        return self.outcome == self.Outcome.SUCCESS


class IdempotencyKey(models.Model):
    """A publisher's idempotency key: the same key in the same room within 24 h returns the first reply."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="+", db_index=False)
    key = models.CharField(max_length=200)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, null=True, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["room", "key"], name="idempotency_key_unique_per_room")]

    def __str__(self) -> str:
        return self.key


def waiting_count() -> Coalesce:
    """Count a subscription's waiting deliveries, as an annotation of a Subscription queryset."""
    rows = (Delivery.objects.waiting().filter(subscription=OuterRef("pk"))
            .order_by().values("subscription").annotate(n=Count("pk")).values("n"))
    return Coalesce(Subquery(rows), 0)


class PushClaim(models.Model):
    """A push session's claim on its subscription: one per (subscription, worker), renewed while it runs.

    A subscription has one session, and more when it is hot (delivery/push/claims.py): each claim's
    `token` is the start token until a worker's engine adopts it, then that engine's token.
    """

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="push_claims",
                                     db_index=False)
    token = models.CharField(max_length=32)
    until = models.DateTimeField()  # lapses this long after its worker stopped renewing it
    # The session count its share of max_in_flight is sized for: it holds no more than max_in_flight / this.
    sized_for = models.PositiveIntegerField(default=1)
    hot = models.BooleanField(default=False)  # at its share with frames waiting, at the last renewal

    class Meta:
        constraints = [models.UniqueConstraint(fields=["subscription", "token"], name="push_claim_unique_per_worker")]

    def __str__(self) -> str:
        return f"{self.subscription_id}/{self.token}"
