"""Which workers run a subscription's push sessions: a claim per (subscription, worker).

`start_sessions` gives a subscription that has no session a claim (a `PushClaim` row under a
start token) and asks a Celery worker to run one (the task `delivery.tasks.deliver_push_sessions`,
a few sessions to a task). The
worker's push engine adopts the claim under its own token, renews the claims of all its sessions
in one UPDATE every second, and releases each when the session ends. A claim not renewed lapses
CLAIM_TTL later (its worker died), and beat's `dispatch_push_sessions` starts a session elsewhere.

A hot subscription gets more sessions, one per worker: at each renewal a session says whether it
is hot (at its share of `max_in_flight` with frames waiting), and every engine that has no session
for a hot subscription joins it (`join_hot`), up to DOVECOTE_PUSH_SESSIONS_PER_SUBSCRIPTION
sessions and never more than `max_in_flight`. Only a live engine renews, so the sessions are at
most the live workers. The subscription's `max_in_flight` is split between its live sessions
(`share`): each holds at most `max_in_flight // sessions` POSTs, reread at every renewal. A session
reports the session count it is sized for once its POSTs fit that share, and a session takes
frames only when every other session is sized for the current count: a joining session waits
until the others have shrunk, so the sum never exceeds `max_in_flight`.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from delivery.models import Delivery, PushClaim
from dovecote.pg_arrays import array
from rooms.models import Room
from subscriptions.models import SECRET_FIELDS, Subscription, row_version_sql

START_GRACE = timedelta(seconds=15)  # how long an enqueued session may wait for a worker
CLAIM_TTL = timedelta(seconds=5)  # renewed every second by a running engine; lapses after its worker dies
LOOKAHEAD = timedelta(seconds=5)  # keep (or start) a session for retries due this soon
JOINS_PER_RENEWAL = 4  # hot subscriptions an engine joins at most per renewal (the rest at the next ones)
DELIVER_PUSH = "delivery.tasks.deliver_push_sessions"
# Sessions one task starts. A Celery send cost its sender 0.73 ms of CPU, and the relay's recorder starts the
# sessions of each batch it records on its own thread: a publish to 200 new subscriptions held it for ~150 ms.
# Eight to a task: 0.13 ms a session (a scratch script, 1,000 starts), and a storm of starts still spreads
# over the workers, each taking a task at a time (CELERY_WORKER_PREFETCH_MULTIPLIER).
START_BATCH = 8


@dataclass(frozen=True)
class Held:
    """A subscription as an engine's renewal reads it, with the session's share of `max_in_flight`."""

    subscription: Subscription | None  # reread, with its room; None: unchanged since the version the session has
    version: str | None  # of the subscription's row and its room's (`row_version_sql`; None: unknown)
    sessions: int  # live sessions of the subscription, on every worker
    share: int  # POSTs the session may have under way (0: the others are still shrinking to make room)


@dataclass(frozen=True)
class Report:
    """What a session tells its renewal: the session count it is sized for, if it is hot, the version it has."""

    sized_for: int
    hot: bool
    version: str | None = None  # of the subscription the session has (Held.version; None: reread it)


def start_sessions(subscription_ids: Iterable[int]) -> list[int]:
    """Claim each active push subscription that has no session and enqueue one; return those started.

    One query finds those that have none (usually all have one); those are claimed together in one
    transaction under their row locks (`_claim_first`).
    """
    wanted = set(subscription_ids)
    if not wanted:
        return []
    wanted -= set(PushClaim.objects.filter(subscription_id__in=wanted, until__gte=timezone.now())
                  .values_list("subscription_id", flat=True))
    if not wanted:
        return []
    started = _claim_first(wanted)
    enqueue_sessions(started)
    return [subscription_id for subscription_id, _ in started]


def _claim_first(subscription_ids: set[int]) -> list[tuple[int, str]]:
    """Claim a first session for each of these active push subscriptions that has none; the (id, start token)s.

    The subscriptions' rows are locked in id order, skipping those another transaction holds: when that is
    another claimer, it is starting the session; otherwise (the subscription being changed or deleted)
    beat's dispatch_push_sessions tries again within a second. Under the locks, lapsed claims are removed
    and a claim is added where none is left. The lock is FOR NO KEY UPDATE: claimers exclude
    each other, and a change or delete of the row excludes them, but a publish does not. Each new delivery's
    foreign-key check holds FOR KEY SHARE on its subscription's row while its transaction commits, and
    FOR UPDATE skipped the row then: under 500 publishes a second to a new subscription, the relay's start of
    its session was skipped and the first deliveries waited up to a second for beat's dispatch.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = list(Subscription.objects.select_for_update(no_key=True, skip_locked=True).filter(
            pk__in=subscription_ids, type=Subscription.Type.PUSH, status=Subscription.Status.ACTIVE)
            .order_by("pk").values_list("pk", flat=True))
        if not locked:
            return []
        PushClaim.objects.filter(subscription_id__in=locked, until__lt=now).delete()
        running = set(PushClaim.objects.filter(subscription_id__in=locked).values_list("subscription_id", flat=True))
        new = [PushClaim(subscription_id=pk, token=uuid.uuid4().hex, until=now + START_GRACE, sized_for=1)
               for pk in locked if pk not in running]
        PushClaim.objects.bulk_create(new)
    return [(claim.subscription_id, claim.token) for claim in new]


def _claim(subscription_id: int, token: str, ttl: timedelta) -> bool:
    """Add the engine's claim for one more session of a subscription (active, push) if it has room; True if added."""
    now = timezone.now()
    with transaction.atomic():
        locked = (Subscription.objects.select_for_update(no_key=True).filter(  # as _claim_first locks it
            pk=subscription_id, type=Subscription.Type.PUSH, status=Subscription.Status.ACTIVE)
            .values_list("max_in_flight", flat=True).first())  # one claimer at a time counts the sessions
        if locked is None:
            return False
        PushClaim.objects.filter(subscription_id=subscription_id, until__lt=now).delete()
        live = PushClaim.objects.filter(subscription_id=subscription_id)
        sessions = live.count()
        if sessions >= min(locked, settings.DOVECOTE_PUSH_SESSIONS_PER_SUBSCRIPTION):
            return False
        if live.filter(token=token).exists():
            return False
        PushClaim.objects.create(subscription_id=subscription_id, token=token, until=now + ttl,
                                 sized_for=sessions + 1)
    return True


def enqueue_sessions(starts: list[tuple[int, str]]) -> None:
    """Ask workers to run these (subscription, start token) sessions, START_BATCH to a task.

    By task name: the tasks module imports this one.
    """
    for first in range(0, len(starts), START_BATCH):
        current_app.send_task(DELIVER_PUSH, args=(starts[first:first + START_BATCH],))


def start_sessions_for_deliveries(deliveries: Iterable[Delivery]) -> list[int]:
    """Start sessions for the push subscriptions of these deliveries (loaded with their subscription).

    The relay's recorder calls this for every batch it records: a subscription found with a session
    is not looked up again for SEEN_FOR (a session ends only after DOVECOTE_PUSH_SESSION_IDLE_SECONDS
    without work, so one that had work this recently is still there; beat's dispatch_push_sessions
    covers the rare miss within seconds).
    """
    push = Subscription.Type.PUSH
    now = time.monotonic()
    wanted = {delivery.subscription.pk for delivery in deliveries
              if delivery.subscription is not None and delivery.subscription.type == push
              and _seen_with_session.get(delivery.subscription.pk, 0.0) < now}
    if not wanted:
        return []
    started = start_sessions(wanted)
    if len(_seen_with_session) > 100_000:
        _seen_with_session.clear()
    for subscription_id in wanted:
        _seen_with_session[subscription_id] = now + SEEN_FOR
    return started


SEEN_FOR = 1.0  # seconds a subscription found with a session (or just given one) is not looked up again
_seen_with_session: dict[int, float] = {}  # subscription id -> until when (monotonic); the recorder's thread only


def subscriptions_with_due_work(now: datetime | None = None) -> list[int]:
    """Return active push subscriptions with no live session and queued deliveries or retries due within the lookahead.

    Beat asks every second (`dispatch_push_sessions`), so the query goes from the subscriptions: those with
    a live claim are passed over, and each other one costs two probes of the (subscription, status) index
    (one EXISTS per status: an OR of statuses inside one let the planner scan every queued entry per
    subscription), each ending at the first due delivery. Its cost does not grow with the deliveries
    waiting. Read from the deliveries (every queued row, sorted and joined to its subscription), it took
    96 ms of PostgreSQL's CPU each second with 600 subscriptions and 200 deliveries in flight (the dead index
    entries of the rows queued since the last vacuum), and a backlog made it longer.
    """
    now = now or timezone.now()
    return list(
        Subscription.objects.filter(type=Subscription.Type.PUSH, status=Subscription.Status.ACTIVE)
        .exclude(Exists(PushClaim.objects.filter(subscription_id=OuterRef("pk"), until__gte=now)))
        .filter(Q(*(Exists(Delivery.objects.filter(part, subscription_id=OuterRef("pk")))
                    for part in _due_work_parts(now)), _connector=Q.OR))
        .order_by().values_list("pk", flat=True)
    )


def _due_work(now: datetime) -> Q:
    queued, retry_due = _due_work_parts(now)
    return queued | retry_due


def _due_work_parts(now: datetime) -> tuple[Q, Q]:
    """Work a session is wanted for: queued deliveries; retries due within the lookahead."""
    return Q(status=Delivery.Status.QUEUED), Q(status=Delivery.Status.RETRYING, next_attempt_at__lte=now + LOOKAHEAD)


def adopt(requests: list[tuple[int, str]], engine_token: str) -> list[Held | None]:
    """Take over each (subscription, start token) claim for the engine; per request its subscription, or None if lost.

    One engine runs one session per subscription: a request for a subscription the engine holds a claim
    for already (or asked for twice in one batch) gives its start claim back. The engine batches the
    requests of the sessions starting together (a cold start of a thousand subscriptions is a few queries).
    """
    subscription_ids = {subscription_id for subscription_id, _ in requests}
    mine = set(PushClaim.objects.filter(subscription_id__in=subscription_ids, token=engine_token)
               .values_list("subscription_id", flat=True))
    taking: dict[int, str] = {}
    surplus: list[tuple[int, str]] = []
    for subscription_id, token in requests:
        if token == engine_token or (subscription_id not in mine and subscription_id not in taking):
            taking.setdefault(subscription_id, token)
        else:
            surplus.append((subscription_id, token))
    if surplus:
        PushClaim.objects.filter(_pairs([pair for pair in surplus if pair[1] != engine_token])).delete()
    if taking:
        PushClaim.objects.filter(_pairs(list(taking.items()))).update(
            token=engine_token, until=timezone.now() + CLAIM_TTL)
    held = _held(engine_token, _claim_rows(engine_token, list(
        PushClaim.objects.filter(subscription_id__in=list(taking), token=engine_token)
        .values_list("subscription_id", flat=True)), timezone.now()), known={})
    return [held.get(subscription_id) if taking.get(subscription_id) == token else None
            for subscription_id, token in requests]


def adopt_batched(_broker: object, requests: list[tuple[int, str, str]]) -> list[Held | None]:
    """`adopt` as the bookkeeper batches it: each request (subscription, start token, the engine's token)."""
    return adopt([(subscription_id, token) for subscription_id, token, _ in requests], requests[0][2])


def _pairs(pairs: list[tuple[int, str]]) -> Q:
    """Match the claims named by these (subscription, token) pairs (none if empty)."""
    match = Q(pk__in=[])
    for subscription_id, token in pairs:
        match |= Q(subscription_id=subscription_id, token=token)
    return match


def join_hot(engine_token: str) -> list[int]:
    """Claim a session on this engine for hot subscriptions it has none for; return those joined."""
    now = timezone.now()
    mine = PushClaim.objects.filter(token=engine_token).values("subscription_id")
    hot = (PushClaim.objects.filter(hot=True, until__gte=now, subscription__status=Subscription.Status.ACTIVE)
           .exclude(subscription_id__in=mine).values_list("subscription_id", flat=True).distinct())
    return [subscription_id for subscription_id in list(hot)[:JOINS_PER_RENEWAL]
            if _claim(subscription_id, engine_token, CLAIM_TTL)]


def renew(engine_token: str, reports: dict[int, Report]) -> dict[int, Held]:
    """Extend every claim the engine holds with its sessions' reports; return their subscriptions as they are now.

    On PostgreSQL one statement (`_renew_in_one_statement`) writes every claim and reads back what the
    sessions need; the Django ORM's six statements (three writes in a transaction, three reads) were a
    seventh of the worker's CPU in the bench's fan-out and fairness runs (200 to 1,600 sessions; 5.5 and
    12.6 ms of CPU a renewal at 100 and 1,000, now 0.7 and 3.6), each second, on the GIL the sessions'
    event loop shares. A subscription is reread only if its row or its room's was
    written since the version its session reported: rebuilding every held subscription each second
    was a quarter of a worker's CPU with a thousand sessions.
    """
    now = timezone.now()
    known = {subscription_id: report.version for subscription_id, report in reports.items()}
    if connection.vendor == "postgresql":
        return _held(engine_token, _renew_in_one_statement(engine_token, reports, now), known)
    alike: dict[tuple[int, bool], list[int]] = defaultdict(list)
    for subscription_id, report in reports.items():
        alike[(report.sized_for, report.hot)].append(subscription_id)
    mine = PushClaim.objects.filter(token=engine_token)
    until = now + CLAIM_TTL
    with transaction.atomic():  # each claim row written once, as _renew_in_one_statement says why
        mine.exclude(subscription_id__in=set(reports)).update(until=until, hot=False)
        for (sized_for, hot), subscription_ids in alike.items():
            mine.filter(subscription_id__in=set(subscription_ids)).update(until=until, sized_for=sized_for, hot=hot)
    return _held(engine_token, _claim_rows(engine_token, list(mine.values_list("subscription_id", flat=True)), now),
                 known)


# What a session needs of its subscription at each renewal: its id, max_in_flight, the version of its rows
# (`row_version_sql`; None where the database has none) and the sized_for of every other live session of it,
# on other workers.
ClaimRow = tuple[int, int, str | None, list[int]]


def _claim_rows_sql(subscription_ids: str) -> str:
    """PostgreSQL: the ClaimRow of each subscription that `subscription_ids` (an SQL list or subquery) names."""
    return (f"SELECT s.id, s.max_in_flight, {row_version_sql('s', 'r')},"
            f" ARRAY(SELECT o.sized_for FROM {PushClaim._meta.db_table} o"
            f" WHERE o.subscription_id = s.id AND o.token <> %(token)s AND o.until >= %(now)s)"
            f" FROM {Subscription._meta.db_table} s JOIN {Room._meta.db_table} r ON r.id = s.room_id"
            f" WHERE s.id IN ({subscription_ids})")


def _renew_in_one_statement(engine_token: str, reports: dict[int, Report], now: datetime) -> list[ClaimRow]:
    """PostgreSQL: extend the engine's claims with the reports (a claim with none: not hot), read back their rows.

    Each claim row is written once: PostgreSQL checks the foreign key of a row a transaction writes a
    second time at COMMIT (key share on the subscription's row), which waited for a subscription's
    delete holding the row (delivery/actions.py) while the delete waited for the claim, a deadlock.
    """
    claims = PushClaim._meta.db_table
    sql = f"""
        WITH reported AS (
            SELECT * FROM unnest(%(ids)s::bigint[], %(sized_for)s::integer[], %(hot)s::boolean[])
                       AS r(subscription_id, sized_for, hot)
        ), renewed AS (
            UPDATE {claims} AS c
               SET until = %(until)s, sized_for = COALESCE(r.sized_for, c.sized_for), hot = COALESCE(r.hot, false)
              FROM {claims} AS m LEFT JOIN reported AS r ON r.subscription_id = m.subscription_id
             WHERE c.id = m.id AND m.token = %(token)s
            RETURNING c.subscription_id
        )
        {_claim_rows_sql("SELECT subscription_id FROM renewed")}"""
    ids = list(reports)
    with connection.cursor() as cursor:
        cursor.execute(sql, {"ids": array(ids), "sized_for": array([reports[pk].sized_for for pk in ids]),
                             "hot": array([reports[pk].hot for pk in ids]), "until": now + CLAIM_TTL,
                             "token": engine_token, "now": now})
        return cursor.fetchall()


def _claim_rows(engine_token: str, subscription_ids: list[int], now: datetime) -> list[ClaimRow]:
    """The ClaimRow of each of these subscriptions that exists (one statement on PostgreSQL)."""
    if not subscription_ids:
        return []
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_claim_rows_sql("SELECT unnest(%(ids)s::bigint[])"),
                           {"ids": array(subscription_ids), "token": engine_token, "now": now})
            return cursor.fetchall()
    others: dict[int, list[int]] = defaultdict(list)
    for subscription_id, sized_for in PushClaim.objects.filter(
            subscription_id__in=subscription_ids, until__gte=now).exclude(token=engine_token).values_list(
            "subscription_id", "sized_for"):
        others[subscription_id].append(sized_for)
    return [(pk, max_in_flight, None, others[pk]) for pk, max_in_flight in Subscription.objects.filter(
        pk__in=subscription_ids).values_list("pk", "max_in_flight")]


def _held(engine_token: str, rows: list[ClaimRow], known: dict[int, str | None]) -> dict[int, Held]:
    """The engine's subscriptions, each with its session count and this engine's share.

    A subscription whose rows' version is the one `known` gives is not reread (Held.subscription None);
    the others are, with their rooms and the version of what was read.
    """
    held: dict[int, Held] = {}
    changed: dict[int, list[int]] = {}
    for pk, max_in_flight, version, others in rows:
        if version is not None and version == known.get(pk):
            held[pk] = Held(None, version, len(others) + 1, share(max_in_flight, others))
        else:
            changed[pk] = others
    if changed:
        for subscription in Subscription.objects.with_versions().filter(pk__any_of=set(changed)):
            others = changed[subscription.pk]
            held[subscription.pk] = Held(subscription, subscription.row_version,  # type: ignore[attr-defined]
                                         len(others) + 1, share(subscription.max_in_flight, others))
    return held


def share(max_in_flight: int, others_sized_for: list[int]) -> int:
    """A session's share of max_in_flight: an equal part (at least 1), once every other session is sized for it."""
    sessions = len(others_sized_for) + 1
    if any(sized_for < sessions for sized_for in others_sized_for):
        return 0
    return max(1, max_in_flight // sessions)


def release(subscription_id: int, engine_token: str, *, hand_over: bool = False) -> None:
    """Give up the engine's claim on a subscription; when handing over, start a new session if work is due."""
    released = PushClaim.objects.filter(subscription_id=subscription_id, token=engine_token).delete()[0]
    if released and hand_over and Delivery.objects.filter(_due_work(timezone.now()),
                                                          subscription_id=subscription_id).exists():
        start_sessions([subscription_id])


def live_sessions() -> int:
    """Count the push sessions holding a live claim, on every worker."""
    return PushClaim.objects.filter(until__gt=timezone.now()).count()


def retries_due_soon(subscription_ids: list[int]) -> set[int]:
    """Return those of the subscriptions with a retry due within the lookahead."""
    return set(Delivery.objects.filter(subscription_id__any_of=set(subscription_ids), status=Delivery.Status.RETRYING,
                                       next_attempt_at__lte=timezone.now() + LOOKAHEAD)
               .order_by().values_list("subscription_id", flat=True).distinct())


def reread_secrets(subscription_id: int) -> Subscription | None:
    """Return the subscription with only its signing secrets and their version read (None: deleted)."""
    return Subscription.objects.only(*SECRET_FIELDS).filter(pk=subscription_id).first()
