"""What a long-running process made at start, kept out of the garbage collector's full collections.

A full collection walks every object the collector tracks, and the process runs nothing else
meanwhile: in the worker every push session's event loop stops, in the web every request thread.
The web and the worker each hold ~140,000 such objects made at start (Django, DRF, Celery, their
modules and the URL conf) and kept until exit; a full collection of them took 59 ms on this
machine (75–135 ms in the worker under `make bench`'s fan-out and fairness runs, a few a minute).
`freeze_startup_objects` collects once and moves what survives into the permanent generation
(gc.freeze), which no collection walks: a full collection then walks only what the process made
since (1.6 ms with 20,000 such objects). What is frozen is never freed; it lives as long as the
process anyway. Measured in docs/benchmarks.md (2026-12-05, the garbage collector's pauses).
"""

from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger("dovecote.heap")


def freeze_startup_objects() -> int:
    """Collect, then freeze every surviving object out of later collections; return how many are frozen."""
    started = time.perf_counter()
    gc.collect()  # the garbage of start-up goes first: frozen, it would never be freed
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("froze %d objects made at start out of the garbage collector's walks (%.0f ms)", frozen,
             (time.perf_counter() - started) * 1000)
    return frozen
