"""Log lines as `key=value` pairs (the default) or JSON objects, with the correlation id and delivery fields.

DOVECOTE_LOG_FORMAT picks one. Values come from outside (a receiver's error text, a correlation id, a
payload's field), so each is escaped. A key=value record is always one line starting with `ts=`,
and a traceback's lines start with `  | `; a JSON record is exactly one line, its traceback a field.
No value can forge a line of its own, hide text with a carriage return, or move the terminal's cursor.
When a trace is being recorded (dovecote/tracing.py), its trace and span ids are fields too.

Every line a process writes is such a record: Python's warnings are logged (`configure`, Django's
LOGGING_CONFIG), granian's own and access logs use these formatters (dovecote/web.py),
and Celery's notices go through them too (dovecote/celery.py; its banners are off in json mode, bin/).

Records are written by this module's `StreamHandler` and `FileHandler`: in the thread that logs, as
logging's own do, or, once a process calls `write_from_one_thread` (the web, whose request
threads each write two records per publish), by one writer thread for them all.
"""

from __future__ import annotations

import collections
import json
import logging
import logging.config
import multiprocessing.util
import re
import sys
import threading
import time
import traceback
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
    """The record's delivery fields that are set, and the ids of the trace recorded when it was made, if any."""
    fields = {name: value for name in CONTEXT_FIELDS if (value := getattr(record, name, None)) is not None}
    span = record.__dict__.get(SPAN_ATTRIBUTE) or trace.get_current_span().get_span_context()
    if span.is_valid:
        fields["trace_id"] = f"{span.trace_id:032x}"
        fields["span_id"] = f"{span.span_id:016x}"
    return fields


# ---- writing the records ---------------------------------------------------------------------------

FLUSH_WAIT_S = 5.0  # how long a handler's flush (logging's, at exit) waits for the writer thread
SPAN_ATTRIBUTE = "_dovecote_span"  # the span current where a record was made, when another thread formats it


class _Writer:
    """One thread that formats and writes the records of every handler below, in batches: one write a batch.

    In a process whose many threads each write a record now and then (the web's request threads: the
    access line, delivery.publish's), each thread writing its own record under its handler's lock made
    them wait on that lock and hand the GIL back and forth around each write: with 16 threads busy, a
    record cost their process 85 µs of CPU written so, 40 handed to one writer (docs/benchmarks.md, "The
    web's log records"). A thread that logs still makes the record and its message (%-formatting its
    arguments, so nothing they refer to can change before it is written) and notes its trace; formatting,
    escaping and writing happen here, every GATHER_S while records come. A thread that logs wakes this
    one only after a quiet spell, not once a record: waking a sleeping thread cost more than the write.
    `flush` (logging's, at exit) waits until all are written. A process killed meanwhile loses what it had
    not written, as a killed process loses what its buffers held. The records waiting are bounded
    (MAX_WAITING): when the output is not read (a stalled log shipper), a thread that logs waits until the
    writer has room, as it would have waited on its own blocked write, and memory does not grow.
    """

    GATHER_S = 0.01
    MAX_WAITING = 10_000  # records put and not yet taken to be written: a few MB

    def __init__(self) -> None:
        self.records: collections.deque[tuple[_OneWriterMixin, logging.LogRecord]] = collections.deque()
        self.wake = threading.Event()
        self.writing = False
        self.thread = threading.Thread(target=self._run, name="log-writer", daemon=True)
        self.thread.start()

    def put(self, handler: _OneWriterMixin, record: logging.LogRecord) -> None:
        while len(self.records) >= self.MAX_WAITING:  # the output is not keeping up: wait, as a write would
            self.wake.set()
            time.sleep(self.GATHER_S)
        self.records.append((handler, record))
        if not self.wake.is_set():  # an attribute read: the Event's lock only for the first record of a batch
            self.wake.set()

    def wait_written(self, timeout: float) -> None:
        """Return once every record put so far is written, or after `timeout` s."""
        deadline = time.monotonic() + timeout
        self.wake.set()
        while (self.records or self.writing) and time.monotonic() < deadline:
            time.sleep(0.001)

    def _run(self) -> None:
        while True:
            self.wake.wait()
            while self._write_a_batch():  # every GATHER_S while there are records, without being woken
                pass

    def _write_a_batch(self) -> bool:
        """Write the records put by GATHER_S from now; False, with `wake` cleared, when there were none."""
        time.sleep(self.GATHER_S)
        self.writing = True
        try:
            batch = []
            while self.records:
                batch.append(self.records.popleft())
            if not batch:
                self.wake.clear()  # idle: the next put wakes this thread
                return bool(self.records)  # one put just before the clear, which saw the wake still set
            self._write(batch)
            return True
        except Exception:  # noqa: BLE001 - this thread must outlive any record
            traceback.print_exc(file=sys.stderr)
            return True
        finally:
            self.writing = False

    @staticmethod
    def _write(batch: list[tuple[_OneWriterMixin, logging.LogRecord]]) -> None:
        lines: dict[_OneWriterMixin, list[str]] = {}
        for handler, record in batch:
            try:
                lines.setdefault(handler, []).append(handler.format(record) + handler.terminator)
            except Exception:  # noqa: BLE001 - logging's rule: a record that cannot be written is reported, never raised
                handler.handleError(record)
        for handler, texts in lines.items():
            handler.write_lines("".join(texts), batch[-1][1])


_writer: _Writer | None = None
_writer_lock = threading.Lock()


def write_from_one_thread() -> None:
    """From now on, this process's handlers of this module hand their records to one writer thread (_Writer).

    What it has not written when the process ends is written first: logging's shutdown (an atexit hook)
    flushes the handlers, and a process multiprocessing forked (granian's workers) runs no atexit hook
    but multiprocessing's own finalizers.
    """
    global _writer
    with _writer_lock:
        if _writer is None:
            _writer = _Writer()
            multiprocessing.util.Finalize(_writer, _writer.wait_written, args=(FLUSH_WAIT_S,), exitpriority=0)


class _OneWriterMixin(logging.StreamHandler):
    """A stream handler that, after `write_from_one_thread`, hands its records to the writer thread."""

    def handle(self, record: logging.LogRecord) -> bool:
        writer = _writer
        if writer is None:
            return super().handle(record)
        passed = self.filter(record)
        if isinstance(passed, logging.LogRecord):
            record = passed
        if passed:
            try:
                record.msg, record.args = record.getMessage(), None
            except Exception:  # noqa: BLE001 - arguments that do not fit the message: reported, as emit does
                self.handleError(record)
                return False
            span = trace.get_current_span().get_span_context()
            if span.is_valid:
                setattr(record, SPAN_ATTRIBUTE, span)
            writer.put(self, record)
        return bool(passed)

    def write_lines(self, text: str, record: logging.LogRecord) -> None:
        """Write formatted lines as emit writes one (the writer thread's: the only one writing in its process).

        Not under the handler's lock: logging's shutdown holds it while it calls `flush`, which waits for this.
        """
        try:
            stream = self._writable_stream()
            stream.write(text)
            stream.flush()
        except Exception:  # noqa: BLE001 - as emit: reported, never raised
            self.handleError(record)

    def _writable_stream(self) -> Any:
        return self.stream

    def flush(self) -> None:
        writer = _writer
        if writer is not None and threading.current_thread() is not writer.thread:
            writer.wait_written(FLUSH_WAIT_S)
        super().flush()


class StreamHandler(_OneWriterMixin):
    """logging's StreamHandler, its records written by one thread after `write_from_one_thread`."""


class FileHandler(_OneWriterMixin, logging.FileHandler):
    """logging's FileHandler, its records written by one thread after `write_from_one_thread`."""

    def _writable_stream(self) -> Any:
        if self.stream is None:  # opened on the first record (delay), or closed and written to again, as emit does
            self.stream = self._open()
        return self.stream


def _escape(value: str) -> str:
    """Replace every character that could break or disguise a log line by a visible escape."""
    return UNSAFE.sub(lambda m: ESCAPES.get(m.group(), f"\\x{ord(m.group()):02x}"
                                            if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"), value)


def _quote(value: str) -> str:
    if value and not NEEDS_QUOTES.search(value) and not UNSAFE.search(value):
        return value
    return f'"{_escape(value)}"'
