"""The bench's open-loop load generator, in a process of its own (uvloop, aiohttp), so it does not slow the stack.

    python -m bench.load open URL[,URL…] KEY BODY_JSON RATE SECONDS
        Open loop: request i is sent at start + i/RATE whatever the server does (no coordinated
        omission), to the URLs in turn. Prints JSON [[scheduled, sent, message_id or null, status], …]
        in monotonic seconds; latency is counted from the scheduled time.

The closed loops (single publishes, the empty endpoint) are h2load's (bench/figures.py `closed_loop`).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import aiohttp


def headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


async def open_loop(urls: list[str], key: str, body: bytes, rate: float, seconds: float) -> list[list]:
    total = int(rate * seconds)
    results: list[list] = [[0.0, 0.0, None, 0, 0.0] for _ in range(total)]
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, headers=headers(key)) as session:
        async def send(index: int, scheduled: float) -> None:
            sent = time.monotonic()
            try:
                timeout = aiohttp.ClientTimeout(total=120)
                async with session.post(urls[index % len(urls)], data=body, timeout=timeout) as reply:
                    payload = await reply.json(content_type=None) if reply.status == 202 else None
                    results[index] = [scheduled, sent, payload and payload["message_id"], reply.status,
                                      time.monotonic()]
            except (aiohttp.ClientError, TimeoutError) as error:
                results[index] = [scheduled, sent, None, str(error)[:80], time.monotonic()]

        tasks = []
        start = time.monotonic() + 0.2
        for index in range(total):
            scheduled = start + index / rate
            await asyncio.sleep(max(0.0, scheduled - time.monotonic()))
            tasks.append(asyncio.create_task(send(index, scheduled)))
        await asyncio.gather(*tasks)
    return results


def run(coroutine):  # noqa: ANN001, ANN201
    """Run on uvloop when it is installed."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


def main(argv: list[str]) -> None:
    mode, url, key, body = argv[1:5]
    if mode != "open":
        raise SystemExit(f"usage: python -m bench.load open URL[,URL…] KEY BODY_JSON RATE SECONDS (not {mode!r})")
    json.dump(run(open_loop(url.split(","), key, body.encode(), float(argv[5]), float(argv[6]))), sys.stdout)


if __name__ == "__main__":
    main(sys.argv)
