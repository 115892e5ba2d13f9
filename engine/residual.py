"""Residuals: counting `unknown_fields` by normalized pointer, pointer checks and logical size.

A Storyline keeps what its source format could not map in
``unknown_fields.sources[source] = {source_document_id, fields: {P: value}}``, where ``P`` is the
raw RFC 6901 pointer into the source document.  ``unknown_key_counts[source][normalize(P)]``
counts the stored pointers per normalized key.  Counts are always recomputed, never trusted.

Normalization wildcards only the *schema array positions* of a source to ``*``; object keys that
look numeric stay literal, so ``/steps/0/0`` (key ``"0"`` of step 0) stays apart from step 1.
Which positions are arrays is said by a *count tree* per source, supplied by the format's spec
(the engine names no format):

    {"steps": {ANY_INDEX: {"tool_calls": {ANY_INDEX: {}}}}}

Keys are literal tokens (unescaped) or the sentinels `ANY_INDEX`, `ANY_STRICT_INDEX` (array
positions, rewritten to ``*``) and `ANY_KEY` (any token, kept literal).  A subtree may be an
ancestor dict itself, for recursive formats.  Literal children are tried before the sentinels,
and matching stops at the first token the tree does not describe: the rest stays literal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final, TypeAlias

import orjson

from mapc.engine import pointer
from mapc.engine.problems import Problem


class Sentinel:
    """A count-tree key that matches a class of tokens rather than one literal token."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


ANY_INDEX: Final = Sentinel("ANY_INDEX")
"""An array position as Rust ``usize::from_str`` reads it (``+1`` and ``01`` included) → ``*``."""

ANY_STRICT_INDEX: Final = Sentinel("ANY_STRICT_INDEX")
"""An array position without a leading zero (``0``, ``7``, ``+7``; not ``07``) → ``*``."""

ANY_KEY: Final = Sentinel("ANY_KEY")
"""Any token, kept literal (an object key such as an attempt id)."""

Tree: TypeAlias = Mapping["str | Sentinel", "Tree"]

_NO_TREE: Final[Tree] = {}
_USIZE_TEXT = re.compile(r"\+?[0-9]+")
_USIZE_MAX_DIGITS = str(2**64 - 1)


def is_count_index(token: str) -> bool:
    """True when Rust's ``usize::from_str`` accepts `token`: ASCII digits, optional leading ``+``.

    Leading zeros are allowed; values above ``2**64 - 1`` are not (they overflow ``usize``).
    """
    if _USIZE_TEXT.fullmatch(token) is None:
        return False
    # Compare as text: int() of a huge digit string would be slow or refused.
    digits = token.lstrip("+").lstrip("0")
    if len(digits) != len(_USIZE_MAX_DIGITS):
        return len(digits) < len(_USIZE_MAX_DIGITS)
    return digits <= _USIZE_MAX_DIGITS


def is_strict_count_index(token: str) -> bool:
    """`is_count_index` without a leading zero, as the reference's ``is_array_index``.

    Like the reference, a leading ``+`` is still accepted (``+1`` parses as ``usize``).
    """
    return is_count_index(token) and not (len(token) > 1 and token[0] == "0")


def _child(node: Tree, raw: str) -> tuple[Tree | None, bool]:
    """The subtree for escaped token `raw` under `node`, and whether the token becomes ``*``."""
    literal = node.get(pointer.unescape(raw))
    if literal is not None:
        return literal, False
    if ANY_INDEX in node and is_count_index(raw):
        return node[ANY_INDEX], True
    if ANY_STRICT_INDEX in node and is_strict_count_index(raw):
        return node[ANY_STRICT_INDEX], True
    if ANY_KEY in node:
        return node[ANY_KEY], False
    return None, False


def normalize(text: str, tree: Tree) -> str:
    """The count key of stored pointer `text`: the array positions `tree` declares become ``*``.

    Text that is not a valid pointer is returned unchanged (R-UF reports it separately).
    """
    if not tree or not text or not pointer.is_valid(text):
        return text
    # Work on escaped tokens: an index never contains "~", and every other token is copied
    # back verbatim, which is what decoding and re-encoding would give.
    tokens = text[1:].split("/")
    node = tree
    changed = False
    for i, raw in enumerate(tokens):
        below, wildcard = _child(node, raw)
        if wildcard:
            tokens[i] = "*"
            changed = True
        if not below:
            break
        node = below
    return "/" + "/".join(tokens) if changed else text


# Normalized keys by tree: a corpus stores the same pointers line after line (`/messages/3/weight`),
# and each Storyline's counts are made when it is mapped and again when it is checked (R-UKC).  A
# tree is held with its memo (so its id is not reused while the memo lives); both are bounded.
_MEMO: dict[int, tuple[Tree, dict[str, str]]] = {}
_MEMO_TREES, _MEMO_KEYS = 64, 1 << 16


def _memo(tree: Tree) -> dict[str, str]:
    entry = _MEMO.get(id(tree))
    if entry is None or entry[0] is not tree:
        if len(_MEMO) >= _MEMO_TREES:
            _MEMO.clear()
        entry = _MEMO[id(tree)] = (tree, {})
    elif len(entry[1]) >= _MEMO_KEYS:
        entry[1].clear()
    return entry[1]


def count_keys(fields: Mapping[str, Any], tree: Tree) -> dict[str, int]:
    """Count the stored pointers of one source by normalized key (keys sorted, as written)."""
    memo = _memo(tree)
    counts: dict[str, int] = {}
    for text in fields:
        key = memo.get(text)
        if key is None:
            key = memo[text] = normalize(text, tree)
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def iter_sources(unknown_fields: Any) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """``(source, source_document_id, fields)`` for each well-shaped source, in stored order.

    Entries that are not objects, or whose ``fields`` is not an object, are skipped: the
    structural validator reports them.
    """
    sources = unknown_fields.get("sources") if type(unknown_fields) is dict else None
    if type(sources) is not dict:
        return
    for name, entry in sources.items():
        fields = entry.get("fields") if type(entry) is dict else None
        if type(fields) is dict:
            yield name, entry.get("source_document_id"), fields


def recompute_counts(unknown_fields: Any, trees: Mapping[str, Tree]) -> dict[str, dict[str, int]]:
    """The ``unknown_key_counts`` that `unknown_fields` implies (R-UKC).

    A source with zero fields produces no entry; a source without a tree in `trees` counts its
    pointers unchanged.  Sources come out sorted by name, as the reference writes them.
    """
    counts = {
        name: count_keys(fields, trees.get(name, _NO_TREE))
        for name, _, fields in iter_sources(unknown_fields)
        if fields
    }
    return dict(sorted(counts.items()))


def iter_field_problems(unknown_fields: Any, at: str = "/unknown_fields") -> Iterator[Problem]:
    """R-UF: every stored pointer must be RFC 6901 text; `at` is where `unknown_fields` sits."""
    for name, _, fields in iter_sources(unknown_fields):
        for text in fields:
            if not pointer.is_valid(text):
                yield Problem(
                    "storyline.bad_unknown_pointer",
                    pointer.join(at, "sources", name, "fields", text),
                    f"expected an RFC 6901 JSON Pointer (empty, or starting with '/', with '~' "
                    f"only in '~0' or '~1'), found {json.dumps(text, ensure_ascii=False)}",
                )


def _json_size(value: Any) -> int:
    """Byte length of `value` as compact JSON."""
    try:
        return len(orjson.dumps(value))
    except TypeError:
        # orjson refuses integers beyond 64 bits and non-string keys; the stdlib does not.
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return len(text.encode("utf-8", "surrogatepass"))


def _text_size(text: Any) -> int:
    return len(text.encode("utf-8", "surrogatepass")) if type(text) is str else 0


def unknown_size(unknown_fields: Any) -> tuple[int, int]:
    """``(number of fields, logical bytes)`` of `unknown_fields`, for the residual limits.

    Bytes are the sum of the ``source_document_id`` lengths, pointer lengths and compact JSON
    value lengths, all in UTF-8 (docs/envelope.md, "Limits").
    """
    n_fields = 0
    n_bytes = 0
    for _, document_id, fields in iter_sources(unknown_fields):
        n_bytes += _text_size(document_id)
        n_fields += len(fields)
        for text, value in fields.items():
            n_bytes += _text_size(text) + _json_size(value)
    return n_fields, n_bytes


def drop_nested(residual: dict[str, Any]) -> None:
    """Drop residuals inside another residual: restoring the outer one gives them back."""
    for key in [k for k in residual if _inside_another(k, residual)]:
        del residual[key]


def _inside_another(key: str, residual: dict[str, Any]) -> bool:
    cut = key.rfind("/")
    while cut > 0:
        if key[:cut] in residual:
            return True
        cut = key.rfind("/", 0, cut)
    return False
