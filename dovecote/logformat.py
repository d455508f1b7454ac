"""Log lines as `key=value` pairs, with the correlation id and delivery fields when a record has them.

Values come from outside (a receiver's error text, a correlation id, a payload's field), so each is
escaped: a record is always one line starting with `ts=`, and a traceback's lines start with `  | `.
No value can forge a line of its own, hide text with a carriage return, or move the terminal's cursor.
"""

from __future__ import annotations

import logging
import re

CONTEXT_FIELDS = ("correlation_id", "message_id", "delivery_id", "destination", "attempt")
ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control characters (C0, DEL, C1), line and paragraph separators, and the backslash and quote escaped above.
UNSAFE = re.compile(r'[\x00-\x1f\x7f-\x9f\u2028\u2029\\"]')
NEEDS_QUOTES = re.compile(r'[\s="\\]')
TRACEBACK_PREFIX = "  | "


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = (f"ts={self.formatTime(record)} level={record.levelname} logger={_quote(record.name)} "
                f"msg={_quote(record.getMessage())}")
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line += f" {name}={_quote(str(value))}"
        if record.exc_info:
            trace = self.formatException(record.exc_info)
            line += "".join(f"\n{TRACEBACK_PREFIX}{_escape(part)}" for part in trace.splitlines())
        return line


def _escape(value: str) -> str:
    """Replace every character that could break or disguise a log line by a visible escape."""
    return UNSAFE.sub(lambda m: ESCAPES.get(m.group(), f"\\x{ord(m.group()):02x}"
                                            if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"), value)


def _quote(value: str) -> str:
    if value and not NEEDS_QUOTES.search(value) and not UNSAFE.search(value):
        return value
    return f'"{_escape(value)}"'
