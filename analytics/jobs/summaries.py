"""Summarise the attempts of whole (hour, room) groups: every count and exact percentile the reports take from them.

`summarise` runs in Spark's Python workers (DataFrame.mapInArrow) on one task's attempts, shuffled so
that every attempt of an hour and room is in the same task: each group of each level is then whole in
one task, and its percentiles are exact — `percentile_disc(p)`, the value at rank ceil(p × N) of the
group's N sorted values, as PostgreSQL computes it. Sorting a task's values once per level with numpy
costs less than Spark's `percentile_approx` summaries did (docs/analytics.md, "Measured"), which were
only approximate.

This module imports nothing from Dovecote: Spark pickles it by value (`register_pickle_by_value` in
analytics/jobs/reports.py), so an executor needs numpy and pyarrow, not this code.

A task's input columns (reports.ATTEMPT_VALUES): hour (timestamp), room_id, subscription_id, event_type,
outcome, status_code, attempt, latency_ms (null unless the attempt succeeded), duration_ms (null for a
crashed attempt). Its output (SCHEMA) holds one row per group of each level:
- `room`, `subscription`, `event_type`: (hour, room[, subscription[, event type]]) with `attempts`,
  `delivered`, `failed_attempts`, `delivered_attempts` (the sum of the successful attempts' numbers),
  `retry_attempts` (attempts numbered 2 or more), `timed_attempts` and the percentiles and maximum;
- `error`: (hour, room, subscription, outcome, status code) of the failed attempts, with `failed_attempts`.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

PERCENTILES = (0.5, 0.95, 0.99)
# Each level's keys are the first n of hour, room_id, subscription_id, event_type.
LEVELS = {"room": 2, "subscription": 3, "event_type": 4}
NONE = -1  # a null key while grouping (ids and dictionary codes are never negative)

COUNTS = ["attempts", "delivered", "failed_attempts", "delivered_attempts", "retry_attempts", "timed_attempts"]
FIGURES = [*(f"{name}_p{round(p * 100)}_ms" for name in ("latency", "duration") for p in PERCENTILES),
           "duration_max_ms"]
TIMESTAMP = pa.timestamp("us", tz="UTC")
SCHEMA = pa.schema([
    ("level", pa.string()), ("hour", TIMESTAMP), ("room_id", pa.int64()), ("subscription_id", pa.int64()),
    ("event_type", pa.string()), ("outcome", pa.string()), ("status_code", pa.int32()),
    *((name, pa.int64()) for name in COUNTS + FIGURES),
])
DDL = ("level string, hour timestamp, room_id bigint, subscription_id bigint, event_type string, outcome string, "
       "status_code int, " + ", ".join(f"{name} bigint" for name in COUNTS + FIGURES))


def summarise(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Yield the figures of every group of the task's attempts (the task holds whole hour × room groups)."""
    received = list(batches)
    if not received:  # an empty task (no hour × room of the scope hashed to it)
        return
    table = pa.Table.from_batches(received)
    if table.num_rows == 0:
        return
    attempts = Attempts(table)
    for level, width in LEVELS.items():
        yield attempts.level(level, width)
    yield attempts.errors()


class Attempts:
    """One task's attempts as numpy columns, keys made integers (nulls NONE) for sorting."""

    def __init__(self, table: pa.Table) -> None:
        self.hour = table["hour"].cast(pa.int64()).to_numpy()
        self.room = table["room_id"].to_numpy()
        self.subscription = keys(table["subscription_id"])
        self.event_types, self.event_type = codes(table["event_type"])
        self.outcomes, self.outcome = codes(table["outcome"])
        self.status = keys(table["status_code"])
        self.attempt = table["attempt"].cast(pa.int64()).to_numpy()
        self.latency, self.has_latency = values(table["latency_ms"])
        self.duration, self.has_duration = values(table["duration_ms"])
        self.success = pc.fill_null(pc.equal(table["outcome"], "success"), False).to_numpy()
        # One sort of the rows by hour, room, subscription, event type serves the three levels.
        self.order = np.lexsort((self.event_type, self.subscription, self.room, self.hour))

    def level(self, level: str, width: int) -> pa.RecordBatch:
        columns = [self.hour, self.room, self.subscription, self.event_type][:width]
        group, first = group_of(self.order, columns)
        count = first.size
        success = self.success
        tally = {
            "attempts": np.bincount(group, minlength=count),
            "delivered": np.bincount(group, weights=success, minlength=count),
            "failed_attempts": np.bincount(group, weights=~success, minlength=count),
            "delivered_attempts": np.bincount(group, weights=np.where(success, self.attempt, 0), minlength=count),
            "retry_attempts": np.bincount(group, weights=self.attempt > 1, minlength=count),
        }
        latency, _ = percentiles(group, count, self.latency, self.has_latency)
        duration, timed = percentiles(group, count, self.duration, self.has_duration)
        tally["timed_attempts"] = timed
        figures = [*latency[:-1], *duration]  # the latency's maximum is not a figure
        return pa.RecordBatch.from_arrays([
            pa.array(np.full(count, level, dtype=object), pa.string()),
            pa.array(self.hour[first], pa.int64()).cast(TIMESTAMP),
            pa.array(self.room[first], pa.int64()),
            nullable(self.subscription[first]) if width >= 3 else pa.nulls(count, pa.int64()),
            text(self.event_types, self.event_type[first]) if width >= 4 else pa.nulls(count, pa.string()),
            pa.nulls(count, pa.string()), pa.nulls(count, pa.int32()),
            *(pa.array(tally[name].astype(np.int64), pa.int64()) for name in COUNTS),
            *figures,
        ], schema=SCHEMA)

    def errors(self) -> pa.RecordBatch:
        failed = np.flatnonzero(~self.success)
        columns = [self.hour[failed], self.room[failed], self.subscription[failed], self.outcome[failed],
                   self.status[failed]]
        group, first = group_of(np.lexsort(columns[::-1]), columns)
        count = first.size
        rows = failed[first]
        none = pa.nulls(count, pa.int64())
        return pa.RecordBatch.from_arrays([
            pa.array(np.full(count, "error", dtype=object), pa.string()),
            pa.array(self.hour[rows], pa.int64()).cast(TIMESTAMP),
            pa.array(self.room[rows], pa.int64()),
            nullable(self.subscription[rows]),
            pa.nulls(count, pa.string()),
            text(self.outcomes, self.outcome[rows]),
            nullable(self.status[rows]).cast(pa.int32()),
            *(pa.array(np.bincount(group, minlength=count), pa.int64()) if name == "failed_attempts" else none
              for name in COUNTS),
            *(none for _ in FIGURES),
        ], schema=SCHEMA)


def group_of(order: np.ndarray, columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Number the distinct key tuples of `columns` in `order` (rows sorted by those keys, first key first).

    Return each row's group number and each group's first row.
    """
    starts = np.zeros(order.size, dtype=bool)
    starts[:1] = True
    for column in columns:
        ordered = column[order]
        starts[1:] |= ordered[1:] != ordered[:-1]
    group = np.empty(order.size, dtype=np.int64)
    group[order] = np.cumsum(starts) - 1
    return group, order[starts]


def percentiles(group: np.ndarray, count: int, value: np.ndarray, present: np.ndarray
                ) -> tuple[list[pa.Array], np.ndarray]:
    """Return each group's percentile_disc at PERCENTILES and maximum of its present values, and how many it has.

    A group without a present value gets nulls.
    """
    group, value = group[present], value[present]
    ordered = sorted_by_group(group, value)
    sizes = np.bincount(group, minlength=count)
    first = np.cumsum(sizes) - sizes
    empty = sizes == 0
    if ordered.size == 0:
        return [pa.nulls(count, pa.int64()) for _ in range(len(PERCENTILES) + 1)], sizes
    picked = []
    for p in PERCENTILES:
        rank = np.maximum(np.ceil(p * sizes).astype(np.int64), 1)  # PostgreSQL's percentile_disc: ceil(p × N)
        picked.append(first + rank - 1)
    picked.append(first + sizes - 1)  # the maximum
    return [pa.array(ordered[np.minimum(at, ordered.size - 1)], pa.int64(), mask=empty) for at in picked], sizes


def sorted_by_group(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Return the values in order of (group, value).

    Both packed in one int64 when they fit (the group in the high bits, the value's offset from the
    least in the low), so one sort of plain integers does it: a third of the time of sorting by two keys.
    """
    if value.size == 0:
        return value
    least = value.min()
    value_bits = int(value.max() - least).bit_length()
    if value_bits + int(group.max()).bit_length() > 62:
        return value[np.lexsort((value, group))]
    packed = (group << value_bits) | (value - least)
    packed.sort()
    return (packed & ((1 << value_bits) - 1)) + least


# ---- columns -------------------------------------------------------------------------------------

def keys(column: pa.ChunkedArray) -> np.ndarray:
    """An integer key column as int64, nulls NONE."""
    return column.cast(pa.int64()).fill_null(NONE).to_numpy()


def codes(column: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """A text column as its distinct values and each row's index into them (nulls NONE)."""
    encoded = column.combine_chunks().dictionary_encode()
    return encoded.dictionary, keys(pa.chunked_array([encoded.indices]))


def values(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A nullable integer column as int64 values (nulls 0) and whether each is present."""
    return column.cast(pa.int64()).fill_null(0).to_numpy(), column.is_valid().to_numpy(zero_copy_only=False)


def nullable(key: np.ndarray) -> pa.Array:
    return pa.array(key, pa.int64(), mask=key == NONE)


def text(dictionary: pa.Array, code: np.ndarray) -> pa.Array:
    """The text of each code (NONE: null)."""
    return dictionary.take(pa.array(code, pa.int64(), mask=code == NONE))
