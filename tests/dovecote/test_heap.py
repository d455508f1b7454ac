"""What a process made at start is frozen out of the garbage collector's walks, its garbage freed first."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from dovecote.heap import freeze_startup_objects


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the test process's objects go back to the collector's generations


def test_freezing_frees_the_start_ups_garbage_and_freezes_what_lives(unfrozen: None) -> None:
    garbage, kept = Node(), Node()
    gone = weakref.ref(garbage)
    del garbage

    frozen = freeze_startup_objects()

    assert gone() is None, "a cycle dropped before the freeze was collected, not frozen for the process's life"
    assert frozen > 1000 and gc.get_freeze_count() > 1000  # other threads free frozen objects meanwhile
    assert not any(o is kept for o in gc.get_objects()), "a live object is frozen: no generation holds it"
    made_after = Node()
    assert any(o is made_after for o in gc.get_objects(generation=0)), "what comes after is collected as before"
