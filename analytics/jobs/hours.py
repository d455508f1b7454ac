"""Hour ranges: which part of the log a run reads, and which report rows it replaces."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

HOUR = timedelta(hours=1)
UTC = timezone.utc  # noqa: UP017 - the jobs also run on clusters with Python 3.10

Range = tuple[datetime, datetime]


def floor_hour(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def ceil_hour(moment: datetime) -> datetime:
    floor = floor_hour(moment)
    return floor if floor == moment else floor + HOUR


@dataclass(frozen=True)
class Scope:
    """The hours a run recomputes: `ranges` of whole hours, or None for every hour there is."""

    ranges: tuple[Range, ...] | None

    @classmethod
    def everything(cls) -> Scope:
        return cls(None)

    @classmethod
    def window(cls, since: datetime | None, until: datetime | None) -> Scope:
        """Return every hour of [since, until), widened to whole hours; None ends are open."""
        if since is None and until is None:
            return cls.everything()
        start = floor_hour(since) if since else datetime(1970, 1, 1, tzinfo=UTC)
        end = ceil_hour(until) if until else datetime(9999, 1, 1, tzinfo=UTC)
        return cls(((start, end),) if start < end else ())

    @classmethod
    def of_hours(cls, hours: Iterable[datetime], max_ranges: int) -> Scope:
        return cls(tuple(merge_hours(hours, max_ranges)))

    @property
    def is_empty(self) -> bool:
        return self.ranges is not None and not self.ranges

    def intersect(self, other: Scope) -> Scope:
        if self.ranges is None:
            return other
        if other.ranges is None:
            return self
        cut = [(max(a, c), min(b, d)) for a, b in self.ranges for c, d in other.ranges]
        return Scope(tuple(sorted((a, b) for a, b in cut if a < b)))

    def describe(self) -> str:
        """Return the scope for the run's record, e.g. `2026-01-02T03:00Z..2026-01-02T05:00Z (2 h)`."""
        if self.ranges is None:
            return "every hour"
        if not self.ranges:
            return "nothing changed"
        hours = sum(int((end - start) / HOUR) for start, end in self.ranges if end.year < 9999 and start.year > 1970)
        text = ", ".join(f"{_short(start)}..{_short(end)}" for start, end in self.ranges)
        return f"{text} ({hours} h)" if hours else text

    def sql(self, column: str) -> str:
        """Return a WHERE condition selecting `column` in scope (literals only: no parameters needed)."""
        if self.ranges is None:
            return "TRUE"
        if not self.ranges:
            return "FALSE"
        return "(" + " OR ".join(
            f"({column} >= '{start.isoformat()}' AND {column} < '{end.isoformat()}')" for start, end in self.ranges
        ) + ")"


    def sql_overlaps(self, first: str, last: str) -> str:
        """Return a WHERE condition selecting rows whose [first, last] span meets the scope (literals only)."""
        if self.ranges is None:
            return "TRUE"
        if not self.ranges:
            return "FALSE"
        return "(" + " OR ".join(
            f"({first} < '{end.isoformat()}' AND {last} >= '{start.isoformat()}')" for start, end in self.ranges
        ) + ")"


def merge_hours(hours: Iterable[datetime], max_ranges: int) -> list[Range]:
    """Merge hour starts into contiguous ranges, then close the smallest gaps until at most `max_ranges` remain."""
    ranges: list[Range] = []
    for hour in sorted({floor_hour(h) for h in hours}):
        if ranges and ranges[-1][1] == hour:
            ranges[-1] = (ranges[-1][0], hour + HOUR)
        else:
            ranges.append((hour, hour + HOUR))
    while len(ranges) > max(1, max_ranges):
        # Recomputing a few untouched hours is harmless (they come out the same); a huge WHERE is not.
        i = min(range(len(ranges) - 1), key=lambda k: ranges[k + 1][0] - ranges[k][1])
        ranges[i:i + 2] = [(ranges[i][0], ranges[i + 1][1])]
    return ranges


def _short(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%MZ")
