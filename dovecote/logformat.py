"""Log lines as `key=value` pairs, with the correlation id and delivery fields when a record has them."""

from __future__ import annotations

import logging

CONTEXT_FIELDS = ("correlation_id", "message_id", "delivery_id", "destination", "attempt")


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = (f"ts={self.formatTime(record)} level={record.levelname} logger={record.name} "
                f"msg={_quote(record.getMessage())}")
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line += f" {name}={_quote(str(value))}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _quote(value: str) -> str:
    return f'"{value}"' if (" " in value or not value) else value
