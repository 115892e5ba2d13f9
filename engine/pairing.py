"""Pairing of calls and results by id (`document.stream.pair`): a tool result written as a record of
its own joins the turn whose tool call it answers.

    pair:
      calls: /tool_calls           # in a turn: the calls, each with its id at call_id
      call_id: /tcid
      results: /observation/results   # in a turn: the results, each with its id at result_id
      result_id: /source_call_id
      record: /message/content/{b}/tool_use_id   # in a source record: the ids it answers

A turn made by an entry marked `paired: true` whose every result answers a call of an earlier
turn is not a turn of its own: its results are appended to the owners' results, in order.  The
reverse finds each result again by its id (the stream keeps the ids at `record` as the place
marks of the record they came from).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mapc.engine import pointer
from mapc.engine.checks import collect, steps_path
from mapc.engine.template import Template, parse_template
from mapc.engine.values import MISSING

Tokens = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Pair:
    """`pair:` of a stream spec, parsed."""

    calls: Tokens
    call_id: Tokens
    results: Tokens
    result_id: Tokens
    record: Template


def parse(entry: Any) -> Pair:
    """The `pair:` mapping (shape checked by the spec schema)."""
    p = pointer.parse
    return Pair(
        p(entry["calls"]),
        p(entry["call_id"]),
        p(entry["results"]),
        p(entry["result_id"]),
        parse_template(entry["record"]),
    )


def _items(turn: Any, at: Tokens) -> list[Any]:
    value = pointer.resolve(turn, at)
    return value if type(value) is list else []


def call_ids(pair: Pair, turn: Any) -> tuple[str, ...]:
    """The ids of the calls a turn makes."""
    ids = (pointer.resolve(c, pair.call_id) for c in _items(turn, pair.calls))
    return tuple(i for i in ids if type(i) is str)


def results(pair: Pair, turn: Any) -> list[Any]:
    """The results a turn holds."""
    return _items(turn, pair.results)


def result_id(pair: Pair, item: Any) -> Any:
    """The id a result answers (MISSING when it names none)."""
    value = pointer.resolve(item, pair.result_id)
    return value if type(value) is str else MISSING


def record_ids(pair: Pair, record: Any) -> list[tuple[str, str]]:
    """(source pointer below the record, id) of every id the record answers, in order."""
    return [
        (pointer.format(str(s) for s in steps_path(steps)), value)
        for steps, value in collect(record, pair.record.tokens)
        if type(value) is str
    ]


def with_results(pair: Pair, turn: dict[str, Any], items: list[Any]) -> dict[str, Any]:
    """`turn` with `items` appended to its results (copying the objects on the way)."""
    return _put(turn, pair.results, [*results(pair, turn), *items])


def paired(pair: Pair, turn: Any) -> list[Any]:
    """The results of a turn that answer its own calls (paired into it)."""
    own = set(call_ids(pair, turn))
    return [it for it in results(pair, turn) if result_id(pair, it) in own]


def without_paired(pair: Pair, turn: dict[str, Any]) -> dict[str, Any]:
    """`turn` without the results that answer its own calls (and without the objects that leaves
    empty): what the turn's own record said."""
    own = set(call_ids(pair, turn))
    items = results(pair, turn)
    rest = [it for it in items if result_id(pair, it) not in own]
    if len(rest) == len(items):
        return turn
    return _put(turn, pair.results, rest) if rest else _drop(turn, pair.results)


def _put(obj: dict[str, Any], tokens: Tokens, value: Any) -> dict[str, Any]:
    out = dict(obj)
    if len(tokens) == 1:
        out[tokens[0]] = value
        return out
    inner = out.get(tokens[0])
    out[tokens[0]] = _put(inner if type(inner) is dict else {}, tokens[1:], value)
    return out


def _drop(obj: dict[str, Any], tokens: Tokens) -> dict[str, Any]:
    if tokens[0] not in obj:
        return obj
    out = dict(obj)
    if len(tokens) == 1:
        del out[tokens[0]]
        return out
    inner = out[tokens[0]]
    if type(inner) is not dict:
        return obj
    inner = _drop(inner, tokens[1:])
    if inner:
        out[tokens[0]] = inner
    else:
        del out[tokens[0]]
    return out
