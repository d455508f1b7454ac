"""The JSON Schemas of event types: checked when an event type is made, compiled once, applied within bounds.

Five rules keep a schema from harming the process that applies it (docs/security.md):
1. It never leaves itself: every `$ref` and `$dynamicRef` is local (`#…`) and resolves to a schema
   inside the document, checked when the event type is made; validators resolve through a registry
   that retrieves nothing, so no URL or file is ever read, whatever is stored.
2. Regular expressions (`pattern`, `patternProperties`) run on RE2, whose matching time is linear in
   the input: `^(a+)+$` against 10,000 characters takes microseconds, not the age of the universe.
   Patterns RE2 cannot run (backreferences, lookaround) are refused.
3. Its cost is bounded when it is made (rooms/schema_cost.py): its size in bytes, its subschemas, and
   the subschemas a check visits with references followed (`DOVECOTE_SCHEMA_MAX_*`); a schema over
   a bound is refused before anything is validated against it.
4. Every check runs within a budget of steps (rooms/schema_keywords.py): a publish's payloads share
   `DOVECOTE_SCHEMA_CHECK_STEPS`, so no payload, however it meets its schema, runs away.
5. A validator is built once per distinct schema and kept (`VALIDATORS`), not once per publish; the
   kept ones hold at most `DOVECOTE_SCHEMA_CACHE_BYTES` of schema JSON per process, the least
   recently used going first.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import jsonschema
import referencing
import referencing.exceptions
from django.conf import settings
from referencing._core import Resolver
from referencing.jsonschema import DRAFT202012

from rooms.schema_cost import (
    NO_RETRIEVAL,
    REF_KEYWORDS,
    compact_json,
    expanded_size,
    size_bytes,
    subschema_count,
    subschemas,
)
from rooms.schema_keywords import (
    BudgetSpent,
    CompiledSchema,
    PatternRefused,
    Validator,
    budget,
    compile_pattern,
    quotable,
)

MAX_ERRORS = 100  # named per payload: a payload can break its schema in more ways than a reply should list
SAMPLE_INSTANCES: tuple[Any, ...] = (None, {}, [], "", 0, True)  # applied once at creation: a $ref loop shows at once


class SchemaRefused(ValueError):
    """A schema Dovecote will not store or apply; the message names the part at fault."""


def check_event_type_schema(schema: Any) -> None:
    """Raise SchemaRefused unless `schema` may be an event type's schema: an object, storable, and check_schema's."""
    if not isinstance(schema, dict):
        # EventType treats a falsy schema as none, so `false` would accept everything.
        raise SchemaRefused("must be a JSON object (a JSON Schema), or nothing")
    if contains_nul(schema):
        raise SchemaRefused("must not contain NUL characters (PostgreSQL cannot store them)")
    check_schema(schema)


def contains_nul(value: Any) -> bool:
    """Say whether any string (key or value) in a JSON document holds a NUL character."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(contains_nul(item) for item in value)
    return False


def check_schema(schema: dict[str, Any]) -> None:
    """Raise SchemaRefused unless `schema` is a valid draft 2020-12 schema Dovecote can apply safely."""
    check_size(schema)
    check_subschemas(schema)  # before the metaschema check, which takes about 0.3 ms per subschema
    try:
        Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise SchemaRefused(f"not a valid JSON Schema: {where}: {error.message}") from None
    except RecursionError:
        raise SchemaRefused("the schema is nested too deeply to check") from None
    check_references_and_patterns(schema)
    check_expanded(schema)
    check_samples(schema)


def check_size(schema: dict[str, Any]) -> None:
    """Refuse a schema over DOVECOTE_SCHEMA_MAX_BYTES before anything else reads it."""
    size, limit = size_bytes(schema), settings.DOVECOTE_SCHEMA_MAX_BYTES
    if size > limit:
        raise SchemaRefused(f"the schema is {size} bytes of compact JSON, more than the {limit} a schema may have "
                            f"(DOVECOTE_SCHEMA_MAX_BYTES)")


def check_subschemas(schema: dict[str, Any]) -> None:
    """Refuse a schema with more than DOVECOTE_SCHEMA_MAX_SUBSCHEMAS subschemas (rule 3)."""
    count, limit = subschema_count(schema), settings.DOVECOTE_SCHEMA_MAX_SUBSCHEMAS
    if count is not None and count > limit:
        raise SchemaRefused(f"the schema has {count} subschemas, more than the {limit} a schema may have "
                            f"(DOVECOTE_SCHEMA_MAX_SUBSCHEMAS)")


def check_expanded(schema: dict[str, Any]) -> None:
    """Refuse a schema whose references make one check visit more than DOVECOTE_SCHEMA_MAX_EXPANDED subschemas."""
    limit = settings.DOVECOTE_SCHEMA_MAX_EXPANDED
    if expanded_size(schema, cap=limit) > limit:
        raise SchemaRefused(f"with its references followed, the schema has more than {limit} subschemas "
                            f"(DOVECOTE_SCHEMA_MAX_EXPANDED): a definition is referred to from too many places, "
                            f"or references multiply (an allOf of two $refs to the next level doubles per level)")


def check_samples(schema: dict[str, Any]) -> None:
    """Apply the schema to a few sample payloads: a reference loop or a schema too costly to apply shows at once."""
    validator = Validator(schema, registry=NO_RETRIEVAL)
    try:
        with check_budget():
            for instance in SAMPLE_INSTANCES:
                for _ in validator.iter_errors(instance):
                    pass
    except RecursionError:
        raise SchemaRefused("the schema refers to itself without end (a $ref loop that consumes no input)") from None
    except referencing.exceptions.Unresolvable as error:
        raise SchemaRefused(f"a reference does not resolve: {error}"[:300]) from None
    except BudgetSpent as spent:
        samples = json.dumps(list(SAMPLE_INSTANCES))
        raise SchemaRefused(f"checking the sample payloads {samples} against the schema takes {spent} "
                            f"(DOVECOTE_SCHEMA_CHECK_STEPS)") from None


def check_references_and_patterns(schema: dict[str, Any]) -> None:
    """Refuse a reference that leaves the document or does not resolve to a schema, and a pattern RE2 cannot run."""
    root = DRAFT202012.create_resource(schema)
    try:
        for resolver, subschema in subschemas(NO_RETRIEVAL.resolver_with_root(root), root):
            for keyword in REF_KEYWORDS:
                if keyword in subschema:
                    check_reference(resolver, keyword, subschema[keyword])
            if isinstance(pattern := subschema.get("pattern"), str):
                compile_pattern(pattern)
            if isinstance(properties := subschema.get("patternProperties"), dict):
                for pattern in properties:
                    compile_pattern(pattern)
    except PatternRefused as refused:
        raise SchemaRefused(str(refused)) from None


def check_reference(resolver: Resolver[Any], keyword: str, ref: Any) -> None:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise SchemaRefused(f"{keyword} {ref!r} refers outside the schema: only local references (#…) "
                            f"are allowed, and nothing is fetched")
    try:
        target = resolver.lookup(ref).contents
    except (referencing.exceptions.Unresolvable, referencing.exceptions.PointerToNowhere) as error:
        raise SchemaRefused(f"{keyword} {ref!r} does not resolve inside the schema ({type(error).__name__})") from None
    if not isinstance(target, (dict, bool)):
        raise SchemaRefused(f"{keyword} {ref!r} points at {type(target).__name__} {json.dumps(target)[:60]}, "
                            f"not at a schema")


def check_budget() -> Any:
    """Share DOVECOTE_SCHEMA_CHECK_STEPS between the checks inside (inside another budget: share that one)."""
    return budget(settings.DOVECOTE_SCHEMA_CHECK_STEPS)


def schema_digest(schema: Any) -> str:
    """Return the name of `schema`'s validator: the SHA-256 of its canonical JSON (empty for no schema)."""
    return hashlib.sha256(compact_json(schema).encode()).hexdigest() if schema else ""


def payload_errors(validator: CompiledSchema, payload: Any) -> list[str]:
    """Return what is wrong with `payload` under `validator`, within the check budget; BudgetSpent when it runs out.

    Raise SchemaRefused when the schema cannot be applied (a reference that does not resolve, a loop).
    """
    try:
        with check_budget():
            found = list(itertools.islice(validator.iter_errors(quotable(payload)), MAX_ERRORS + 1))
    except (referencing.exceptions.Unresolvable, RecursionError) as error:
        raise SchemaRefused(type(error).__name__) from None
    errors = sorted(found[:MAX_ERRORS], key=lambda e: list(e.absolute_path))
    named = [f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {short(error.message)}" for error in errors]
    return [*named, f"(and more: the first {MAX_ERRORS} errors are shown)"] if len(found) > MAX_ERRORS else named


def short(text: str, limit: int = 300) -> str:
    """Cut an error message that quotes a long payload value."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compile_validator(schema: Any) -> CompiledSchema | SchemaRefused:
    """Build the validator of a stored schema, or say why it cannot be applied (stored before today's checks)."""
    if not isinstance(schema, dict):
        return SchemaRefused("it is not a JSON object")
    try:
        check_references_and_patterns(schema)
    except SchemaRefused as refused:
        return refused
    return Validator(schema, registry=NO_RETRIEVAL)


class ValidatorCache:
    """Validators by schema digest, within a bound on their schemas' total JSON bytes, least recently used out first."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, tuple[CompiledSchema | SchemaRefused, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.size_bytes = 0
        self.hits = self.misses = 0

    def get(self, digest: str, load: Callable[[], Any]) -> CompiledSchema:
        """Return the validator named `digest`, building it from `load()` when not kept; SchemaRefused if unusable.

        A schema `load` returns under another digest (changed since its row was read) is applied, not kept.
        """
        with self._lock:
            kept = self._kept.get(digest)
            if kept is not None:
                self._kept.move_to_end(digest)
                self.hits += 1
        if kept is None:
            schema = load()
            kept = (compile_validator(schema), size_bytes(schema))
            self.keep(digest if digest == schema_digest(schema) else "", kept)
        compiled = kept[0]
        if isinstance(compiled, SchemaRefused):
            raise SchemaRefused(str(compiled))
        return compiled

    def keep(self, digest: str, entry: tuple[CompiledSchema | SchemaRefused, int]) -> None:
        limit = settings.DOVECOTE_SCHEMA_CACHE_BYTES
        with self._lock:
            self.misses += 1
            if not digest or digest in self._kept or entry[1] > limit:
                return  # changed, built meanwhile by another thread, or larger than the whole cache: used, not kept
            self._kept[digest] = entry
            self.size_bytes += entry[1]
            while self.size_bytes > limit:
                _, (_, size) = self._kept.popitem(last=False)
                self.size_bytes -= size

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self.size_bytes = 0
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._kept)


VALIDATORS = ValidatorCache()
