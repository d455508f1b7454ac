"""How soon a thread woken by I/O gets the interpreter from a thread that is running Python.

CPython lets a thread that wants the GIL wait up to the switch interval (5 ms by default) before the
running thread must let go. A publish crosses several threads of the web process (the request's, the
relay's sender, stomp.py's receiver) and a delivery several of the worker's (stomp.py's receiver, the
push engine's event loop): each hand-off may cost up to that interval whenever another thread is busy,
and under load they add up to tens of milliseconds of latency. The web and the worker set a shorter
interval; the price is more switches between threads that are all busy, which a process serving
requests and receipts rarely has.
"""

from __future__ import annotations

import sys

SWITCH_INTERVAL_S = 0.0005


def quick_handoffs() -> None:
    """Bound each GIL hand-off of this process at SWITCH_INTERVAL_S."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
