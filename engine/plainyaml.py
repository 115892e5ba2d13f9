"""Untrusted YAML read as plain JSON data, with limits: the one reader of mapping specs and of
the YAML a codec reads (a Markdown frontmatter; SECURITY.md).

- Only plain YAML: a tag other than map, seq, str, int, float, bool, null and merge (``<<``) is
  refused, so ``!!python/object`` and friends never construct anything.  Unquoted dates stay text
  (a YAML 1.1 timestamp is not a JSON value); an explicit ``!!timestamp`` is refused.
- Aliases may not expand past `Limits.max_nodes` values ("billion laughs"), nor contain themselves.
- Nesting deeper than `Limits.max_depth` is refused before the composer's recursion can fail.
- Values are JSON: ``.nan``/``.inf``, strings with a lone surrogate, integers outside 64 bits
  (``-2**63 ≤ n < 2**64``) and integer literals longer than Python converts are refused.
- A key repeated in one mapping is refused (``duplicate_key``), unless the caller allows it.

Every refusal is a `YamlDataError` carrying the path of the value in the data and its line and
column; callers turn it into their own problem codes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from mapc.engine.pointer import escape
from mapc.engine.problems import SpecLocation

if TYPE_CHECKING:
    import yaml

MAX_INT = 2**64  # integers are JSON numbers a 64-bit reader takes: -2**63 ≤ n < 2**64
MIN_INT = -(2**63)
_MERGE = "tag:yaml.org,2002:merge"
_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("map", "seq", "str", "int", "float", "bool", "null", "merge"))


@dataclass(frozen=True, slots=True)
class Limits:
    """How much a YAML text may expand to (values, aliases counted each time) and how deep it nests."""

    max_nodes: int
    max_depth: int
    duplicate_keys: bool = False  # True: a repeated key keeps the last value (YAML loaders' habit)


class YamlDataError(Exception):
    """Why a YAML text is not plain data: `kind` is ``yaml`` or ``duplicate_key``; `path` is where
    in the data (keys and list positions), `line` and `column` where in the text (1-based)."""

    def __init__(self, message: str, path: tuple[Any, ...], line: int, column: int, kind: str = "yaml") -> None:
        super().__init__(message)
        self.message, self.path, self.line, self.column, self.kind = message, path, line, column, kind

    @property
    def pointer(self) -> str:
        """`path` as a JSON Pointer."""
        return "".join("/" + escape(str(p)) for p in self.path)


@functools.cache
def _loader() -> type[yaml.SafeLoader]:
    """The safe loader: no implicit timestamps, and no composing past `depth_limit` levels (its
    composer recurses once per level, so a deeply nested text would exhaust Python's stack).

    Made on first use: PyYAML costs a tenth of `mapc run`'s start-up, and a spec read from the spec
    cache (engine/cache.py) needs no YAML at all."""
    import yaml

    class _Loader(yaml.SafeLoader):
        depth_limit = 64

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.depth = 0

        def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
            self.depth += 1
            try:
                if self.depth > self.depth_limit:
                    mark = self.peek_event().start_mark
                    message = f"nested more than {self.depth_limit} levels deep"
                    raise yaml.composer.ComposerError(None, None, message, mark)
                return super().compose_node(parent, index)  # type: ignore[no-any-return]
            finally:
                self.depth -= 1

    _Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return _Loader


def load(file: str, text: str, limits: Limits) -> tuple[Any, Located]:
    """The plain data of `text` (None for an empty document) and where each of its values stands;
    raise `YamlDataError`."""
    import yaml

    loader_type = type("_Limited", (_loader(),), {"depth_limit": limits.max_depth})
    try:
        node = yaml.compose(text, Loader=loader_type)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        what = getattr(exc, "problem", None) or str(exc)
        where = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlDataError(f"not valid YAML: {what}", (), *where) from None
    except RecursionError:  # the depth limit is set well below the stack; this is a last defence
        raise YamlDataError("nested too deeply", (), 1, 1) from None
    located = Located(file, limits)
    try:
        return (located.build(node) if node is not None else None), located
    except RecursionError:
        raise YamlDataError("nested too deeply", (), 1, 1) from None


class Located:
    """Plain Python data from YAML plus the (line, column) of every value, keyed by its path."""

    def __init__(self, file: str, limits: Limits | None = None) -> None:
        self.file = file
        self.limits = limits or Limits(max_nodes=0, max_depth=0)
        self.marks: dict[tuple[Any, ...], tuple[int, int]] = {}
        self.budget = self.limits.max_nodes
        self.open: set[int] = set()  # the collections being built: an alias to one of them is a cycle
        self._scalars: yaml.SafeLoader | None = None  # constructs scalars only, made by the first `build`

    def build(self, node: yaml.Node, path: tuple[Any, ...] = ()) -> Any:
        """The plain value of `node` at `path`, its place (and its children's) kept in `marks`."""
        import yaml

        if self._scalars is None:  # one loader: making one costs more than a value
            self._scalars = _loader()("")
        self.marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        self.budget -= 1
        if self.budget < 0:  # aliases of aliases grow exponentially ("billion laughs")
            self.fail(node, path, f"expands to more than {self.limits.max_nodes} values (aliases nested too deep?)")
        if node.tag not in _TAGS:
            self.fail(node, path, f"YAML tag {node.tag!r} is not allowed (only plain YAML data)")
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            if id(node) in self.open:
                self.fail(node, path, "an alias refers to a node that contains it")
            self.open.add(id(node))
            try:
                return self._collection(node, path)
            finally:
                self.open.discard(id(node))
        try:
            value = self._scalars.construct_object(node)  # safe scalars: no Python objects
            self._scalars.constructed_objects.clear()
        except yaml.YAMLError as exc:
            self.fail(node, path, f"not a plain YAML value: {getattr(exc, 'problem', None) or exc}")
        except ValueError:  # int(): more digits than Python converts (sys.get_int_max_str_digits)
            self.fail(node, path, f"an integer of {len(node.value)} characters is beyond the JSON range (64 bits)")
        if type(value) is int and not MIN_INT <= value < MAX_INT:
            self.fail(node, path, f"the integer {_short(node.value)} is beyond the JSON range (64 bits)")
        if type(value) is float and not math.isfinite(value):  # .nan, .inf: no JSON number
            self.fail(node, path, f"{node.value!r} is not a JSON number")
        if type(value) is str and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                self.fail(node, path, "a string with a lone surrogate is not valid Unicode")
        return value

    def _collection(self, node: yaml.Node, path: tuple[Any, ...]) -> Any:
        import yaml

        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            merged: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == _MERGE:  # `<<: *anchor`: the anchored mapping's keys, below explicit ones
                    for part in value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]:
                        value = self.build(part, (*path, "<<"))
                        if type(value) is not dict:
                            self.fail(part, path, "`<<` merges mappings only")
                        merged.update({k: v for k, v in value.items() if k not in merged})
                    continue
                key = self.build(key_node, (*path, "<key>"))
                if type(key) in (list, dict):
                    self.fail(key_node, path, "a mapping key is a plain value, not a mapping or a list")
                if key in out and not self.limits.duplicate_keys:
                    line, column = key_node.start_mark.line + 1, key_node.start_mark.column + 1
                    raise YamlDataError(f"duplicate key {key!r}", (*path, key), line, column, "duplicate_key")
                out[key] = self.build(value_node, (*path, key))
            return {**{k: v for k, v in merged.items() if k not in out}, **out}
        return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]

    def fail(self, node: yaml.Node, path: tuple[Any, ...], message: str) -> NoReturn:
        raise YamlDataError(message, path, node.start_mark.line + 1, node.start_mark.column + 1)

    @staticmethod
    def path_of(data: Any, text: str) -> tuple[Any, ...]:
        """The path (list positions as ints) in the YAML data of a JSON Pointer into it."""
        path: list[Any] = []
        node = data
        for token in [t.replace("~1", "/").replace("~0", "~") for t in text.split("/")[1:]] if text else []:
            if type(node) is list and token.isdigit() and int(token) < len(node):
                key: Any = int(token)
            elif type(node) is dict:
                key = next((k for k in node if str(k) == token), token)
            else:
                path.append(token)
                break
            path.append(key)
            if type(node) is dict and key not in node:
                break
            node = node[key]
        return tuple(path)

    def at(self, *path: Any, rule: str = "") -> SpecLocation:
        """Where the value at `path` (or its nearest located ancestor) stands in the file."""
        while path and path not in self.marks:
            path = path[:-1]
        line, column = self.marks.get(path, (1, 1))
        return SpecLocation(self.file, line, column, rule)


def _short(text: str) -> str:
    return text if len(text) <= 40 else f"{text[:20]}…{text[-8:]} ({len(text)} characters)"
