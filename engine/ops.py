"""The rule kinds (ops) and the tests they share: one definition of each, used by every tool.

A rule takes its value by one op: ``copy`` (`from`: one source), ``first_of`` (the first
candidate that passes the candidate test), ``const`` (a value) or ``call`` (a registered
function of `args`).  `OPS` says, per op, how the forward chooses the value (`Op.choose`, the
semantics `program.Rule` runs and `mapc explain` / `mapc spec coverage` trace) and whether the
reverse writes the rule's first source back (`Op.consumes`).  codegen.py writes the same choice
out as Python for speed; tests/engine/test_differential.py runs both over every shipped spec
and the hypothesis generators and requires the same Storylines value for value.

The condition vocabulary (`when:`), the candidate test of a chain and what makes a rule
*authoritative* (its source is consumed: an unmapped value becomes a residual) are defined here
once, as functions and, for generated code, as expression templates of the same meaning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mapc.engine.values import MISSING, is_empty

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class Condition:
    """A `when:` condition: its test, and the same test as a Python expression over ``{v}``."""

    test: Callable[[Any], bool]
    code: str


CONDITIONS: dict[str, Condition] = {
    "nonempty": Condition(
        lambda v: not is_empty(v), "not ({v} is MISSING or {v} is None or (type({v}) in (str, dict, list) and not {v}))"
    ),
    "text": Condition(lambda v: type(v) is str and v != "", '(type({v}) is str and {v} != "")'),  # non-empty
    "integer": Condition(  # an i64, as Storyline integers
        lambda v: type(v) is int and I64_MIN <= v <= I64_MAX,
        f"(type({{v}}) is int and {I64_MIN} <= {{v}} <= {I64_MAX})",
    ),
    "number": Condition(lambda v: type(v) in (int, float), "type({v}) in (int, float)"),
    "string": Condition(lambda v: type(v) is str, "type({v}) is str"),
    "object": Condition(lambda v: type(v) is dict, "type({v}) is dict"),
    "array": Condition(lambda v: type(v) is list, "type({v}) is list"),
    "boolean": Condition(lambda v: type(v) is bool, "type({v}) is bool"),
}
CONDITION_NAMES = tuple(CONDITIONS)

# `is_empty` of a value known to be present, as an expression over ``{v}``.
EMPTY_CODE = "({v} is None or (type({v}) in (str, dict, list) and not {v}))"


def condition(name: str | None) -> Callable[[Any], bool] | None:
    """The test of condition `name` (None: no condition)."""
    return CONDITIONS[name].test if name else None


def condition_code(name: str, var: str) -> str:
    """Condition `name` as an expression over the variable `var`."""
    return CONDITIONS[name].code.format(v=var)


# --- the candidate test of a chain ----------------------------------------------------------


def is_candidate(value: Any, nonempty: bool, test: Callable[[Any], bool] | None) -> bool:
    """A first_of chain takes `value` (a present value): not empty when the chain skips empty
    values (`when: nonempty`), and passing the rule's condition."""
    return not (nonempty and is_empty(value)) and (test is None or test(value))


def candidate_code(var: str, nonempty: bool, test_code: str | None) -> str:
    """`is_candidate` of the present-or-MISSING variable `var`, as an expression."""
    code = f"{var} is not MISSING"
    if nonempty:
        code += " and not " + EMPTY_CODE.format(v=var)
    if test_code is not None:
        code += " and " + test_code
    return code


def is_copied(value: Any, keep_null: bool) -> bool:
    """A copy takes a present value; null only with `keep_null`."""
    return value is not MISSING and (value is not None or keep_null)


# --- what a rule is -------------------------------------------------------------------------


def authoritative(spec: Any) -> bool:
    """A rule whose source the forward consumes, so the reverse writes its first source back and
    a value it does not map becomes a residual: a copy or a chain that is neither a forward-only
    promotion (`back: none`) nor a reverse-only row (`forward: none`)."""
    return OPS[spec.op].consumes and not spec.derived and not spec.reverse_only


# --- the ops --------------------------------------------------------------------------------

Choice = tuple[int, Any]  # (index of the source taken, or -1; the value, or MISSING)


def _choose_const(rule: Any, frame: Any, ctx: Any) -> Choice:
    return -1, rule.spec.value


def _choose_call(rule: Any, frame: Any, ctx: Any) -> Choice:
    return -1, rule.convert(*(s.read(frame, ctx) for s in rule.sources))


def _choose_candidates(rule: Any, frame: Any, ctx: Any) -> Choice:
    """copy and first_of: the sources in turn, each asked the op's candidate test (`Op.takes`); a
    copy's first present source decides (`Op.chain` False), a chain goes on to the next."""
    op = OPS[rule.spec.op]
    takes = op.takes(rule.spec, rule.condition)
    for i, source in enumerate(rule.sources):
        v = source.read(frame, ctx)
        if v is MISSING:
            continue
        if takes(v):
            return i, v
        if not op.chain:
            return -1, MISSING
    return -1, MISSING


def _copy_takes(spec: Any, test: Callable[[Any], bool] | None) -> Callable[[Any], bool]:
    keep_null = spec.keep_null
    return lambda v: is_copied(v, keep_null)


def _copy_takes_code(spec: Any, var: str, test_code: str | None) -> str:
    return f"{var} is not MISSING" + ("" if spec.keep_null else f" and {var} is not None")


def _chain_takes(spec: Any, test: Callable[[Any], bool] | None) -> Callable[[Any], bool]:
    nonempty = spec.nonempty
    return lambda v: is_candidate(v, nonempty, test)


def _chain_takes_code(spec: Any, var: str, test_code: str | None) -> str:
    return candidate_code(var, spec.nonempty, test_code)


# --- the reverse of each op: what it writes back into the rebuilt source element ----------
# (`program.Rule.reverse_computed` / `reverse_copy` / `queue_write_back` are the parts; codegen.py's
# `REVERSE` writes the same parts out per op.)


def _reverse_copy(rule: Any, story_frame: Any, out: Any, ctx: Any) -> None:
    """copy: a computed reverse, else its value back to its source; a derived copy's write-back."""
    if not rule.reverse_computed(story_frame, out, ctx):
        rule.reverse_copy(story_frame, out, ctx)
    rule.queue_write_back(story_frame, out, ctx)


def _reverse_chain(rule: Any, story_frame: Any, out: Any, ctx: Any) -> None:
    """first_of: a computed reverse, and the chosen value's write-back (unless derived again)."""
    rule.reverse_computed(story_frame, out, ctx)
    rule.queue_write_back(story_frame, out, ctx)


def _reverse_computed(rule: Any, story_frame: Any, out: Any, ctx: Any) -> None:
    """const and call: only a computed reverse (`back: {call, args, to}`) writes anything back."""
    rule.reverse_computed(story_frame, out, ctx)


def _never(spec: Any, test: Any) -> Callable[[Any], bool]:
    return lambda v: False


def _never_code(spec: Any, var: str, test_code: str | None) -> str:
    return "False"


@dataclass(frozen=True, slots=True)
class Op:
    """One rule kind: how the forward chooses its value, whether its source is consumed, and what
    its reverse writes back (`reverse(rule, story_frame, out, ctx)`, run by `Rule.reverse`).

    For the ops that read sources in turn (copy, first_of), `takes` is the candidate test of a
    present value (given the rule's condition test) and `takes_code` the same test as an
    expression over a present-or-MISSING variable (given the condition as code): `choose` runs
    the first, codegen.py writes the second, so the generated chain is this one.  `chain`: a
    source that fails the test passes the choice on to the next (else nothing is chosen).
    """

    name: str
    choose: Callable[[Any, Any, Any], Choice]
    consumes: bool  # the reverse writes the first source back (unless back: none / forward: none)
    reads: str  # what the row reads, as `mapc spec table` and the README say it
    reverse: Callable[[Any, Any, Any, Any], None]
    takes: Callable[[Any, Callable[[Any], bool] | None], Callable[[Any], bool]] = _never
    takes_code: Callable[[Any, str, str | None], str] = _never_code
    chain: bool = False


OPS: dict[str, Op] = {
    "copy": Op(
        "copy",
        _choose_candidates,
        True,
        "one source (`from`); null is absent unless keep_null",
        _reverse_copy,
        _copy_takes,
        _copy_takes_code,
    ),
    "first_of": Op(
        "first_of",
        _choose_candidates,
        True,
        "the first candidate that passes is_candidate",
        _reverse_chain,
        _chain_takes,
        _chain_takes_code,
        chain=True,
    ),
    "const": Op("const", _choose_const, False, "a value (`const`)", _reverse_computed),
    "call": Op("call", _choose_call, False, "a registered function of `args`", _reverse_computed),
}
