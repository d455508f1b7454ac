"""Figures of a hot subscription carried by several worker processes (delivery/push/claims.py).

- `hot_subscription`: one subscription's queued messages, delivered with one worker or with the stack's
  (WORKER_PROCESSES); the rate counted from when every worker has a session for it (the others join when
  the first is at its share of max_in_flight with frames waiting), so start-up is left out.
- `sessions_per_worker`: many push subscriptions with a message each, over the stack's workers: how many
  sessions each worker's engine runs once they are all delivered.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from bench.figures import Context, count_status, make_room, make_subscription, publish_batches, wait_until


@dataclass(frozen=True)
class HotRun:
    rate: float  # deliveries/s at the receiver once every worker had a session for the subscription
    sessions: int  # the most sessions the subscription had at once


def rate_after(arrivals: list[float], start: int) -> float:
    """Arrivals per second from the `start`-th arrival to the last (sorted times)."""
    arrivals = sorted(arrivals)
    start = min(start, len(arrivals) - 2)
    if start < 0 or arrivals[-1] <= arrivals[start]:
        return 0.0
    return (len(arrivals) - 1 - start) / (arrivals[-1] - arrivals[start])


def per_worker(claim_tokens: list[str], workers: int) -> list[int]:
    """Sessions per worker (engine token), most first, a worker without any counted as 0."""
    counts = sorted(Counter(claim_tokens).values(), reverse=True)
    return counts + [0] * (workers - len(counts))


def live_claims(subscription_ids: list[int]) -> list[str]:
    """The engine tokens of the live push-session claims of these subscriptions."""
    from django.utils import timezone

    from delivery.models import PushClaim

    return list(PushClaim.objects.filter(subscription_id__in=subscription_ids, until__gt=timezone.now())
                .values_list("token", flat=True))


def hot_subscription(ctx: Context, n: int, workers: int) -> HotRun:
    """Deliveries/s of one subscription's n queued messages with `workers` worker processes (each a session);
    the stack's own number of workers runs again afterwards."""
    ctx.stop_workers()
    room_id = make_room(ctx)
    subscription_id = make_subscription(ctx, room_id, type="push", push_url=ctx.receiver.url(), max_in_flight=64,
                                        timeout_ms=10_000)
    publish_batches(ctx, room_id, n)
    wait_until(lambda: count_status(room_id, "queued") >= n, timeout=300)
    ctx.receiver.reset()
    ctx.start_workers(workers)
    most, mark = 0, 0  # the most sessions seen; the arrivals counted once there were `workers` of them
    try:
        def progress() -> bool:
            nonlocal most, mark
            count = ctx.receiver.count()
            sessions = len(live_claims([subscription_id]))
            if not mark and sessions >= workers and count >= n // 10:
                mark = count
            most = max(most, sessions)
            return count >= n

        wait_until(progress, timeout=600, poll=0.05)
        wait_until(lambda: count_status(room_id, "delivered") >= n, timeout=120)
    finally:
        if workers != ctx.worker_processes:
            ctx.stop_workers()
            ctx.start_workers(None)
    arrivals = [a[0] for a in ctx.receiver.arrivals()]
    return HotRun(rate_after(arrivals, mark or len(arrivals) // 10), most)


def sessions_per_worker(ctx: Context, subscriptions: int) -> list[int]:
    """Push subscriptions (10 a room) with one message each, over the stack's workers: each worker's sessions,
    most first."""
    rooms, subscription_ids = [], []
    for _ in range(max(1, subscriptions // 10)):
        room_id = make_room(ctx)
        subscription_ids += [make_subscription(ctx, room_id, type="push", push_url=ctx.receiver.url("/spread"))
                             for _ in range(10)]
        rooms.append(room_id)
    ctx.receiver.reset()
    for room_id in rooms:
        publish_batches(ctx, room_id, 1)
    wait_until(lambda: ctx.receiver.count() >= len(subscription_ids), timeout=300, poll=0.2)
    # Sessions stay warm: all still hold their claims.
    return per_worker(live_claims(subscription_ids), ctx.worker_processes)
