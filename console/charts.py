"""The geometry of the UI's server-rendered SVG charts: lines over hours and horizontal bars.

Templates draw them (templates/console/includes/line_chart.html, bar_chart.html); every mark carries a
<title> with its figures, and each chart sits beside a table or figures of the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from console.text import percent

HOUR = timedelta(hours=1)
LABEL_STEPS = (1, 2, 3, 6, 12, 24, 48, 72, 96, 168)  # hours between x-axis labels
MAX_LABELS = 8

Format = Callable[[float], str]


@dataclass(frozen=True)
class Line:
    name: str
    css: str  # the stroke's class: line-<css>
    path: str  # SVG path data, one "M … L …" run per stretch of hours that have a value


@dataclass(frozen=True)
class Slot:
    """One hour's column: a hover target whose <title> reads every line's value."""

    x: float
    title: str


@dataclass(frozen=True)
class LineChart:
    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    slot_width: float
    lines: list[Line]
    slots: list[Slot]
    x_labels: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]  # y, label; empty for a sparkline

    @property
    def tick_x(self) -> float:
        return self.left - 6

    @property
    def label_y(self) -> float:
        return self.height - 5

    @property
    def plot_height(self) -> float:
        return self.bottom - self.top


def line_chart(hours: Sequence[datetime], lines: Sequence[tuple[str, str, dict[datetime, float | None]]],
               top: float, fmt: Format, *, width: int = 720, height: int = 200, axes: bool = True) -> LineChart:
    """Lay out one line per (name, css, value per hour) over `hours`; a missing value breaks the line."""
    left, bottom = (56.0, height - 22.0) if axes else (1.0, height - 3.0)
    right, upper = width - (10.0 if axes else 1.0), 8.0 if axes else 3.0
    step = (right - left) / max(len(hours), 1)

    def x(i: int) -> float:
        return round(left + (i + 0.5) * step, 1)

    def y(value: float) -> float:
        return round(bottom - (bottom - upper) * min(max(value / top, 0.0), 1.0), 1)

    drawn = [Line(name, css, line_path([(x(i), y(v)) if (v := values.get(h)) is not None else None
                                        for i, h in enumerate(hours)])) for name, css, values in lines]
    slots = [Slot(round(left + i * step, 1), slot_title(h, [(name, values.get(h)) for name, _, values in lines], fmt))
             for i, h in enumerate(hours)]
    ticks = [(y(v), fmt(v)) for v in (0, top / 2, top)] if axes else []
    labels = [(x(i), text) for i, text in hour_labels(hours)] if axes else []
    return LineChart(width, height, left, right, upper, bottom, round(step, 2), drawn, slots, labels, ticks)


def line_path(points: Sequence[tuple[float, float] | None]) -> str:
    """Join the points into runs (None breaks a run); a lone point becomes a dot (round line caps)."""
    runs: list[str] = []
    run: list[tuple[float, float]] = []
    for point in [*points, None]:
        if point is not None:
            run.append(point)
            continue
        if len(run) == 1:
            runs.append(f"M{run[0][0]} {run[0][1]}h0.01")
        elif run:
            runs.append("M" + " L".join(f"{px} {py}" for px, py in run))
        run = []
    return " ".join(runs)


def slot_title(hour: datetime, values: Sequence[tuple[str, float | None]], fmt: Format) -> str:
    figures = ", ".join(f"{name} {fmt(value)}" if value is not None else f"{name} —" for name, value in values)
    return f"{hour:%Y-%m-%d %H:00} UTC: {figures}"


def hour_labels(hours: Sequence[datetime]) -> list[tuple[int, str]]:
    """Return (index, text) for at most MAX_LABELS hours on round boundaries: "HH:00", or "Mon DD" for days."""
    every = next((s for s in LABEL_STEPS if len(hours) / s <= MAX_LABELS), LABEL_STEPS[-1])
    labels = []
    for i, hour in enumerate(hours):
        if every < 24 and hour.hour % every == 0:
            labels.append((i, f"{hour:%H:00}"))
        elif every >= 24 and hour.hour == 0 and hour.toordinal() % (every // 24) == 0:
            labels.append((i, f"{hour:%b %d}"))
    return labels


@dataclass(frozen=True)
class Segment:
    name: str
    css: str  # the fill's class: bar-<css>
    value: int
    x: float
    width: float


@dataclass(frozen=True)
class BarRow:
    label: str
    total: int
    y: float
    mid_y: float  # where the label and the value sit
    segments: list[Segment]
    value_x: float
    title: str


@dataclass(frozen=True)
class BarChart:
    width: int
    height: int
    label_x: float
    bar_height: float
    rows: list[BarRow]


def bar_chart(rows: Sequence[tuple[str, Sequence[tuple[str, str, int]]]], *, width: int = 720,
              label_width: int = 200, row_height: int = 26) -> BarChart:
    """Lay out one horizontal bar per (label, [(segment name, css, value), …]), stacked, longest = full width."""
    bar_left, bar_right = float(label_width), width - 80.0
    peak = max([1, *(sum(v for _, _, v in segments) for _, segments in rows)])
    laid_out = []
    for n, (label, segments) in enumerate(rows):
        x, parts = bar_left, []
        for name, css, value in segments:
            w = round((bar_right - bar_left) * value / peak, 1)
            parts.append(Segment(name, css, value, round(x, 1), w))
            x += w
        total = sum(value for _, _, value in segments)
        title = f"{label}: " + ", ".join(f"{value:,} {name}" for name, _, value in segments)
        y = n * row_height + 4.0
        laid_out.append(BarRow(label, total, y, y + (row_height - 8) / 2, parts, round(x + 6, 1), title))
    return BarChart(width, len(rows) * row_height + 8, label_width - 8.0, row_height - 8.0, laid_out)


def nice_ceiling(value: float) -> float:
    """Round up to 1, 2, 2.5 or 5 times a power of ten (an axis top that reads well)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= value)


def format_ms(value: float) -> str:
    """Write milliseconds as ms, s or min, whichever reads best."""
    if value < 1000:
        return f"{value:.0f} ms"
    if value < 60_000:
        return f"{value / 1000:.3g} s"
    return f"{value / 60_000:.3g} min"


def format_percent(value: float) -> str:
    return percent(value)
