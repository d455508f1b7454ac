from __future__ import annotations

import logging

from dovecote.logformat import KeyValueFormatter


def test_log_lines_carry_the_correlation_id_and_delivery_fields() -> None:
    record = logging.LogRecord("delivery.push", logging.INFO, __file__, 1, "retry scheduled in %d ms", (400,), None)
    record.correlation_id = "order-42"
    record.delivery_id = 7
    line = KeyValueFormatter().format(record)
    assert 'msg="retry scheduled in 400 ms"' in line
    assert "correlation_id=order-42 delivery_id=7" in line
    assert "level=INFO logger=delivery.push" in line
