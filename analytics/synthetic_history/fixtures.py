"""The synthetic rooms, event types and subscribers (paused: no real endpoint stands behind them), created once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rooms.models import EventType, Room
from subscriptions.models import Subscription
from subscriptions.retry import RetryPolicy

Type = Subscription.Type


@dataclass(frozen=True)
class Endpoint:
    """How one synthetic subscriber behaves."""

    name: str
    kind: str = Type.PUSH  # push, or pull (a consumer that leases and acks)
    events: tuple[str, ...] = ()  # its event-type filter; empty: every type
    median_ms: float = 80.0  # a successful answer's duration (pull: the time to ack), log-normal
    spread: float = 0.6  # sigma of that log-normal
    fail: float = 0.02  # chance of a non-2xx answer (pull: a nack)
    timeout: float = 0.0  # chance of a timeout (pull: the lease runs out)
    refuse: float = 0.0  # chance of a connection error
    codes: tuple[tuple[int, int], ...] = ((500, 6), (502, 2), (503, 2))  # failure status codes, weighted
    retry_after: bool = False  # 429 and 503 answers carry Retry-After
    outage_hours: int = 0  # every day, an outage this long from 14:00 UTC: nearly every connection refused
    timeout_ms: int = 10_000
    overrides: dict[str, object] = field(default_factory=dict)  # delivery settings overriding the room's


@dataclass(frozen=True)
class RoomPlan:
    name: str
    weight: int  # share of the messages
    events: tuple[tuple[str, int], ...]  # event types, weighted
    endpoints: tuple[Endpoint, ...]
    expiration_ms: int | None = None
    delay_ms: int = 1000
    multiplier: float = 2.0
    attempts: int = 5
    max_delay_ms: int | None = None


ROOMS = (
    RoomPlan("demo-orders", 40, (("order.created", 5), ("order.paid", 3), ("order.shipped", 2)),
             (Endpoint("warehouse", median_ms=45, fail=0.02, timeout=0.002),
              Endpoint("billing", events=("order.paid",), median_ms=120, fail=0.08, codes=((500, 3), (502, 1)),
                       overrides={"delivery_attempts": 8}),
              Endpoint("analytics-sink", kind=Type.PULL, median_ms=900, spread=0.9, fail=0.01, timeout=0.01)),
             expiration_ms=3_600_000, delay_ms=1000, multiplier=2.0, attempts=5, max_delay_ms=60_000),
    RoomPlan("demo-payments", 25, (("payment.authorized", 5), ("payment.captured", 4), ("payment.refunded", 1)),
             (Endpoint("ledger", median_ms=250, spread=0.9, fail=0.05, timeout=0.01, retry_after=True,
                       codes=((429, 5), (503, 3), (500, 2))),
              Endpoint("fraud-check", median_ms=900, spread=0.5, fail=0.03, timeout=0.03, timeout_ms=3000,
                       codes=((500, 1), (504, 2)))),
             expiration_ms=600_000, delay_ms=2000, multiplier=1.5, attempts=6, max_delay_ms=30_000),
    RoomPlan("demo-alerts", 15, (("alert.raised", 3), ("alert.resolved", 2)),
             (Endpoint("pager", median_ms=60, fail=0.01, refuse=0.05, outage_hours=2),
              Endpoint("chatops", median_ms=300, fail=0.25, codes=((502, 3), (503, 2)),
                       overrides={"delivery_attempts": 1})),
             expiration_ms=300_000, delay_ms=2000, multiplier=2.0, attempts=10),
    RoomPlan("demo-contacts", 20, (("contact.created", 1), ("contact.updated", 3)),
             (Endpoint("crm-sync", median_ms=200, fail=0.45, codes=((500, 4), (400, 1), (404, 1), (422, 1))),
              Endpoint("mailer", median_ms=80, fail=0.01, overrides={"delivery_delay_ms": 500})),
             delay_ms=500, multiplier=3.0, attempts=4, max_delay_ms=20_000),
)


@dataclass
class Target:
    """A subscription with what the simulation needs of it."""

    subscription: Subscription
    endpoint: Endpoint
    policy: RetryPolicy
    codes: list[int]
    code_weights: list[int]

    def __post_init__(self) -> None:
        self.destination = self.subscription.destination


@dataclass
class Setup:
    room: Room
    plan: RoomPlan
    event_names: list[str]
    event_weights: list[int]
    targets_by_event: dict[str, list[Target]]



def ensure_rooms(plans: Sequence[RoomPlan] = ROOMS) -> list[Setup]:
    """Create the synthetic rooms, event types and subscriptions that do not exist yet; return them."""
    return [ensure_room(plan) for plan in plans]


def ensure_room(plan: RoomPlan) -> Setup:
    room, _ = Room.objects.get_or_create(name=plan.name, defaults={
        "description": "synthetic traffic (manage.py generate_traffic)",
        "message_expiration_ms": plan.expiration_ms, "delivery_delay_ms": plan.delay_ms,
        "delivery_delay_multiplier": plan.multiplier, "delivery_attempts": plan.attempts,
        "max_delivery_delay_ms": plan.max_delay_ms,
    })
    for name, _ in plan.events:
        EventType.objects.get_or_create(room=room, name=name, version="1")
    targets = [ensure_target(room, endpoint) for endpoint in plan.endpoints]
    by_event = {name: [t for t in targets if not t.endpoint.events or name in t.endpoint.events]
                for name, _ in plan.events}
    return Setup(room, plan, [n for n, _ in plan.events], [w for _, w in plan.events], by_event)


def ensure_target(room: Room, endpoint: Endpoint) -> Target:
    subscription, _ = Subscription.objects.get_or_create(room=room, name=endpoint.name, defaults={
        "type": endpoint.kind,
        "push_url": f"https://hooks.example.com/{endpoint.name}" if endpoint.kind == Type.PUSH else "",
        "event_types": [{"name": name} for name in endpoint.events],
        "timeout_ms": endpoint.timeout_ms,
        # No real endpoint stands behind these: paused, so no worker tries one.
        "status": Subscription.Status.PAUSED,
        "status_reason": "synthetic traffic (manage.py generate_traffic): no real endpoint behind it",
        **endpoint.overrides,
    })
    subscription.room = room
    return Target(subscription, endpoint, subscription.retry_policy,
                  [c for c, _ in endpoint.codes], [w for _, w in endpoint.codes])

