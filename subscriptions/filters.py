"""Payload filters: which of a room's events a subscription takes, by what they carry.

The form is Hookdeck's filter syntax, which Outpost (Hookdeck's open-source outbound webhook
service) also uses for destination filters: a JSON object shaped like the event it matches, whose
keys walk into the event and whose leaves are a value to equal or an object of `$` operators.
It was chosen over EventBridge patterns (no general `not`, every leaf an array of alternatives)
and Svix (event types and channels only, no payload filter) because it has every comparison and
connective Dovecote needs and reads as the event it selects. A filter applies to the document a
push receiver gets, minus what a filter cannot know in advance (id, timestamp):

    {"type": "order.created", "version": "1", "room": "orders", "correlation_id": "…", "data": {payload}}

Example: `{"data": {"total": {"$gte": 100}, "country": {"$in": ["FR", "DE"]}}, "$not": {"data": {"test": true}}}`.

The rules, written once here for the API, the console and the publish path:
1. An object node matches when every one of its keys matches (and). A key not starting with `$`
   names a field of the value at the node; its value is a literal to equal (string, number,
   boolean, null) or a node applied to that field. A field of a non-object (or a missing field)
   is missing; a key of decimal digits indexes an array.
2. Operators on the node's value: `$eq`, `$neq`, `$gt`, `$gte`, `$lt`, `$lte`, `$in` (a list of
   literals), `$startsWith` (a string), `$exist` (true or false). Connectives at any node, on the
   same value: `$and` and `$or` (a non-empty list of nodes), `$not` (a node).
3. Equality is by JSON type: `1` equals `1.0` but not `true` or `"1"`. Order comparisons hold
   between two numbers or two strings (by code point: ISO 8601 times in one zone compare rightly);
   between other types they are false. Every operator but `$exist` is false on a missing value,
   `$neq` too: "absent or different" is `{"$not": {"field": value}}`.
4. The filter's top-level fields are the document's (`type`, `version`, `room`, `correlation_id`,
   `data`): any other names nothing an event has, so it is refused as the misspelling it is, as is an
   unknown operator; both name the field or operator meant when the name is a near miss
   (`$startswith`: did you mean `$startsWith`?).
5. Bounds: at most MAX_BYTES of compact JSON, MAX_NODES operators and fields, MAX_DEPTH nested
   objects, MAX_IN_VALUES values in an `$in`. So a check costs at most a few hundred steps.

`filter_problems` names each fault by its JSON path in the filter (`$.data.total.$gte`);
`compile_filter` turns a valid filter into a predicate once (the publish path keeps it for as long
as the room's routing version holds, delivery/routing.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dovecote.spelling import near_miss

MAX_BYTES = 4096
MAX_NODES = 64
MAX_DEPTH = 8
MAX_IN_VALUES = 100

Predicate = Callable[[Any], bool]
MISSING: Any = object()  # the value at a path the event does not have

COMPARISONS = ("$eq", "$neq", "$gt", "$gte", "$lt", "$lte", "$in", "$startsWith", "$exist")
CONNECTIVES = ("$and", "$or", "$not")
DOCUMENT_FIELDS = ("type", "version", "room", "correlation_id", "data")


class FilterInvalid(ValueError):
    """A filter that breaks the rules; `problems` names each fault by its path (`$.data.total.$gte: …`)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def event_document(event_type: str, event_version: str, room: str, correlation_id: str,
                   payload: Any) -> dict[str, Any]:
    """Return what a filter is applied to: the push body without its id and timestamp."""
    return {"type": event_type, "version": event_version, "room": room, "correlation_id": correlation_id,
            "data": payload}


def filter_problems(spec: Any) -> list[str]:
    """Say what is wrong with a filter, each fault named by its JSON path; empty when it is valid (null is)."""
    if spec is None:
        return []
    if not isinstance(spec, dict):
        return [f"$: a filter is a JSON object (or null for none), not {type_name(spec)}"]
    size = len(json.dumps(spec, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_BYTES:
        return [f"$: the filter is {size} bytes of JSON, over the limit of {MAX_BYTES}"]
    checker = _Checker()
    checker.node(spec, "$", depth=1, at_root=True)
    if checker.nodes > MAX_NODES:
        checker.problems.append(f"$: the filter has {checker.nodes} fields and operators, over the limit of "
                                f"{MAX_NODES}")
    return checker.problems


def compile_filter(spec: dict[str, Any] | None) -> Predicate | None:
    """Turn a valid filter into a predicate on an event document (None: no filter, everything matches)."""
    if spec is None:
        return None
    if problems := filter_problems(spec):
        raise FilterInvalid(problems)
    return _node(spec)


def matches(spec: dict[str, Any] | None, document: Any) -> bool:
    """Say whether `document` passes the filter `spec` (compiling it each time: for checks, not the publish path)."""
    predicate = compile_filter(spec)
    return predicate is None or predicate(document)


def sample_near_misses(spec: dict[str, Any] | None, document: Any, path: str = "$") -> list[str]:
    """Name each field a valid filter walks to that a sample document lacks but has a near miss of (a typo)."""
    hints: list[str] = []
    for key, value in (spec or {}).items():
        here = path_of(path, key)
        if key in ("$and", "$or"):
            for index, item in enumerate(value):
                hints += sample_near_misses(item, document, f"{here}[{index}]")
        elif key == "$not":
            hints += sample_near_misses(value, document, here)
        elif key.startswith("$") or not isinstance(document, dict):
            continue
        elif key in document:
            hints += sample_near_misses(value, document[key], here) if isinstance(value, dict) else []
        elif (candidate := near_miss(key, [name for name in document if isinstance(name, str)])) is not None:
            hints.append(f"{here}: the sample has no field {key!r}; did you mean \"{candidate}\"?")
    return hints


# -- checking ------------------------------------------------------------------------------------------

def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def is_literal(value: Any) -> bool:
    return value is None or isinstance(value, bool | int | float | str)


def meant(name: str, known: tuple[str, ...]) -> str:
    """Say which of `known` a misspelled `name` was meant to be, when it is a near miss of one.

    Operators are compared without their `$`, which would make every short name look alike (`$regex`, `$gte`).
    """
    bare = {candidate.removeprefix("$"): candidate for candidate in known}
    candidate = near_miss(name.removeprefix("$"), bare)
    return f'; did you mean "{bare[candidate]}"?' if candidate else ""


def path_of(parent: str, key: str) -> str:
    return f"{parent}.{key}" if key.replace("_", "a").replace("$", "a").isalnum() else f"{parent}[{json.dumps(key)}]"


class _Checker:
    """Walks a filter once, counting its nodes and naming each fault."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.nodes = 0

    def node(self, spec: Any, path: str, *, depth: int, at_root: bool = False) -> None:
        if not isinstance(spec, dict):
            self.problems.append(f"{path}: expected an object of fields and operators, not {type_name(spec)}")
            return
        if depth > MAX_DEPTH:
            self.problems.append(f"{path}: nested deeper than {MAX_DEPTH} objects")
            return
        if not spec:
            self.problems.append(f"{path}: an empty object matches everything; leave it out"
                                 + (" (null: no filter)" if at_root else ""))
        for key, value in spec.items():
            self.nodes += 1
            here = path_of(path, key)
            if key in CONNECTIVES:
                self.connective(key, value, here, depth=depth, at_root=at_root)
            elif key in COMPARISONS:
                if at_root:
                    self.problems.append(f"{here}: compare a field of the event, e.g. "
                                         f'{{"data": {{"total": {{"{key}": …}}}}}}')
                else:
                    self.comparison(key, value, here)
            elif key.startswith("$"):
                self.problems.append(f"{here}: unknown operator {key!r}{meant(key, COMPARISONS + CONNECTIVES)} "
                                     f"(known: {', '.join(COMPARISONS + CONNECTIVES)})")
            elif at_root and key not in DOCUMENT_FIELDS:
                self.problems.append(f"{here}: the event has no field {key!r}{meant(key, DOCUMENT_FIELDS)} (its "
                                     f"fields: {', '.join(DOCUMENT_FIELDS)}; the payload is under data)")
            elif isinstance(value, dict):
                self.node(value, here, depth=depth + 1)
            elif isinstance(value, list):
                self.problems.append(f"{here}: a list is not a value to equal; use {{\"$in\": [...]}}")

    def connective(self, key: str, value: Any, path: str, *, depth: int, at_root: bool) -> None:
        if key == "$not":
            self.node(value, path, depth=depth + 1, at_root=at_root)
            return
        if not isinstance(value, list) or not value:
            self.problems.append(f"{path}: {key} takes a non-empty list of objects, not {type_name(value)}")
            return
        for index, item in enumerate(value):
            self.node(item, f"{path}[{index}]", depth=depth + 1, at_root=at_root)

    def comparison(self, key: str, value: Any, path: str) -> None:
        if key == "$exist":
            if not isinstance(value, bool):
                self.problems.append(f"{path}: $exist takes true or false, not {type_name(value)}")
        elif key in ("$eq", "$neq"):
            if not is_literal(value):
                self.problems.append(f"{path}: {key} takes a string, number, boolean or null, not {type_name(value)}")
        elif key == "$startsWith":
            if not isinstance(value, str):
                self.problems.append(f"{path}: $startsWith takes a string, not {type_name(value)}")
        elif key == "$in":
            self.in_list(value, path)
        elif isinstance(value, bool) or not isinstance(value, int | float | str):
            self.problems.append(f"{path}: {key} takes a number or a string, not {type_name(value)}")

    def in_list(self, value: Any, path: str) -> None:
        if not isinstance(value, list) or not value:
            self.problems.append(f"{path}: $in takes a non-empty list of values, not {type_name(value)}")
        elif len(value) > MAX_IN_VALUES:
            self.problems.append(f"{path}: $in has {len(value)} values, over the limit of {MAX_IN_VALUES}")
        else:
            self.problems.extend(f"{path}[{i}]: $in takes strings, numbers, booleans or null, not {type_name(v)}"
                                 for i, v in enumerate(value) if not is_literal(v))


# -- compiling -----------------------------------------------------------------------------------------

def _node(spec: dict[str, Any]) -> Predicate:
    parts = [_member(key, value) for key, value in spec.items()]
    if len(parts) == 1:
        return parts[0]
    return lambda value: all(part(value) for part in parts)


def _member(key: str, value: Any) -> Predicate:
    if key == "$and":
        parts = [_node(item) for item in value]
        return lambda at: all(part(at) for part in parts)
    if key == "$or":
        parts = [_node(item) for item in value]
        return lambda at: any(part(at) for part in parts)
    if key == "$not":
        inner = _node(value)
        return lambda at: not inner(at)
    if key in COMPARISONS:
        return _comparison(key, value)
    inner = _node(value) if isinstance(value, dict) else _comparison("$eq", value)
    return lambda at: inner(_field(at, key))


def _field(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return value.get(key, MISSING)
    if isinstance(value, list) and key.isdigit() and key.isascii():
        index = int(key)
        return value[index] if index < len(value) else MISSING
    return MISSING


def _kind(value: Any) -> str:
    """The JSON type a comparison goes by: booleans are not numbers, ints and floats are one kind."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else type(value).__name__


def _equal(left: Any, right: Any) -> bool:
    return left is not MISSING and _kind(left) == _kind(right) and left == right


ORDERINGS: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b,
}


def _comparison(key: str, operand: Any) -> Predicate:
    if key == "$exist":
        return lambda at: (at is not MISSING) == operand
    if key == "$eq":
        return lambda at: _equal(at, operand)
    if key == "$neq":
        return lambda at: at is not MISSING and not _equal(at, operand)
    if key == "$startsWith":
        return lambda at: isinstance(at, str) and at.startswith(operand)
    if key == "$in":
        kinds = {(_kind(v), v) for v in operand if not isinstance(v, float) or v == v}
        return lambda at: at is not MISSING and is_literal(at) and (_kind(at), at) in kinds
    order, kind = ORDERINGS[key], _kind(operand)
    return lambda at: at is not MISSING and _kind(at) == kind and order(at, operand)
