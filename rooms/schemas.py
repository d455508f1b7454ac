"""The JSON Schemas of event types: checked when an event type is made, compiled once, matched in linear time.

Three rules keep a schema from harming the process that applies it (docs/security.md):
1. It never leaves itself: every `$ref` and `$dynamicRef` is local (`#…`) and resolves to a schema
   inside the document, checked when the event type is made; validators resolve through a registry
   that retrieves nothing, so no URL or file is ever read, whatever is stored.
2. Regular expressions (`pattern`, `patternProperties`) run on RE2, whose matching time is linear in
   the input: `^(a+)+$` against 10,000 characters takes microseconds, not the age of the universe.
   Patterns RE2 cannot run (backreferences, lookaround) are refused.
3. A validator is built once per distinct schema and kept (`validator_for`), not once per publish.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, TypeAlias

import jsonschema
import jsonschema._keywords
import jsonschema._utils
import re2
import referencing
import referencing.exceptions
from referencing._core import Resolver
from referencing.jsonschema import DRAFT202012

# An alias the code also calls (Validator(...), Validator.check_schema), so not a `type` statement.
Validator: TypeAlias = jsonschema.Draft202012Validator  # noqa: UP040
# A registry that knows the JSON Schema metaschemas and retrieves nothing else.
NO_RETRIEVAL = referencing.Registry()
COMPILED_SCHEMAS = 512  # validators kept per process
REF_KEYWORDS = ("$ref", "$dynamicRef")
SAMPLE_INSTANCES: tuple[Any, ...] = (None, {}, [], "", 0, True)  # applied once at creation: a $ref loop shows at once


class SchemaRefused(ValueError):
    """A schema Dovecote will not store or apply; the message names the part at fault."""


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is reported to the caller, not to stderr
    options.never_capture = True  # only "does it match" is asked
    options.max_mem = 8 << 20  # a pattern whose automaton needs more is refused
    return options


RE2_OPTIONS = _re2_options()


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any:
    """Compile `pattern` with RE2, or raise SchemaRefused saying why it cannot be used."""
    try:
        return re2.compile(pattern, RE2_OPTIONS)
    except re2.error as error:
        reason = error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) else error
        raise SchemaRefused(f"pattern {pattern[:100]!r} cannot be used: {reason} (patterns are RE2: no "
                            f"backreferences or lookaround)") from None


class LinearRegex:
    """The `re` that jsonschema's keywords see: `search` runs on RE2 (linear time).

    jsonschema matches `pattern` and `patternProperties` (and, through them, `additionalProperties`
    and `unevaluatedProperties`) with `re.search` from the modules `jsonschema._keywords` and
    `jsonschema._utils`, and uses `re` for nothing else there. Dovecote's schemas only hold patterns
    RE2 compiles (checked at creation and again before use); a pattern from another caller that RE2
    cannot run is left to Python's `re`, so other users of jsonschema in the process keep working.
    """

    @staticmethod
    def search(pattern: str, string: str) -> Any:
        try:
            compiled = compile_pattern(pattern)
        except SchemaRefused:
            return re.search(pattern, string)
        return compiled.search(string)


jsonschema._keywords.re = LinearRegex
jsonschema._utils.re = LinearRegex


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
    try:
        Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise SchemaRefused(f"not a valid JSON Schema: {where}: {error.message}") from None
    except RecursionError:
        raise SchemaRefused("the schema is nested too deeply to check") from None
    check_references_and_patterns(schema)
    validator = Validator(schema, registry=NO_RETRIEVAL)
    try:
        for instance in SAMPLE_INSTANCES:
            for _ in validator.iter_errors(instance):
                pass
    except RecursionError:
        raise SchemaRefused("the schema refers to itself without end (a $ref loop that consumes no input)") from None
    except referencing.exceptions.Unresolvable as error:
        raise SchemaRefused(f"a reference does not resolve: {error}"[:300]) from None


def check_references_and_patterns(schema: dict[str, Any]) -> None:
    """Refuse a reference that leaves the document or does not resolve to a schema, and a pattern RE2 cannot run."""
    root = DRAFT202012.create_resource(schema)
    for resolver, subschema in subschemas(NO_RETRIEVAL.resolver_with_root(root), root):
        for keyword in REF_KEYWORDS:
            if keyword in subschema:
                check_reference(resolver, keyword, subschema[keyword])
        if isinstance(pattern := subschema.get("pattern"), str):
            compile_pattern(pattern)
        if isinstance(properties := subschema.get("patternProperties"), dict):
            for pattern in properties:
                compile_pattern(pattern)


def subschemas(resolver: Resolver[Any], resource: referencing.Resource[Any]) -> Iterator[tuple[Any, dict]]:
    """Yield every object subschema of `resource` (itself included) with the resolver of its scope."""
    stack = [(resolver, resource)]
    while stack:
        resolver, resource = stack.pop()
        resolver = resolver.in_subresource(resource)
        if isinstance(resource.contents, dict):
            yield resolver, resource.contents
        stack.extend((resolver, sub) for sub in resource.subresources())


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


@lru_cache(maxsize=COMPILED_SCHEMAS)
def _compiled(canonical: str) -> Validator | SchemaRefused:
    schema = json.loads(canonical)
    try:
        check_references_and_patterns(schema)
    except SchemaRefused as refused:  # a schema stored before these checks existed
        return refused
    return Validator(schema, registry=NO_RETRIEVAL)


def validator_for(schema: dict[str, Any]) -> Validator:
    """Return the validator of `schema`, built on first use; raise SchemaRefused if it cannot be applied."""
    compiled = _compiled(json.dumps(schema, sort_keys=True, separators=(",", ":")))
    if isinstance(compiled, SchemaRefused):
        raise SchemaRefused(str(compiled))
    return compiled
