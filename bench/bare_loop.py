"""The push reference: what the broker and HTTP allow without bookkeeping, in one process.

    python -m bench.bare_loop STOMP_URL DESTINATION COUNT RECEIVER_URL CONCURRENCY

Consumes COUNT frames from DESTINATION (client-individual acks, the same window Dovecote's
sessions ask for), POSTs each body to RECEIVER_URL with at most CONCURRENCY in flight, and acks
it once the POST answered. It uses what Dovecote uses to do the same — stomp.py with Dovecote's
header parser, and Dovecote's HTTP/1.1 client on uvloop, keep-alive — so the difference between
the two is what recording and judging each delivery costs. No database, no judging, no signing.
"""

from __future__ import annotations

import asyncio
import sys
import time
from urllib.parse import urlsplit

import stomp

import delivery.broker.stomp_wire  # noqa: F401 - installs Dovecote's faster STOMP header parser
from bench.load import run
from delivery.http1 import Http1Client

WINDOW_BYTES_PER_MESSAGE = 2048


async def consume(stomp_url: str, destination: str, count: int, receiver_url: str, concurrency: int) -> float:
    """Deliver COUNT frames; return the CPU seconds this process spent doing it (start-up left out)."""
    loop = asyncio.get_running_loop()
    frames: asyncio.Queue[stomp.utils.Frame] = asyncio.Queue()

    class Listener(stomp.ConnectionListener):
        def on_message(self, frame: stomp.utils.Frame) -> None:
            loop.call_soon_threadsafe(frames.put_nowait, frame)

    url = urlsplit(stomp_url)
    conn = stomp.Connection12([(url.hostname, url.port)], heartbeats=(0, 0), auto_decode=False)
    conn.set_listener("bare", Listener())
    conn.connect(url.username, url.password, wait=True)
    conn.subscribe(destination, id="bare", ack="client-individual",
                   headers={"consumer-window-size": str(concurrency * WINDOW_BYTES_PER_MESSAGE),
                            "subscription-type": "ANYCAST"})
    cpu_started = time.process_time()

    async def addresses(host: str, port: int) -> list[str]:
        return [host]

    client = Http1Client(resolve=addresses, body_limit=8192)

    async def deliver(frame: stomp.utils.Frame) -> None:
        response = await client.post(receiver_url, {"Content-Type": "application/json"}, frame.body)
        if response.status >= 300:
            raise RuntimeError(f"the receiver answered {response.status}")
        conn.ack(frame.headers["ack"])

    pending = set()
    for _ in range(count):
        frame = await frames.get()
        task = asyncio.create_task(deliver(frame))
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)
    client.close()
    cpu = time.process_time() - cpu_started
    conn.disconnect()
    return cpu


if __name__ == "__main__":
    stomp_url, destination, count, receiver_url, concurrency = sys.argv[1:6]
    print(run(consume(stomp_url, destination, int(count), receiver_url, int(concurrency))))
