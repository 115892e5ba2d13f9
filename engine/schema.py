"""JSON Schemas as fast Python: load a shipped schema, compile it once, check documents.

`compile_schema` turns a schema written in a small subset of JSON Schema 2020-12 into Python
source: straight-line ``type(x) is dict`` checks with every ``$ref`` inlined, so a valid value
costs a few comparisons and allocates nothing.  The source is compiled once, registered in
`linecache` under a name like ``<mapc schema storyline-v1>`` (tracebacks and pdb show real
lines) and cached per schema name.  An error's path is a tuple built only when the error
happens.  `reference_validator` runs the same schema through jsonschema, as the oracle the tests
compare against.

Both validators report the same problems, all of them, in document order:

- code ``schema.<keyword>`` (``schema.type``, ``schema.required``, ``schema.false`` for a
  ``false`` schema);
- pointer: the offending value.  ``required`` points at the object that lacks the key; an
  undeclared key (``additionalProperties: false``) gets one problem per key, pointing at that
  key's value, which is where a reader must look;
- message: what was expected (``missing required key 'session'``, ``expected integer, got
  number``).

Types are strict, as in the Storyline wire: ``integer`` is ``type(x) is int`` (never ``1.0``
nor ``True``), ``number`` is an int or a float, never a bool.
"""

from __future__ import annotations

import functools
import itertools
import json
import linecache
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mapc.engine import cache, pointer, resources
from mapc.engine.problems import MapcError, Problem
from mapc.engine.values import json_type

RawError = tuple[str, tuple[str | int, ...], str]
"""(code, instance path, message): what generated code records; a `Problem` is made later."""

ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",  # an annotation in 2020-12 unless a format checker is asked for
    }
)
"""Keywords that never fail a value; the compiler skips them."""

SUPPORTED = frozenset(
    {
        "$ref",
        "type",
        "const",
        "enum",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "required",
        "properties",
        "patternProperties",
        "additionalProperties",
        "minProperties",
        "maxProperties",
        "prefixItems",
        "items",
        "minItems",
        "maxItems",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
    }
)
"""Keywords the compiler turns into checks; any other keyword is refused."""

# How a type name is refuted, given the variable holding type(value) and the value itself.
_NOT_TYPE: dict[str, Callable[[str, str], str]] = {
    "null": lambda t, v: f"{v} is not None",
    "boolean": lambda t, v: f"{t} is not bool",
    "integer": lambda t, v: f"{t} is not int",
    "number": lambda t, v: f"({t} is not int and {t} is not float)",
    "string": lambda t, v: f"{t} is not str",
    "array": lambda t, v: f"{t} is not list",
    "object": lambda t, v: f"{t} is not dict",
}
_STRING_KEYWORDS = ("minLength", "maxLength", "pattern")
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_OBJECT_KEYWORDS = (
    "required",
    "properties",
    "patternProperties",
    "additionalProperties",
    "minProperties",
    "maxProperties",
)
_ARRAY_KEYWORDS = ("prefixItems", "items", "minItems", "maxItems")
_TYPED_KEYWORDS = (
    "type",
    "const",
    "enum",
    *_STRING_KEYWORDS,
    *_NUMBER_KEYWORDS,
    *_OBJECT_KEYWORDS,
    *_ARRAY_KEYWORDS,
)
_COMPARISONS = {
    "minimum": ("<", "≥"),
    "maximum": (">", "≤"),
    "exclusiveMinimum": ("<=", ">"),
    "exclusiveMaximum": (">=", "<"),
}
# Deeper subschemas go into their own function: keeps well under CPython's 20 nested loops.
_MAX_INLINE_DEPTH = 24
_BRIEF_LIMIT = 60


# --- the public protocol and its two implementations -------------------------------------


@runtime_checkable
class SchemaValidator(Protocol):
    """What a schema validator offers, in the shape of jsonschema's ``Validator`` protocol."""

    schema: dict[str, Any] | bool

    def iter_problems(self, instance: Any) -> Iterator[Problem]:
        """Every problem of `instance`, in document order."""
        ...

    def is_valid(self, instance: Any) -> bool:
        """True when `instance` has no problem."""
        ...

    def validate(self, instance: Any) -> None:
        """Raise `MapcError` holding every problem, if there is any."""
        ...


@dataclass(frozen=True, slots=True)
class CompiledValidator:
    """A schema compiled to Python: `collect` records errors, `check` stops at the first one."""

    name: str
    schema: dict[str, Any] | bool
    filename: str
    source: str = field(repr=False)
    collect: Callable[[Any, list[RawError]], None] = field(repr=False)
    check: Callable[[Any], bool] = field(repr=False)

    def iter_problems(self, instance: Any) -> Iterator[Problem]:
        """Every problem of `instance`, in document order."""
        if self.check(instance):
            return iter(())
        raw: list[RawError] = []
        self.collect(instance, raw)
        return _problems(instance, raw)

    def is_valid(self, instance: Any) -> bool:
        """True when `instance` has no problem (stops at the first one)."""
        return self.check(instance)

    def validate(self, instance: Any) -> None:
        """Raise `MapcError` holding every problem, if there is any."""
        if not self.check(instance):
            raise MapcError(self.iter_problems(instance))


@dataclass(frozen=True, slots=True)
class ReferenceValidator:
    """jsonschema's Draft 2020-12 validator with strict types, speaking in `Problem`s."""

    name: str
    schema: dict[str, Any] | bool
    validator: Any = field(repr=False)

    def iter_problems(self, instance: Any) -> Iterator[Problem]:
        """Every problem of `instance`, in document order."""
        raw: list[RawError] = []
        for error in self.validator.iter_errors(instance):
            raw.extend(_from_validation_error(error))
        return _problems(instance, raw)

    def is_valid(self, instance: Any) -> bool:
        """True when `instance` has no problem."""
        return bool(self.validator.is_valid(instance))

    def validate(self, instance: Any) -> None:
        """Raise `MapcError` holding every problem, if there is any."""
        problems = tuple(self.iter_problems(instance))
        if problems:
            raise MapcError(problems)


# --- loading and caching ---------------------------------------------------------------


_SCHEMA_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def load_schema(name: str) -> dict[str, Any]:
    """The shipped schema ``schemas/<name>.schema.json`` (a fresh dict on every call).

    `name` is a plain name, never a path: a spec's `input_schema` cannot reach a file outside
    the shipped schemas (``../x`` or ``/tmp/x`` is not found).
    """
    schema: dict[str, Any] = json.loads(_schema_text(name))
    return schema


def _schema_text(name: str) -> str:
    if type(name) is not str or not _SCHEMA_NAME.fullmatch(name) or ".." in name:
        raise MapcError.single(
            "schema.not_found", "", f"no shipped schema named {name!r} (a schema is named, not a path)"
        )
    try:
        return resources.read_text("mapc.schemas", f"{name}.schema.json")
    except FileNotFoundError:
        raise MapcError.single(
            "schema.not_found", "", f"no shipped schema named {name!r} ({name}.schema.json)"
        ) from None


@functools.cache
def compiled_validator(name: str) -> CompiledValidator:
    """The shipped schema `name` compiled to Python (compiled once per process).

    With the spec cache on (engine/cache.py), what the compiler writes for a schema (its source and
    constants) is kept, keyed by the schema's text and this compiler's own source, so a command that
    checks a Storyline does not walk the whole schema again on every run."""
    text = _schema_text(name)
    schema: dict[str, Any] = json.loads(text)
    key = _generator_key(text)
    if key is not None:
        generated = _generated_from(cache.data("schema", key))
        if generated is not None:
            return _validator(name, schema, *generated)
    gen = _generate(schema, name)
    if key is not None:
        stored = _constants_data(gen.constants)
        if stored is not None:
            cache.store_data("schema", key, {"source": gen.source(_EXPORTED), "constants": stored})
    return _validator(name, schema, gen.source(_EXPORTED), gen.constants)


def _generator_key(text: str) -> bytes | None:
    """What a shipped schema's generated code depends on: its text and this module's source (so a
    changed compiler never takes code written by the old one); None when the cache is off."""
    if cache.directory() is None:
        return None
    try:
        with open(__file__, "rb") as own:
            compiler = own.read()
    except OSError:
        return None
    return compiler + b"\0" + text.encode("utf-8", "surrogatepass")


# Constants the generated code takes, kept as tagged JSON: every value the compiler makes is one of these.
def _constants_data(constants: dict[str, Any]) -> list[Any] | None:
    """`constants` as JSON data, or None if one is of a kind not kept (then nothing is cached)."""
    base = _base_constants()
    out: list[Any] = []
    for name, value in constants.items():
        if name in base:
            out.append([name, "base"])
        elif isinstance(value, re.Pattern):
            out.append([name, "re", value.pattern, value.flags])
        elif isinstance(value, frozenset) and all(type(v) in (str, int, float, bool) or v is None for v in value):
            out.append([name, "frozenset", list(value)])
        elif type(value) is tuple:
            out.append([name, "tuple", list(value)])
        elif isinstance(value, functools.partial) and value.func is _undeclared_message and not value.args:
            out.append([name, "undeclared", list(value.keywords["declared"]), list(value.keywords["patterns"])])
        elif value is None or type(value) in (str, int, float, bool, list, dict):
            out.append([name, "json", value])
        else:
            return None
    return out


def _generated_from(found: Any) -> tuple[str, dict[str, Any]] | None:
    """The source and constants of a cache entry written by `compiled_validator`, or None."""
    if type(found) is not dict or type(found.get("source")) is not str or type(found.get("constants")) is not list:
        return None
    base = _base_constants()
    constants: dict[str, Any] = {}
    try:
        for name, kind, *value in found["constants"]:
            if kind == "base":
                constants[name] = base[name]
            elif kind == "re":
                constants[name] = re.compile(value[0], value[1])
            elif kind == "frozenset":
                constants[name] = frozenset(value[0])
            elif kind == "tuple":
                constants[name] = tuple(value[0])
            elif kind == "undeclared":
                declared, patterns = tuple(value[0]), tuple(value[1])
                constants[name] = functools.partial(_undeclared_message, declared=declared, patterns=patterns)
            elif kind == "json":
                constants[name] = value[0]
            else:
                return None
    except (TypeError, ValueError, KeyError, IndexError, re.error):
        return None
    return found["source"], constants


@functools.cache
def reference_validator(name: str) -> ReferenceValidator:
    """The shipped schema `name` run by jsonschema with strict types: the tests' oracle."""
    schema = load_schema(name)
    return ReferenceValidator(name, schema, strict_jsonschema_class()(schema))


@functools.cache
def strict_jsonschema_class() -> Any:
    """``Draft202012Validator`` whose types match the JSON data model exactly (1.0 and True are
    not integers), as serde decodes the Storyline wire."""
    from jsonschema import Draft202012Validator, validators  # the fast path does not need it

    exact: dict[str, Callable[[Any, Any], bool]] = {
        "null": lambda _, x: x is None,
        "boolean": lambda _, x: type(x) is bool,
        "integer": lambda _, x: type(x) is int,
        "number": lambda _, x: type(x) is int or type(x) is float,
        "string": lambda _, x: type(x) is str,
        "array": lambda _, x: type(x) is list,
        "object": lambda _, x: type(x) is dict,
    }
    checker = Draft202012Validator.TYPE_CHECKER.redefine_many(exact)
    return validators.extend(Draft202012Validator, type_checker=checker)


# --- problems: from raw errors, in document order --------------------------------------


def _problems(instance: Any, raw: list[RawError]) -> Iterator[Problem]:
    for code, path, message in _in_document_order(instance, raw):
        yield Problem(code, pointer.format(path), message)


def _in_document_order(instance: Any, raw: list[RawError]) -> list[RawError]:
    """Sort errors by where their value stands in the document (a parent before its members).

    Runs only after a failure, so it may look keys up the slow way."""
    if len(raw) < 2:
        return raw
    key_index: dict[int, dict[str, int]] = {}

    def position(path: tuple[str | int, ...]) -> list[int]:
        node, out = instance, []
        for token in path:
            if type(node) is dict:
                index = key_index.get(id(node))
                if index is None:
                    index = key_index[id(node)] = {k: i for i, k in enumerate(node)}
                out.append(index.get(str(token), len(node)))
                node = node.get(str(token))
            elif type(node) is list and type(token) is int and token < len(node):
                out.append(token)
                node = node[token]
            else:
                out.append(0)
                node = None
        return out

    return sorted(raw, key=lambda error: position(error[1]))


def _from_validation_error(error: Any) -> Iterator[RawError]:
    """One jsonschema `ValidationError` as raw errors: one per undeclared key, else itself."""
    path = tuple(error.absolute_path)
    keyword = "false" if error.validator is None else str(error.validator)
    if keyword == "additionalProperties" and error.validator_value is False:
        schema = error.schema
        for key in _undeclared_keys(error.instance, schema):
            yield (
                "schema.additionalProperties",
                (*path, key),
                _undeclared_message(key, schema.get("properties", {}), schema.get("patternProperties", {})),
            )
        return
    yield f"schema.{keyword}", path, error.message


def _undeclared_keys(instance: dict[str, Any], schema: dict[str, Any]) -> Iterator[str]:
    # jsonschema's own rule: not a declared property and matching no patternProperties regex.
    declared = schema.get("properties", {})
    patterns = "|".join(schema.get("patternProperties", {}))
    for key in instance:
        if key not in declared and not (patterns and re.search(patterns, key)):
            yield key


def _undeclared_message(key: str, declared: Iterable[str], patterns: Iterable[str]) -> str:
    allowed = ", ".join(declared) or "none"
    regexes = ", ".join(repr(p) for p in patterns)
    if regexes:
        allowed += f"; or keys matching {regexes}"
    return f"undeclared key {key!r} (allowed: {allowed})"


def _brief(value: Any) -> str:
    """A short JSON rendering of `value` for a message."""
    if type(value) is str and len(value) > _BRIEF_LIMIT:
        value = value[:_BRIEF_LIMIT]  # no need to render megabytes to show sixty characters
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _BRIEF_LIMIT else text[: _BRIEF_LIMIT - 1] + "…"


def _schema_equal(a: Any, b: Any) -> bool:
    """JSON Schema equality as jsonschema has it: ``True != 1`` but ``1 == 1.0``."""
    ta, tb = type(a), type(b)
    if ta is list and tb is list:
        return len(a) == len(b) and all(_schema_equal(x, y) for x, y in zip(a, b, strict=True))
    if ta is dict and tb is dict:
        return len(a) == len(b) and all(k in b and _schema_equal(v, b[k]) for k, v in a.items())
    if ta is list or tb is list or ta is dict or tb is dict:
        return False
    if (ta is bool) != (tb is bool):
        return False
    return bool(a == b)


# --- the compiler ----------------------------------------------------------------------


_EXPORTED = ("_collect_root", "_check_root")


def compile_schema(schema: dict[str, Any] | bool, name: str) -> CompiledValidator:
    """Compile `schema` (the subset in `SUPPORTED`, local ``#/...`` refs) to a validator.

    Raises `MapcError` with one ``schema.unsupported_keyword`` problem (pointer into the schema)
    per keyword the compiler does not handle, so nothing is silently left unchecked."""
    gen = _generate(schema, name)
    return _validator(name, schema, gen.source(_EXPORTED), gen.constants)


def _generate(schema: dict[str, Any] | bool, name: str) -> _Generator:
    gen = _Generator(schema)
    gen.outlined[("", "collect")] = "_collect_root"
    gen.outlined[("", "check")] = "_check_root"
    gen.function("_collect_root", schema, "", "collect")
    gen.function("_check_root", schema, "", "check")
    if gen.problems:
        raise MapcError(gen.problems, source=name)
    return gen


def _validator(name: str, schema: dict[str, Any] | bool, source: str, constants: dict[str, Any]) -> CompiledValidator:
    filename = _register_source(name, source)
    namespace: dict[str, Any] = {}
    exec(cache.compiled(source, filename), namespace)  # our own generated code, never input
    collect, check = namespace["_build"](**constants)
    return CompiledValidator(name, schema, filename, source, collect, check)


def _register_source(name: str, source: str) -> str:
    """Put `source` in `linecache` under a fake file name that is unique for its text."""
    lines = source.splitlines(True)
    for n in itertools.count():
        filename = f"<mapc schema {name}>" if n == 0 else f"<mapc schema {name}-{n}>"
        entry: tuple[Any, ...] | None = linecache.cache.get(filename)
        if entry is None or entry[2:3] == (lines,):
            linecache.cache[filename] = (len(source), None, lines, filename)
            return filename
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class _Path:
    """How generated code spells the instance path: a base tuple variable plus token expressions."""

    base: str | None
    parts: tuple[str, ...] = ()

    def child(self, token_expr: str) -> _Path:
        return _Path(self.base, (*self.parts, token_expr))

    def expr(self) -> str:
        tail = "".join(p + ", " for p in self.parts)
        if self.base is None:
            return f"({tail})"
        return f"{self.base} + ({tail})" if self.parts else self.base


def _base_constants() -> dict[str, Any]:
    """The names every generated validator takes (a fresh sentinel each time)."""
    return {
        "_M": object(),  # a sentinel only generated code sees: "key absent"
        "_brief": _brief,
        "_jt": json_type,
        "_eq": _schema_equal,
        "type": type,
        "dict": dict,
        "list": list,
        "str": str,
        "int": int,
        "float": float,
        "bool": bool,
        "len": len,
        "range": range,
        "enumerate": enumerate,
    }


class _Generator:
    """Writes the Python source of one schema; see `compile_schema`."""

    def __init__(self, root: dict[str, Any] | bool) -> None:
        self.root = root
        self.blocks: list[list[str]] = []
        self.constants: dict[str, Any] = _base_constants()
        self.outlined: dict[tuple[str, str], str] = {}
        self.problems: list[Problem] = []
        self.seen_problems: set[tuple[str, str]] = set()
        self.counter = itertools.count()

    # -- output ------------------------------------------------------------------------

    def source(self, exported: tuple[str, ...]) -> str:
        head = ["# Generated by mapc.engine.schema.compile_schema; do not edit.", ""]
        params = ", ".join(self.constants)
        lines = [*head, f"def _build({params}):"]
        for block in self.blocks:
            lines.extend("    " + line if line else "" for line in block)
        lines.append(f"    return {', '.join(exported)}")
        return "\n".join(lines) + "\n"

    def fresh(self, stem: str) -> str:
        return f"{stem}{next(self.counter)}"

    def constant(self, value: Any, stem: str = "_c") -> str:
        name = self.fresh(stem)
        self.constants[name] = value
        return name

    def refuse(self, where: str, keyword: str, why: str) -> None:
        if (where, keyword) in self.seen_problems:
            return
        self.seen_problems.add((where, keyword))
        self.problems.append(Problem("schema.unsupported_keyword", where, f"{keyword!r}: {why}"))

    # -- functions ---------------------------------------------------------------------

    def function(self, fname: str, schema: Any, sptr: str, mode: str) -> None:
        """Emit ``def fname``: collect mode takes ``(v, errs, path)``, check mode ``(v)``."""
        out: list[str] = []
        head = f"def {fname}(v, errs, path=()):" if mode == "collect" else f"def {fname}(v):"
        body: list[str] = []
        self.node(body, schema, sptr, "v", _Path("path"), 1, mode, (sptr,))
        out.append(head)
        out.extend(body or ["    pass"])
        if mode == "check":
            out.append("    return True")
        out.append("")
        self.blocks.append(out)

    def outline(self, schema: Any, sptr: str, mode: str) -> str:
        """The name of a function holding `schema`'s checks, emitting it the first time."""
        key = (sptr, mode)
        if key not in self.outlined:
            self.outlined[key] = self.fresh("_collect_" if mode == "collect" else "_check_")
            self.function(self.outlined[key], schema, sptr, mode)
        return self.outlined[key]

    # -- one subschema, inline -----------------------------------------------------------

    def fail(self, out: list[str], ind: int, mode: str, code: str, path: _Path, message: str) -> None:
        """Emit the error site: record the error, or (check mode) answer False at once."""
        pad = "    " * ind
        if mode == "check":
            out.append(f"{pad}return False")
        else:
            out.append(f"{pad}errs.append(({'schema.' + code!r}, {path.expr()}, {message}))")

    def node(
        self,
        out: list[str],
        schema: Any,
        sptr: str,
        v: str,
        path: _Path,
        ind: int,
        mode: str,
        stack: tuple[str, ...],
    ) -> None:
        """Emit the checks of `schema` against the value in variable `v`."""
        if schema is True:
            return
        if schema is False:
            self.fail(out, ind, mode, "false", path, repr("no value is allowed here"))
            return
        if type(schema) is not dict:
            self.refuse(sptr, "schema", f"a schema must be an object or a boolean, got {json_type(schema)}")
            return
        for keyword in schema:
            if keyword not in SUPPORTED and keyword not in ANNOTATIONS:
                self.refuse(pointer.join(sptr, keyword), keyword, "not supported by the schema compiler")
        if self.is_trivial(schema, sptr):
            return
        if ind > _MAX_INLINE_DEPTH:
            self.call(out, self.outline(schema, sptr, mode), v, path, ind, mode)
            return
        pad = "    " * ind
        if "$ref" in schema:
            self.ref(out, schema["$ref"], sptr, v, path, ind, mode, stack)
        t = self.fresh("t")
        if any(k in schema for k in _TYPED_KEYWORDS):
            out.append(f"{pad}{t} = type({v})")
        if "type" in schema:
            self.type_(out, schema["type"], sptr, v, t, path, ind, mode)
        if "const" in schema:
            self.const(out, schema["const"], v, t, path, ind, mode)
        if "enum" in schema:
            self.enum(out, schema["enum"], sptr, v, t, path, ind, mode)
        for keyword in _STRING_KEYWORDS:
            if keyword in schema:
                self.string(out, keyword, schema[keyword], sptr, v, t, path, ind, mode)
        for keyword in _NUMBER_KEYWORDS:
            if keyword in schema:
                self.number(out, keyword, schema[keyword], sptr, v, t, path, ind, mode)
        if any(k in schema for k in _OBJECT_KEYWORDS):
            out.append(f"{pad}if {t} is dict:")
            before = len(out)
            self.object(out, schema, sptr, v, path, ind + 1, mode, stack)
            if len(out) == before:
                out.append(f"{pad}    pass")
        if any(k in schema for k in _ARRAY_KEYWORDS):
            out.append(f"{pad}if {t} is list:")
            before = len(out)
            self.array(out, schema, sptr, v, path, ind + 1, mode, stack)
            if len(out) == before:
                out.append(f"{pad}    pass")
        if "allOf" in schema:
            for i, sub in enumerate(self.schema_list(schema, "allOf", sptr)):
                self.node(out, sub, f"{sptr}/allOf/{i}", v, path, ind, mode, stack)
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema:
                self.combinator(out, keyword, schema[keyword], sptr, v, path, ind, mode)
        if "not" in schema:
            check = self.outline(schema["not"], f"{sptr}/not", "check")
            out.append(f"{pad}if {check}({v}):")
            self.fail(out, ind + 1, mode, "not", path, repr("expected a value the 'not' schema rejects"))
        if "if" in schema:  # then/else without if mean nothing (2020-12)
            check = self.outline(schema["if"], f"{sptr}/if", "check")
            out.append(f"{pad}if {check}({v}):")
            self.body(out, schema.get("then", {}), f"{sptr}/then", v, path, ind + 1, mode, stack)
            if "else" in schema:
                out.append(f"{pad}else:")
                self.body(out, schema["else"], f"{sptr}/else", v, path, ind + 1, mode, stack)

    def body(
        self,
        out: list[str],
        schema: Any,
        sptr: str,
        v: str,
        path: _Path,
        ind: int,
        mode: str,
        stack: tuple[str, ...],
    ) -> None:
        """`node` as the body of a block just opened: ``pass`` when it emits no check."""
        before = len(out)
        self.node(out, schema, sptr, v, path, ind, mode, stack)
        if len(out) == before:
            out.append("    " * ind + "pass")

    def call(self, out: list[str], fname: str, v: str, path: _Path, ind: int, mode: str) -> None:
        pad = "    " * ind
        if mode == "check":
            out.append(f"{pad}if not {fname}({v}):")
            out.append(f"{pad}    return False")
        else:
            out.append(f"{pad}{fname}({v}, errs, {path.expr()})")

    def ref(
        self,
        out: list[str],
        ref: Any,
        sptr: str,
        v: str,
        path: _Path,
        ind: int,
        mode: str,
        stack: tuple[str, ...],
    ) -> None:
        target_ptr, target = self.resolve(ref, sptr)
        if target_ptr is None:
            return
        if target_ptr in stack:  # recursive: the cycle goes through a function
            self.call(out, self.outline(target, target_ptr, mode), v, path, ind, mode)
        else:
            self.node(out, target, target_ptr, v, path, ind, mode, (*stack, target_ptr))

    def resolve(self, ref: Any, sptr: str) -> tuple[str | None, Any]:
        """The schema pointer and the subschema a local ``#/...`` reference names."""
        where = pointer.join(sptr, "$ref")
        if type(ref) is not str or not ref.startswith("#") or not pointer.is_valid(ref[1:]):
            self.refuse(where, "$ref", f"only local references like '#/$defs/name' are supported, got {ref!r}")
            return None, None
        target = pointer.resolve(self.root, pointer.parse(ref[1:]))
        if type(target) is not dict and type(target) is not bool:
            self.refuse(where, "$ref", f"{ref!r} names no subschema")
            return None, None
        return ref[1:], target

    def is_trivial(self, schema: Any, sptr: str, seen: frozenset[str] = frozenset()) -> bool:
        """True when `schema` accepts every value (only annotations, or refs to such)."""
        if schema is True:
            return True
        if type(schema) is not dict:
            return False
        for keyword, value in schema.items():
            if keyword in ANNOTATIONS:
                continue
            if keyword != "$ref" or type(value) is not str or value[1:] in seen:
                return False
            if not value.startswith("#") or not pointer.is_valid(value[1:]):
                return False
            target = pointer.resolve(self.root, pointer.parse(value[1:]))
            if not self.is_trivial(target, value[1:], seen | {value[1:]}):
                return False
        return True

    def schema_list(self, schema: dict[str, Any], keyword: str, sptr: str) -> list[Any]:
        value = schema.get(keyword, [])
        if type(value) is not list or not value:
            self.refuse(pointer.join(sptr, keyword), keyword, "expected a non-empty array of schemas")
            return []
        return value

    # -- keyword groups ------------------------------------------------------------------

    def type_(self, out: list[str], value: Any, sptr: str, v: str, t: str, path: _Path, ind: int, mode: str) -> None:
        names = [value] if type(value) is str else value
        if type(names) is not list or not names or any(n not in _NOT_TYPE for n in names):
            self.refuse(pointer.join(sptr, "type"), "type", f"unknown type {value!r}")
            return
        pad = "    " * ind
        expected = " or ".join(names)
        out.append(f"{pad}if {' and '.join(_NOT_TYPE[n](t, v) for n in names)}:")
        self.fail(out, ind + 1, mode, "type", path, f"{'expected ' + expected + ', got '!r} + _jt({v})")

    def const(self, out: list[str], value: Any, v: str, t: str, path: _Path, ind: int, mode: str) -> None:
        pad = "    " * ind
        if type(value) is str:
            out.append(f"{pad}if {t} is not str or {v} != {value!r}:")
        else:
            out.append(f"{pad}if not _eq({v}, {self.constant(value)}):")
        self.fail(out, ind + 1, mode, "const", path, f"{'expected ' + _brief(value) + ', got '!r} + _brief({v})")

    def enum(self, out: list[str], value: Any, sptr: str, v: str, t: str, path: _Path, ind: int, mode: str) -> None:
        if type(value) is not list:
            self.refuse(pointer.join(sptr, "enum"), "enum", "expected an array")
            return
        pad = "    " * ind
        if value and all(type(x) is str for x in value):
            out.append(f"{pad}if {t} is not str or {v} not in {self.constant(frozenset(value))}:")
        else:
            out.append(f"{pad}if not any(_eq({v}, e) for e in {self.constant(tuple(value))}):")
        choices = ", ".join(_brief(x) for x in value)
        self.fail(out, ind + 1, mode, "enum", path, f"{'expected one of ' + choices + '; got '!r} + _brief({v})")

    def string(
        self,
        out: list[str],
        keyword: str,
        value: Any,
        sptr: str,
        v: str,
        t: str,
        path: _Path,
        ind: int,
        mode: str,
    ) -> None:
        pad = "    " * ind
        if keyword == "pattern":
            try:
                regex = re.compile(value)
            except (re.error, TypeError) as exc:
                self.refuse(pointer.join(sptr, keyword), keyword, f"not a Python regular expression: {exc}")
                return
            out.append(f"{pad}if {t} is str and {self.constant(regex, '_re')}.search({v}) is None:")
            message = f"{'expected a string matching ' + repr(value) + ', got '!r} + _brief({v})"
        elif not _is_count(value):
            self.refuse(pointer.join(sptr, keyword), keyword, "expected a non-negative integer")
            return
        elif keyword == "minLength":
            out.append(f"{pad}if {t} is str and len({v}) < {value}:")
            wanted = "a non-empty string" if value == 1 else f"a string of at least {value} characters"
            message = f"{'expected ' + wanted + ', got '!r} + _brief({v})"
        else:
            out.append(f"{pad}if {t} is str and len({v}) > {value}:")
            message = f"{'expected a string of at most ' + str(value) + ' characters, got '!r} + _brief({v})"
        self.fail(out, ind + 1, mode, keyword, path, message)

    def number(
        self,
        out: list[str],
        keyword: str,
        value: Any,
        sptr: str,
        v: str,
        t: str,
        path: _Path,
        ind: int,
        mode: str,
    ) -> None:
        if type(value) is not int and type(value) is not float:
            self.refuse(pointer.join(sptr, keyword), keyword, "expected a number")
            return
        pad = "    " * ind
        fails, wanted = _COMPARISONS[keyword]
        out.append(f"{pad}if ({t} is int or {t} is float) and {v} {fails} {value!r}:")
        self.fail(
            out,
            ind + 1,
            mode,
            keyword,
            path,
            f"{f'expected a value {wanted} {value!r}, got '!r} + _brief({v})",
        )

    def object(
        self,
        out: list[str],
        schema: dict[str, Any],
        sptr: str,
        v: str,
        path: _Path,
        ind: int,
        mode: str,
        stack: tuple[str, ...],
    ) -> None:
        pad = "    " * ind
        required = schema.get("required", [])
        if type(required) is not list or not all(type(k) is str for k in required):
            self.refuse(pointer.join(sptr, "required"), "required", "expected an array of strings")
            required = []
        for key in required:
            out.append(f"{pad}if {key!r} not in {v}:")
            self.fail(out, ind + 1, mode, "required", path, repr(f"missing required key {key!r}"))
        properties = self.schema_map(schema, "properties", sptr)
        for key, sub in properties.items():
            sub_ptr = pointer.join(sptr, "properties", key)
            if self.is_trivial(sub, sub_ptr):
                continue
            x = self.fresh("v")
            out.append(f"{pad}{x} = {v}.get({key!r}, _M)")
            out.append(f"{pad}if {x} is not _M:")
            self.body(out, sub, sub_ptr, x, path.child(repr(key)), ind + 1, mode, stack)
        patterns = self.schema_map(schema, "patternProperties", sptr)
        compiled: dict[str, str] = {}
        for regex_text, sub in patterns.items():
            try:
                compiled[regex_text] = self.constant(re.compile(regex_text), "_re")
            except re.error as exc:
                where = pointer.join(sptr, "patternProperties", regex_text)
                self.refuse(where, "patternProperties", f"not a Python regular expression: {exc}")
                continue
            sub_ptr = pointer.join(sptr, "patternProperties", regex_text)
            if self.is_trivial(sub, sub_ptr):
                continue
            k, x = self.fresh("k"), self.fresh("v")
            out.append(f"{pad}for {k}, {x} in {v}.items():")
            out.append(f"{pad}    if {compiled[regex_text]}.search({k}) is not None:")
            self.body(out, sub, sub_ptr, x, path.child(k), ind + 2, mode, stack)
        if "additionalProperties" in schema:
            self.additional(out, schema, sptr, v, path, ind, mode, stack, list(properties), list(patterns))
        for keyword, fails, wanted in (("minProperties", "<", "at least"), ("maxProperties", ">", "at most")):
            if keyword not in schema:
                continue
            if not _is_count(schema[keyword]):
                self.refuse(pointer.join(sptr, keyword), keyword, "expected a non-negative integer")
                continue
            out.append(f"{pad}if len({v}) {fails} {schema[keyword]}:")
            message = f"{f'expected an object with {wanted} {schema[keyword]} keys, got '!r} + str(len({v}))"
            self.fail(out, ind + 1, mode, keyword, path, message)

    def additional(
        self,
        out: list[str],
        schema: dict[str, Any],
        sptr: str,
        v: str,
        path: _Path,
        ind: int,
        mode: str,
        stack: tuple[str, ...],
        declared: list[str],
        patterns: list[str],
    ) -> None:
        pad = "    " * ind
        sub = schema["additionalProperties"]
        sub_ptr = pointer.join(sptr, "additionalProperties")
        if sub is not False and self.is_trivial(sub, sub_ptr):
            return
        names = self.constant(frozenset(declared), "_keys")
        # jsonschema's rule: one regex made of all patternProperties, searched anywhere in the key.
        joined = self.constant(re.compile("|".join(patterns)), "_re") if patterns else None
        k, x = self.fresh("k"), self.fresh("v")
        extra = f"{k} not in {names}" + (f" and {joined}.search({k}) is None" if joined else "")
        if sub is False:
            if mode == "check" and joined is None:
                out.append(f"{pad}if not {names}.issuperset({v}):")
                out.append(f"{pad}    return False")
                return
            message_fn = self.constant(
                functools.partial(_undeclared_message, declared=tuple(declared), patterns=tuple(patterns)),
                "_undeclared",
            )
            out.append(f"{pad}if not {names}.issuperset({v}):")
            out.append(f"{pad}    for {k} in {v}:")
            out.append(f"{pad}        if {extra}:")
            self.fail(out, ind + 3, mode, "additionalProperties", path.child(k), f"{message_fn}({k})")
            return
        out.append(f"{pad}if not {names}.issuperset({v}):")
        out.append(f"{pad}    for {k}, {x} in {v}.items():")
        out.append(f"{pad}        if {extra}:")
        self.body(out, sub, sub_ptr, x, path.child(k), ind + 3, mode, stack)

    def array(
        self,
        out: list[str],
        schema: dict[str, Any],
        sptr: str,
        v: str,
        path: _Path,
        ind: int,
        mode: str,
        stack: tuple[str, ...],
    ) -> None:
        pad = "    " * ind
        prefix = self.schema_list(schema, "prefixItems", sptr) if "prefixItems" in schema else []
        for j, sub in enumerate(prefix):
            sub_ptr = f"{sptr}/prefixItems/{j}"
            if self.is_trivial(sub, sub_ptr):
                continue
            x = self.fresh("v")
            out.append(f"{pad}if len({v}) > {j}:")
            out.append(f"{pad}    {x} = {v}[{j}]")
            self.node(out, sub, sub_ptr, x, path.child(str(j)), ind + 1, mode, stack)
        if "items" in schema:
            sub, sub_ptr = schema["items"], pointer.join(sptr, "items")
            n = len(prefix)
            if sub is False:
                out.append(f"{pad}if len({v}) > {n}:")
                message = f"{f'expected at most {n} items, got '!r} + str(len({v}))"
                self.fail(out, ind + 1, mode, "items", path, message)
            elif not self.is_trivial(sub, sub_ptr):
                i, x = self.fresh("i"), self.fresh("v")
                if n:
                    out.append(f"{pad}for {i} in range({n}, len({v})):")
                    out.append(f"{pad}    {x} = {v}[{i}]")
                else:
                    out.append(f"{pad}for {i}, {x} in enumerate({v}):")
                self.body(out, sub, sub_ptr, x, path.child(i), ind + 1, mode, stack)
        for keyword, fails, wanted in (("minItems", "<", "at least"), ("maxItems", ">", "at most")):
            if keyword not in schema:
                continue
            if not _is_count(schema[keyword]):
                self.refuse(pointer.join(sptr, keyword), keyword, "expected a non-negative integer")
                continue
            out.append(f"{pad}if len({v}) {fails} {schema[keyword]}:")
            message = f"{f'expected an array with {wanted} {schema[keyword]} items, got '!r} + str(len({v}))"
            self.fail(out, ind + 1, mode, keyword, path, message)

    def combinator(
        self, out: list[str], keyword: str, value: Any, sptr: str, v: str, path: _Path, ind: int, mode: str
    ) -> None:
        pad = "    " * ind
        branches = self.schema_list({keyword: value}, keyword, sptr)
        if not branches:
            return
        checks = [self.outline(sub, f"{sptr}/{keyword}/{i}", "check") for i, sub in enumerate(branches)]
        described = [sub.get("description") if type(sub) is dict else None for sub in branches]
        shapes = "; ".join(str(d) for d in described) if all(described) else f"{len(branches)} alternatives"
        if keyword == "anyOf":
            out.append(f"{pad}if not ({' or '.join(f'{c}({v})' for c in checks)}):")
            message = repr(f"expected at least one of: {shapes}")
        else:
            out.append(f"{pad}if ({' + '.join(f'{c}({v})' for c in checks)}) != 1:")
            message = repr(f"expected exactly one of: {shapes}")
        self.fail(out, ind + 1, mode, keyword, path, message)

    def schema_map(self, schema: dict[str, Any], keyword: str, sptr: str) -> dict[str, Any]:
        value = schema.get(keyword, {})
        if type(value) is not dict:
            self.refuse(pointer.join(sptr, keyword), keyword, "expected an object of schemas")
            return {}
        return value


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0
