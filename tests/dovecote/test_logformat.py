from __future__ import annotations

import json
import logging
import sys

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
