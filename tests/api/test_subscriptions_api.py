"""/api/v1/rooms/{id}/subscriptions/ and /subscriptions/{id}/: access, validation, pause/resume, delete, secrets."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.forms.models import model_to_dict
from django.test import Client
from django.utils import timezone

from delivery.models import Delivery, PushClaim
from delivery.push import claims
from delivery.tasks import delete_queue
from rooms.models import Room
from subscriptions.models import Subscription
from tests.callers import Caller, call_api
from tests.factories import make_delivery, make_event_type, make_message, make_room, make_subscription

pytestmark = pytest.mark.django_db

PUSH = {"name": "billing", "type": "push", "push_url": "http://127.0.0.1:9/hook",
        "event_types": [{"name": "order.created", "version": "1"}], "delivery_delay_ms": None,
        "delivery_delay_multiplier": None, "delivery_attempts": None, "max_in_flight": 10, "timeout_ms": 10000}
PULL = {"name": "audit", "type": "pull"}
LEFT_OUT = object()  # a field value meaning: leave the field out of the body


@pytest.fixture
def subscription(api_room: Room) -> Subscription:
    return make_subscription(api_room, name="billing")


@pytest.fixture
def drained(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The queues whose removal was enqueued (the Celery task is not run)."""
    queues: list[str] = []
    monkeypatch.setattr(delete_queue, "delay", queues.append)
    return queues


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str]]:
    """The push sessions enqueued, as (subscription id, claim token); the Celery task is not run."""
    started: list[tuple[int, str]] = []
    monkeypatch.setattr(claims, "enqueue_sessions", started.extend)
    return started


def create(client: Client, room: Room, body: dict, key: str):
    return call_api(client, "post", f"/api/v1/rooms/{room.pk}/subscriptions/", body, key)


def state() -> list[dict]:
    return [model_to_dict(s) for s in Subscription.objects.order_by("pk")]


# ---- who may call what ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("method", "path", "body", "ok"),
    [
        ("post", "/api/v1/rooms/{room}/subscriptions/", PUSH | {"name": "new"}, 201),
        ("get", "/api/v1/rooms/{room}/subscriptions/", None, 200),
        ("get", "/api/v1/subscriptions/{sub}/", None, 200),
        ("patch", "/api/v1/subscriptions/{sub}/", {"max_in_flight": 3}, 200),
        ("delete", "/api/v1/subscriptions/{sub}/", None, 200),
        ("post", "/api/v1/subscriptions/{sub}/pause/", None, 200),
        ("post", "/api/v1/subscriptions/{sub}/resume/", None, 200),
        ("post", "/api/v1/subscriptions/{sub}/rotate-secret/", None, 200),
        ("post", "/api/v1/subscriptions/{sub}/end-secret-overlap/", None, 200),
        ("get", "/api/v1/subscriptions/{sub}/breaker/", None, 200),
    ],
)
def test_admin_keys_and_keys_of_the_room_manage_its_subscriptions(
    client: Client, caller: Caller, api_room: Room, subscription: Subscription, drained: list[str],
    sessions: list, method: str, path: str, body: object, ok: int,
) -> None:
    subscription.pause(by="in a test")  # so that resume has something to change
    before = state()
    response = caller.call(client, method, path.format(room=api_room.pk, sub=subscription.pk), body)
    assert response.status_code == caller.expected(ok)
    if response.status_code != ok or method == "get":
        assert state() == before  # a refused call changes nothing


# ---- create and read -----------------------------------------------------------------------------

def test_a_push_subscription_reply_shows_the_signing_secret_in_full_only_on_create(
    client: Client, admin_key: str, api_room: Room
) -> None:
    reply = create(client, api_room, PUSH, admin_key).json()
    stored = Subscription.objects.get(pk=reply["id"])
    assert reply["signing_secret"] == stored.signing_secret and reply["signing_secret"].startswith("whsec_")
    assert reply["destination"] == f"room-{api_room.pk}::subscription-{stored.pk}"
    assert (reply["status"], reply["status_reason"], reply["room"]) == ("active", "", api_room.pk)
    assert {k: reply[k] for k in PUSH} == PUSH
    masked = stored.signing_secret[:10] + "…"
    reply = call_api(client, "get", f"/api/v1/subscriptions/{stored.pk}/", None, admin_key)
    assert reply.json()["signing_secret"] == masked
    listed = call_api(client, "get", f"/api/v1/rooms/{api_room.pk}/subscriptions/", None, admin_key).json()
    assert listed["results"][0]["signing_secret"] == masked
    patched = call_api(client, "patch", f"/api/v1/subscriptions/{stored.pk}/", {"timeout_ms": 500}, admin_key).json()
    assert patched["signing_secret"] == masked


def test_a_pull_subscription_has_no_push_url_and_no_secret(client: Client, admin_key: str, api_room: Room) -> None:
    reply = create(client, api_room, PULL, admin_key).json()
    assert (reply["type"], reply["push_url"], reply["signing_secret"], reply["event_types"]) == ("pull", None, None, [])
    assert (reply["max_in_flight"], reply["timeout_ms"]) == (10, 10_000)


def test_a_filter_without_a_version_matches_every_version(client: Client, admin_key: str, api_room: Room) -> None:
    make_event_type(api_room, version="2")
    reply = create(client, api_room, PULL | {"event_types": [{"name": "order.created"}]}, admin_key).json()
    assert reply["event_types"] == [{"name": "order.created", "version": None}]
    assert Subscription.objects.get(pk=reply["id"]).matches("order.created", "2")


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"type": "push", "push_url": ""}, "push_url", "a push subscription needs a push_url"),
        ({"type": "push", "push_url": None}, "push_url", "a push subscription needs a push_url"),
        ({"type": "push", "push_url": LEFT_OUT}, "push_url", "a push subscription needs a push_url"),
        ({"type": "pull", "push_url": "http://127.0.0.1:9/"}, "push_url", "a pull subscription takes no push_url"),
        ({"type": "push", "push_url": "not a url"}, "push_url", "Enter a valid URL."),
        ({"type": "push", "push_url": "ftp://127.0.0.1/x"}, "push_url", "refused: the scheme must be http or https"),
        ({"type": "push", "push_url": "http://10.1.2.3/"}, "push_url",
         "refused: 10.1.2.3 resolves to 10.1.2.3, a private address"),
        ({"type": "carrier-pigeon"}, "type", "is not a valid choice"),
        ({"event_types": [{"name": "order.shipped"}]}, "event_types", "room {room} has no event type 'order.shipped'"),
        ({"event_types": [{"name": "order.created", "version": "9"}]}, "event_types",
         "room {room} has no event type 'order.created' version '9'"),
        ({"event_types": [{"version": "1"}]}, "event_types", "This field is required."),
        ({"delivery_delay_ms": -1}, "delivery_delay_ms", "greater than or equal to 0"),
        ({"delivery_delay_multiplier": 0.5}, "delivery_delay_multiplier", "greater than or equal to 1"),
        ({"delivery_delay_multiplier": "inf"}, "delivery_delay_multiplier", "A valid number is required."),
        ({"delivery_attempts": -1}, "delivery_attempts", "greater than or equal to 0"),
        ({"max_delivery_delay_ms": -1}, "max_delivery_delay_ms", "greater than or equal to 0"),
        ({"delivery_delay_ms": 900, "max_delivery_delay_ms": 800}, "max_delivery_delay_ms",
         "at least delivery_delay_ms"),
        ({"max_in_flight": 0}, "max_in_flight", "greater than or equal to 1"),
        ({"max_in_flight": 1001}, "max_in_flight", "less than or equal to 1000"),
        ({"timeout_ms": 99}, "timeout_ms", "greater than or equal to 100"),
        ({"timeout_ms": 300_001}, "timeout_ms", "less than or equal to 300000"),
        ({"name": ""}, "name", "may not be blank"),
    ],
)
def test_invalid_subscriptions_are_400_naming_the_field(client: Client, admin_key: str, api_room: Room,
                                                       body: dict, field: str, message: str) -> None:
    body = {k: v for k, v in (PUSH | body).items() if v is not LEFT_OUT}
    response = create(client, api_room, body, admin_key)
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {field}
    assert message.format(room=api_room.pk) in str(errors[field])
    assert not Subscription.objects.exists()


def test_a_push_url_on_the_allowed_loopback_host_is_accepted(client: Client, admin_key: str, api_room: Room) -> None:
    response = create(client, api_room, PUSH | {"push_url": "http://127.0.0.1:8123/hooks/in"}, admin_key)
    assert response.status_code == 201


def test_a_taken_name_in_the_room_is_409_and_free_in_another_room(client: Client, admin_key: str, api_room: Room,
                                                                  subscription: Subscription) -> None:
    response = create(client, api_room, PUSH, admin_key)
    assert response.status_code == 409
    assert response.json() == {"name": [f"room {api_room.pk} already has a subscription named 'billing'"]}
    other = make_room()
    make_event_type(other)
    assert create(client, other, PUSH, admin_key).status_code == 201


def test_subscriptions_are_listed_per_room_filtered_and_ordered(client: Client, admin_key: str,
                                                                api_room: Room) -> None:
    make_subscription(api_room, name="a-push")
    make_subscription(api_room, name="b-pull", type="pull")
    make_subscription(api_room, name="c-paused").pause(by="in a test")
    make_subscription(make_room(), name="elsewhere")
    path = f"/api/v1/rooms/{api_room.pk}/subscriptions/"

    def names(**params: str) -> list[str]:
        response = call_api(client, "get", path, params, admin_key)
        assert response.status_code == 200
        return [row["name"] for row in response.json()["results"]]

    assert names() == ["a-push", "b-pull", "c-paused"]
    assert names(type="pull") == ["b-pull"]
    assert names(status="paused") == ["c-paused"]
    assert names(name="a-push") == ["a-push"]
    assert names(ordering="-name", page_size="2") == ["c-paused", "b-pull"]


def test_a_bad_list_filter_is_400_naming_it(client: Client, admin_key: str, api_room: Room) -> None:
    response = call_api(client, "get", f"/api/v1/rooms/{api_room.pk}/subscriptions/",
                        {"status": "asleep", "type": "fax"}, admin_key)
    assert response.status_code == 400 and set(response.json()) == {"status", "type"}


# ---- change --------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "pull"}, "type"),
        ({"push_url": ""}, "push_url"),
        ({"push_url": "http://169.254.169.254/latest/meta-data/"}, "push_url"),
        ({"event_types": [{"name": "nope"}]}, "event_types"),
        ({"delivery_delay_ms": 2000, "max_delivery_delay_ms": 1000}, "max_delivery_delay_ms"),
        ({"status": "disabled", "max_in_flight": 0}, "max_in_flight"),
    ],
)
def test_invalid_changes_are_400_naming_the_field(client: Client, admin_key: str, subscription: Subscription,
                                                  body: dict, field: str) -> None:
    before = state()
    response = call_api(client, "patch", f"/api/v1/subscriptions/{subscription.pk}/", body, admin_key)
    assert response.status_code == 400 and set(response.json()) == {field}
    assert state() == before


def test_a_cap_below_an_existing_delay_override_is_400(client: Client, admin_key: str, api_room: Room) -> None:
    subscription = make_subscription(api_room, delivery_delay_ms=5000)
    response = call_api(client, "patch", f"/api/v1/subscriptions/{subscription.pk}/",
                        {"max_delivery_delay_ms": 10}, admin_key)
    assert response.status_code == 400 and set(response.json()) == {"max_delivery_delay_ms"}


def test_a_pull_subscription_cannot_be_given_a_push_url(client: Client, admin_key: str, api_room: Room) -> None:
    pull = make_subscription(api_room, type="pull")
    response = call_api(client, "patch", f"/api/v1/subscriptions/{pull.pk}/",
                        {"push_url": "http://127.0.0.1:9/"}, admin_key)
    assert response.status_code == 400 and set(response.json()) == {"push_url"}


def test_renaming_to_a_name_taken_in_the_room_is_409(client: Client, admin_key: str, api_room: Room,
                                                     subscription: Subscription) -> None:
    other = make_subscription(api_room, name="audit")
    path = f"/api/v1/subscriptions/{other.pk}/"
    assert call_api(client, "patch", path, {"name": "billing"}, admin_key).status_code == 409
    assert call_api(client, "patch", path, {"name": "audit"}, admin_key).status_code == 200


def test_a_patch_changes_the_fields_given_and_status_is_read_only(client: Client, admin_key: str,
                                                                  subscription: Subscription) -> None:
    body = {"push_url": "http://127.0.0.1:9/new", "delivery_attempts": 0, "status": "paused"}
    reply = call_api(client, "patch", f"/api/v1/subscriptions/{subscription.pk}/", body, admin_key).json()
    assert (reply["push_url"], reply["delivery_attempts"], reply["status"]) == ("http://127.0.0.1:9/new", 0, "active")
    subscription.refresh_from_db()
    assert subscription.retry_policy.attempts == 0


def test_overrides_set_back_to_null_fall_back_to_the_rooms_values(client: Client, admin_key: str,
                                                                   api_room: Room) -> None:
    subscription = make_subscription(api_room, delivery_delay_ms=5, delivery_attempts=1)
    body = {"delivery_delay_ms": None, "delivery_attempts": None}
    assert call_api(client, "patch", f"/api/v1/subscriptions/{subscription.pk}/", body, admin_key).status_code == 200
    subscription.refresh_from_db()
    assert (subscription.retry_policy.delay_ms, subscription.retry_policy.attempts) == (
        api_room.delivery_delay_ms, api_room.delivery_attempts)


# ---- pause, resume, rotate -----------------------------------------------------------------------

def test_pause_is_idempotent_and_says_who_where_and_when(client: Client, admin_key: str,
                                                        subscription: Subscription) -> None:
    path = f"/api/v1/subscriptions/{subscription.pk}/pause/"
    first = call_api(client, "post", path, None, admin_key).json()
    second = call_api(client, "post", path, None, admin_key).json()
    assert first["status"] == second["status"] == "paused"
    assert re.fullmatch(r"paused through the API with key “admin” on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC",
                        first["status_reason"]), first["status_reason"]
    assert second["updated_at"] == first["updated_at"]


def test_pausing_a_disabled_subscription_keeps_why_it_was_disabled(client: Client, admin_key: str,
                                                                   subscription: Subscription) -> None:
    subscription.disable("answered 410 Gone")
    reply = call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/pause/", None, admin_key).json()
    assert (reply["status"], reply["status_reason"]) == ("paused", "answered 410 Gone")


def test_a_paused_subscription_keeps_what_is_published_and_counts_it_waiting(client: Client, admin_key: str,
                                                                            api_room: Room, subscription: Subscription,
                                                                            sessions: list) -> None:
    event = {"event_type": "order.created", "event_version": "1", "payload": {}}
    publish = f"/api/v1/rooms/{api_room.pk}/messages/"
    paused = call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/pause/", None, admin_key).json()
    assert paused["waiting"] == 0
    destinations = call_api(client, "post", publish, event, admin_key).json()["destinations"]
    assert destinations == [{"subscription_id": subscription.pk, "destination": subscription.destination}]
    reply = call_api(client, "get", f"/api/v1/subscriptions/{subscription.pk}/", None, admin_key).json()
    listed = call_api(client, "get", f"/api/v1/rooms/{api_room.pk}/subscriptions/", None, admin_key).json()
    assert reply["waiting"] == 1 and [s["waiting"] for s in listed["results"]] == [1]
    assert sessions == []  # nothing starts delivering to it until it is resumed


def test_resuming_a_disabled_push_subscription_clears_the_reason_and_starts_a_session(
    client: Client, admin_key: str, subscription: Subscription, sessions: list, django_capture_on_commit_callbacks
) -> None:
    subscription.disable("answered 410 Gone")
    with django_capture_on_commit_callbacks(execute=True):
        reply = call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/resume/", None, admin_key).json()
    assert (reply["status"], reply["status_reason"]) == ("active", "")
    claims = list(PushClaim.objects.filter(subscription=subscription).values_list("token", flat=True))
    assert sessions == [(subscription.pk, token) for token in claims] and len(claims) == 1


def test_resume_is_idempotent_and_starts_no_session_for_pull(
    client: Client, admin_key: str, api_room: Room, sessions: list, django_capture_on_commit_callbacks
) -> None:
    pull = make_subscription(api_room, type="pull")
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(2):
            reply = call_api(client, "post", f"/api/v1/subscriptions/{pull.pk}/resume/", None, admin_key).json()
            assert reply["status"] == "active"
    assert sessions == []


def test_rotating_the_secret_shows_the_new_one_in_full_once(client: Client, admin_key: str,
                                                            subscription: Subscription) -> None:
    old = subscription.signing_secret
    reply = call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/rotate-secret/", None, admin_key).json()
    subscription.refresh_from_db()
    assert reply["signing_secret"] == subscription.signing_secret != old
    shown = call_api(client, "get", f"/api/v1/subscriptions/{subscription.pk}/", None, admin_key).json()
    assert shown["signing_secret"] == subscription.signing_secret[:10] + "…"


def test_a_rotation_keeps_the_old_secret_signing_for_the_overlap_the_reply_names(
        client: Client, admin_key: str, subscription: Subscription) -> None:
    old = subscription.signing_secret
    path = f"/api/v1/subscriptions/{subscription.pk}/rotate-secret/"
    before = timezone.now()
    reply = call_api(client, "post", path, {"overlap_seconds": 3600}, admin_key).json()
    subscription.refresh_from_db()
    until = subscription.old_secret_until()
    assert until is not None and timedelta(seconds=3599) <= until - before <= timedelta(seconds=3601)
    assert reply["previous_secret_until"] == until.isoformat().replace("+00:00", "Z")
    assert subscription.signing_secrets() == (reply["signing_secret"], old)

    ended = call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/end-secret-overlap/", None,
                     admin_key).json()
    subscription.refresh_from_db()
    assert ended["previous_secret_until"] is None and subscription.signing_secrets() == (reply["signing_secret"],)


def test_a_rotation_without_an_overlap_length_keeps_the_old_secret_for_a_day(
        client: Client, admin_key: str, subscription: Subscription) -> None:
    before = timezone.now()
    call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/rotate-secret/", None, admin_key)
    subscription.refresh_from_db()
    until = subscription.old_secret_until()
    assert until is not None and timedelta(hours=24) <= until - before <= timedelta(hours=24, seconds=5)


@pytest.mark.parametrize("overlap", [-1, 7 * 24 * 3600 + 1, "a day"])
def test_an_overlap_out_of_bounds_is_refused_naming_the_field(client: Client, admin_key: str,
                                                               subscription: Subscription, overlap: object) -> None:
    old = subscription.signing_secret
    response = call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/rotate-secret/",
                        {"overlap_seconds": overlap}, admin_key)
    subscription.refresh_from_db()
    assert response.status_code == 400 and set(response.json()) == {"overlap_seconds"}
    assert subscription.signing_secret == old


def test_a_rotation_with_a_zero_overlap_stops_the_old_secret_at_once(client: Client, admin_key: str,
                                                                      subscription: Subscription) -> None:
    reply = call_api(client, "post", f"/api/v1/subscriptions/{subscription.pk}/rotate-secret/",
                     {"overlap_seconds": 0}, admin_key).json()
    subscription.refresh_from_db()
    assert reply["previous_secret_until"] is None and subscription.signing_secrets() == (reply["signing_secret"],)


def test_the_breaker_its_reason_next_probe_and_history_are_read_through_the_api(
        client: Client, admin_key: str, subscription: Subscription) -> None:
    now = timezone.now()
    subscription.move_breaker("open", "10 consecutive attempts failed, the last: HTTP 500", now=now,
                              delivery_id=12, attempt=4, failures=10)

    breaker = call_api(client, "get", f"/api/v1/subscriptions/{subscription.pk}/breaker/", None, admin_key).json()
    shown = call_api(client, "get", f"/api/v1/subscriptions/{subscription.pk}/", None, admin_key).json()["breaker"]

    assert breaker["state"] == "open" and breaker["reason"] == "10 consecutive attempts failed, the last: HTTP 500"
    assert breaker["consecutive_failures"] == 10 and breaker["failed_probes"] == 0
    assert breaker["next_probe_at"] == (now + timedelta(seconds=5)).isoformat().replace("+00:00", "Z")
    assert breaker["probe_schedule_ms"] == [5000, 10000, 20000, 40000, 80000, 160000]
    [transition] = breaker["history"]
    assert transition["from_state"] == "closed" and transition["to_state"] == "open"
    assert (transition["delivery_id"], transition["attempt"]) == (12, 4)
    assert {k: v for k, v in breaker.items() if k != "history"} == shown


@pytest.mark.parametrize(("field", "value"), [("breaker_failure_ratio", 1.5), ("breaker_failure_threshold", -1),
                                              ("breaker_probe_delay_ms", 10), ("breaker_window_s", 0),
                                              ("breaker_on_disable", "forget"), ("max_per_second", 0),
                                              ("max_per_second", 10_001)])
def test_breaker_and_pace_settings_out_of_bounds_are_refused_naming_the_field(
        client: Client, admin_key: str, subscription: Subscription, field: str, value: object) -> None:
    response = call_api(client, "patch", f"/api/v1/subscriptions/{subscription.pk}/", {field: value}, admin_key)
    assert response.status_code == 400 and set(response.json()) == {field}


def test_breaker_overrides_fall_back_to_the_rooms_defaults(client: Client, admin_key: str,
                                                          subscription: Subscription) -> None:
    room_id = subscription.room_id
    call_api(client, "patch", f"/api/v1/rooms/{room_id}/", {"breaker_failure_threshold": 4,
                                                             "breaker_probe_delay_ms": 250}, admin_key)
    call_api(client, "patch", f"/api/v1/subscriptions/{subscription.pk}/", {"breaker_probe_delay_ms": 1000,
                                                                             "breaker_on_disable": "dead_letter"},
             admin_key)
    subscription = Subscription.objects.select_related("room").get(pk=subscription.pk)
    policy = subscription.breaker_policy
    assert (policy.failure_threshold, policy.probe_delay_ms, policy.failure_ratio) == (4, 1000, 0.5)
    assert subscription.breaker_on_disable == "dead_letter"


def test_a_pull_subscription_has_no_secret_to_rotate(client: Client, admin_key: str, api_room: Room) -> None:
    pull = make_subscription(api_room, type="pull")
    response = call_api(client, "post", f"/api/v1/subscriptions/{pull.pk}/rotate-secret/", None, admin_key)
    assert response.status_code == 400 and set(response.json()) == {"type"}


# ---- delete --------------------------------------------------------------------------------------

def test_deleting_a_subscription_dead_letters_what_is_on_its_way_and_drains_its_queues(
    client: Client, admin_key: str, api_room: Room, subscription: Subscription, drained: list[str],
    django_capture_on_commit_callbacks,
) -> None:
    queued = make_delivery(make_message(api_room), subscription, status="queued")
    retrying = make_delivery(make_message(api_room), subscription, status="retrying", attempts=2)
    delivered = make_delivery(make_message(api_room), subscription, status="delivered")
    with django_capture_on_commit_callbacks(execute=True):
        response = call_api(client, "delete", f"/api/v1/subscriptions/{subscription.pk}/", None, admin_key)
    assert response.status_code == 200
    assert response.json() == {
        "id": subscription.pk, "dead_lettered": 2,
        "detail": f"subscription {subscription.pk} is deleted; 2 unsettled deliveries were dead-lettered "
                  "and nothing more will be delivered to it",
    }
    assert not Subscription.objects.filter(pk=subscription.pk).exists()
    rows = {d.pk: d for d in Delivery.objects.all()}
    for row in (rows[queued.pk], rows[retrying.pk]):
        assert row.status == "dead_lettered" and row.last_error == f"subscription {subscription.pk} was deleted"
        assert row.subscription_id is None and row.destination == subscription.destination  # kept in the log
    assert rows[delivered.pk].status == "delivered"
    assert drained == [subscription.destination]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/rooms/{missing}/subscriptions/"),
        ("post", "/api/v1/rooms/{missing}/subscriptions/"),
        ("get", "/api/v1/subscriptions/{missing}/"),
        ("patch", "/api/v1/subscriptions/{missing}/"),
        ("delete", "/api/v1/subscriptions/{missing}/"),
        ("post", "/api/v1/subscriptions/{missing}/pause/"),
        ("post", "/api/v1/subscriptions/{missing}/resume/"),
        ("post", "/api/v1/subscriptions/{missing}/rotate-secret/"),
        ("post", "/api/v1/subscriptions/{missing}/end-secret-overlap/"),
        ("get", "/api/v1/subscriptions/{missing}/breaker/"),
    ],
)
def test_unknown_ids_are_404(client: Client, admin_key: str, method: str, path: str) -> None:
    response = call_api(client, method, path.format(missing=999_999_999), PUSH if method != "get" else None, admin_key)
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [("post", "/api/v1/rooms/{room}/subscriptions/"), ("patch", "/api/v1/subscriptions/{sub}/")],
)
def test_a_body_over_256_kib_is_413(client: Client, admin_key: str, api_room: Room, subscription: Subscription,
                                    method: str, path: str) -> None:
    body = PUSH | {"push_url": "http://127.0.0.1:9/" + "x" * (256 * 1024)}
    response = call_api(client, method, path.format(room=api_room.pk, sub=subscription.pk), body, admin_key)
    assert response.status_code == 413
