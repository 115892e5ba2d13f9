"""Generated code and the rule objects agree on generated specs too (ISSUE 16 §1, one semantics).

tests/formats/test_differential.py compares the two runs over the shipped specs; shapes no shipped
spec has (a forward-only chain with a condition, a null no conversion turns into no value, a
default beside a `when`, a fallback array...) are only reached by specs made here: a document
scope and one array scope, each row one of the ops (copy, first_of, const, call, with `{const:}`
arguments) with any of
`when`, `keep_null`, a conversion and a `back:` block (a computed reverse `{call, args, to}` on
every op, beside a `when` too: codegen.REVERSE writes each op's reverse), over documents that put every kind of
value (null, "", {}, [], numbers, text, objects) at the pointers the rows read.  Forward and
reverse, the generated and the traced runs must give the same bytes, or the same errors.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mapc.engine import run
from mapc.engine.compile import compile_spec
from mapc.engine.ops import CONDITION_NAMES
from mapc.engine.prepare import prepare
from mapc.engine.problems import MapcError
from mapc.engine.spec import spec_from_data
from mapc.engine.trace import traced

ROOT_SOURCES = ("/a", "/b", "/c", "/o/x", "/o/y")
ITEM_SOURCES = ("/items/{i}/a", "/items/{i}/b", "/items/{i}/n/x", "/items/{i}/n/y")
CONVERSIONS = (None, "int_ms", "rfc3339_text")

values = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(["", "t", "2024-01-02T03:04:05Z", "x/y"]),
    st.integers(-3, 3),
    st.sampled_from([1.5, 1e12, -(2**63)]),
    st.sampled_from([{}, [], {"k": 1}, [1, None]]),
)


def computed(draw: st.DrawFn, sources: tuple[str, ...], target: str) -> dict[str, Any]:
    """A computed reverse (`back: {call, args, to}`): a function of the row's Storyline value (and
    a constant) whose result goes to one or two source pointers."""
    if draw(st.booleans()):
        return {
            "call": draw(st.sampled_from(["rfc3339_text", "int_ms"])),
            "args": [target],
            "to": draw(st.sampled_from(sources)),
        }
    to = draw(st.lists(st.sampled_from(sources), min_size=1, max_size=1, unique=True))
    return {"call": "same_or", "args": [target, {"const": draw(values)}, {"const": draw(values)}], "to": to}


@st.composite
def backs(draw: st.DrawFn, sources: tuple[str, ...], target: str) -> Any:
    kind = draw(st.sampled_from(["", "none", "default", "or", "when", "call", "computed"]))
    if kind == "":
        return None
    if kind == "none":
        return "none"
    if kind == "computed":  # beside a `when` and a conversion too (engine/README.md, "when and back: {call}")
        return computed(draw, sources, target)
    back: dict[str, Any] = {}
    if kind in ("default", "when") or draw(st.booleans()):
        back["default"] = draw(values)
    if kind == "or":
        back["or"] = [draw(st.sampled_from(["/extra/r0", "/extra/r1", "/session"]))]
    if kind == "when":
        back["when"] = {"/origin/format": "probe"}
    if kind == "call":
        back["call"] = "rfc3339_text"
    return back


@st.composite
def rows(draw: st.DrawFn, sources: tuple[str, ...], target: str) -> dict[str, Any]:
    op = draw(st.sampled_from(["copy", "copy", "first_of", "first_of", "const", "call"]))
    row: dict[str, Any] = {"to": target}
    if op == "const":
        row["const"] = draw(values)
        if draw(st.booleans()):
            row["back"] = computed(draw, sources, target)
        return row
    if op == "call":  # a function of sources and `{const: V}` arguments
        row["call"] = draw(st.sampled_from(["int_ms", "with_defaults", "same_or"]))
        row["args"] = [draw(st.sampled_from(sources))]
        if row["call"] == "with_defaults":
            row["args"].append({"const": {"k": draw(values), "x": None}})
        elif row["call"] == "same_or":
            row["args"] += [{"const": draw(values)}, {"const": draw(values)}]
        row["back"] = draw(st.sampled_from(["", "none", "computed"]))
        if row["back"] == "computed":
            row["back"] = computed(draw, sources, target)
        elif not row["back"]:
            del row["back"]
        return row
    if op == "copy":
        row["from"] = draw(st.sampled_from(sources))
    else:
        row["first_of"] = draw(st.lists(st.sampled_from(sources), min_size=2, max_size=3, unique=True))
    if draw(st.booleans()):
        row["when"] = draw(st.sampled_from(CONDITION_NAMES))
    if draw(st.booleans()):
        row["keep_null"] = True
    conversion = draw(st.sampled_from(CONVERSIONS))
    if conversion is not None:
        row["call"] = conversion
    back = draw(backs(sources, target))
    if back is not None:
        row["back"] = back
    return row


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    root = [draw(rows(ROOT_SOURCES, f"/extra/r{n}")) for n in range(draw(st.integers(1, 4)))]
    items = [draw(rows(ITEM_SOURCES, f"/turns/{{t}}/extra/e{n}")) for n in range(draw(st.integers(0, 4)))]
    array: Any = "/turns/{t}"
    if draw(st.booleans()):
        array = {"to": "/turns/{t}", "else": "/alt/{i}", "omit_empty": draw(st.booleans())}
    spec: dict[str, Any] = {
        "name": "probe",
        "source": "probe",
        "arrays": {"/items/{i}": array},
        "rules": [
            {"const": "storyline/v1", "to": "/schema_version"},
            {"const": "probe", "to": "/origin/format"},
            {"from": "/id", "to": "/session"},
            {"from": "/items/{i}/id", "to": "/turns/{t}/id"},
            *root,
            *items,
        ],
    }
    if draw(st.booleans()):
        spec["objects"] = {"": ["id", "a", "b", "c", "o", "items", "alt"], "/items/{i}": ["id", "a", "b", "n"]}
    return spec


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    def element(keys: tuple[str, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in keys:
            if draw(st.booleans()):
                out[key] = draw(values)
        for key in ("n", "o"):
            if draw(st.booleans()):
                out[key] = {k: draw(values) for k in draw(st.lists(st.sampled_from(["x", "y", "z"]), unique=True))}
        return out

    doc = {"id": "s", **element(("a", "b", "c", "u"))}
    for home in ("items", "alt"):
        if draw(st.booleans()):
            doc[home] = [{"id": n + 1, **element(("a", "b", "u"))} for n in range(draw(st.integers(0, 2)))]
    return doc


def _forward(program: Any, doc: Any) -> bytes:
    try:
        return orjson.dumps([m.story for m in run.forward(program, prepare(program.spec.prepare, doc))])
    except MapcError as exc:
        return orjson.dumps([p.as_dict() for p in exc.problems])
    except Exception:
        return b"raised"  # (which value raises first may differ: guards are decided at different times)


def _reverse(program: Any, stories: list[dict[str, Any]]) -> bytes:
    try:
        return orjson.dumps([r.document for r in run.reverse(program, stories)])
    except MapcError as exc:
        return orjson.dumps([p.as_dict() for p in exc.problems])
    except Exception:
        return b"raised"


def _compiled(data: dict[str, Any]) -> Any:
    try:
        return compile_spec(spec_from_data(data, "probe.yaml"))
    except MapcError:
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(specs(), documents())
def test_generated_and_traced_runs_agree_on_generated_specs(data: dict[str, Any], doc: dict[str, Any]):
    program = _compiled(data)
    assume(program is not None)
    by_rules = traced(program)
    assert _forward(program, doc) == _forward(by_rules, doc)
    try:
        stories = [m.story for m in run.forward(program, prepare(program.spec.prepare, doc))]
    except Exception:
        return
    assert _reverse(program, stories) == _reverse(by_rules, stories)
    own = ("origin", "unknown_fields", "unknown_key_counts")
    foreign = [{k: v for k, v in s.items() if k not in own} for s in stories]
    assert _reverse(program, foreign) == _reverse(by_rules, foreign)


def _probe(rule: dict[str, Any], doc: dict[str, Any]) -> list[dict[str, Any]]:
    data = {
        "name": "probe",
        "source": "probe",
        "rules": [{"const": "storyline/v1", "to": "/schema_version"}, {"from": "/id", "to": "/session"}, rule],
    }
    program = _compiled(data)
    assert program is not None
    generated = _forward(program, doc)
    assert generated == _forward(traced(program), doc)
    return orjson.loads(generated)


def test_a_forward_only_chain_takes_the_first_candidate_that_passes_its_condition():
    """Found by the generated specs: the generated code of a forward-only chain took the first
    present value whatever its `when` said (3 here), where the op takes the first that passes."""
    rule = {"first_of": ["/a", "/b"], "to": "/extra/x", "when": "text", "back": "none"}
    assert _probe(rule, {"id": "s", "a": 3, "b": "t"})[0]["extra"] == {"x": "t"}


def test_a_forward_only_chain_without_a_conversion_copies_a_null_it_chooses():
    """Found by the generated specs: a null candidate is chosen by a chain that does not skip empty
    values (ops.is_candidate), and with no conversion to drop it, it is written."""
    rule = {"first_of": ["/a", "/b"], "to": "/extra/x", "back": "none"}
    assert _probe(rule, {"id": "s", "a": None, "b": 2})[0]["extra"] == {"x": None}


def test_a_value_its_when_refuses_is_kept_at_its_own_pointer_beside_a_computed_reverse():
    """Found by the generated specs once `when` met `back: {call}`: the traced run asked the computed
    reverse about a refused value and kept it under a pointer made of its own twice (/a/a); a value
    the `when` refuses, or the conversion cannot map, is kept at its own pointer, as for any row."""
    back = {"call": "rfc3339_text", "args": ["/extra/x"], "to": "/a"}
    refused = _probe({"from": "/a", "when": "text", "to": "/extra/x", "back": back}, {"id": "s", "a": 3})[0]
    assert "extra" not in refused and refused["unknown_fields"]["sources"]["probe"]["fields"] == {"/a": 3}
    chain = {"first_of": ["/a", "/b"], "call": "int_ms", "when": "text", "to": "/extra/x", "back": back}
    unmapped = _probe(chain, {"id": "s", "a": None, "b": "t"})[0]
    assert unmapped["unknown_fields"]["sources"]["probe"]["fields"] == {"/b": "t"}
