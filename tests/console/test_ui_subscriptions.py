"""Subscriptions in the web UI: create and edit, the schedule preview, pause/resume, secrets, test events."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from delivery.models import Delivery, Message
from rooms.models import Room
from subscriptions.models import Subscription
from tests.factories import make_event_type, make_room, make_subscription

pytestmark = pytest.mark.django_db

PUSH = {"name": "billing", "type": "push", "push_url": "http://127.0.0.1:9/hook", "delivery_delay_ms": "",
        "delivery_delay_multiplier": "", "delivery_attempts": "", "max_delivery_delay_ms": "",
        "max_in_flight": "10", "timeout_ms": "10000"}
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "schedule"}


@pytest.fixture
def room() -> Room:
    room = make_room(name="orders", delivery_delay_ms=1000, delivery_delay_multiplier=2, delivery_attempts=3)
    make_event_type(room, name="order.created", version="1")
    make_event_type(room, name="order.paid", version="1")
    return room


def test_a_push_subscription_is_created_and_its_secret_shown_once(staff_client: Client, room: Room) -> None:
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/new/",
                                 {**PUSH, "event_types": ["order.created@1", "order.paid"]})

    subscription = Subscription.objects.get(room=room, name="billing")
    assert response.status_code == 302 and response["Location"] == f"/subscriptions/{subscription.pk}/secret/"
    shown = staff_client.get(response["Location"])
    assert shown["Cache-Control"] == "no-store" and subscription.signing_secret in shown.content.decode()
    again = staff_client.get(response["Location"]).content.decode()  # a reload: the secret is gone
    assert subscription.signing_secret not in again and "has been shown already" in again
    assert subscription.event_types == [{"name": "order.created", "version": "1"}, {"name": "order.paid"}]
    assert subscription.delivery_attempts is None and subscription.type == "push"
    detail = staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()
    assert subscription.signing_secret not in detail and subscription.signing_secret[:10] + "…" in detail


def test_a_pull_subscription_with_overrides_goes_to_its_page(staff_client: Client, room: Room) -> None:
    fields = {**PUSH, "name": "warehouse", "type": "pull", "push_url": "", "delivery_attempts": "0",
              "delivery_delay_ms": "250"}
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/new/", fields)

    subscription = Subscription.objects.get(name="warehouse")
    assert response.status_code == 302 and response["Location"] == f"/subscriptions/{subscription.pk}/"
    assert (subscription.type, subscription.delivery_attempts, subscription.delivery_delay_ms) == ("pull", 0, 250)
    assert subscription.event_types == []


@pytest.mark.parametrize(("change", "message"), [
    ({"push_url": ""}, "A push subscription needs a push URL."),
    ({"type": "pull"}, "A pull subscription takes no push URL."),
    ({"push_url": "http://10.1.2.3/hook"}, ("Refused: 10.1.2.3 resolves to 10.1.2.3, a private address; an operator "
                                            "can allow it (or only port 80 of it) with DOVECOTE_PUSH_ALLOW_HOSTS.")),
    ({"push_url": "ftp://example.com/"}, "Refused: the scheme must be http or https"),
    ({"push_url": "not a url"}, "Enter a valid URL."),
    ({"delivery_delay_ms": "5000", "max_delivery_delay_ms": "1000"}, "Must be at least the delay (5000 ms)"),
    ({"delivery_delay_multiplier": "0.5"}, "greater than or equal to 1"),
    ({"timeout_ms": "50"}, "greater than or equal to 100"),
    ({"event_types": ["order.unknown"]}, "Select a valid choice."),
    ({"name": ""}, "This field is required."),
])
def test_a_bad_subscription_is_refused_with_the_error_shown(staff_client: Client, room: Room, change: dict,
                                                            message: str) -> None:
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/new/", {**PUSH, **change})

    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Subscription.objects.exists()


def test_a_taken_name_is_refused_in_the_same_room_only(staff_client: Client, room: Room) -> None:
    make_subscription(room, name="billing")
    other = make_room()
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/new/", PUSH)
    assert "This room already has a subscription named &#x27;billing&#x27;." in response.content.decode()
    assert staff_client.post(f"/rooms/{other.pk}/subscriptions/new/", PUSH).status_code == 302
    assert Subscription.objects.filter(name="billing").count() == 2


def test_editing_keeps_the_type_and_changes_the_rest(staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room, name="billing", event_types=[{"name": "order.paid"}])
    page = staff_client.get(f"/subscriptions/{subscription.pk}/edit/")
    assert page.context["form"]["event_types"].value() == ["order.paid"]
    assert 'name="type" value="push" id="id_type_0" required disabled checked' in page.content.decode()

    response = staff_client.post(f"/subscriptions/{subscription.pk}/edit/",
                                 {**PUSH, "type": "pull", "push_url": "http://127.0.0.1:9/other",
                                  "delivery_attempts": "7"})

    assert response.status_code == 302
    subscription.refresh_from_db()
    assert subscription.type == "push" and subscription.push_url == "http://127.0.0.1:9/other"
    assert subscription.delivery_attempts == 7 and subscription.event_types == []


def test_the_preview_shows_each_redelivery_with_the_rooms_values_for_blank_overrides(staff_client: Client,
                                                                                     room: Room) -> None:
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/preview/", {**PUSH, "delivery_attempts": "2"},
                                 **HTMX)

    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<section id="schedule"')
    assert [(r.attempt, r.delay_ms, r.at_ms) for r in response.context["preview"].redeliveries] == [
        (2, 2000, 2000), (3, 4000, 6000)]
    assert response.context["sources"]["delivery_attempts"] == "set here"
    assert response.context["sources"]["delivery_delay_ms"] == "room's value"
    assert "If attempt 3 (at +6 s) fails too, the message is <strong>dead-lettered</strong>" in html


def test_the_preview_applies_the_cap(staff_client: Client, room: Room) -> None:
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/preview/",
                                 {"delivery_delay_ms": "1000", "delivery_delay_multiplier": "10",
                                  "delivery_attempts": "3", "max_delivery_delay_ms": "5000"}, **HTMX)
    rows = response.context["preview"].redeliveries
    assert [(r.delay_ms, r.capped) for r in rows] == [(5000, True), (5000, True), (5000, True)]
    assert "capped" in response.content.decode()


def test_the_preview_says_when_the_rooms_expiration_cuts_the_retries_short(staff_client: Client, room: Room) -> None:
    room.message_expiration_ms = 10_000
    room.save()
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/preview/", {"delivery_attempts": "5"}, **HTMX)

    html = response.content.decode()
    assert response.context["preview"].expires_after_attempt == 3  # redelivery 3 would start at +14 s
    assert "If attempt 3 fails, the message <strong>expires</strong>" in html
    assert "not attempted: past the expiration" in html and "2 more redeliveries never happen" in html


def test_the_preview_shows_what_stops_it(staff_client: Client, room: Room) -> None:
    response = staff_client.post(f"/rooms/{room.pk}/subscriptions/preview/",
                                 {"delivery_delay_multiplier": "0.2"}, **HTMX)
    assert response.context["preview"] is None
    assert "Multiplier: Ensure this value is greater than or equal to 1.0." in response.content.decode()


def test_the_room_form_previews_its_own_values(staff_client: Client) -> None:
    response = staff_client.post("/rooms/preview/", {"delivery_delay_ms": "100", "delivery_delay_multiplier": "1",
                                                     "delivery_attempts": "2", "message_expiration_ms": ""},
                                 **HTMX)
    assert [r.at_ms for r in response.context["preview"].redeliveries] == [100, 200]
    missing = staff_client.post("/rooms/preview/", {"delivery_delay_ms": "100"}, **HTMX)
    assert "Redeliveries: Needed for the schedule." in missing.content.decode()


def test_pause_and_resume_change_the_status(staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room)

    staff_client.post(f"/subscriptions/{subscription.pk}/pause/")
    subscription.refresh_from_db()
    assert subscription.status == "paused"
    assert b"Resume" in staff_client.get(f"/subscriptions/{subscription.pk}/").content

    staff_client.post(f"/subscriptions/{subscription.pk}/resume/")
    subscription.refresh_from_db()
    assert subscription.status == "active" and subscription.status_reason == ""


def test_a_disabled_subscription_shows_why_and_can_be_resumed(staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room)
    subscription.disable("the receiver answered 410 Gone")

    html = staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()
    assert "the receiver answered 410 Gone" in html and "disabled" in html

    staff_client.post(f"/subscriptions/{subscription.pk}/resume/")
    subscription.refresh_from_db()
    assert subscription.status == "active"


def test_rotating_the_secret_asks_first_then_shows_the_new_one_once(staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room)
    old = subscription.signing_secret
    path = f"/subscriptions/{subscription.pk}/rotate-secret/"

    asked = staff_client.get(path).content.decode()
    unconfirmed = staff_client.post(path)
    subscription.refresh_from_db()
    assert "the old secret signs them too" in asked and 'name="confirmed"' in asked
    assert 'name="overlap_hours"' in asked and 'value="24"' in asked
    assert unconfirmed.status_code == 200 and subscription.signing_secret == old

    response = staff_client.post(path, {"confirmed": "yes", "overlap_hours": "24"})

    subscription.refresh_from_db()
    assert subscription.signing_secret != old and subscription.signing_secret.startswith("whsec_")
    assert subscription.previous_signing_secret == old
    assert response.status_code == 302 and response["Location"] == f"/subscriptions/{subscription.pk}/secret/"
    shown = staff_client.get(response["Location"]).content.decode()
    assert subscription.signing_secret in shown and "with the old one too until" in shown
    assert subscription.signing_secret not in staff_client.get(response["Location"]).content.decode()
    assert subscription.signing_secret not in staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()


def test_the_old_secret_signs_until_the_overlap_ends_or_is_ended_early_in_the_ui(
        staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room)
    old = subscription.signing_secret
    staff_client.post(f"/subscriptions/{subscription.pk}/rotate-secret/", {"confirmed": "yes", "overlap_hours": "2"})
    subscription.refresh_from_db()
    until = subscription.old_secret_until()
    assert until is not None and subscription.signing_secrets() == (subscription.signing_secret, old)

    page = staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()
    assert f"signs each push too until {until:%Y-%m-%d %H:%M:%S} UTC" in page
    assert old not in page

    staff_client.post(f"/subscriptions/{subscription.pk}/end-secret-overlap/")

    subscription.refresh_from_db()
    assert subscription.old_secret_until() is None and subscription.signing_secrets() == (subscription.signing_secret,)
    assert "secret-overlap" not in staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()


def test_an_overlap_beyond_a_week_is_refused_with_the_field_named(staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room)
    old = subscription.signing_secret
    response = staff_client.post(f"/subscriptions/{subscription.pk}/rotate-secret/",
                                 {"confirmed": "yes", "overlap_hours": "169"})
    subscription.refresh_from_db()
    assert response.status_code == 200 and subscription.signing_secret == old
    assert "Ensure this value is less than or equal to 168." in response.content.decode()


def test_a_pull_subscription_has_no_secret_to_rotate(staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room, type="pull", push_url="")
    old = subscription.signing_secret
    response = staff_client.post(f"/subscriptions/{subscription.pk}/rotate-secret/", follow=True)
    subscription.refresh_from_db()
    assert subscription.signing_secret == old
    assert "Only push subscriptions have a signing secret." in response.content.decode()


def test_a_test_event_goes_to_its_subscription_alone_with_the_first_matching_event_type(
        staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room, event_types=[{"name": "order.paid"}])
    make_subscription(room)  # another subscription, whose filter matches too

    response = staff_client.post(f"/subscriptions/{subscription.pk}/test-event/",
                                 {"payload": '{"hello": "world"}', "correlation_id": "try-1"})

    message = Message.objects.get(correlation_id="try-1")
    assert response.status_code == 302 and response["Location"] == f"/messages/{message.pk}/"
    assert (message.event_type, message.event_version, message.payload) == ("order.paid", "1", {"hello": "world"})
    assert list(Delivery.objects.filter(message=message).values_list("subscription_id", flat=True)) == [
        subscription.pk]  # not the other one


def test_a_test_event_the_schema_refuses_shows_why(staff_client: Client) -> None:
    room = make_room()
    make_event_type(room, schema={"type": "object", "required": ["order_id"]})
    subscription = make_subscription(room)

    response = staff_client.post(f"/subscriptions/{subscription.pk}/test-event/", {"payload": '{"test": true}'})

    assert response.status_code == 200
    assert "&#x27;order_id&#x27; is a required property" in response.content.decode()
    assert not Message.objects.exists()


def test_a_test_event_needs_an_event_type_the_subscription_matches(staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room, event_types=[{"name": "order.shipped"}])
    response = staff_client.post(f"/subscriptions/{subscription.pk}/test-event/", {"payload": "{}"})
    assert "The room has no event type this subscription matches" in response.content.decode()
    assert not Message.objects.exists()


def test_deleting_a_subscription_asks_then_dead_letters_what_was_on_its_way(staff_client: Client, room: Room) -> None:
    from tests.factories import make_delivery, make_message

    subscription = make_subscription(room, name="billing")
    delivery = make_delivery(make_message(room), subscription, status="queued")

    page = staff_client.get(f"/subscriptions/{subscription.pk}/delete/").content.decode()
    assert "Delete subscription billing" in page
    response = staff_client.post(f"/subscriptions/{subscription.pk}/delete/")

    assert response.status_code == 302 and response["Location"] == f"/rooms/{room.pk}/"
    assert not Subscription.objects.filter(pk=subscription.pk).exists()
    delivery.refresh_from_db()
    assert delivery.status == "dead_lettered"


def test_the_list_filters_by_room_type_and_status(staff_client: Client, room: Room) -> None:
    make_subscription(room, name="billing")
    make_subscription(room, name="warehouse", type="pull", push_url="")
    paused = make_subscription(make_room(), name="ledger")
    paused.pause(by="in a test")

    def names(query: str) -> set[str]:
        return {s.name for s, _ in staff_client.get(f"/subscriptions/?{query}").context["rows"]}

    assert names("") == {"billing", "warehouse", "ledger"}
    assert names(f"room={room.pk}") == {"billing", "warehouse"}
    assert names("type=pull") == {"warehouse"}
    assert names("status=paused") == {"ledger"}


def test_the_page_shows_the_breaker_its_reason_next_probe_and_history(staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room, breaker_probe_delay_ms=2000)
    closed_page = staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()
    assert 'badge-closed">closed' in closed_page and "No failures have opened it." in closed_page
    assert "after 2 s, 4 s, 8 s" in closed_page
    now = timezone.now()
    subscription.move_breaker("open", "10 consecutive attempts failed, the last: HTTP 500", now=now, delivery_id=7,
                              attempt=3, failures=10)

    page = staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()

    assert 'badge-open">open' in page
    assert "10 consecutive attempts failed, the last: HTTP 500" in page
    probe_at = now + timedelta(seconds=2)
    assert f"{probe_at:%Y-%m-%d %H:%M:%S} UTC (probe 1)" in page
    assert "closed → <strong>open</strong>" in page and "(delivery 7, attempt 3)" in page


def test_breaker_overrides_are_edited_with_the_rooms_values_as_placeholders(staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room)
    form = staff_client.get(f"/subscriptions/{subscription.pk}/edit/").content.decode()
    assert 'placeholder="room: 10"' in form and 'placeholder="room: 432000"' in form

    staff_client.post(f"/subscriptions/{subscription.pk}/edit/", {
        "name": subscription.name, "push_url": subscription.push_url, "max_in_flight": 10, "timeout_ms": 10000,
        "breaker_failure_threshold": 3, "breaker_failure_ratio": "0", "breaker_probe_delay_ms": 500,
        "breaker_on_disable": "dead_letter"})

    subscription.refresh_from_db()
    assert (subscription.breaker_failure_threshold, subscription.breaker_failure_ratio) == (3, 0)
    assert subscription.breaker_policy.probe_delay_ms == 500 and subscription.breaker_policy.failure_ratio is None
    assert subscription.breaker_on_disable == "dead_letter"


def test_the_page_and_the_preview_show_the_rate_limit_beside_max_in_flight(staff_client: Client, room: Room) -> None:
    subscription = make_subscription(room, max_per_second=20, max_in_flight=5)
    page = staff_client.get(f"/subscriptions/{subscription.pk}/").content.decode()
    assert "at most <strong>20 per second</strong> (across every worker) and 5 at once" in page
    assert "a backlog of 1,000 takes at least 50 s" in page

    preview = staff_client.post(f"/rooms/{room.pk}/subscriptions/preview/",
                                {"max_per_second": "4", "max_in_flight": "2"}).content.decode()
    assert "at most <strong>4 per second</strong> (across every worker) and 2 at once" in preview
    assert "a backlog of 1,000 takes at least 4 min 10 s" in preview
    unlimited = staff_client.post(f"/rooms/{room.pk}/subscriptions/preview/",
                                  {"max_per_second": "", "max_in_flight": "2"}).content.decode()
    assert "2 at once, no limit per second" in unlimited
