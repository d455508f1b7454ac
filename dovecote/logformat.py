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
import time
from typing import Any

from opentelemetry import trace

CONTEXT_FIELDS = ("correlation_id", "message_id", "delivery_id", "subscription", "destination", "attempt")
ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control characters (C0, DEL, C1), line and paragraph separators, and the backslash and quote escaped above.
UNSAFE = re.compile(r'[\x00-\x1f\x7f-\x9f\u2028\u2029\\"]')
NEEDS_QUOTES = re.compile(r'[\s="\\]')
TRACEBACK_PREFIX = "  | "


class _Formatter(logging.Formatter):
    """logging's Formatter, its timestamps made once a second instead of once a record."""

    _second: tuple[int, str] = (-1, "")  # the last second formatted, and its text (replaced whole: thread-safe)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        second, text = self._second  # one read: another thread may replace it meanwhile
        if second != int(record.created):
            second = int(record.created)
            text = time.strftime(self.default_time_format, self.converter(second))
            self._second = (second, text)
        return f"{text},{int(record.msecs):03d}"  # logging's default_time_format and default_msec_format


class KeyValueFormatter(_Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = (f"ts={self.formatTime(record)} level={record.levelname} logger={_quote(record.name)} "
                f"msg={_quote(record.getMessage())}")
        for name, value in context(record).items():
            line += f" {name}={_quote(str(value))}"
        if record.exc_info:
            trace = self.formatException(record.exc_info)
            line += "".join(f"\n{TRACEBACK_PREFIX}{_escape(part)}" for part in trace.splitlines())
        return line


class JsonFormatter(_Formatter):
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
    gather_only_what_is_written()
    logging.config.dictConfig(config)
    logging.captureWarnings(True)


def gather_only_what_is_written() -> None:
    """Have logging leave out of every record what neither formatter writes (the logging HOWTO's "Optimization").

    By default each record looks up its caller's file, line and function (walking the stack), and
    its thread's, process's and asyncio task's names. Neither formatter writes any of them; a web
    process writes two records per publish (granian's access line and delivery.publish's), and these
    lookups with the timestamp formatted anew were 23–38 % of a record's cost (docs/benchmarks.md).
    (pytest's captured logs leave out the file and line for the same reason: pyproject.toml's log_format.)
    """
    logging._srcfile = None  # the caller's file, line and function
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging.logAsyncioTasks = False  # type: ignore[attr-defined]  # Python 3.12's, not in mypy's stubs yet


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
