"""The bookkeeper runs an urgent call (the claims' renewal) before the work already waiting for its threads."""

from __future__ import annotations

import asyncio
import threading
from typing import cast

from delivery.broker import Broker
from delivery.push.bookkeeper import Bookkeeper


def test_an_urgent_call_overtakes_the_queue_and_the_rest_keep_their_order() -> None:
    bookkeeper = Bookkeeper(cast(Broker, None), threads=1)
    busy, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def hold_the_thread() -> None:
        busy.set()
        release.wait(30)

    async def scenario() -> None:
        holding = asyncio.ensure_future(bookkeeper.call(hold_the_thread))
        assert await asyncio.to_thread(busy.wait, 30), "the bookkeeper's thread never took the first call"
        waiting = [asyncio.ensure_future(bookkeeper.call(ran.append, f"adopt {n}")) for n in range(3)]
        await asyncio.sleep(0)  # each call is queued when its coroutine first runs
        renewal = asyncio.ensure_future(bookkeeper.call(ran.append, "renew", urgent=True))
        await asyncio.sleep(0)
        release.set()
        await asyncio.wait_for(asyncio.gather(holding, renewal, *waiting), 30)

    try:
        asyncio.run(scenario())
    finally:
        bookkeeper.close()
    assert ran == ["renew", "adopt 0", "adopt 1", "adopt 2"], ran
