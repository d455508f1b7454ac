"""A subscription's breaker state shows wherever its status does: an open breaker is never just `active`."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils import timezone

from subscriptions.models import Subscription
from tests.factories import make_delivery, make_message
from tests.ui_world import World, add_attempt, build_world

pytestmark = pytest.mark.django_db

Breaker = Subscription.Breaker


@pytest.fixture
def world() -> World:
    world = build_world()
    make_delivery(make_message(world.room), world.push, status="dead_lettered")
    add_attempt(make_delivery(make_message(world.room), world.push), 1, "failure", 503, "HTTP 503")
    return world


def status_cell(html: str, name: str) -> str:
    """The status shown in the row of the subscription called `name`."""
    row = next(row for row in re.findall(r"<tr>.*?</tr>", html, re.DOTALL) if f">{name}<" in row)
    return re.search(r'<span class="subscription-status".*?</span>\s*</span>', row, re.DOTALL).group(0)


PAGES = {"dashboard's failing most": lambda w: "/", "subscriptions list": lambda w: "/subscriptions/",
         "dead letters list": lambda w: "/dead-letters/", "room page": lambda w: f"/rooms/{w.room.pk}/"}


@pytest.mark.parametrize("page", PAGES)
def test_an_open_breaker_shows_beside_the_status_on(page: str, staff_client: Client, world: World) -> None:
    world.push.move_breaker(Breaker.OPEN, "5 consecutive attempts failed, the last: HTTP 503", now=timezone.now())

    cell = status_cell(staff_client.get(PAGES[page](world)).content.decode(), "billing")

    assert 'data-breaker="open"' in cell and ">active<" in cell and ">breaker open<" in cell, cell
    assert 'title="5 consecutive attempts failed, the last: HTTP 503"' in cell, cell


@pytest.mark.parametrize("page", PAGES)
def test_a_half_open_breaker_shows_too_and_a_closed_one_adds_nothing_on(page: str, staff_client: Client,
                                                                        world: World) -> None:
    closed = status_cell(staff_client.get(PAGES[page](world)).content.decode(), "billing")
    world.push.move_breaker(Breaker.OPEN, "failing", now=timezone.now())
    world.push.move_breaker(Breaker.HALF_OPEN, "the probe is due", now=timezone.now())

    half_open = status_cell(staff_client.get(PAGES[page](world)).content.decode(), "billing")

    assert "breaker" not in closed.split(">", 1)[1], closed
    assert ">breaker half-open<" in half_open, half_open


def test_the_subscription_page_shows_it_in_its_heading(staff_client: Client, world: World) -> None:
    world.push.move_breaker(Breaker.OPEN, "failing", now=timezone.now())

    html = staff_client.get(f"/subscriptions/{world.push.pk}/").content.decode()

    heading = re.search(r"<h1>.*?</h1>", html, re.DOTALL).group(0)
    assert ">active<" in heading and ">breaker open<" in heading, heading
