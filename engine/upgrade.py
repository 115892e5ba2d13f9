"""`mapc spec upgrade`: rewrite a spec from the first rule vocabulary into the current one.

The rewrite works on the text: only the rules that use an old key are replaced, each by the same
keys and values (their original text), reordered and renamed into ``back:`` / ``forward:``
(see `spec.DEPRECATED_RULE_KEYS`); comments, anchors, layout and every other line stay as they
are.  The result is checked before it is returned: the old and the new text must load into the
same rules (everything but their line numbers), so an upgrade never changes what a spec does.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import yaml

from mapc.engine.problems import MapcError, Problem, SpecLocation
from mapc.engine.spec import DEPRECATED_RULE_KEYS, SpecDeprecationWarning, load_spec

# The order keys are written in: what the forward reads, where it writes, then how it is undone.
_ORDER = ("from", "first_of", "const", "call", "args", "to", "when", "keep_null", "forward", "back")
_BACK_ORDER = ("when", "or", "or_foreign", "default", "call", "args", "to", "home")
_WIDTH = 120  # the shipped specs' line length: a `back:` block that fits is written on one line


def upgrade_text(file: str, text: str) -> tuple[str, int]:
    """The text of spec `file` in the current vocabulary and how many rules changed.

    MapcError (``spec.upgrade``, located at the rule) when a rule cannot be said in the new
    vocabulary, or when the rewrite would load differently (a bug: nothing is written then)."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    edits: list[tuple[int, int, str]] = []
    for node, label in _rules(root):
        replacement = _rewrite(file, text, node, label)
        if replacement is not None:
            edits.append(replacement)
    out = text
    for start, end, new in sorted(edits, reverse=True):
        out = out[:start] + new + out[end:]
    if edits:
        _same_rules(file, text, out)
    return out, len(edits)


def _rules(root: Any) -> list[tuple[yaml.MappingNode, str]]:
    """The rule mappings of a spec: `document.id` and each entry of `rules`."""
    found: list[tuple[yaml.MappingNode, str]] = []
    if not isinstance(root, yaml.MappingNode):
        return found
    for key, value in root.value:
        if key.value == "document" and isinstance(value, yaml.MappingNode):
            for k, v in value.value:
                if k.value == "id" and isinstance(v, yaml.MappingNode):
                    found.append((v, "document.id"))
        if key.value == "rules" and isinstance(value, yaml.SequenceNode):
            found.extend((v, f"rules[{i}]") for i, v in enumerate(value.value) if isinstance(v, yaml.MappingNode))
    return found


def _end(node: yaml.Node) -> int:
    """Where the text of `node` ends (a block collection's own end mark lies at the next token)."""
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and node.value:
        last = node.value[-1]
        return _end(last[1] if isinstance(last, tuple) else last)
    return int(node.end_mark.index)


def _rewrite(file: str, text: str, node: yaml.MappingNode, label: str) -> tuple[int, int, str] | None:
    pairs = {k.value: v for k, v in node.value}
    if not any(k in DEPRECATED_RULE_KEYS for k in pairs):
        return None

    def fail(message: str) -> MapcError:
        at = SpecLocation(file, node.start_mark.line + 1, node.start_mark.column + 1, label)
        return MapcError([Problem("spec.upgrade", "", f"{label}: {message}; upgrade this rule by hand", at)])

    def value(key: str) -> Any:
        return yaml.safe_load(text[pairs[key].start_mark.index : _end(pairs[key])]) if key in pairs else None

    source = {k: v for k, v in pairs.items()}  # key -> its value node, renamed below
    new: dict[str, yaml.Node | str] = {k: v for k, v in source.items() if k not in DEPRECATED_RULE_KEYS}
    back: dict[str, yaml.Node] = {}
    chain = "first_of" in pairs
    if "nonempty" in pairs and value("nonempty") is True and chain:
        if "when" in pairs:
            raise fail("`nonempty: true` beside `when` has no new form (`when: nonempty` is the one test)")
        new["when"] = "nonempty"
    # nonempty on a copy, and false flags, change nothing: they are dropped.
    if "with" in pairs:
        if "args" in pairs:
            raise fail("`with` beside `args`")
        new["args"] = pairs["with"]
    if value("reverse_only") is True:
        new["forward"] = "none"
    if "reverse" in pairs:
        if "reverse_call" in pairs:
            raise fail("`reverse` beside `reverse_call`")
        inner = pairs["reverse"]
        if not isinstance(inner, yaml.MappingNode):
            raise fail("`reverse` is not a mapping")
        back.update({k.value: v for k, v in inner.value})
    for old, key in (("reverse_call", "call"), ("reverse_default", "default"), ("reverse_when", "when")):
        if old in pairs:
            back[key] = pairs[old]
    if "reverse_first_of" in pairs:
        back["or_foreign" if value("synthesized") is True else "or"] = pairs["reverse_first_of"]
    if "write_back_call" in pairs:
        back["home"] = pairs["write_back_call"]
    if value("derived") is True:
        if back:
            raise fail("a derived row (`back: none`) with reverse keys")
        new["back"] = "none"
    elif back:
        new["back"] = _back_text(text, back, node.start_mark.column + 2)
    keys = [k for k in _ORDER if k in new] + [k for k in new if k not in _ORDER]
    start, end = int(node.start_mark.index), _end(node)
    between = _outside(text, start, end, list(pairs.values()), [k for k, _ in node.value])
    if "#" in between:
        raise fail("a comment inside the rule")
    if node.flow_style:
        body = ", ".join(f"{k}: {_inline(text, new[k])}" for k in keys)
        return int(node.start_mark.index), int(node.end_mark.index), "{" + body + "}"
    indent = " " * node.start_mark.column
    lines = [f"{k}:{_block(text, new[k])}" for k in keys]
    return start, end, ("\n" + indent).join(lines)


def _outside(text: str, start: int, end: int, values: list[yaml.Node], keys: list[Any]) -> str:
    """The text of a rule that belongs to none of its keys and values (where a comment would be)."""
    spans = sorted((int(v.start_mark.index), _end(v)) for v in values)
    out, at = [], start
    for s, e in spans:
        out.append(text[at:s])
        at = e
    out.append(text[at:end])
    return "".join(out)


def _inline(text: str, item: yaml.Node | str) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, (yaml.MappingNode, yaml.SequenceNode)) and not item.flow_style:
        raise MapcError.single("spec.upgrade", "", "a block value inside a flow rule")
    return text[item.start_mark.index : _end(item)]


def _block(text: str, item: yaml.Node | str) -> str:
    """A value after ``key:`` in a block mapping: on the line, or below it for a block collection."""
    if isinstance(item, str):
        return " " + item if not item.startswith("\n") else item
    raw = text[item.start_mark.index : _end(item)]
    if isinstance(item, (yaml.MappingNode, yaml.SequenceNode)) and not item.flow_style:
        return "\n" + " " * item.start_mark.column + raw
    return " " + raw


def _back_text(text: str, back: dict[str, yaml.Node], column: int) -> str:
    """The `back:` value: one flow mapping when every part is one flow line that fits, else a block."""
    keys = [k for k in _BACK_ORDER if k in back]
    parts = [(k, text[back[k].start_mark.index : _end(back[k])]) for k in keys]
    flat = all(
        "\n" not in raw and not (isinstance(back[k], (yaml.MappingNode, yaml.SequenceNode)) and not back[k].flow_style)
        for k, raw in parts
    )
    inline = "{" + ", ".join(f"{k}: {raw}" for k, raw in parts) + "}"
    if flat and column + len("back: ") + len(inline) <= _WIDTH:
        return inline
    lines = []
    for k, raw in parts:
        node = back[k]
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style:
            lines.append(f"{k}:\n" + " " * node.start_mark.column + raw)
        else:
            lines.append(f"{k}: {raw}")
    return "\n" + " " * column + ("\n" + " " * column).join(lines)


def _comparable(value: Any) -> Any:
    """A loaded spec without its line numbers (which an upgrade changes) and deprecation notes."""
    if isinstance(value, SpecLocation):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _comparable(getattr(value, f.name)) for f in dataclasses.fields(value)}
        fields.pop("deprecated", None)
        return (type(value).__name__, tuple(sorted(fields.items(), key=lambda kv: kv[0])))
    if isinstance(value, (tuple, list)):
        return tuple(_comparable(v) for v in value)
    if isinstance(value, frozenset):
        return value
    return value


def _same_rules(file: str, before: str, after: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpecDeprecationWarning)
        old = load_spec(file, before)
        new = load_spec(file, after)
    if new.deprecated:
        raise MapcError.single("spec.upgrade", "", f"the rewrite still uses {', '.join(new.deprecated)}")
    if _comparable(old) != _comparable(new):
        raise MapcError.single("spec.upgrade", "", "the rewrite would load into other rules (nothing written)")
