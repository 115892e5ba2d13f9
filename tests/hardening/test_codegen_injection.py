"""A mapping spec never becomes code (SECURITY.md, engine/codegen.py's rule).

The engine compiles a spec into Python source.  Every value a spec holds must reach that source as
a literal (`repr`) or as a constant the code indexes, never as text of the code.  These tests put
hostile text (quotes, backslashes, newlines, triple quotes, braces, U+2028, NUL, very long strings,
a working payload) into every string slot of the spec schema, found by walking
`schemas/mapping-spec.schema.json` alongside real specs, and compare the generated module's AST with
the one the same spec with plain text gives: no name, attribute or call may appear that the plain
spec does not have.  A spec that is refused must be refused as a `MapcError`, never a traceback.
"""

from __future__ import annotations

import ast
import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from mapc.cli.main import cli
from mapc.engine import run
from mapc.engine.compile import compile_spec
from mapc.engine.problems import MapcError
from mapc.engine.spec import load_spec, spec_from_data

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "mapping-spec.schema.json").read_text())
MAPPINGS = ROOT / "mappings"


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def test_a_quote_and_newline_in_an_array_target_does_not_run(tmp_path: Path) -> None:
    """The instance reported in issue 14: the last segment of an array's target pointer went into
    a message string in the generated reverse, so it could close the string and add statements."""
    marker = tmp_path / "pwned"
    segment = f"y'))\n    __import__('os').system('touch {marker}')\n    (('"
    target = "/x/" + _escape(segment)
    spec = tmp_path / "evil.yaml"
    spec.write_text(
        "name: x\n"
        f'arrays:\n  "/steps/{{s}}": {json.dumps(target + "/{t}")}\n'
        "rules:\n"
        "  - {from: /session_id, to: /session}\n"
        f'  - {{from: "/steps/{{s}}/a", to: {json.dumps(target + "/{t}/a")}}}\n'
    )
    program = compile_spec(load_spec(spec))
    stories = [m.story for m in run.forward(program, {"session_id": "s", "steps": [{"a": 1}]})]
    (rebuilt,) = run.reverse(program, stories)
    assert rebuilt.document == {"session_id": "s", "steps": [{"a": 1}]}
    assert not marker.exists()
    # The segment is data: the Storyline holds it as a key, the generated code as a string literal.
    assert list(stories[0]["x"]) == [segment]
    assert segment in {n.value for n in ast.walk(ast.parse(program.source)) if isinstance(n, ast.Constant)}


def test_an_ordinary_quote_in_an_array_target_compiles(tmp_path: Path) -> None:
    """The same place with one `'`: a SyntaxError traceback before."""
    spec = tmp_path / "quote.yaml"
    spec.write_text(
        'name: x\narrays:\n  "/steps/{s}": "/x/it\'s/{t}"\n'
        'rules:\n  - {from: /session_id, to: /session}\n  - {from: "/steps/{s}/a", to: "/x/it\'s/{t}/a"}\n'
    )
    program = compile_spec(load_spec(spec))
    stories = [m.story for m in run.forward(program, {"session_id": "s", "steps": [{"a": 1}]})]
    stories[0]["x"]["it's"] = "not an array"
    with pytest.raises(MapcError) as info:
        run.reverse(program, stories)
    assert "/x/it's" in str(info.value.problems[0].pointer)


# --- every string slot of the spec schema -----------------------------------------------------

DEFS = SCHEMA["$defs"]
HOSTILE = (
    "it's",
    'say "hi"',
    "back\\slash\\",
    "new\nline",
    '"""',
    "'''",
    "{}{x}{{",
    "line\u2028separator\u2029",
    "nul\x00byte",
    "x" * 5_000,
    "y'))\n    __import__('os').system('id')\n    (('",
    'y"))\n__import__("os").system("id")\n#',
    "\\'; import os; os.system('id') #",
)
PAYLOADS = HOSTILE[-3:]  # each would run a command if it were formatted into code
PLAIN = "plainword"

Loc = tuple[str, ...]  # where a slot is in the schema: keys walked, `$ref`s as "->name", a key as "<key>"


def _enter(loc: Loc, ref: str) -> Loc:
    """`loc` extended by a `$ref`; a ref already on the way closes a cycle (ref.args -> ref), so the
    location goes back to where it was first entered: the set of locations is finite."""
    step = "->" + ref
    return loc[: loc.index(step) + 1] if step in loc else (*loc, step)


def _is_string(node: dict[str, Any]) -> bool:
    t = node.get("type")
    return (
        t == "string"
        or (isinstance(t, list) and "string" in t)
        or "pattern" in node
        or any(isinstance(v, str) for v in node.get("enum", ()))
        or isinstance(node.get("const"), str)
    )


def _free(node: Any) -> bool:
    """A schema that leaves a value open (any JSON, or an object of any keys): its strings are free text."""
    if node is True:
        return True
    keys = set(node) - {"description", "title"}
    return not keys or (
        node.get("type") in ("object", ["object", "null"])
        and not keys & {"properties", "additionalProperties", "patternProperties", "$ref", "anyOf", "oneOf"}
    )


def _views(node: Any, loc: Loc, data: Any = None, matching: bool = False) -> Iterator[tuple[dict[str, Any], Loc]]:
    """`node` with the schemas it composes ($ref, anyOf/oneOf branches; with `matching`, only the
    branches `data` is valid against), each with its location."""
    if not isinstance(node, dict):
        return
    yield node, loc
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        yield from _views(DEFS[name], _enter(loc, name), data, matching)
    for key in ("anyOf", "oneOf"):
        for i, branch in enumerate(node.get(key, ())):
            if not matching or jsonschema.Draft202012Validator({**branch, "$defs": DEFS}).is_valid(data):
                yield from _views(branch, (*loc, key, str(i)), data, matching)


def schema_slots(node: Any = SCHEMA, loc: Loc = (), seen: set[Loc] | None = None) -> set[Loc]:
    """Every place the spec schema admits a string: typed strings, keys of open objects, free values."""
    seen = set() if seen is None else seen
    out: set[Loc] = set()
    for view, at in _views(node, loc):
        if at in seen:
            continue
        seen.add(at)
        if _free(view):
            out.add((*at, "<free>"))
            continue
        if _is_string(view):
            out.add(at)
        for key, sub in view.get("properties", {}).items():
            if sub is not True:
                out |= schema_slots(sub, (*at, "properties", key), seen)
        for pattern, sub in view.get("patternProperties", {}).items():
            out.add((*at, "patternProperties", pattern, "<key>"))
            out |= schema_slots(sub, (*at, "patternProperties", pattern), seen)
        if isinstance(view.get("additionalProperties"), dict):
            out.add((*at, "additionalProperties", "<key>"))
            out |= schema_slots(view["additionalProperties"], (*at, "additionalProperties"), seen)
        if isinstance(view.get("items"), dict):
            out |= schema_slots(view["items"], (*at, "items"), seen)
    return out


Path_ = tuple[Any, ...]  # a place in spec data; a trailing ("<key>",) is the key itself


def data_slots(data: Any, node: Any = SCHEMA, path: Path_ = (), loc: Loc = ()) -> Iterator[tuple[Path_, Loc]]:
    """(data path, schema location) of every string in `data` (a spec), keys included, as the schema
    sees it."""
    views = list(_views(node, loc, data, matching=True))
    if not views or any(_free(v) for v, _ in views):
        yield from _free_strings(data, path, (*(views[-1][1] if views else loc), "<free>"))
        return
    if isinstance(data, str):
        yield path, next((at for v, at in reversed(views) if _is_string(v)), views[-1][1])
    elif isinstance(data, dict):
        for key, value in data.items():
            subs = [
                (v["properties"][key], (*at, "properties", key)) for v, at in views if key in v.get("properties", {})
            ]
            subs = [(s, at) for s, at in subs if s is not True]
            for v, at in views:
                for pattern, sub in v.get("patternProperties", {}).items():
                    if jsonschema.Draft202012Validator({"pattern": pattern}).is_valid(key):
                        yield (*path, key, "<key>"), (*at, "patternProperties", pattern, "<key>")
                        subs.append((sub, (*at, "patternProperties", pattern)))
                if not subs and isinstance(v.get("additionalProperties"), dict):
                    yield (*path, key, "<key>"), (*at, "additionalProperties", "<key>")
                    subs.append((v["additionalProperties"], (*at, "additionalProperties")))
            for sub, at in subs:
                yield from data_slots(value, sub, (*path, key), at)
    elif isinstance(data, list):
        for v, at in views:
            if isinstance(v.get("items"), dict):
                for i, item in enumerate(data):
                    yield from data_slots(item, v["items"], (*path, i), (*at, "items"))


def _free_strings(data: Any, path: Path_, loc: Loc) -> Iterator[tuple[Path_, Loc]]:
    if isinstance(data, str):
        yield path, loc
    elif isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str):
                yield (*path, key, "<key>"), loc
            yield from _free_strings(value, (*path, key), loc)
    elif isinstance(data, list):
        for i, item in enumerate(data):
            yield from _free_strings(item, (*path, i), loc)


def _fill(node: Any, loc: Loc, leaf: str) -> Any:
    """Minimal spec data that reaches the schema location `loc` (from `node`), with `leaf` there;
    keys the schema requires on the way get a plain value of their kind."""
    if not loc:
        views = [view for view, _ in _views(node, ())]
        fixed = [v.get("const", (v.get("enum") or [None])[0]) for v in views if "const" in v or "enum" in v]
        if fixed:
            return fixed[0]  # the slot holds a word of the schema's own; the tests put hostile text there
        return "/" + leaf if any("pattern" in view for view in views) else leaf
    head, rest = loc[0], loc[1:]
    if head.startswith("->"):
        return _fill(DEFS[head[2:]], rest, leaf)
    if head in ("anyOf", "oneOf"):
        return _fill(node[head][int(rest[0])], rest[1:], leaf)
    if head == "<free>":
        return {"/free": [leaf]}
    if head == "items":
        return [_fill(node["items"], rest, leaf)]
    if head in ("additionalProperties", "patternProperties"):
        sub = node[head] if head == "additionalProperties" else node[head][rest[0]]
        rest = rest if head == "additionalProperties" else rest[1:]
        if rest == ("<key>",):
            return {leaf: _fill(sub, (), "/plain") if _is_string(sub) else _plain_of(sub)}
        return {"/plain": _fill(sub, rest, leaf)}
    assert head == "properties", loc
    key = rest[0]
    out = {key: _fill(node["properties"][key], rest[1:], leaf)}
    for view in _chain(node):
        needs = list(view.get("required", ()))
        for key in ("anyOf", "oneOf"):  # alternatives that only require keys: the first one, if none holds
            choices = [b["required"] for b in view.get(key, ()) if set(b) == {"required"}]
            if choices and not any(set(c) <= set(out) for c in choices):
                needs += choices[0]
        for need in needs:
            out.setdefault(need, _plain_of(view.get("properties", {}).get(need, True)))
    return out


def _chain(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """`node` and the schemas its `$ref`s name (not its alternatives)."""
    yield node
    if "$ref" in node:
        yield from _chain(DEFS[node["$ref"].rsplit("/", 1)[1]])


def _plain_of(node: Any) -> Any:
    """A plain value for a schema: a pointer where one is expected, else the first type it allows."""
    for view, _ in _views(node, ()):
        if "pattern" in view or view.get("$ref", "").endswith(("template", "pointer")):
            return "/plain"
        if "const" in view:
            return view["const"]
        if "enum" in view:
            return view["enum"][0]
    return "/plain"


# A spec with what the shipped ones lack: arrays below an object (`/x/steps`), a fallback array, and
# every kind of source in the places rules take them.
NESTED = """\
name: nested
title: Nested arrays and every kind of source
source: nested
document:
  id: {from: /id}
arrays:
  "/steps/{s}": "/x/steps/{t}"
  "/steps/{s}/calls/{c}": {to: "/x/steps/{t}/calls/{c}", omit_empty: true}
  "/alts/{a}": {to: "/y/alts/{b}", else: "/others/{a}"}
objects:
  "": [id, session_id, steps, alts, others, when, extra]
  "/steps/{s}": [a, b, ts, calls, kind, meta]
  "/steps/{s}/meta": [k]
rules:
  - {from: /session_id, to: /session}
  - {const: {k: [v, "w"], n: 1}, to: /extra}
  - {const: words, to: /notes}
  - from: /when
    to: /origin/when
    reverse_when: {/origin/format: nested}
    reverse_default: "default text"
  - {from: "/steps/{s}/ts", to: "/x/steps/{t}/ts", reverse_call: rfc3339_text}
  - from: "/steps/{s}/a"
    to: "/x/steps/{t}/a"
    when: text
    reverse_first_of: [{story: /session}, "/x/steps/{t}/b"]
  - first_of: ["/steps/{s}/b", {parent: /session}, {story: /notes}, {var: s}]
    nonempty: true
    to: "/x/steps/{t}/b"
  - call: effective_kind
    args: ["/steps/{s}/kind", "/steps/{s}/calls"]
    to: "/x/steps/{t}/kind"
    derived: true
  - {from: "/steps/{s}/meta/k", to: "/x/steps/{t}/meta/k", keep_null: true}
  - {from: "/steps/{s}/calls/{c}/id", to: "/x/steps/{t}/calls/{c}/id"}
  - {from: "/alts/{a}/v", to: "/y/alts/{b}/v"}
  - {from: {var: s}, to: "/x/steps/{t}/pos", reverse_only: true}
checks:
  - {nonempty: [/session_id]}
  - {unique: "/steps/{s}/a", across: tree}
"""
BASE = {"name": "gen", "rules": [{"from": "/session_id", "to": "/session"}]}


def _merge(extra: Any) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    for key, value in extra.items():
        if key == "name" and value == "/plain":
            continue  # only filled in because the schema requires it
        if key == "rules":
            spec["rules"] = [*value, *spec["rules"]]
        else:
            spec[key] = value
    return spec


def _corpus() -> list[tuple[str, dict[str, Any]]]:
    """(name, spec data): the shipped specs, and for each schema location none of them has, a small
    spec built from the schema that has it."""
    corpus = [("nested", yaml.safe_load(NESTED))]
    corpus += [(p.stem, yaml.safe_load(p.read_text())) for p in sorted(MAPPINGS.glob("*.yaml"))]
    seen = {at for _, data in corpus for _, at in data_slots(data)}
    for at in sorted(schema_slots() - seen):
        corpus.append(("/".join(at), _merge(_fill(SCHEMA, at, PLAIN))))
    return corpus


def _replace(data: Any, path: Path_, text: str) -> Any:
    """`data` with the word at `path` renamed to `text` everywhere, so the spec stays consistent (an
    array's target and the rules below it name the same tokens): the slot's string when it is not a
    pointer, else its last literal token; each string equal to the word, and each pointer token equal
    to it, becomes `text`.  A key at `path` ends in "<key>"."""
    holder = data
    for step in path[:-1] if path[-1] != "<key>" else path[:-2]:
        holder = holder[step]
    old = path[-2] if path[-1] == "<key>" else holder[path[-1]]
    word = _word(old)
    return _rename(data, word, text) if word is not None else data


def _word(text: str) -> str | None:
    """The word of a slot: a pointer's last literal token (unescaped), else the whole string."""
    if not text.startswith("/"):
        return text
    tokens = [t for t in text.split("/")[1:] if not (t.startswith("{") and t.endswith("}"))]
    return tokens[-1].replace("~1", "/").replace("~0", "~") if tokens else None


def _rename(data: Any, word: str, text: str) -> Any:
    if isinstance(data, str):
        if data == word:
            return text
        if data.startswith("/"):
            tokens = data.split("/")
            return "/".join(
                _escape(text) if i and t.replace("~1", "/").replace("~0", "~") == word else t
                for i, t in enumerate(tokens)
            )
        return data
    if isinstance(data, dict):
        return {_rename(k, word, text) if isinstance(k, str) else k: _rename(v, word, text) for k, v in data.items()}
    if isinstance(data, list):
        return [_rename(v, word, text) for v in data]
    return data


def _generated(data: Any, tmp: Path) -> str | None:
    """The generated source of the spec `data`, or None when it is refused (always as a MapcError)."""
    try:
        return compile_spec(spec_from_data(data, tmp / "hostile.yaml")).source
    except MapcError as exc:
        assert exc.problems and all(p.code for p in exc.problems)
        return None


def _vocabulary(source: str) -> set[tuple[str, str]]:
    """The names, attributes and called expressions of a generated module."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            found.add(("name", node.id))
        elif isinstance(node, ast.Attribute):
            found.add(("attribute", node.attr))
        elif isinstance(node, ast.Call):
            found.add(("call", ast.dump(node.func)))
        elif isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Lambda)):
            found.add(("statement", type(node).__name__))
    return found


def _cases(full: bool) -> Iterator[tuple[str, dict[str, Any], Path_, str]]:
    """(spec name, spec data, slot, hostile text): with `full`, every slot of every spec with every
    hostile text; else one slot per schema location, the hostile texts taken in turn."""
    taken: set[tuple[str, Loc]] = set()
    n = 0
    for name, data in _corpus():
        for path, at in dict(data_slots(data)).items():
            if full:
                for text in HOSTILE:
                    yield name, data, path, text
            elif name == "nested":  # every slot: a working payload, and one of the other texts
                yield name, data, path, PAYLOADS[n % len(PAYLOADS)]
                yield name, data, path, HOSTILE[n % len(HOSTILE)]
                n += 1
            elif (name, at) not in taken:  # a slot per schema location in each other spec
                taken.add((name, at))
                yield name, data, path, HOSTILE[n % len(HOSTILE)]
                n += 1


def _check(cases: Iterator[tuple[str, dict[str, Any], Path_, str]], tmp: Path) -> dict[str, int]:
    """Generate code for each case; its vocabulary must be that of the same spec with plain text."""
    counts = {"tried": 0, "compiled": 0, "refused": 0}
    plain_cache: dict[tuple[str, Path_], set[tuple[str, str]] | None] = {}
    for name, data, path, text in cases:
        counts["tried"] += 1
        source = _generated(_replace(data, path, text), tmp)
        if source is None:
            counts["refused"] += 1
            continue
        counts["compiled"] += 1
        if (name, path) not in plain_cache:
            plain = _generated(_replace(data, path, PLAIN), tmp)
            plain_cache[name, path] = None if plain is None else _vocabulary(plain)
        allowed = plain_cache[name, path]
        assert allowed is not None, f"{name} {path}: compiles with {text[:40]!r} but not with plain text"
        extra = _vocabulary(source) - allowed
        assert not extra, f"{name} {path}: {text[:40]!r} added {sorted(extra)[:5]} to the generated code"
    return counts


def test_every_schema_string_slot_is_exercised() -> None:
    """The slots come from the schema: each place it admits a string is in the corpus."""
    slots = schema_slots()
    corpus = {at for _, data in _corpus() for _, at in data_slots(data)}
    assert len(slots) > 100  # the schema's own count (178 when written): the walk found them
    assert slots <= corpus, sorted(slots - corpus)[:5]


def test_hostile_text_in_any_slot_adds_no_code(tmp_path: Path) -> None:
    counts = _check(_cases(full=bool(os.environ.get("MAPC_SLOW_TESTS"))), tmp_path)
    assert counts["tried"] >= len(schema_slots())
    assert counts["compiled"] >= counts["tried"] // 4, counts  # the hostile text mostly reaches the code


# --- other spec crashes: clean spec errors with file:line:column -------------------------------

SESSION = "rules:\n  - {from: /session_id, to: /session}\n"
CRASHES = {
    "NUL in name": ('name: "a\\0b"\n' + SESSION, "spec.invalid", ":1:7"),
    "300-character name": ("name: " + "n" * 300 + "\n" + SESSION, "spec.invalid", ":1:7"),
    "5,000 digits": ("name: x\n" + SESSION + "  - {const: " + "9" * 5_000 + ", to: /notes}\n", "spec.yaml", ":4:13"),
    "long hex": ("name: x\n" + SESSION + "  - {const: 0x" + "f" * 5_000 + ", to: /notes}\n", "spec.yaml", ":4:13"),
    "beyond 64 bits": ("name: x\n" + SESSION + "  - {const: 18446744073709551616, to: /notes}\n", "spec.yaml", ":4:13"),
    "no /session": ("name: x\nrules:\n  - {from: /a, to: /notes}\n", "spec.no_session", ":1:1"),
}


@pytest.mark.parametrize("case", sorted(CRASHES))
@pytest.mark.parametrize("command", ["run", "spec coverage"])
def test_a_spec_crash_is_a_located_spec_error(case: str, command: str, tmp_path: Path, runner) -> None:
    text, code, where = CRASHES[case]
    spec = tmp_path / "crash.yaml"
    spec.write_text(text)
    data = tmp_path / "in.json"
    data.write_text('{"session_id": "s", "a": 1}')
    result = runner.invoke(cli, [*command.split(), str(spec), str(data)])
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exception is None or isinstance(result.exception, SystemExit), output
    assert "Traceback" not in output
    assert f"[{code}]" in output and f"crash.yaml{where}" in output, output
    if command == "run":
        assert result.exit_code == 1


def test_a_64_bit_integer_is_still_a_spec_value(tmp_path: Path) -> None:
    spec = tmp_path / "edge.yaml"
    spec.write_text("name: x\n" + SESSION + "  - {const: 18446744073709551615, to: /notes}\n")
    assert load_spec(spec).rules[1].value == 2**64 - 1


def test_a_document_without_a_session_value_is_a_data_problem(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("name: x\n" + SESSION)
    with pytest.raises(MapcError) as info:
        run.forward(compile_spec(load_spec(spec)), {"other": 1})
    assert [p.code for p in info.value.problems] == ["schema.required"]
