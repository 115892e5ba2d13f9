"""Canonical Storyline serialization (docs/storyline.md, "Writing a Storyline" and R-P).

The reference serializes typed serde structs, so its output has a shape of its own:
- owned objects come out in their struct declaration order, optional fields that are null are
  left out, and a few defaults are dropped (``parent.rel == "spawn"``, an empty ``env.state``,
  empty prompt strings, empty ``unknown_fields`` / ``unknown_key_counts``);
- free JSON values (``extra``, ``msg``, ``args``, ``metrics``, …) keep their content, but their
  object keys come out sorted, because serde_json is built without ``preserve_order``.

Turn and tool-call order never change, timestamps are re-emitted exactly as given, and keys the
schema does not know stay where validation can find them, after the known ones (their values,
like every value the schema does not shape, get sorted keys).

`dumps` is the hot path on 30 MB documents.  Instead of sorting free values in Python, it tags
every key of an owned object with its rank (a noncharacter marker plus one rank character), lets
orjson sort *all* keys in one call, and strips the tags from the bytes.  It checks that the marker
occurs nowhere else; when it does, it falls back to `canonical_storyline` plus a plain dump.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from mapc.engine.values import MISSING

# A Unicode noncharacter: real text practically never holds one (and `dumps` checks that).
_MARKER: Final = "\ufdd0"
_MARKER_BYTES: Final = _MARKER.encode()
_RANK_BASE: Final = 0x100  # rank characters U+0100..U+07FF: two UTF-8 bytes, in code-point order
_RANK_LIMIT: Final = 0x800 - _RANK_BASE


class _TooManyKeys(Exception):
    """An owned object has more keys than there are rank characters (falls back, see `dumps`)."""


def _sorted(value: Any) -> Any:
    """`value` with object keys sorted recursively; parts that need no change are shared, not copied."""
    t = type(value)
    if t is dict:
        keys = sorted(value)
        changed = keys != list(value)
        items = []
        for key in keys:
            item = value[key]
            ti = type(item)
            if ti is dict or ti is list:
                new = _sorted(item)
                changed = changed or new is not item
                item = new
            items.append((key, item))
        return dict(items) if changed else value
    if t is list:
        for i, item in enumerate(value):
            ti = type(item)
            if ti is dict or ti is list:
                new = _sorted(item)
                if new is not item:
                    # First change: copy what came before, then sort the rest.
                    return [*value[:i], new, *map(_sorted, value[i + 1 :])]
        return value
    return value


def _unchanged(value: Any) -> Any:
    return value


class _Writer:
    """One shaping pass: plain keys with free values sorted here, or rank-tagged keys for orjson."""

    __slots__ = ("free", "tagged", "tags")

    def __init__(self, *, tagged: bool) -> None:
        self.tagged = tagged
        # Tagged output is dumped with OPT_SORT_KEYS, which sorts the free values too.
        self.free: Callable[[Any], Any] = _unchanged if tagged else _sorted
        self.tags = 0  # how many tagged keys were written, to check the marker count

    def name(self, rank: int, key: str) -> str:
        """The output name of the `rank`-th key of an owned object."""
        if not self.tagged:
            return key
        if rank >= _RANK_LIMIT:
            raise _TooManyKeys
        return _tag(rank, key)


def _tag(rank: int, key: str) -> str:
    return _MARKER + chr(_RANK_BASE + rank) + key


Handler = Callable[[Any, _Writer], Any]
"""Turns one field's (non-null) value into its canonical form; `MISSING` drops the field."""


@dataclass(frozen=True, slots=True)
class _Shape:
    """An owned object: its fields in declaration order, each with a handler."""

    fields: tuple[tuple[str, Handler], ...]
    required: frozenset[str] = frozenset()
    known: frozenset[str] = field(init=False)
    # (key, tagged name, handler), worked out once.
    table: tuple[tuple[str, str, Handler], ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "known", frozenset(k for k, _ in self.fields))
        table = tuple((k, _tag(rank, k), h) for rank, (k, h) in enumerate(self.fields))
        object.__setattr__(self, "table", table)


def _object(shape: _Shape, obj: Any, w: _Writer) -> Any:
    """`obj` in canonical form: declared fields in order, then any keys the schema does not know."""
    if type(obj) is not dict:
        return w.free(obj)  # not an object at all: validation reports it
    out: dict[str, Any] = {}
    present = 0
    tagged = w.tagged
    required = shape.required
    for key, tagged_name, handle in shape.table:
        if key not in obj:
            continue
        present += 1
        value = obj[key]
        # serde reads null as "absent" for Option fields; required ones keep it (`msg`, `args`).
        if value is None and key not in required:
            continue
        if handle is _free:
            # The common case, inlined: it is most of the calls on a large document.
            if not tagged:
                value = _sorted(value)
        else:
            value = handle(value, w)
            if value is MISSING:
                continue
        out[tagged_name if tagged else key] = value
    if present < len(obj):
        rank = len(shape.fields)
        for key, value in obj.items():
            if key not in shape.known:
                out[w.name(rank, key)] = w.free(value)
                rank += 1
    if tagged:
        w.tags += len(out)
    return out


def _free(value: Any, w: _Writer) -> Any:
    return w.free(value)


def _nested(shape: _Shape) -> Handler:
    return lambda value, w: _object(shape, value, w)


def _each(shape: _Shape) -> Handler:
    def handle(value: Any, w: _Writer) -> Any:
        if type(value) is not list:
            return w.free(value)
        return [_object(shape, item, w) for item in value]

    return handle


def _relation(value: Any, w: _Writer) -> Any:
    return MISSING if value == "spawn" and type(value) is str else w.free(value)


def _free_unless_empty_map(value: Any, w: _Writer) -> Any:
    return MISSING if type(value) is dict and not value else w.free(value)


_PROMPT: Final = _Shape((("system", _free), ("user", _free)))


def _is_empty_string(value: Any) -> bool:
    return type(value) is str and not value


def _prompt_without_empty_strings(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if not ((k == "system" or k == "user") and _is_empty_string(v))}


def canonical_prompts(story: dict[str, Any]) -> dict[str, Any]:
    """`story` with its prompts in canonical form, as serialization writes them (nothing else changes):
    empty-string ``system``/``user`` keys dropped from ``/prompt`` (and ``/prompt`` itself when that
    leaves it empty) and from each turn's ``prompt``, except a turn's ``{"system": "", "user": ""}``,
    the explicit clear of the document prompt (docs/formats.md)."""
    out = dict(story)
    prompt = out.get("prompt")
    if type(prompt) is dict:
        kept = _prompt_without_empty_strings(prompt)
        if kept:
            out["prompt"] = kept
        else:
            del out["prompt"]
    turns = out.get("turns")
    if type(turns) is list:
        new_turns = []
        for turn in turns:
            value = turn.get("prompt") if type(turn) is dict else None
            if type(value) is dict and not (
                _is_empty_string(value.get("system")) and _is_empty_string(value.get("user"))
            ):
                turn = {**turn, "prompt": _prompt_without_empty_strings(value)}
            new_turns.append(turn)
        out["turns"] = new_turns
    return out


def _document_prompt(value: Any, w: _Writer) -> Any:
    if type(value) is not dict:
        return w.free(value)
    return _object(_PROMPT, _prompt_without_empty_strings(value), w) or MISSING


def _turn_prompt(value: Any, w: _Writer) -> Any:
    if type(value) is not dict:
        return w.free(value)
    # `{"system": "", "user": ""}` is the explicit clear of the document prompt: it stays whole.
    if not (_is_empty_string(value.get("system")) and _is_empty_string(value.get("user"))):
        value = _prompt_without_empty_strings(value)
    return _object(_PROMPT, value, w)


_RESULT_TYPED: Final = (
    "correct",
    "final_answer",
    "ground_truth",
    "status",
    "score",
    "max_score",
    "error",
    "artifacts",
)
_RESULT_KNOWN: Final = frozenset(_RESULT_TYPED)


def _result(value: Any, w: _Writer) -> Any:
    """``task.result``: the typed keys (null = absent), then the flattened extra keys sorted.

    Extra keys keep a null value: they live in a map of JSON values, not in Option fields.
    """
    if type(value) is not dict:
        return w.free(value)
    out: dict[str, Any] = {}
    for rank, key in enumerate(_RESULT_TYPED):
        item = value.get(key)
        if item is not None:
            out[w.name(rank, key)] = w.free(item)
    # In tagged output the extras share one rank and orjson sorts them by key.
    extra_rank = len(_RESULT_TYPED)
    for key in sorted(value):
        if key not in _RESULT_KNOWN:
            out[w.name(extra_rank, key)] = w.free(value[key])
    if w.tagged:
        w.tags += len(out)
    return out


_SOURCE: Final = _Shape((("source_document_id", _free), ("fields", _free)))


def _sources(value: Any, w: _Writer) -> Any:
    if type(value) is not dict:
        return w.free(value)
    return {name: _object(_SOURCE, value[name], w) for name in sorted(value)}


_UNKNOWN_FIELDS: Final = _Shape((("sources", _sources),))


def _holds_no_field(unknown: Any) -> bool:
    """True for ``unknown_fields`` with no source holding a field (and nothing else in it)."""
    if type(unknown) is not dict or not unknown.keys() <= _UNKNOWN_FIELDS.known:
        return False
    sources = unknown.get("sources")
    if sources is None:
        return True
    if type(sources) is not dict:
        return False
    return all(
        type(source) is dict and source.keys() <= _SOURCE.known and not source.get("fields")
        for source in sources.values()
    )


def _unknown_fields(value: Any, w: _Writer) -> Any:
    return MISSING if _holds_no_field(value) else _object(_UNKNOWN_FIELDS, value, w)


_ORIGIN: Final = _Shape(
    (("format", _free), ("schema_version", _free), ("document_id", _free), ("kept", _free)),
    required=frozenset({"format"}),
)
_AGENT: Final = _Shape(
    (("id", _free), ("name", _free), ("ver", _free), ("model", _free), ("tools", _free), ("extra", _free)),
    required=frozenset({"id"}),
)
_PARENT: Final = _Shape(
    (("psid", _free), ("scid", _free), ("ptid", _free), ("rel", _relation)),
    required=frozenset({"psid"}),
)
_RESPONSE: Final = _Shape((("status", _free), ("exit_code", _free)))
_TOOL_CALL: Final = _Shape(
    (
        ("tcid", _free),
        ("fn", _free),
        ("args", _free),
        ("result", _free),
        ("duration_ms", _free),
        ("extra", _free),
        ("kind", _free),
        ("response", _nested(_RESPONSE)),
    ),
    required=frozenset({"tcid", "fn", "args"}),
)
_ENV: Final = _Shape(
    (
        ("name", _free),
        ("endpoint", _free),
        ("id", _free),
        ("event_type", _free),
        ("request_id", _free),
        ("state", _free_unless_empty_map),
    )
)
_LLM: Final = _Shape((("k", _free),))
_TASK: Final = _Shape((("env", _nested(_ENV)), ("llm", _nested(_LLM)), ("result", _result)))
_TURN: Final = _Shape(
    (
        ("id", _free),
        ("kind", _free),
        ("ts", _free),
        ("src", _free),
        ("msg", _free),
        ("reason", _free),
        ("effort", _free),
        ("tool_calls", _each(_TOOL_CALL)),
        ("observation", _free),
        ("metrics", _free),
        ("model", _free),
        ("nllm", _free),
        ("copied", _free),
        ("latency_ms", _free),
        ("ttft_ms", _free),
        ("extra", _free),
        ("env", _nested(_ENV)),
        ("prompt", _turn_prompt),
        ("finished_at", _free),
    ),
    required=frozenset({"id", "src", "msg"}),
)
_ROOT: Final = _Shape(
    (
        ("schema_version", _free),
        ("origin", _nested(_ORIGIN)),
        ("run", _free),
        ("trajectory", _free),
        ("attempt_id", _free),
        ("session", _free),
        ("agent", _nested(_AGENT)),
        ("parent", _nested(_PARENT)),
        ("children", _free),
        ("notes", _free),
        ("task", _nested(_TASK)),
        ("prompt", _document_prompt),
        ("started_at", _free),
        ("finished_at", _free),
        ("final_metrics", _free),
        ("continued_trajectory_ref", _free),
        ("extra", _free),
        ("meta", _free),
        ("unknown_fields", _unknown_fields),
        ("unknown_key_counts", _free_unless_empty_map),
        ("turns", _each(_TURN)),
    ),
    required=frozenset({"schema_version", "session", "agent", "turns"}),
)


_TURN_PARTS: Final = {key: handle for key, _, handle in _TURN.table}
_CALL_PARTS: Final = {key: handle for key, _, handle in _TOOL_CALL.table}


def canonical_turn_part(key: str, value: Any, *, call: bool = False) -> Any:
    """The canonical form of one field of a turn (of a tool call with `call`), as `canonical_storyline`
    writes it inside a document; None when it writes no such field (the value is null, or a default).
    For a caller that serializes turns field by field (store/rows.py) without shaping whole documents."""
    if value is None:
        return None
    handle = (_CALL_PARTS if call else _TURN_PARTS)[key]
    shaped = handle(value, _Writer(tagged=False))
    return None if shaped is MISSING else shaped


def canonical_storyline(doc: dict[str, Any]) -> dict[str, Any]:
    """A new Storyline dict in the form the reference serializes.

    Owned objects follow the declared key order (docs/storyline.md, "Keys") with null optionals and defaults dropped;
    free JSON values get their object keys sorted.  Parts that need no change (strings, arrays
    without objects, already sorted maps) are shared with `doc`, not copied: copy before mutating.
    """
    result: dict[str, Any] = _object(_ROOT, doc, _Writer(tagged=False))
    return result


def dumps(doc: dict[str, Any], *, pretty: bool = False) -> bytes:
    """The canonical Storyline as JSON bytes: compact, or 2-space indented with a final newline.

    The bytes are those of ``orjson.dumps(canonical_storyline(doc))``; values orjson cannot write
    (integers beyond 64 bits) raise `orjson.JSONEncodeError`.
    """
    option = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE if pretty else 0
    w = _Writer(tagged=True)
    try:
        shaped = _object(_ROOT, doc, w)
    except _TooManyKeys:
        return orjson.dumps(canonical_storyline(doc), option=option)
    pieces = orjson.dumps(shaped, option=option | orjson.OPT_SORT_KEYS).split(_MARKER_BYTES)
    # Every marker must be one of our tags; if the data holds one too, stripping is unsafe.
    if len(pieces) - 1 != w.tags:
        return orjson.dumps(canonical_storyline(doc), option=option)
    # Each piece after the first starts with the two bytes of a rank character.
    return b"".join([pieces[0], *[piece[2:] for piece in pieces[1:]]])


def loads(data: bytes | str) -> object:
    """Parse JSON text (orjson); raises `orjson.JSONDecodeError`, a ValueError, when it is not JSON."""
    return orjson.loads(data)
