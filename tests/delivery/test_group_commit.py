"""The group commit (delivery/group_commit.py): writes that wait while a group commits share the next transaction,
committed by one of their callers' threads; each caller returns after its own commit; a write that fails fails alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import pytest
from django.db import connection, transaction

from delivery.group_commit import GroupCommit
from rooms.models import Room

pytestmark = pytest.mark.django_db(transaction=True)


class Writes:
    """An `apply` that creates a room per write in one transaction and answers its id; "fail…" rooms raise."""

    def __init__(self) -> None:
        self.hold = threading.Event()  # the write named "first" waits for it
        self.hold.set()
        self.groups: list[list[str]] = []
        self.threads: list[str] = []  # the name of the thread that ran each group

    def __call__(self, names: Sequence[str]) -> list[int]:
        self.groups.append(list(names))
        self.threads.append(threading.current_thread().name)
        if "first" in names:
            assert self.hold.wait(60), "the test never released the first group"
        if any(name.startswith("fail") for name in names):
            raise ValueError(f"refused: {[n for n in names if n.startswith('fail')]}")
        with transaction.atomic(), connection.cursor() as cursor:
            Room.objects.bulk_create([Room(name=name) for name in names])
            cursor.execute("SELECT txid_current()")
            return [cursor.fetchone()[0]] * len(names)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.01)


def submit_behind_a_busy_group(names: list[str]) -> tuple[Writes, dict[str, object], list[threading.Thread]]:
    """Start a group that waits, submit `names` meanwhile from threads of their own, and let it go."""
    writes = Writes()
    committer = GroupCommit("test-commit", writes)
    writes.hold.clear()
    results: dict[str, object] = {}

    def call(name: str) -> None:
        try:
            results[name] = committer.commit(name)
        except Exception as error:  # noqa: BLE001 - the test looks at it
            results[name] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=("first",), name="first")]
    threads[0].start()
    wait_until(lambda: writes.groups == [["first"]], "the first group started")
    for name in names:
        threads.append(threading.Thread(target=call, args=(name,), name=name))
        threads[-1].start()
    wait_until(lambda: committer.waiting() == len(names), f"{names} waiting")
    writes.hold.set()
    for thread in threads:
        thread.join(60)
    return writes, results, threads


def test_writes_waiting_while_a_group_commits_share_the_next_transaction() -> None:
    writes, results, _ = submit_behind_a_busy_group(["a", "b", "c"])
    assert writes.groups == [["first"], ["a", "b", "c"]]
    assert writes.threads == ["first", "a"], writes.threads  # the lead passed to the first that waited
    assert results["a"] == results["b"] == results["c"] != results["first"], results
    assert set(Room.objects.values_list("name", flat=True)) == {"first", "a", "b", "c"}


def test_a_write_that_fails_fails_alone_and_the_others_of_its_group_commit() -> None:
    writes, results, _ = submit_behind_a_busy_group(["a", "fail-b", "c"])
    assert isinstance(results["fail-b"], ValueError), results
    assert not isinstance(results["a"], Exception) and not isinstance(results["c"], Exception), results
    assert writes.groups[1] == ["a", "fail-b", "c"]  # tried together, then each alone
    assert sorted(map(tuple, writes.groups[2:])) == [("a",), ("c",), ("fail-b",)]
    assert set(Room.objects.values_list("name", flat=True)) == {"first", "a", "c"}


def test_a_write_inside_a_transaction_is_written_in_it_by_the_callers_thread() -> None:
    committer = GroupCommit("test-commit", Writes())
    seen = []

    def write_then_roll_back() -> None:
        with transaction.atomic():
            committer.commit("inside")
            seen.append(Room.objects.filter(name="inside").exists())
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        write_then_roll_back()
    assert seen == [True]
    assert not Room.objects.filter(name="inside").exists()
    assert committer.waiting() == 0


def test_a_lone_write_is_committed_at_once_by_its_callers_thread() -> None:
    writes = Writes()
    committer = GroupCommit("test-commit", writes)
    committer.commit("alone")
    assert writes.threads == [threading.current_thread().name]
    assert Room.objects.filter(name="alone").exists()
