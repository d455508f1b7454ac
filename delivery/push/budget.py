"""The sockets and POSTs in flight of one worker's push engine: a budget shared fairly by rooms and subscriptions.

Every POST holds a socket, and a worker process has a fixed number of file descriptors
(RLIMIT_NOFILE) for everything it does: its database and broker connections, beat's tasks, the
pushes of every room. So the engine hands out slots, one per POST, from one budget:
1. the budget is DOVECOTE_PUSH_SOCKETS, or half the soft RLIMIT_NOFILE when that is lower;
2. one room holds at most DOVECOTE_PUSH_SOCKETS_PER_ROOM_PERCENT of it and one subscription at
   most DOVECOTE_PUSH_SOCKETS_PER_SUBSCRIPTION_PERCENT (at least one slot each): a POST that never
   ends holds its slot until its timeout, so only a cap keeps slots free for the other rooms;
3. a session asks for as many slots as it has frames to POST (`take`) and gets what is free within
   its caps; for the rest it waits (a free slot is never owed to a session already waiting: a slot
   given back goes to those waiting at once, 4.);
4. a slot given back goes to the waiting session that holds the fewest: first the room holding the
   fewest, then in it the subscription holding the fewest (max-min fairness by slots held, so a
   slow receiver's long POSTs cannot crowd out a fast one's), and wakes the session it was given to
   (its frames wait in its inbox, unjudged);
5. idle keep-alive connections count against the same budget: the transport closes the oldest
   of them before it opens a socket past the budget (delivery/http1.py, `max_open`).
"""

from __future__ import annotations

import resource
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings

Wake = Callable[[], None]


def socket_budget_size(configured: int, nofile: int | None = None) -> int:
    """The sockets the engine may hold: `configured`, or half the soft open-file limit when that is lower."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY:
        return configured
    return max(1, min(configured, nofile // 2))


def share(total: int, percent: int) -> int:
    """`percent` of `total` slots, at least one."""
    return max(1, total * percent // 100)


@dataclass
class _Waiter:
    wants: int
    wake: Wake


@dataclass
class SocketBudget:
    """Slots for POSTs in flight: `total` in all, at most `per_room` to a room and `per_subscription` to one."""

    total: int
    per_room: int
    per_subscription: int
    in_use: int = 0
    _rooms: Counter[int] = field(default_factory=Counter)
    _subscriptions: Counter[int] = field(default_factory=Counter)
    _granted: Counter[int] = field(default_factory=Counter)  # given to a waiting session, not yet taken
    _waiting: dict[int, dict[int, _Waiter]] = field(default_factory=dict)  # room -> subscription -> waiter

    @classmethod
    def from_settings(cls) -> SocketBudget:
        total = socket_budget_size(settings.DOVECOTE_PUSH_SOCKETS)
        return cls(total, share(total, settings.DOVECOTE_PUSH_SOCKETS_PER_ROOM_PERCENT),
                   share(total, settings.DOVECOTE_PUSH_SOCKETS_PER_SUBSCRIPTION_PERCENT))

    def take(self, room_id: int, subscription_id: int, wants: int, wake: Wake) -> int:
        """Take up to `wants` slots for the subscription; return how many. Short: `wake` is called when one is given.

        `wants` 0 says the session takes nothing now: it stops waiting and gives back what it was given.
        """
        granted = self._granted.pop(subscription_id, 0)
        taken = min(wants, granted)
        if taken < wants:  # no waiting session could take a free slot (the invariant of `_serve`): none is skipped
            more = min(wants - taken, self._room_for(room_id, subscription_id))
            self._hold(room_id, subscription_id, more)
            taken += more
        if taken < wants:
            self._waiting.setdefault(room_id, {})[subscription_id] = _Waiter(wants - taken, wake)
        else:
            self._stop_waiting(room_id, subscription_id)
        self.release(room_id, subscription_id, granted - min(wants, granted))
        return taken

    def release(self, room_id: int, subscription_id: int, count: int = 1) -> None:
        """Give back `count` slots (POSTs that ended, or frames that started none) and serve the waiting sessions."""
        if count <= 0:
            return
        self._hold(room_id, subscription_id, -count)
        self._serve()

    def forget(self, room_id: int, subscription_id: int) -> None:
        """The subscription's session ended: it waits no more, and slots given to it go to the others."""
        self._stop_waiting(room_id, subscription_id)
        self.release(room_id, subscription_id, self._granted.pop(subscription_id, 0))

    def waiting(self) -> int:
        """How many sessions wait for a slot."""
        return sum(len(subscriptions) for subscriptions in self._waiting.values())

    # -- inside ------------------------------------------------------------------------------------

    def _room_for(self, room_id: int, subscription_id: int) -> int:
        """Slots free for this subscription within the budget and its caps."""
        return max(0, min(self.total - self.in_use, self.per_room - self._rooms[room_id],
                          self.per_subscription - self._subscriptions[subscription_id]))

    def _hold(self, room_id: int, subscription_id: int, count: int) -> None:
        self.in_use += count
        for holders, key in ((self._rooms, room_id), (self._subscriptions, subscription_id)):
            holders[key] += count
            if holders[key] <= 0:
                del holders[key]

    def _stop_waiting(self, room_id: int, subscription_id: int) -> None:
        subscriptions = self._waiting.get(room_id)
        if subscriptions is not None and subscriptions.pop(subscription_id, None) is not None and not subscriptions:
            del self._waiting[room_id]

    def _serve(self) -> None:
        """Give free slots to the waiting sessions one at a time, each to the one holding the fewest (max-min fair).

        The room holding the fewest slots goes first, and in it the subscription holding the fewest; ties go
        to the one waiting longest. Counting slots held, not slots given, is what keeps a slow receiver
        from crowding out the fast ones: its POSTs hold their slots for seconds, so under round-robin
        giving it would end up holding nearly all of them.

        Every change that frees a slot ends here, so between calls no waiting session could take a free
        slot: a session asking (`take`) never passes one that waits, without looking at them.
        """
        woken: list[Wake] = []
        while self.in_use < self.total and (chosen := self._neediest()) is not None:
            room_id, subscription_id = chosen
            waiter = self._waiting[room_id].pop(subscription_id)
            self._hold(room_id, subscription_id, 1)
            self._granted[subscription_id] += 1
            waiter.wants -= 1
            if waiter.wants > 0:
                self._waiting[room_id][subscription_id] = waiter  # to the back of its room's line
            elif not self._waiting[room_id]:
                del self._waiting[room_id]
            woken.append(waiter.wake)
        for wake in woken:
            wake()

    def _neediest(self) -> tuple[int, int] | None:
        """The waiting (room, subscription) that may take a slot now and holds the fewest, room first; None if none."""
        if self.in_use >= self.total:
            return None
        best: tuple[int, int, int] | None = None  # slots held by the room; the room and subscription ids
        held = self._subscriptions
        for room_id, subscriptions in self._waiting.items():
            room_holds = self._rooms[room_id]
            if (best is not None and room_holds >= best[0]) or room_holds >= self.per_room:
                continue
            fewest: tuple[int, int] | None = None  # in the room: (slots held, subscription), the first of the fewest
            for subscription_id in subscriptions:  # in waiting order
                holds = held[subscription_id]
                if holds < self.per_subscription and (fewest is None or holds < fewest[0]):
                    fewest = (holds, subscription_id)
                    if holds == 0:
                        break  # none holds fewer: a fan-out's hundreds waiting are not all looked at
            if fewest is not None:
                best = (room_holds, room_id, fewest[1])
                if room_holds == 0:
                    break
        return None if best is None else (best[1], best[2])
