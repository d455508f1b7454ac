"""Which hours a report run recomputes: merging touched hours into ranges, windows, the SQL condition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from analytics.jobs.hours import HOUR, Scope, merge_hours

T = datetime(2026, 5, 4, 10, tzinfo=UTC)


def hours(*offsets: int) -> list[datetime]:
    return [T + offset * HOUR for offset in offsets]


def test_touched_hours_merge_into_contiguous_ranges() -> None:
    assert merge_hours(hours(3, 0, 1, 1, 5), max_ranges=10) == [(T, T + 2 * HOUR), (T + 3 * HOUR, T + 4 * HOUR),
                                                               (T + 5 * HOUR, T + 6 * HOUR)]


def test_too_many_ranges_close_their_smallest_gaps_first() -> None:
    assert merge_hours(hours(0, 2, 10), max_ranges=2) == [(T, T + 3 * HOUR), (T + 10 * HOUR, T + 11 * HOUR)]
    assert merge_hours(hours(0, 2, 10), max_ranges=1) == [(T, T + 11 * HOUR)]


def test_a_window_is_widened_to_whole_hours_and_cuts_the_touched_hours() -> None:
    window = Scope.window(T + timedelta(minutes=10), T + 2 * HOUR + timedelta(minutes=1))
    assert window.ranges == ((T, T + 3 * HOUR),)
    assert Scope.of_hours(hours(-1, 1, 4), 50).intersect(window).ranges == ((T + HOUR, T + 2 * HOUR),)
    assert Scope.everything().intersect(window) == window


def test_the_sql_condition_selects_the_ranges_or_everything_or_nothing() -> None:
    assert Scope.of_hours(hours(0), 50).sql("hour") == (
        "((hour >= '2026-05-04T10:00:00+00:00' AND hour < '2026-05-04T11:00:00+00:00'))")
    assert Scope.everything().sql("hour") == "TRUE"
    assert Scope(()).sql("hour") == "FALSE" and Scope(()).is_empty
    assert Scope(()).describe() == "nothing changed" and Scope.everything().describe() == "every hour"
    assert Scope.of_hours(hours(0, 1), 50).describe() == "2026-05-04T10:00Z..2026-05-04T12:00Z (2 h)"
