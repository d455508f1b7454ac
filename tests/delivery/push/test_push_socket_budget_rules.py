"""The socket budget's rules (delivery/push/budget.py), and the transport keeping idle connections within it.

The budget is a value object on the event loop: its caps, its max-min fair serving by room then
subscription, and what it derives from the open-file limit are checked here directly; the pool
against real receivers on loopback. The attack on a real worker is tests/delivery/push/test_push_socket_budget.py.
"""

from __future__ import annotations

import asyncio
import random
import socket
import threading
from collections.abc import Iterator

import pytest

from delivery.push.budget import SocketBudget, socket_budget_size
from delivery.transports import PushRequest, PushTransport


def test_the_budget_is_the_setting_or_half_the_open_file_limit_when_that_is_lower() -> None:
    assert socket_budget_size(256, nofile=1024) == 256
    assert socket_budget_size(256, nofile=300) == 150
    assert socket_budget_size(256, nofile=1) == 1


def test_a_room_and_a_subscription_take_no_more_than_their_caps_while_slots_are_free() -> None:
    budget = SocketBudget(total=10, per_room=5, per_subscription=3)

    taken = [budget.take(1, 11, 100, lambda: None), budget.take(1, 12, 100, lambda: None),
             budget.take(2, 21, 100, lambda: None)]

    assert taken == [3, 2, 3] and budget.in_use == 8 and budget.waiting() == 3


def test_freed_slots_go_in_turn_by_room_then_subscription_when_they_hold_alike_and_wake_the_session() -> None:
    budget = SocketBudget(total=6, per_room=6, per_subscription=6)
    woken: list[int] = []
    assert budget.take(1, 11, 6, lambda: woken.append(11)) == 6  # room 1 holds everything
    for room, subscription in ((1, 12), (2, 21), (2, 22), (3, 31)):
        assert budget.take(room, subscription, 10, lambda s=subscription: woken.append(s)) == 0

    budget.release(1, 11, 6)

    # Each room in turn, whatever its number of subscriptions; in a room, each subscription in turn.
    assert woken == [12, 21, 31, 12, 22, 31]
    assert [budget.take(r, s, 10, lambda: None) for r, s in ((1, 12), (2, 21), (2, 22), (3, 31))] == [2, 1, 1, 2]


def test_a_freed_slot_goes_to_the_subscription_holding_the_fewest_not_to_the_slow_one_waiting_longest() -> None:
    budget = SocketBudget(total=10, per_room=10, per_subscription=10)
    woken: list[int] = []
    assert budget.take(1, 11, 8, lambda: None) == 8  # a slow receiver: its POSTs hold their slots for seconds
    assert budget.take(1, 12, 2, lambda: None) == 2  # a fast one
    assert budget.take(1, 11, 5, lambda: woken.append(11)) == 0  # the slow one waits first
    assert budget.take(1, 12, 5, lambda: woken.append(12)) == 0
    assert budget.take(2, 21, 1, lambda: woken.append(21)) == 0  # another room, holding nothing

    budget.release(1, 12, 2)  # the fast one's POSTs answered

    assert woken == [21, 12]  # the room holding nothing first, then the fast subscription of the busy room
    budget.release(1, 11, 1)
    assert woken == [21, 12, 12]  # still the fast one: 2 held against the slow one's 7


def test_a_newcomer_does_not_take_a_slot_given_to_a_waiting_session() -> None:
    budget = SocketBudget(total=2, per_room=2, per_subscription=2)
    budget.take(1, 11, 2, lambda: None)
    assert budget.take(2, 21, 1, lambda: None) == 0

    budget.release(1, 11)

    assert budget.take(3, 31, 1, lambda: None) == 0
    assert budget.take(2, 21, 1, lambda: None) == 1


def test_a_session_that_ends_gives_back_what_it_was_given() -> None:
    budget = SocketBudget(total=1, per_room=1, per_subscription=1)
    budget.take(1, 11, 1, lambda: None)
    budget.take(2, 21, 1, lambda: None)
    budget.take(3, 31, 1, lambda: None)
    budget.release(1, 11)  # given to room 2's session, which then ends without taking it

    budget.forget(2, 21)

    assert budget.take(3, 31, 1, lambda: None) == 1 and budget.in_use == 1 and budget.waiting() == 0


def test_between_calls_no_waiting_session_could_take_a_free_slot_and_the_counts_add_up() -> None:
    """A session asking for slots never looks at those waiting: this is the rule that lets it (budget.py `_serve`).

    Thousands of random takes, releases and ends, in rooms of many subscriptions (a fan-out's shape), with
    the caps checked and the slots each session holds counted beside the budget after every call.
    """
    rng = random.Random(25)
    budget = SocketBudget(total=24, per_room=12, per_subscription=6)
    rooms = {subscription: subscription // 100 for subscription in
             [*range(100, 140), *range(200, 203), *range(300, 301)]}
    holding: dict[int, int] = dict.fromkeys(rooms, 0)  # slots each session took and has not given back
    for step in range(5000):
        subscription = rng.choice(list(rooms))
        room = rooms[subscription]
        action = rng.random()
        if action < 0.5:
            holding[subscription] += budget.take(room, subscription, rng.randint(0, 5), lambda: None)
        elif action < 0.95 and holding[subscription]:
            count = rng.randint(1, holding[subscription])
            holding[subscription] -= count
            budget.release(room, subscription, count)
        elif action >= 0.95:
            budget.release(room, subscription, holding.pop(subscription))
            budget.forget(room, subscription)
            holding[subscription] = 0

        given = dict(budget._granted)
        held = {s: holding[s] + given.get(s, 0) for s in rooms}
        assert budget.in_use == sum(held.values()) <= budget.total, step
        assert all(held[s] <= budget.per_subscription for s in rooms), step
        assert all(sum(held[s] for s in rooms if rooms[s] == r) <= budget.per_room for r in set(rooms.values())), step
        could_take = [(r, s) for r, waiting in budget._waiting.items() for s in waiting
                      if budget._room_for(r, s) > 0]
        assert not could_take, (step, could_take, budget)


class KeepAliveServer:
    """A real HTTP/1.1 receiver on loopback that answers 204 and keeps each connection open; counts them."""

    def __init__(self) -> None:
        self.accepted = 0
        self.closed = 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/hook"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while (data := conn.recv(65536)) and b"\r\n\r\n" in data:  # each request fits one read here
                conn.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
        self.closed += 1

    def close(self) -> None:
        self._sock.close()


@pytest.fixture
def servers() -> Iterator[list[KeepAliveServer]]:
    started = [KeepAliveServer() for _ in range(3)]
    yield started
    for server in started:
        server.close()


@pytest.mark.django_db
def test_idle_keep_alive_connections_count_against_the_budget_and_the_longest_idle_is_closed_first(
        servers: list[KeepAliveServer]) -> None:
    first, second, third = servers

    async def post_to(targets: list[KeepAliveServer]) -> list[tuple[str, int]]:
        transport = PushTransport(max_sockets=2)
        seen = []
        try:
            for server in targets:
                request = PushRequest(url=server.url, body=b"{}", message_id="m", correlation_id="c",
                                      attempt=1, signing_secret="whsec_" + "A" * 44, timeout_ms=5000)
                result = await transport.post(request)
                seen.append((result.outcome, transport.open_sockets()))
        finally:
            await transport.close()
        return seen

    seen = asyncio.run(post_to([first, second, third, second]))

    print(seen, [(s.accepted, s.closed) for s in servers])
    assert seen == [("success", 1), ("success", 2), ("success", 2), ("success", 2)]
    assert [s.accepted for s in servers] == [1, 1, 1]  # the second's connection was reused: the first's was closed
    assert first.closed == 1
