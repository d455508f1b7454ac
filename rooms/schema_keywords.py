"""How Dovecote's validators apply JSON Schema keywords: each in time bounded by what it reads, all within a budget.

jsonschema applies a schema by calling one function per keyword. `Validator` is its draft 2020-12
validator with these changes (docs/security.md):
1. Every keyword applied spends steps from the budget of the check in progress (`budget`): one, plus
   what it may read of the instance and of its own value (`STEPS`); what its errors quote is
   bounded by that too (rule 6, and the schema's own values). A check that runs out stops
   with BudgetSpent, whatever the schema does (references that multiply, recursion that branches,
   unevaluatedProperties re-checking subschemas). A keyword applied outside any budget is a
   programming error (RuntimeError), never unbounded work.
2. `uniqueItems` takes linear time: each item becomes a hashable key under JSON Schema's equality
   (1 == 1.0, true != 1, objects whatever their key order), where jsonschema's compares every pair
   when the items do not sort (numbers mixed with strings: 16,000 items took 22 s).
3. `multipleOf` never overflows: where jsonschema's float arithmetic would (a 4,000-digit integer
   over 0.5, a float over a 400-digit integer), it decides exactly, with fractions.
4. `unevaluatedItems` and `unevaluatedProperties` look up what was evaluated in a set, not a list
   (jsonschema's took time in the square of the instance's size), and pay for their walk over the
   subschemas applied in place before they take it (`walk_weight`).
5. `pattern` and `patternProperties` match on RE2, in time linear in the input (`LinearRegex`).
6. Error messages quote a payload's values cut to QUOTE_CHARS characters (`quotable` wraps them):
   jsonschema quotes the whole instance in most messages, also in those it makes and drops while
   trying the branches of anyOf, oneOf or contains, so that a 200 KB string tried against 500
   branches would be copied 500 times.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from fractions import Fraction
from functools import lru_cache
from typing import Any, TypeAlias

import jsonschema
import jsonschema._keywords
import jsonschema._utils
import jsonschema.protocols
import jsonschema.validators
import re2
import referencing.exceptions

Keyword: TypeAlias = Callable[[Any, Any, Any, Any], Iterable[jsonschema.ValidationError] | None]  # noqa: UP040


class PatternRefused(ValueError):
    """A regular expression RE2 cannot run; the message says why."""


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is reported to the caller, not to stderr
    options.never_capture = True  # only "does it match" is asked
    options.max_mem = 8 << 20  # a pattern whose automaton needs more is refused
    return options


RE2_OPTIONS = _re2_options()


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> Any:
    """Compile `pattern` with RE2, or raise PatternRefused saying why it cannot be used."""
    try:
        return re2.compile(pattern, RE2_OPTIONS)
    except re2.error as error:
        reason = error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) else error
        raise PatternRefused(f"pattern {pattern[:100]!r} cannot be used: {reason} (patterns are RE2: no "
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
        except PatternRefused:
            return re.search(pattern, string)
        return compiled.search(string)


jsonschema._keywords.re = LinearRegex
jsonschema._utils.re = LinearRegex


class BudgetSpent(Exception):
    """A check needed more steps than its budget (`limit`) holds."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} steps")
        self.limit = limit


class Budget:
    """The steps left to the checks of one request (or one creation)."""

    def __init__(self, steps: int) -> None:
        self.limit = steps
        self.left = steps
        # What an unevaluated* keyword's walk weighs, by id of its schema (kept, so that no id is reused meanwhile).
        self.walks: dict[int, tuple[Any, int]] = {}

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise BudgetSpent(self.limit)


REFERENCES = ("$ref", "$dynamicRef")
REFERENCE_STEPS = 10
QUOTE_CHARS = 200  # of a payload value, in an error message
LONG_INT_BITS = 640  # about 192 digits
_current: ContextVar[Budget | None] = ContextVar("schema_budget", default=None)


@contextmanager
def budget(steps: int) -> Iterator[Budget]:
    """Share `steps` between the checks inside; inside another budget, share that one instead."""
    active = _current.get()
    if active is not None:
        yield active
        return
    fresh = Budget(steps)
    token = _current.set(fresh)
    try:
        yield fresh
    finally:
        _current.reset(token)


def breadth(value: Any) -> int:
    """Return how many items or members a keyword reads in `value` (a string: one per 64 characters)."""
    if isinstance(value, (list, dict)):
        return len(value)
    return len(value) // 64 if isinstance(value, str) else 0


def nodes(value: Any) -> int:
    """Return how many values `value` holds, itself included, at any depth."""
    if isinstance(value, list):
        return 1 + sum(nodes(item) for item in value)
    if isinstance(value, dict):
        return 1 + sum(nodes(item) for item in value.values())
    return 1 + breadth(value)


def ordinary_steps(value: Any, instance: Any) -> int:
    """Most keywords read the members of their value and of the instance once."""
    return 1 + breadth(value) + breadth(instance)


def whole_value_steps(value: Any, instance: Any) -> int:
    """`const` and `enum` compare whole values (and quote them in their errors)."""
    return nodes(value)


def whole_items_steps(value: Any, instance: Any) -> int:
    """`uniqueItems` reads every item whole."""
    return nodes(instance) if isinstance(instance, list) else 1


def pattern_steps(value: Any, instance: Any) -> int:
    """`patternProperties` matches each of the instance's names against each of its patterns."""
    return 1 + breadth(value) + breadth(instance) * (1 + breadth(value))


# What applying a keyword costs, in steps (rule 1); a reference is looked up, measured as slow as
# ten keywords (scripts/measure_schema_costs.py). The unevaluated keywords add their walk (`walk_weight`).
STEPS: dict[str, Callable[[Any, Any], int]] = {
    "$ref": lambda value, instance: REFERENCE_STEPS, "$dynamicRef": lambda value, instance: REFERENCE_STEPS,
    "const": whole_value_steps, "enum": whole_value_steps, "uniqueItems": whole_items_steps,
    "patternProperties": pattern_steps,
}


def counted(name: str, apply: Keyword) -> Keyword:
    """Wrap a keyword's function so that each use spends its steps first."""
    cost = STEPS.get(name, ordinary_steps)

    def keyword(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        active = _current.get()
        if active is None:
            raise RuntimeError("a schema validator was applied outside a budget (rooms.schema_keywords.budget)")
        active.spend(cost(value, instance))
        return apply(validator, value, instance, schema)

    return keyword


def equality_key(value: Any) -> Hashable:
    """Return a key two JSON values share exactly when JSON Schema calls them equal (1 == 1.0, true != 1)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)  # apart from numbers: True == 1 in Python, not in JSON Schema
    if isinstance(value, (int, float)):
        return ("number", value)  # 1 == 1.0 and hash(1) == hash(1.0)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(equality_key(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, equality_key(item)) for key, item in value.items()))
    return ("other", repr(value))


class QuotedStr(str):
    """A payload's string, which error messages quote cut short."""

    def __repr__(self) -> str:
        return quote(self)


class QuotedList(list):
    """A payload's array, which error messages quote cut short."""

    def __repr__(self) -> str:
        return quote(self)


class QuotedDict(dict):
    """A payload's object, which error messages quote cut short."""

    def __repr__(self) -> str:
        return quote(self)


class QuotedInt(int):
    """A payload's integer too long to quote whole (up to 4,300 digits), which error messages quote cut short."""

    def __repr__(self) -> str:
        return quote(int(self))


def quotable(value: Any) -> Any:
    """Return a copy of a JSON value that error messages quote in at most about QUOTE_CHARS characters (rule 6)."""
    return _quotable(value)[0]


def _quotable(value: Any) -> tuple[Any, int]:
    """Return `value` as `quotable` does, with the length of its plain repr (about).

    Only values whose repr would be long are wrapped (the wrappers make jsonschema slower): long
    strings and integers, and the arrays and objects that hold more than QUOTE_CHARS characters.
    """
    if isinstance(value, str):
        return (QuotedStr(value) if len(value) > QUOTE_CHARS else value), len(value) + 2
    if isinstance(value, list):
        items = [_quotable(item) for item in value]
        size = 2 + sum(length + 2 for _, length in items)
        plain = [item for item, _ in items]
        return (QuotedList(plain) if size > QUOTE_CHARS else plain), size
    if isinstance(value, dict):
        members = [(_quotable(key), _quotable(item)) for key, item in value.items()]
        size = 2 + sum(key_length + length + 4 for (_, key_length), (_, length) in members)
        pairs = [(key, item) for (key, _), (item, _) in members]
        return (QuotedDict(pairs) if size > QUOTE_CHARS else dict(pairs)), size
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > LONG_INT_BITS:
        return QuotedInt(value), value.bit_length() // 3
    return value, 8


def quote(value: Any, limit: int | None = None) -> str:
    """Return repr(value) cut to `limit` characters, reading no more of `value` than that takes."""
    limit = QUOTE_CHARS if limit is None else limit
    pieces, length = [], 0
    for piece in repr_pieces(value, limit):
        pieces.append(piece)
        length += len(piece)
        if length > limit:
            return "".join(pieces)[: limit - 1] + "…"
    return "".join(pieces)


def repr_pieces(value: Any, limit: int) -> Iterator[str]:
    """Yield repr(value) in pieces, each string among them cut to `limit` characters (+1, to show the cut)."""
    if isinstance(value, str):
        yield str.__repr__(str(value[: limit + 1]))
    elif isinstance(value, list):
        yield "["
        for index, item in enumerate(value):
            yield ", " if index else ""
            yield from repr_pieces(item, limit)
        yield "]"
    elif isinstance(value, dict):
        yield "{"
        for index, (key, item) in enumerate(value.items()):
            yield ", " if index else ""
            yield from repr_pieces(key, limit)
            yield ": "
            yield from repr_pieces(item, limit)
        yield "}"
    else:
        yield repr(value)


def unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    """Apply `uniqueItems` in linear time (rule 2), naming the first two equal items."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: dict[Hashable, int] = {}
    for index, item in enumerate(instance):
        first = seen.setdefault(equality_key(item), index)
        if first != index:
            yield jsonschema.ValidationError(f"has non-unique elements: items {first} and {index} are equal")
            return


def walk_weight(validator: Any, schema: Any, active: Budget) -> int:
    """Weigh what jsonschema's unevaluated* keywords walk from `schema`, per member of the instance.

    They visit the subschemas applied in place (allOf, anyOf, oneOf, if, then, else,
    dependentSchemas, references followed), and at each may try every member of the instance
    against a subschema or a pattern: each visited subschema weighs 1 plus its patterns, each
    reference REFERENCE_STEPS more. Weighed once per schema and budget; a walk heavier than what
    the budget has left (a loop of references among them, say) stops with BudgetSpent.
    """
    if (known := active.walks.get(id(schema))) is not None:
        return known[1]
    weight = 0
    stack = [(validator._resolver, schema)]
    while stack:
        resolver, node = stack.pop()
        if not isinstance(node, dict):
            continue
        weight += 1 + breadth(node.get("patternProperties"))
        if weight > active.left:
            raise BudgetSpent(active.limit)
        for keyword in ("allOf", "anyOf", "oneOf"):
            if isinstance(subschemas := node.get(keyword), list):
                stack.extend((resolver, subschema) for subschema in subschemas)
        stack.extend((resolver, node[keyword]) for keyword in ("if", "then", "else") if keyword in node)
        if isinstance(dependent := node.get("dependentSchemas"), dict):
            stack.extend((resolver, subschema) for subschema in dependent.values())
        for keyword in REFERENCES:
            if isinstance(ref := node.get(keyword), str):
                try:
                    resolved = resolver.lookup(ref)
                except referencing.exceptions.Unresolvable:
                    continue
                weight += REFERENCE_STEPS
                stack.append((resolved.resolver, resolved.contents))
    active.walks[id(schema)] = (schema, weight)
    return weight


def spend_on_walk(validator: Any, schema: Any, instance: Any) -> None:
    """Spend what an unevaluated* keyword's walk over `instance` costs (see walk_weight)."""
    active = _current.get()
    if active is not None:
        active.spend(walk_weight(validator, schema, active) * (1 + breadth(instance)))


def unevaluated_items(validator: Any, unevaluated: Any, instance: Any, schema: Any,
                      ) -> Iterator[jsonschema.ValidationError]:
    """Apply `unevaluatedItems` as jsonschema does, looking indexes up in a set (its list made it quadratic)."""
    if not validator.is_type(instance, "array"):
        return
    spend_on_walk(validator, schema, instance)
    evaluated = set(jsonschema._utils.find_evaluated_item_indexes_by_schema(validator, instance, schema))
    if rest := [item for index, item in enumerate(instance) if index not in evaluated]:
        listed, verb = jsonschema._utils.extras_msg(rest)
        yield jsonschema.ValidationError(f"Unevaluated items are not allowed ({listed} {verb} unexpected)")


def unevaluated_properties(validator: Any, unevaluated: Any, instance: Any, schema: Any,
                           ) -> Iterator[jsonschema.ValidationError]:
    """Apply `unevaluatedProperties` as jsonschema does, looking names up in a set (its list made it quadratic)."""
    if not validator.is_type(instance, "object"):
        return
    spend_on_walk(validator, schema, instance)
    evaluated = set(jsonschema._utils.find_evaluated_property_keys_by_schema(validator, instance, schema))
    invalid = [name for name in instance if name not in evaluated
               and (unevaluated is False or next(validator.descend(instance[name], unevaluated), None) is not None)]
    if not invalid:
        return
    if unevaluated is False:
        listed, verb = jsonschema._utils.extras_msg(sorted(invalid, key=str))
        yield jsonschema.ValidationError(f"Unevaluated properties are not allowed ({listed} {verb} unexpected)")
    else:
        listed, verb = jsonschema._utils.extras_msg(invalid)
        yield jsonschema.ValidationError(f"Unevaluated properties are not valid under the given schema ({listed} "
                                         f"{verb} unevaluated and invalid)")


def is_multiple(number: int | float, divisor: int | float) -> bool:
    """Say whether `number` is a multiple of `divisor` as jsonschema decides it, exactly where floats overflow."""
    try:
        if isinstance(divisor, float):
            quotient = number / divisor
            return int(quotient) == quotient
        return not number % divisor
    except OverflowError:
        return (Fraction(number) / Fraction(divisor)).denominator == 1


def multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    """Apply `multipleOf` without overflowing (rule 3)."""
    if validator.is_type(instance, "number") and not is_multiple(instance, divisor):
        yield jsonschema.ValidationError(f"{quote(instance)} is not a multiple of {quote(divisor)}")


def _keywords() -> dict[str, Keyword]:
    own: dict[str, Keyword] = {"uniqueItems": unique_items, "multipleOf": multiple_of,
                               "unevaluatedItems": unevaluated_items, "unevaluatedProperties": unevaluated_properties}
    base = jsonschema.Draft202012Validator.VALIDATORS
    return {name: counted(name, own.get(name, apply)) for name, apply in base.items()}


# The validator class: Validator(schema, registry=…), Validator.check_schema(schema).
Validator: Any = jsonschema.validators.extend(jsonschema.Draft202012Validator, _keywords())
# What Validator(…) returns, for type hints.
CompiledSchema: TypeAlias = jsonschema.protocols.Validator  # noqa: UP040
