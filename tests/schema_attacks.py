"""Hostile and large JSON Schemas (and payloads for them) from issue 23, shared by the schema tests."""

from __future__ import annotations

from typing import Any


def doubling_schema(levels: int) -> dict[str, Any]:
    """Each `$defs` level is an allOf of two references to the next: the work doubles with each level."""
    defs: dict[str, Any] = {f"l{i}": {"allOf": [{"$ref": f"#/$defs/l{i + 1}"}, {"$ref": f"#/$defs/l{i + 1}"}]}
                            for i in range(levels)}
    defs[f"l{levels}"] = {"type": "object"}
    return {"$ref": "#/$defs/l0", "$defs": defs}


# Recursion that branches: both halves of the allOf apply the whole schema again to the same child,
# so a payload nested n deep is checked 2^n times. Its references go back into itself, which the
# cost check counts once (how deep it goes depends on the payload): only the step budget stops it.
BRANCHING_RECURSION = {"allOf": [{"properties": {"a": {"$ref": "#"}}}, {"properties": {"a": {"$ref": "#"}}}]}


def nested(depth: int) -> dict[str, Any]:
    """Return {"a": {"a": … {}}} nested `depth` deep."""
    payload: dict[str, Any] = {}
    for _ in range(depth):
        payload = {"a": payload}
    return payload


def large_schema(tag: int, size_bytes: int = 60_000) -> dict[str, Any]:
    """Return a plain, distinct schema (`tag` tells them apart) of about `size_bytes` of compact JSON."""
    properties: dict[str, Any] = {}
    schema: dict[str, Any] = {"type": "object", "description": f"large schema {tag}", "properties": properties}
    while len(str(schema)) < size_bytes:
        properties[f"field_{len(properties)}"] = {"type": "string", "maxLength": 100,
                                                  "description": f"field {len(properties)} of schema {tag}" + "."*60}
    return schema
