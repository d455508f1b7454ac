"""`make bench PROFILE=1` prints each process's busy time by step (bench/profile.py STEPS).

A sample counts under the first step a frame of its stack matches, so the group commit keeps the
samples of the publish lane's step that called it; a stack matching no step is "elsewhere"; a
sample waiting is not busy time at all. Every Dovecote function a step names must exist, or a rename
would move its samples to "elsewhere" unseen. docs/benchmarks.md ("What bounds each figure now")
quotes these shares.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.profile import STEPS, summarize

HEADER = "  busy time by step (bench/profile.py STEPS):"
LANE = ('process 1:"web";thread (1);AccessLog.__call__ (dovecote/web.py:10);'
        "PublishLane.__call__ (api/publish_lane.py:20)")
WEB_SAMPLES = [
    f"{LANE};take (api/publish_lane.py:30);GroupCommit.commit (delivery/group_commit.py:40);execute (psycopg/c.py:5) 3",
    f"{LANE};take (api/publish_lane.py:30);checked (api/publish_lane.py:50) 1",
    'process 1:"web";thread (2);Thread.run (threading.py:1);OutboxRelay._send (delivery/outbox.py:9) 2',
    'process 1:"web";thread (3);mystery (somewhere.py:1) 1',
    'process 1:"web";thread (4);Thread.run (threading.py:1);Condition.wait (threading.py:2) 5',
]


def steps(text: str) -> dict[str, str]:
    """The step section of a summary: {step: share}."""
    lines = text.split(f"{HEADER}\n", 1)[1].splitlines()
    return {name: share for share, _, name in (line.strip().partition("  ") for line in lines)}


def test_each_busy_sample_counts_under_the_first_step_its_stack_matches(tmp_path: Path) -> None:
    web = tmp_path / "web.txt"
    web.write_text("\n".join(WEB_SAMPLES) + "\n")
    text = summarize(web)
    assert steps(text) == {
        "a publish: the group commit (its statement, the rows' JSON)": "42.9%",
        "the relay: sending frames": "28.6%",
        "a publish: the lane's other work (parsing, validation, the rows, routing, the reply)": "14.3%",
        "elsewhere": "14.3%",
    }, text


def test_a_numbered_worker_reads_the_worker_steps_and_beat_has_none(tmp_path: Path) -> None:
    worker = tmp_path / "worker.2-1.txt"  # the bench's second worker process, restarted once
    worker.write_text('process 2:"celery";thread (1);PushEngine._run (delivery/push/engine.py:68);'
                      "Ledger._claim (delivery/push/ledger.py:154) 4\n"
                      'process 2:"celery";thread (2);Hub.create_loop (kombu/asynchronous/hub.py:395) 1\n')
    assert steps(summarize(worker)) == {"event loop: claims": "80.0%", "Celery and kombu": "20.0%"}
    beat = tmp_path / "beat.txt"
    beat.write_text('process 3:"beat";thread (1);tick (celery/beat.py:1) 2\n')
    assert HEADER not in summarize(beat)


def test_every_step_named_by_a_dovecote_function_names_one_that_exists() -> None:
    """A renamed function would move its step's samples to "elsewhere" without a word: each name is checked here."""
    root = Path(__file__).resolve().parents[2]
    checked = 0
    for steps_of_a_process in STEPS.values():
        for _, part in steps_of_a_process:
            name, _, path = part.partition(" (")
            path = path.rstrip(")")
            if not name or not (root / path).is_file():
                continue  # a path alone ("(kombu/"), or a library's frame
            source = (root / path).read_text()
            *owners, function_name = name.split(".")
            assert re.search(rf"^\s*(async )?def {re.escape(function_name)}\(", source, re.MULTILINE), part
            for owner in owners:
                assert re.search(rf"^\s*class {re.escape(owner)}\b", source, re.MULTILINE), part
            checked += 1
    assert checked >= 15, checked
