"""Throwaway: time store() of 5 x 500 events with and without payload filters / ordering (not committed)."""
import time

import pytest

from delivery.publish import Event, publish_many
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("kind", ["plain", "filters", "ordered"])
def test_timing(kind, django_capture_on_commit_callbacks):
    room = make_room()
    make_event_type(room)
    for i in range(3):
        extra = {}
        if kind == "filters":
            extra["payload_filter"] = {"data": {"total": {"$gte": 10 * i}, "country": {"$in": ["FR", "DE"]}},
                                       "$not": {"data": {"test": True}}}
        if kind == "ordered":
            extra["ordering"] = "on"
        make_subscription(room, type="pull", **extra)
    events = [Event("order.created", "1", {"total": n % 50, "country": "FR"}, ordering_key=f"k{n % 50}")
              for n in range(500)]
    publish_many(room, events)  # warm
    start = time.perf_counter()
    for _ in range(5):
        with django_capture_on_commit_callbacks(execute=False):
            publish_many(room, events)
    took = time.perf_counter() - start
    print(f"\nTIMING {kind}: {2500 / took:.0f} events/s ({took * 1000 / 5:.0f} ms per 500-event batch)")
