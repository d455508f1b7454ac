"""A sample payload for an event type, made from its JSON Schema: what the console's test event starts from.

It reads the schema's own hints first (`examples`, `default`, `const`, `enum`), then builds a value
of the declared type that meets its bounds: an object with its required properties, an array of its
minimum length, a string or a number within its limits. Keywords it cannot satisfy by construction
(`pattern`, `not`, …) may leave a sample the schema refuses: `EventType.sample_payload` checks it and
then offers `{}` instead, for the operator to fill in beside the schema.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 8
FORMATS = {"date-time": "2026-01-01T00:00:00Z", "date": "2026-01-01", "time": "00:00:00Z",
           "email": "test@example.com", "uri": "https://example.com/", "uuid": "00000000-0000-4000-8000-000000000000",
           "hostname": "example.com", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1"}


def sample(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """Return a value `schema` describes, from its hints or its type and bounds (None for an unusable schema)."""
    root = schema if root is None else root
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    for hint in ("const", "default"):
        if hint in schema:
            return schema[hint]
    for hint in ("examples", "enum"):
        if isinstance(schema.get(hint), list) and schema[hint]:
            return schema[hint][0]
    if isinstance(ref := schema.get("$ref"), str):
        return sample(local_reference(root, ref), root, depth + 1)
    for combined in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(combined), list) and schema[combined]:
            return sample(schema[combined][0], root, depth + 1)
    return of_type(schema, declared_type(schema), root, depth)


def declared_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if isinstance(kind, str):
        return kind
    return "object" if "properties" in schema or "required" in schema else "array" if "items" in schema else ""


def of_type(schema: dict[str, Any], kind: str, root: Any, depth: int) -> Any:
    """Build a value of `kind` within the schema's bounds."""
    if kind == "object":
        properties = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        required = schema["required"] if isinstance(schema.get("required"), list) else []
        return {name: sample(properties.get(name, {}), root, depth + 1) for name in required if isinstance(name, str)}
    if kind == "array":
        return [sample(schema.get("items", {}), root, depth + 1) for _ in range(min(whole(schema, "minItems"), 10))]
    if kind == "string":
        text = FORMATS.get(schema.get("format", ""), "test").ljust(min(whole(schema, "minLength"), 1000), "x")
        return text[: schema["maxLength"]] if isinstance(schema.get("maxLength"), int) else text
    if kind in ("integer", "number"):
        return number(schema, kind)
    return {"boolean": True, "null": None}.get(kind)


def whole(schema: dict[str, Any], keyword: str) -> int:
    """Return a count keyword's value (minItems, minLength), 0 when it is absent or not a whole number."""
    value = schema.get(keyword)
    return value if isinstance(value, int) and value > 0 else 0


def number(schema: dict[str, Any], kind: str) -> int | float:
    """Return 1 moved within minimum, exclusiveMinimum, maximum and exclusiveMaximum (whole for an integer)."""
    value: float = 1
    step = 1 if kind == "integer" else 0.5
    if isinstance(low := schema.get("minimum"), int | float):
        value = max(value, low)
    if isinstance(low := schema.get("exclusiveMinimum"), int | float):
        value = max(value, low + step)
    if isinstance(high := schema.get("maximum"), int | float):
        value = min(value, high)
    if isinstance(high := schema.get("exclusiveMaximum"), int | float):
        value = min(value, high - step)
    if kind == "integer":
        return int(value) if value == int(value) else int(value) + 1
    return value


def local_reference(root: Any, ref: str) -> Any:
    """Follow a reference inside the schema itself ("#/$defs/item"); anything else resolves to nothing."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    target = root
    for escaped in ref[2:].split("/"):
        part = escaped.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            return None
        target = target[part]
    return target
