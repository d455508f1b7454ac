"""The STOMP wire format as Dovecote writes and reads it, on stomp.py.

What a SEND carries (`send_headers`: persistent, anycast, a receipt when asked for one,
`AMQ_SCHEDULED_DELAY` and `expires`), how frames are encoded for one socket write (`encode_frame`), how a MESSAGE frame
becomes the `StompMessage` a consumer hands out (`received_message`: the delivery's own headers
dropped), and a faster header parser installed into stomp.py on import (`parse_headers`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import stomp
import stomp.utils
from stomp.utils import Frame

from delivery.broker.base import OutgoingMessage, ReceivedMessage

_ESCAPED = re.compile(r"\\.")


def parse_headers(lines: list[str], offset: int = 0) -> dict[str, str]:
    """stomp.py's header parser, minus its two regex substitutions per header when nothing is escaped.

    The reader thread parses every MESSAGE frame's dozen headers; the substitutions were most of its
    time. Same results (tests/delivery/broker/test_broker_contract.py compares them on escaped and plain headers).
    """
    headers: dict[str, str] = {}
    for line in lines[offset:]:
        key, colon, value = line.partition(":")
        if not colon or not key:
            continue
        if "\\" in key:
            key = _ESCAPED.sub(stomp.utils._unescape_header, key)
        if key not in headers:
            headers[key] = _ESCAPED.sub(stomp.utils._unescape_header, value) if "\\" in value else value
    return headers


STOMP_PY_PARSE_HEADERS = stomp.utils.parse_headers
stomp.utils.parse_headers = parse_headers  # stomp.py 9.0.0 (pinned) looks it up at every frame

# Sent with every SEND and SUBSCRIBE, so the queue is point-to-point whatever the broker's defaults.
ANYCAST = "ANYCAST"
# Headers Artemis adds to each delivery (or copies from the SEND): they describe the
# delivery, not the message.
DELIVERY_HEADERS = frozenset(
    {
        "ack",
        "content-length",
        "destination",
        "destination-type",
        "ingress-timestamp",
        "message-id",
        "persistent",
        "priority",
        "receipt",
        "redelivered",
        "subscription",
        "timestamp",
    }
)


@dataclass(frozen=True)
class StompMessage(ReceivedMessage):
    """A received message that remembers which connection delivered it (its ack id is only valid there)."""

    generation: int = field(default=0, compare=False)


def encode_frame(command: str, headers: Mapping[str, object], body: bytes = b"") -> bytes:
    """Encode a frame as stomp.py sends it: the same bytes (its header escaping and order, content-length).

    Written here, not by stomp.py's `_escape_headers` and `convert_frame`: those took 10–13 µs a SEND of a
    dozen headers (four replaces per value, a `Frame`, a list of encoded pieces), this takes 4–5, and the
    web's relay writes one per delivery, the worker an ACK per delivery (a scratch script, 2026-12-06).
    tests/delivery/broker/test_broker_contract.py compares the bytes with stomp.py's.
    """
    if body:
        headers = {**headers, "content-length": str(len(body))}
    lines = [command]
    for name, value in sorted(headers.items()):
        if value is not None:
            lines.append(f"{name}:{_escape(value)}")
    lines.append("\n")  # the blank line that ends the headers
    return "\n".join(lines).encode() + body + b"\0"


def _escape(value: object) -> str:
    """A header value escaped per STOMP 1.2, as stomp.py escapes it (a value that is not a string: its text)."""
    if not isinstance(value, str):
        return str(value)
    if "\\" in value or "\n" in value or ":" in value or "\r" in value:
        return value.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c").replace("\r", "\\r")
    return value


def send_headers(message: OutgoingMessage, receipt: str | None) -> dict[str, str]:
    """Return the SEND frame headers for `message` (stomp.py escapes them per STOMP 1.2), with `receipt` if given."""
    headers = {"content-type": "application/json", **message.headers}
    headers["persistent"] = "true"
    headers["destination-type"] = ANYCAST
    if receipt is not None:
        headers["receipt"] = receipt
    delay_ms = message.delay_left_ms()  # counted from the message's making: a send may have waited
    if delay_ms > 0:
        headers["AMQ_SCHEDULED_DELAY"] = str(delay_ms)
    if message.expires_at_ms is not None:
        headers["expires"] = str(int(message.expires_at_ms))
    return headers


def received_message(destination: str, frame: Frame, generation: int) -> StompMessage:
    """Build the message a consumer hands out from a MESSAGE frame.

    `destination` is the consumer's own (for a message moved to the expiry queue, the frame's
    `destination` header names the expiry address).
    """
    headers = {
        name: value
        for name, value in frame.headers.items()
        if name not in DELIVERY_HEADERS and not name.startswith("_")  # "_AMQ_*": Artemis internals
    }
    if headers.get("expires") == "0":  # Artemis writes expires:0 for "never"
        del headers["expires"]
    redelivered = frame.headers.get("redelivered") == "true"
    body = frame.body if isinstance(frame.body, bytes) else (frame.body or "").encode()
    return StompMessage(
        destination=destination,
        body=body,
        headers=headers,
        broker_message_id=frame.headers.get("message-id", ""),
        redelivered=redelivered,
        ack_id=frame.headers.get("ack", frame.headers.get("message-id", "")),
        generation=generation,
    )

