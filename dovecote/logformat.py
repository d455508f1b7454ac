"""Log lines as `key=value` pairs (the default) or JSON objects, with the correlation id and delivery fields.

DOVECOTE_LOG_FORMAT picks one. Values come from outside (a receiver's error text, a correlation id, a
payload's field), so each is escaped. A key=value record is always one line starting with `ts=`,
and a traceback's lines start with `  | `; a JSON record is exactly one line, its traceback a field.
No value can forge a line of its own, hide text with a carriage return, or move the terminal's cursor.
When a trace is being recorded (dovecote/tracing.py), its trace and span ids are fields too.

Every line a process writes is such a record: Python's warnings are logged (`configure`, Django's
LOGGING_CONFIG), granian's own and access logs use these formatters (dovecote/web.py),
and Celery's notices go through them too (dovecote/celery.py; its banners are off in json mode, bin/).
"""

from __future__ import annotations

import json
import logging
import logging.config
import re
from typing import Any

from opentelemetry import trace

CONTEXT_FIELDS = ("correlation_id", "message_id", "delivery_id", "subscription", "destination", "attempt")
ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control characters (C0, DEL, C1), line and paragraph separators, and the backslash and quote escaped above.
UNSAFE = re.compile(r'[\x00-\x1f\x7f-\x9f\u2028\u2029\\"]')
NEEDS_QUOTES = re.compile(r'[\s="\\]')
TRACEBACK_PREFIX = "  | "


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = (f"ts={self.formatTime(record)} level={record.levelname} logger={_quote(record.name)} "
                f"msg={_quote(record.getMessage())}")
        for name, value in context(record).items():
            line += f" {name}={_quote(str(value))}"
        if record.exc_info:
            trace = self.formatException(record.exc_info)
            line += "".join(f"\n{TRACEBACK_PREFIX}{_escape(part)}" for part in trace.splitlines())
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line; non-ASCII, control characters and line separators are written as escapes."""

    def format(self, record: logging.LogRecord) -> str:
        fields: dict[str, object] = {"ts": self.formatTime(record), "level": record.levelname, "logger": record.name,
                                     "msg": record.getMessage()}
        for name, value in context(record).items():
            fields[name] = value if isinstance(value, int | float | bool) else str(value)
        if record.exc_info:
            fields["exc"] = self.formatException(record.exc_info)
        return json.dumps(fields, ensure_ascii=True, default=str)


FORMATTERS: dict[str, type[logging.Formatter]] = {"keyvalue": KeyValueFormatter, "json": JsonFormatter}


def formatter_named(name: str) -> logging.Formatter:
    """The formatter DOVECOTE_LOG_FORMAT names (settings refuse any other name; key=value meanwhile)."""
    return FORMATTERS.get(name.strip().lower(), KeyValueFormatter)()


def configure(config: dict[str, Any]) -> None:
    """Apply Django's LOGGING (its LOGGING_CONFIG), and send Python's warnings through it as records."""
    logging.config.dictConfig(config)
    logging.captureWarnings(True)


def context(record: logging.LogRecord) -> dict[str, object]:
    """The record's delivery fields that are set, and the current trace's ids when one is recorded."""
    fields = {name: value for name in CONTEXT_FIELDS if (value := getattr(record, name, None)) is not None}
    span = trace.get_current_span().get_span_context()
    if span.is_valid:
        fields["trace_id"] = f"{span.trace_id:032x}"
        fields["span_id"] = f"{span.span_id:016x}"
    return fields


def _escape(value: str) -> str:
    """Replace every character that could break or disguise a log line by a visible escape."""
    return UNSAFE.sub(lambda m: ESCAPES.get(m.group(), f"\\x{ord(m.group()):02x}"
                                            if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"), value)


def _quote(value: str) -> str:
    if value and not NEEDS_QUOTES.search(value) and not UNSAFE.search(value):
        return value
    return f'"{_escape(value)}"'
