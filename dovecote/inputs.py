"""Readers of values that come from outside: JSON documents and ids, each with its bounds.

Every request body, every JSON form field and every id taken from a query string or a body goes
through here, so that no input can reach Python's recursion limit, an integer the database cannot
hold, or a number JSON cannot write back (NaN, Infinity): they are refused with a message naming
what is wrong, which the API turns into a 400 and a form into a field error. Every API body is read
by a `BodySerializer` (or `BodyModelSerializer`), which refuses the fields it does not know, at
every level, naming the field meant where the name is a near miss: a misspelled field is never
silently ignored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from django.conf import settings
from drf_spectacular.plumbing import get_lib_doc_excludes
from rest_framework import exceptions, parsers, serializers
from rest_framework.settings import api_settings

from dovecote.spelling import near_miss

# The largest id a PostgreSQL bigint (Django's BigAutoField) holds.
MAX_ID = 2**63 - 1
# Python refuses to read integers longer than this (sys.get_int_max_str_digits); say so before it does.
MAX_NUMBER_DIGITS = 4300


class BadJson(ValueError):
    """A JSON document Dovecote will not read; the message says why."""


def max_json_depth() -> int:
    return settings.DOVECOTE_MAX_JSON_DEPTH


def parse_json(text: str | bytes, *, max_depth: int | None = None) -> Any:
    """Read a JSON document: nested at most `max_depth` deep, with finite numbers only, else BadJson."""
    limit = max_json_depth() if max_depth is None else max_depth
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_bounded_int)
    except RecursionError:
        raise BadJson(f"the JSON is nested deeper than {limit} levels (arrays and objects)") from None
    except UnicodeDecodeError as error:
        raise BadJson(f"the body is not UTF-8: {error.reason} at byte {error.start}") from None
    except json.JSONDecodeError as error:
        raise BadJson(f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    if json_depth(value, limit) > limit:
        raise BadJson(f"the JSON is nested deeper than {limit} levels (arrays and objects)")
    return value


def json_depth(value: Any, limit: int) -> int:
    """Return how deep arrays and objects nest in `value` (a scalar is 0), counting at most to `limit` + 1.

    Raise BadJson, naming where, for a string holding NUL (`\\u0000`): PostgreSQL stores none in text or JSON.
    """
    deepest = 0
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, str):
            if "\x00" in node:
                raise BadJson(f"the string at {path or '(root)'} holds a NUL character (\\u0000), which cannot be "
                              f"stored")
            continue
        if not isinstance(node, (dict, list)):
            continue
        deepest = max(deepest, depth + 1)
        if deepest > limit:
            return deepest
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            where = f"{path}/{key}" if path else str(key)
            if isinstance(key, str) and "\x00" in key:
                raise BadJson(f"a key at {path or '(root)'} holds a NUL character (\\u0000), which cannot be stored")
            stack.append((child, depth + 1, where))
    return deepest


def _refuse_constant(name: str) -> float:
    raise BadJson(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadJson(f"the number {text[:40]} is out of range (it is larger than a double can hold)")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise BadJson(f"a number with {len(text)} digits is too long (at most {MAX_NUMBER_DIGITS})")
    return int(text)


class JsonBodyParser(parsers.JSONParser):
    """DRF's JSON parser, reading through parse_json: a bad body is a 400 that says what is wrong."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        raw = stream.read() if stream is not None else b""
        if not raw:
            raise exceptions.ParseError("the body is empty: send a JSON object")
        try:
            return parse_json(raw)
        except BadJson as error:
            raise exceptions.ParseError(f"JSON parse error: {error}") from None


def read_id(text: object) -> int | None:
    """Return `text` as a database id (1 to 2^63 - 1, ASCII digits only), or None when it is not one."""
    value = str(text)
    if not (value.isascii() and value.isdigit()) or len(value) > 19:
        return None
    number = int(value)
    return number if 1 <= number <= MAX_ID else None


class IdField(serializers.IntegerField):
    """An id in a query string or a body: a whole number the database's ids can hold."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("min_value", 1)
        options.setdefault("max_value", MAX_ID)
        super().__init__(**options)


def unknown_field_errors(unknown: Iterable[str], meant: Collection[str]) -> dict[str, list[str]]:
    """Name each `unknown` field, with the one of `meant` it is a near miss of."""
    return {name: [unknown_field_message(name, meant)] for name in sorted(unknown)}


def unknown_field_message(name: str, meant: Collection[str]) -> str:
    if (candidate := near_miss(name, meant)) is not None:
        return f'Unknown field. Did you mean "{candidate}"?'
    return f"Unknown field. The fields are: {', '.join(sorted(meant))}." if meant else "Unknown field."


def describe(value: Any) -> str:
    """Say what a JSON value is, with a glimpse of it: `a string "order.created"`, `a list`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"the number {json.dumps(value)[:40]}"
    if isinstance(value, str):
        glimpse = json.dumps(value[:60], ensure_ascii=False)
        return f"a string {glimpse}"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


class RefuseUnknownFields:
    """Mix into a serializer of a request body: refuse a field it does not know, naming the field meant.

    The check is one set difference on the object's keys (cheap enough for the publish path). Nested
    serializers and list items check their own objects, so a batch names the item's index. A read-only
    field (`id`, `status`, …) is known: a reply sent back as a request is accepted (those fields are
    ignored, as before) so that clients may round-trip what they read. `shape` says what the object
    looks like, for the error on a value that is not an object.
    """

    shape: str = ""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [self.not_an_object(data)]},
                                              code="invalid")
        unknown = data.keys() - self.fields.keys()  # type: ignore[attr-defined]  # all the publish path pays
        errors = unknown_field_errors(unknown, self.writable_names()) if unknown else {}
        try:
            value = super().to_internal_value(data)  # type: ignore[misc]
        except serializers.ValidationError as invalid:
            if errors and isinstance(invalid.detail, dict):
                raise serializers.ValidationError({**invalid.detail, **errors}) from None
            raise
        if errors:
            raise serializers.ValidationError(errors)
        return value

    def writable_names(self) -> list[str]:
        """The fields a request may set, in the serializer's order: the ones a near miss may have meant."""
        return [name for name, field in self.fields.items() if not field.read_only]  # type: ignore[attr-defined]

    def not_an_object(self, data: Any) -> str:
        """Say that `data` should have been an object, and of what shape."""
        shape = self.shape
        if not shape:
            writable = self.writable_names()
            shown = [f'"{name}": …' for name in writable[:4]] + (["…"] if len(writable) > 4 else [])
            shape = f"Expected an object {{{', '.join(shown)}}}"
        return f"{shape}; got {describe(data)}."


# A request body (or an object in one) that takes its fields and no other. No docstring: the schema
# would give it to every body serializer without one of its own (see schema_doc_excludes).
class BodySerializer(RefuseUnknownFields, serializers.Serializer):
    pass


# A request body that writes a model, taking its fields and no other.
class BodyModelSerializer(RefuseUnknownFields, serializers.ModelSerializer):
    pass


def schema_doc_excludes() -> list[type]:
    """List the classes whose docstrings the schema must not lend their subclasses (drf-spectacular's, and ours)."""
    return [*get_lib_doc_excludes(), RefuseUnknownFields, BodySerializer, BodyModelSerializer]
