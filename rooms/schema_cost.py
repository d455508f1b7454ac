"""What a schema costs to keep and to apply, measured before it is stored: bytes, subschemas, and subschemas expanded.

- `size_bytes`: its compact JSON, UTF-8.
- `subschema_count`: the objects in it that are schemas (the root, each property's, each `$defs` entry…).
- `expanded_size`: the subschemas one pass of a check could visit, references followed: a subschema
  counts once for each way of reaching it through `$ref`s, with everything under it. Two
  references to one definition count it twice; a level made of an `allOf` of two references to
  the next level doubles with each level (15 such levels, about 1 KB, expand to some 390,000).
  Each subschema's count is kept once computed, so counting takes one step per subschema and
  reference, whatever the total; totals stop at `cap` + 1.
- A reference back into a schema that contains it (recursion, as in a tree of nodes) counts once:
  how deep it goes depends on the payload, and the step budget of each check bounds that
  (rooms/schema_keywords.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import referencing
import referencing.exceptions
from referencing._core import Resolver
from referencing.jsonschema import DRAFT202012

# A registry that knows the JSON Schema metaschemas and retrieves nothing else.
NO_RETRIEVAL = referencing.Registry()
REF_KEYWORDS = ("$ref", "$dynamicRef")


def compact_json(schema: Any) -> str:
    """Return `schema` as canonical compact JSON: sorted keys, no spaces."""
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def size_bytes(schema: Any) -> int:
    """Return the size of `schema` as compact JSON, UTF-8."""
    return len(compact_json(schema).encode())


def subschema_count(schema: Any) -> int | None:
    """Count the object subschemas of `schema`, itself included; None when it is too malformed to walk."""
    root = DRAFT202012.create_resource(schema)
    try:
        return sum(1 for _ in subschemas(NO_RETRIEVAL.resolver_with_root(root), root))
    except (AttributeError, TypeError, ValueError, KeyError):  # e.g. "properties": [] (the metaschema check says so)
        return None


def expanded_size(schema: Any, *, cap: int) -> int:
    """Count the subschemas of `schema` with its references followed, up to `cap` + 1 (its references resolve)."""
    root = DRAFT202012.create_resource(schema)
    return expanded_count(NO_RETRIEVAL.resolver_with_root(root), root, cap)


def subschemas(resolver: Resolver[Any], resource: referencing.Resource[Any]) -> Iterator[tuple[Any, dict]]:
    """Yield every object subschema of `resource` (itself included) with the resolver of its scope."""
    stack = [(resolver, resource)]
    while stack:
        resolver, resource = stack.pop()
        resolver = resolver.in_subresource(resource)
        if isinstance(resource.contents, dict):
            yield resolver, resource.contents
        stack.extend((resolver, sub) for sub in resource.subresources())


@dataclass
class _Visit:
    """A subschema being counted: its own 1, plus what its subschemas and references add up to so far."""

    key: int
    pending: list[tuple[Resolver[Any], referencing.Resource[Any]]]
    total: int = field(default=1)

    @classmethod
    def of(cls, resolver: Resolver[Any], resource: referencing.Resource[Any]) -> _Visit:
        resolver = resolver.in_subresource(resource)
        pending = [(resolver, sub) for sub in resource.subresources()]
        pending.extend(referenced(resolver, resource.contents))
        return cls(key=id(resource.contents), pending=pending, total=int(isinstance(resource.contents, dict)))


def referenced(resolver: Resolver[Any], contents: Any) -> Iterator[tuple[Resolver[Any], referencing.Resource[Any]]]:
    """Yield the schemas `contents` refers to (references that do not resolve are refused elsewhere)."""
    if not isinstance(contents, dict):
        return
    for keyword in REF_KEYWORDS:
        if isinstance(ref := contents.get(keyword), str):
            try:
                target = resolver.lookup(ref)
            except (referencing.exceptions.Unresolvable, referencing.exceptions.PointerToNowhere):
                continue
            if isinstance(target.contents, (dict, bool)):
                yield target.resolver, DRAFT202012.create_resource(target.contents)


def expanded_count(resolver: Resolver[Any], root: referencing.Resource[Any], cap: int) -> int:
    """Count the subschemas of `root` with references followed, each reached subschema's count computed once."""
    counted: dict[int, int] = {}
    path = [_Visit.of(resolver, root)]
    on_path = {path[0].key}
    while True:
        visit = path[-1]
        if visit.pending:
            scope, resource = visit.pending.pop()
            key = id(resource.contents)
            if key in counted:
                visit.total += counted[key]
            elif key in on_path:
                visit.total += 1  # recursion: counted once, bounded at check time by the budget
            else:
                path.append(_Visit.of(scope, resource))
                on_path.add(key)
            continue
        path.pop()
        on_path.discard(visit.key)
        counted[visit.key] = min(visit.total, cap + 1)
        if not path:
            return counted[visit.key]
        path[-1].total += counted[visit.key]
