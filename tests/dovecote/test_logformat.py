from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry import trace

from dovecote.logformat import JsonFormatter, KeyValueFormatter, gather_only_what_is_written


def test_log_lines_carry_the_correlation_id_and_delivery_fields() -> None:
    record = logging.LogRecord("delivery.push", logging.INFO, __file__, 1, "retry scheduled in %d ms", (400,), None)
    record.correlation_id = "order-42"
    record.delivery_id = 7
    line = KeyValueFormatter().format(record)
    assert 'msg="retry scheduled in 400 ms"' in line
    assert "correlation_id=order-42 delivery_id=7" in line
    assert "level=INFO logger=delivery.push" in line


def record_with(message: str, *args: object, exc_info: object = None) -> logging.LogRecord:
    return logging.LogRecord("delivery.push", logging.WARNING, __file__, 1, message, args, exc_info)


def test_a_receivers_error_text_cannot_forge_a_log_line() -> None:
    forged = "HTTP 500: oops\r\nts=2026-01-01 level=INFO logger=dovecote msg=\"all good\"\x1b[2K"
    record = record_with("attempt failed: %s", forged)
    record.correlation_id = "order-1\nlevel=ERROR"
    line = KeyValueFormatter().format(record)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert '\\r\\nts=2026-01-01 level=INFO logger=dovecote msg=\\"all good\\"\\x1b[2K' in line
    assert 'correlation_id="order-1\\nlevel=ERROR"' in line


def test_a_traceback_stays_marked_as_part_of_its_record() -> None:
    try:
        raise ValueError("bad\nts=2026-01-01 level=INFO msg=forged")
    except ValueError:
        record = record_with("failed", exc_info=sys.exc_info())
    first, *rest = KeyValueFormatter().format(record).split("\n")
    assert first.startswith("ts=") and rest
    assert all(line.startswith("  | ") for line in rest)
    assert not any(line.startswith("ts=") for line in rest)


def test_values_with_separators_are_quoted_and_plain_ones_are_not() -> None:
    record = record_with("x")
    record.destination = "room-1::subscription-2"
    record.message_id = "a=b"
    line = KeyValueFormatter().format(record)
    assert "destination=room-1::subscription-2" in line and 'message_id="a=b"' in line


def test_json_lines_are_one_object_with_every_character_escaped() -> None:
    forged = 'HTTP 500: oops\r\n{"level": "INFO"}\u2028\x1b[2K é'
    record = record_with("attempt failed: %s", forged)
    record.correlation_id = "order-1\nlevel=ERROR"
    record.attempt = 2
    line = JsonFormatter().format(record)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line and "\u2028" not in line
    assert line.isascii()
    parsed = json.loads(line)
    assert parsed["msg"] == f"attempt failed: {forged}"
    assert parsed["correlation_id"] == "order-1\nlevel=ERROR" and parsed["attempt"] == 2
    assert parsed["level"] == "WARNING" and parsed["logger"] == "delivery.push"


def test_a_json_traceback_is_a_field_of_its_record() -> None:
    try:
        raise ValueError("bad\nline")
    except ValueError:
        record = record_with("failed", exc_info=sys.exc_info())
    [line] = JsonFormatter().format(record).splitlines()
    assert "ValueError: bad\nline" in json.loads(line)["exc"]


def test_the_trace_of_the_current_span_is_in_both_formats() -> None:
    context = trace.SpanContext(trace_id=0x1234, span_id=0x5678, is_remote=False,
                                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED))
    with trace.use_span(trace.NonRecordingSpan(context)):
        assert json.loads(JsonFormatter().format(record_with("x")))["trace_id"] == f"{0x1234:032x}"
        assert f"trace_id={0x1234:032x} span_id={0x5678:016x}" in KeyValueFormatter().format(record_with("x"))
    assert "trace_id" not in KeyValueFormatter().format(record_with("x"))


def test_the_timestamp_made_once_a_second_is_the_one_logging_would_make() -> None:
    stock, ours = logging.Formatter(), KeyValueFormatter()
    for created in (1_700_000_000.123, 1_700_000_000.987, 1_700_000_001.5, 1_699_999_999.0, 1_700_000_000.4):
        record = record_with("x")
        record.created, record.msecs = created, int(created % 1 * 1000)
        assert ours.formatTime(record) == stock.formatTime(record)
        assert JsonFormatter().formatTime(record) == stock.formatTime(record)
    record.created = 1_700_000_000.4
    assert ours.formatTime(record, "%Y") == stock.formatTime(record, "%Y")


def test_records_no_longer_gather_what_no_formatter_writes() -> None:
    gather_only_what_is_written()
    record = logging.getLogger("delivery.push").makeRecord("delivery.push", logging.INFO, "(unknown file)", 0,
                                                           "x", (), None)
    assert (record.threadName, record.processName, record.process) == (None, None, None)
    assert KeyValueFormatter().format(record).startswith("ts=")


# A process whose threads hand their records to one writer (dovecote/logformat.py write_from_one_thread), as
# bin/web's workers do: run apart, since the switch is for the whole process.
ONE_WRITER_SCRIPT = r"""
import logging, sys, threading
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from dovecote.logformat import FileHandler, KeyValueFormatter, gather_only_what_is_written, write_from_one_thread

gather_only_what_is_written()
handler = FileHandler(sys.argv[1])
handler.setFormatter(KeyValueFormatter())
log = logging.getLogger("probe")
log.addHandler(handler)
log.setLevel(logging.INFO)
log.propagate = False
write_from_one_thread()
trace.set_tracer_provider(TracerProvider())

def lines_of(thread):
    for i in range(500):
        changing = [i]
        log.info("thread %d record %d of %s", thread, i, changing)
        changing.append("changed after the record was made")

threads = [threading.Thread(target=lines_of, args=(t,)) for t in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with trace.get_tracer("probe").start_as_current_span("traced") as span:
    log.info("in a span")
    print(f"{span.get_span_context().trace_id:032x}")
try:
    raise ValueError("boom")
except ValueError:
    log.exception("failed")
# no flush: logging's own at exit must write what the writer thread has not yet
"""


def test_one_writer_thread_writes_every_record_of_every_thread_in_order_before_exit(tmp_path: Path) -> None:
    path = tmp_path / "lines.log"
    done = subprocess.run([sys.executable, "-c", ONE_WRITER_SCRIPT, str(path)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    text = path.read_text()
    lines = text.splitlines()
    records = [line for line in lines if line.startswith("ts=")]
    assert len(records) == 16 * 500 + 2, (len(records), lines[-5:])
    for thread in range(16):
        numbers = [int(m.group(1)) for line in records
                   if (m := re.search(rf'msg="thread {thread} record (\d+) of \[\d+\]"', line))]
        assert numbers == list(range(500)), (thread, numbers[:20])  # all, in the order made, the message as made
    assert "changed after" not in text
    traced = [line for line in records if 'msg="in a span"' in line]
    assert traced and f"trace_id={done.stdout.strip()}" in traced[0], (traced, done.stdout)  # the logging thread's span
    assert 'msg=failed' in text and "  | ValueError: boom" in text, lines[-6:]


def test_the_access_line_says_the_status_and_a_failed_request_is_logged_500(caplog: pytest.LogCaptureFixture) -> None:
    from dovecote.web import AccessLog

    def answers(environ, start_response):
        start_response("202 Accepted", [])
        return [b"{}"]

    def fails(environ, start_response):
        raise RuntimeError("the view failed")

    environ = {"REMOTE_ADDR": "10.0.0.9", "REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/rooms/3/messages/",
               "SERVER_PROTOCOL": "HTTP/1.1", "QUERY_STRING": "secret=1"}
    caplog.set_level(logging.INFO, logger="granian.access")
    assert AccessLog(answers)(dict(environ), lambda status, headers, *exc: None) == [b"{}"]
    try:
        AccessLog(fails)(dict(environ), lambda status, headers, *exc: None)
    except RuntimeError:
        pass
    else:
        raise AssertionError("AccessLog swallowed the application's error")
    messages = [r.getMessage() for r in caplog.records if r.name == "granian.access"]
    assert [m.rpartition(" ")[0] for m in messages] == ['10.0.0.9 "POST /api/v1/rooms/3/messages/ HTTP/1.1" 202',
                                                        '10.0.0.9 "POST /api/v1/rooms/3/messages/ HTTP/1.1" 500']
    assert all(re.fullmatch(r"\d+\.\dms", m.rpartition(" ")[2]) for m in messages), messages


FORKED_WRITER_SCRIPT = r"""
import logging, multiprocessing, sys
from dovecote.logformat import FileHandler, KeyValueFormatter, write_from_one_thread

def child(path):  # as granian's workers: forked, they end without atexit hooks
    handler = FileHandler(path)
    handler.setFormatter(KeyValueFormatter())
    log = logging.getLogger("probe")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    write_from_one_thread()
    for i in range(100):
        log.info("record %d", i)

process = multiprocessing.get_context("fork").Process(target=child, args=(sys.argv[1],))
process.start()
process.join()
sys.exit(process.exitcode)
"""


def test_a_forked_process_writes_its_records_before_it_ends(tmp_path: Path) -> None:
    path = tmp_path / "lines.log"
    done = subprocess.run([sys.executable, "-c", FORKED_WRITER_SCRIPT, str(path)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = path.read_text().splitlines() if path.exists() else []
    assert [line.rpartition("msg=")[2] for line in lines] == [f'"record {i}"' for i in range(100)], lines[-3:]


def test_a_record_whose_arguments_do_not_fit_its_message_is_reported_not_raised_with_one_writer() -> None:
    script = r"""
import logging, sys
from dovecote.logformat import StreamHandler, write_from_one_thread
log = logging.getLogger("probe")
log.addHandler(StreamHandler(sys.stdout))
log.propagate = False
write_from_one_thread()
log.warning("%d items", "not a number")  # a caller's mistake must not raise out of the log call
log.warning("still writing")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "still writing" in done.stdout and "--- Logging error ---" in done.stderr, (done.stdout, done.stderr)


STALLED_OUTPUT_SCRIPT = r"""
import io, logging, sys, threading, time
from dovecote import logformat
from dovecote.logformat import StreamHandler, write_from_one_thread

class Stalled(io.StringIO):
    '''An output nobody reads until `reading` is set (a stalled log shipper).'''
    reading = threading.Event()
    def write(self, text):
        self.reading.wait()
        return super().write(text)

out = Stalled()
log = logging.getLogger("probe")
log.addHandler(StreamHandler(out))
log.propagate = False
logformat._Writer.MAX_WAITING = 50
write_from_one_thread()
logger = threading.Thread(target=lambda: [log.warning("record %d", n) for n in range(500)])
logger.start()
deadline = time.monotonic() + 30
while len(logformat._writer.records) < 50 and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(0.2)  # room for a put that would not wait
seen = (len(logformat._writer.records), logger.is_alive())
out.reading.set()
logger.join(30)
logformat._writer.wait_written(30)
written = out.getvalue().splitlines()
print(seen, logger.is_alive(), written == [f"record {n}" for n in range(500)], len(written))
"""


def test_a_stalled_output_makes_the_logging_thread_wait_and_loses_nothing() -> None:
    done = subprocess.run([sys.executable, "-c", STALLED_OUTPUT_SCRIPT], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    # While nothing was read: 50 records waiting, no more, and the thread that logs waiting with them;
    # once read: that thread finished, and every record was written, in order.
    assert done.stdout.strip() == "(50, True) False True 500", (done.stdout, done.stderr)
