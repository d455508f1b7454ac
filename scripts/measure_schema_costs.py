"""Measure what checking payloads against schemas costs: an ordinary large payload, and attacks stopped by the budget.

Applies Dovecote's validator (rooms/schema_keywords.py) directly, within one budget of
DOVECOTE_SCHEMA_CHECK_STEPS per case as a publish does, and prints for each case its outcome, the
steps spent and the median time (docs/security.md quotes the figures); the ordinary payload is
also checked with jsonschema's own validator, to show what counting costs:

    .venv/bin/python scripts/measure_schema_costs.py [--runs 9]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def timed(check: Callable[[], str], runs: int) -> tuple[str, float]:
    outcome, times = "", []
    for _ in range(runs):
        started = time.perf_counter()
        outcome = check()
        times.append(time.perf_counter() - started)
    return outcome, statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    sys.path.insert(0, str(ROOT))
    os.environ.update({"DJANGO_SETTINGS_MODULE": "dovecote.settings", "DOVECOTE_HTTPS": "false"})
    import django

    django.setup()
    import jsonschema

    from rooms.schema_keywords import BudgetSpent, Validator, quotable
    from rooms.schemas import NO_RETRIEVAL, check_budget
    from tests.schema_attacks import BRANCHING_RECURSION, doubling_schema, nested

    line = {"type": "object", "required": ["sku", "qty"],
            "properties": {"sku": {"type": "string", "pattern": "^[A-Z]+$"}, "qty": {"type": "integer", "minimum": 1},
                           "note": {"type": "string"}}}
    ordinary = {"type": "object", "properties": {"lines": {"type": "array", "items": line}}}
    cases: list[tuple[str, dict[str, Any], Any]] = [
        ("200 KB payload, 5,000 objects", ordinary,
         json.loads(json.dumps({"lines": [{"sku": "ABC", "qty": 2, "note": "gift"}] * 5000}))),  # each its own
        ("allOf of two $refs, 20 levels", doubling_schema(20), {}),
        ("recursion that branches, 40 deep", BRANCHING_RECURSION, nested(40)),
        ("uniqueItems, 30,000 mixed items", {"uniqueItems": True}, [n if n % 2 else str(n) for n in range(30_000)]),
    ]
    for label, schema, payload in cases:
        validator = Validator(schema, registry=NO_RETRIEVAL)

        def check() -> str:
            try:
                with check_budget() as budget:
                    errors = list(validator.iter_errors(quotable(payload)))  # noqa: B023
                return f"{len(errors)} errors, {budget.limit - budget.left} steps"
            except BudgetSpent as spent:
                return f"refused: {spent}"

        outcome, seconds = timed(check, runs)
        print(f"{label:36s} {outcome:32s} {seconds * 1000:8.1f} ms")
    plain = jsonschema.Draft202012Validator(ordinary)
    _, seconds = timed(lambda: str(list(plain.iter_errors(cases[0][2]))), runs)
    print(f"{'the same 200 KB payload, jsonschema':36s} {'(no budget)':32s} {seconds * 1000:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
