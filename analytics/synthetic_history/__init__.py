"""Synthetic delivery history for demos, tests and benchmarks, written straight to the log tables.

Each delivery is simulated the way the workers record it (delivery/outbox.py, delivery/push/,
delivery/pull.py, delivery/settle.py, by the frame rules of delivery/frame_rules.py): a `publish`
send, then attempts whose failures follow the subscription's RetryPolicy
(an attempt row with `next_delay_ms` and a `retry` send), a dead letter (attempt row and
`dead_letter` send) once no redelivery is left, expiry when the next try would come after the
room's expiration, rare worker crashes (a `recheck` send, a `crashed` row, the same attempt again)
and replays of a few dead letters (a `replay` send, a new life from attempt 1). Whatever is still
in flight at `end` stays `queued` or `retrying`, as it would be in a live system.

Rows go in with COPY, in batches, in one transaction. The rooms and subscriptions are created
once (by name) and reused by later runs; the subscriptions are created paused, because no real
endpoint stands behind them (resume one to send it real traffic).

Its modules, along those seams: `fixtures` (the synthetic rooms and subscribers, created once),
`simulation` (one delivery's life, as the workers would record it), `copy_writer` (COPY into the
log tables) and `history` (`generate`: publish times, batches simulated in a thread while the
previous batch is written).
"""

from __future__ import annotations

from analytics.synthetic_history.history import Summary, generate

__all__ = ["Summary", "generate"]
