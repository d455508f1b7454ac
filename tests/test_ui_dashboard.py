"""The dashboard: the last hour's figures, throughput per minute, the subscriptions failing most."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from delivery.models import Delivery
from tests.factories import make_delivery, make_message
from tests.ui_world import World, add_attempt, build_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> World:
    return build_world()


def test_the_figures_count_the_last_hour(staff_client: Client, world: World) -> None:
    old = make_message(world.room, created_at=timezone.now() - timedelta(hours=2))
    make_delivery(old, world.push, status="dead_lettered")
    Delivery.objects.filter(message=old).update(updated_at=timezone.now() - timedelta(hours=2))

    stats = staff_client.get("/").context["stats"]

    assert stats == {"published": 3, "delivered": 2, "dead_lettered": 1, "retrying_now": 1, "retries": 2}


def test_the_stats_fragment_polls_and_holds_only_the_figures(staff_client: Client, world: World) -> None:
    page = staff_client.get("/").content.decode()
    assert 'id="stats" class="cards" hx-get="/" hx-trigger="every 5s"' in page

    fragment = staff_client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="stats")

    assert "stats" in fragment.context and "throughput" not in fragment.context
    assert '<div class="card-value" data-stat="published">3</div>' in fragment.content.decode()


def test_throughput_has_a_bar_per_minute_with_the_counts(staff_client: Client, world: World) -> None:
    chart = staff_client.get("/").context["throughput"]
    assert len(chart.bars) == 60
    assert chart.total_published == 3 and chart.total_delivered == 1
    assert sum(bar.published for bar in chart.bars) == 3
    assert "<svg" in staff_client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="throughput").content.decode()


def test_the_subscriptions_failing_most_come_first_with_their_last_error(staff_client: Client, world: World) -> None:
    other = make_delivery(make_message(world.room), world.pull, status="retrying")
    add_attempt(other, 1, "lease_expired", None, "lease ran out")
    add_attempt(other, 2, "success", None, "")
    stale = make_delivery(make_message(world.room), world.pull)
    add_attempt(stale, 1, "failure", 500, "old", at=timezone.now() - timedelta(hours=3))

    response = staff_client.get("/")

    assert [(s.name, s.failures) for s in response.context["failing"]] == [("billing", 3), ("warehouse", 1)]
    assert "HTTP 503" in response.content.decode()
