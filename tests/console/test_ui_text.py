"""How the UI words errors, counts and times (console/text.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from console.text import ago, counted, error_summary, error_text
from dovecote.error_text import ERROR_CHARS

PYTHON_HTTP_SERVER_501 = """HTTP 501: <!DOCTYPE HTML>
<html lang="en">
    <head>
        <meta charset="utf-8">
        <title>Error response</title>
    </head>
    <body>
        <h1>Error response</h1>
        <p>Error code: 501</p>
        <p>Message: Unsupported method ('POST').</p>
        <p>Error code explanation: 501 - Server does not support this operation.</p>
    </body>
</html>"""


def test_an_html_error_page_is_summed_up_by_its_text_without_the_markup() -> None:
    summary = error_summary(PYTHON_HTTP_SERVER_501)
    assert summary.startswith("HTTP 501: Error response · Error code: 501 · Message: Unsupported method ('POST').")
    assert "<" not in summary and len(summary) <= 90 and summary.endswith("…")


def test_what_comes_before_the_page_is_kept() -> None:
    assert error_summary("gave up after 3 attempts: " + PYTHON_HTTP_SERVER_501, limit=200).startswith(
        "gave up after 3 attempts: HTTP 501: Error response · Error code: 501")


@pytest.mark.parametrize("error", ["timed out after 10000 ms (ReadTimeout)", "HTTP 503: try later", ""])
def test_a_short_plain_error_is_its_own_summary(error: str) -> None:
    assert error_summary(error) == error


def test_entities_are_read_and_whitespace_folded() -> None:
    assert error_summary("HTTP 500: <p>Can&#x27;t   reach\n the database</p>") == "HTTP 500: Can't reach the database"


@pytest.mark.parametrize(("count", "text"), [(0, "0 dead letters"), (1, "1 dead letter"), (2, "2 dead letters")])
def test_a_count_takes_the_noun_it_needs(count: int, text: str) -> None:
    assert counted(count, "dead letter") == text
    assert counted(count, "delivery", "deliveries").endswith("delivery" if count == 1 else "deliveries")


def test_under_a_minute_ago_is_just_now() -> None:
    now = datetime(2026, 11, 23, 11, 30, tzinfo=UTC)
    assert ago(now - timedelta(seconds=59), now) == "just now"
    assert ago(now - timedelta(minutes=1), now) == "1\xa0minute ago"  # Django's timesince keeps the number
    assert ago(now - timedelta(hours=2, minutes=5), now) == "2\xa0hours, 5\xa0minutes ago"  # with its unit
    assert ago(None, now) == ""


def test_an_error_stored_before_errors_were_bounded_is_shown_as_its_text_within_the_bound() -> None:
    page = PYTHON_HTTP_SERVER_501 + "<p>" + "x " * 5000 + "</p>"

    shown = error_text(page)

    assert shown.startswith("HTTP 501: Error response · Error code: 501") and "<" not in shown
    assert len(shown) <= ERROR_CHARS and shown.endswith("…")
