"""Broker failover: an Artemis primary/backup pair (shared store), its primary SIGKILLed under traffic.

Dovecote's STOMP client is given the pair as a failover list (STOMP_URL). The test sends a steady
stream of persistent messages, some scheduled like retries, through one StompBroker, kills the
primary's JVM mid-stream, and shows: the backup takes over and the same client goes on through it;
every send the broker confirmed with a RECEIPT is delivered (duplicates counted, and printed); a
send the dead broker never confirmed raised SendFailed (the caller's outbox keeps such rows pending);
scheduled messages fire at their due time, or at the takeover when that came later. It prints the
time from the kill to the first message delivered through the backup.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from delivery.broker import OutgoingMessage, SendFailed, connect
from delivery.broker.stomp import StompBroker, parse_stomp_url
from tests.artemis_pair import BACKUP_WAITING, BECAME_LIVE, ArtemisPair, create_pair, wait_for_log, wait_for_stomp

pytestmark = [pytest.mark.slow, pytest.mark.stomp]

SCHEDULED_TOLERANCE_S = 2.0  # a retry fires this close to max(its due time, the takeover)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[ArtemisPair]:
    artemis = create_pair(tmp_path)
    try:
        artemis.start(artemis.primary)
        wait_for_stomp(artemis, artemis.primary)
        artemis.start(artemis.backup)
        wait_for_log(artemis, artemis.backup, BACKUP_WAITING)
        yield artemis
    finally:
        artemis.stop()


def test_a_failover_list_names_the_brokers_in_order_with_the_first_ones_credentials() -> None:
    url = parse_stomp_url("stomp://user:p%40ss@primary.internal:61613,backup.internal:61614,[::1]")
    assert (url.scheme, url.login, url.passcode) == ("stomp", "user", "p@ss")
    assert url.brokers == (("primary.internal", 61613), ("backup.internal", 61614), ("::1", 61613))
    for bad, reason in [("stomp://u:p@a:1,amqp://b:2", "must use stomp://"), ("stomp://u:p@a:1,:5", "names no host"),
                        ("stomp://u:p@a:1,b:99999", "not a number"), ("stomp://u:p@a:1,stomp://x:y@b:2", "first")]:
        with pytest.raises(ValueError, match=reason):
            parse_stomp_url(bad)


def test_killing_the_primary_hands_every_confirmed_message_to_the_backup(pair: ArtemisPair) -> None:
    destination = f"room-failover::subscription-{uuid.uuid4().hex[:8]}"
    broker = connect(pair.url, connect_timeout=5, receipt_timeout=5)
    assert isinstance(broker, StompBroker) and broker.address == f"127.0.0.1:{pair.primary.port}"
    confirmed: dict[str, float] = {}  # body -> when it is due (epoch s)
    confirmed_at: list[float] = []  # when each confirmation came
    unconfirmed: list[str] = []
    arrivals: list[tuple[str, float]] = []
    killed_at: list[float] = []
    stop = threading.Event()

    def send_steadily() -> None:
        for n in range(100_000):
            if stop.is_set():
                return
            body = f"m{n}"
            delay_ms = 3000 if n % 10 == 0 else 0  # every tenth is a retry, scheduled 3 s later
            try:
                broker.send(OutgoingMessage(destination, body.encode(), {"persistent": "true"}, delay_ms=delay_ms))
            except SendFailed:
                unconfirmed.append(body)
                time.sleep(0.05)
                continue
            confirmed[body] = time.time() + delay_ms / 1000
            confirmed_at.append(time.time())
            time.sleep(0.01)

    def consume() -> None:
        with connect(pair.url, connect_timeout=5).consumer(destination, prefetch=50) as consumer:
            while not stop.is_set() or len({b for b, _ in arrivals}) < len(confirmed):
                message = consumer.receive(timeout=0.5)
                if message is None:
                    if stop.is_set() and time.time() > max(list(confirmed.values()), default=0) + 30:
                        return  # nothing more will come
                    continue
                arrivals.append((message.body.decode(), time.time()))
                consumer.ack(message)

    sender, receiver = threading.Thread(target=send_steadily), threading.Thread(target=consume)
    sender.start()
    receiver.start()
    try:
        wait_until(lambda: len(confirmed) >= 100, 60, "100 sends confirmed by the primary", arrivals, confirmed)
        killed_at.append(time.time())
        pair.kill(pair.primary)
        wait_for_log(pair, pair.backup, BECAME_LIVE)
        wait_until(lambda: any(t > killed_at[0] for _, t in list(arrivals)), 60, "a delivery through the backup",
                   arrivals, confirmed, pair)
        wait_until(lambda: sum(1 for when in list(confirmed_at) if when > killed_at[0]) >= 100, 60,
                   "100 sends confirmed by the backup", arrivals, confirmed, pair)
    finally:
        stop.set()
        sender.join(timeout=60)
    receiver.join(timeout=120)
    broker.close()

    counts = Counter(body for body, _ in arrivals)
    first_after = min(t for _, t in arrivals if t > killed_at[0])
    takeover = first_after - killed_at[0]
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    print(f"\nfailover: {len(confirmed)} sends confirmed ({len(unconfirmed)} refused while no broker was live), "
          f"{len(counts)} distinct delivered, {duplicates} duplicates; kill to first delivery through the backup "
          f"{takeover:.2f} s")
    lost = sorted(set(confirmed) - set(counts), key=lambda b: int(b[1:]))
    assert not lost, f"{len(lost)} confirmed messages never arrived, e.g. {lost[:10]}\n{pair.logs()}"
    assert broker.address == f"127.0.0.1:{pair.backup.port}"
    arrived_at = dict(reversed(arrivals))  # the first arrival of each
    late = {body: round(arrived_at[body] - max(due, first_after), 2) for body, due in confirmed.items()
            if int(body[1:]) % 10 == 0 and arrived_at[body] - max(due, first_after) > SCHEDULED_TOLERANCE_S}
    early = {body: round(due - arrived_at[body], 2) for body, due in confirmed.items()
             if int(body[1:]) % 10 == 0 and arrived_at[body] < due - 0.5}
    assert not late and not early, f"scheduled messages off their time: late {late}, early {early}"


def wait_until(condition, timeout: float, what: str, arrivals: list, confirmed: dict,
               pair: ArtemisPair | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, (f"{what} never happened: {len(confirmed)} confirmed, "
                                             f"{len(arrivals)} arrived\n{pair.logs() if pair else ''}")
        time.sleep(0.05)
