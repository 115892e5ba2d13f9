"""engine/serialize.py: canonical Storyline key order, dropping rules, sorted free maps, dumps/loads."""

from __future__ import annotations

import copy
import random
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import storyline_documents

from mapc.engine.serialize import canonical_storyline, dumps, loads
from mapc.engine.values import json_equal

# Declaration orders, written out from docs/storyline.md (not read from the module).
ROOT = [
    "schema_version",
    "origin",
    "run",
    "trajectory",
    "attempt_id",
    "session",
    "agent",
    "parent",
    "children",
    "notes",
    "task",
    "prompt",
    "started_at",
    "finished_at",
    "final_metrics",
    "continued_trajectory_ref",
    "extra",
    "meta",
    "unknown_fields",
    "unknown_key_counts",
    "turns",
]
TURN = [
    "id",
    "kind",
    "ts",
    "src",
    "msg",
    "reason",
    "effort",
    "tool_calls",
    "observation",
    "metrics",
    "model",
    "nllm",
    "copied",
    "latency_ms",
    "ttft_ms",
    "extra",
    "env",
    "prompt",
    "finished_at",
]
TOOL_CALL = ["tcid", "fn", "args", "result", "duration_ms", "extra", "kind", "response"]
AGENT = ["id", "name", "ver", "model", "tools", "extra"]
ORIGIN = ["format", "schema_version", "document_id"]
PARENT = ["psid", "scid", "ptid", "rel"]
ENV = ["name", "endpoint", "id", "event_type", "request_id", "state"]
RESULT = ["correct", "final_answer", "ground_truth", "status", "score", "max_score", "error", "artifacts"]


def ordered(keys: list[str]) -> dict[str, Any]:
    """A dict with `keys` in reversed order, each value naming its key."""
    return {k: f"<{k}>" for k in reversed(keys)}


def minimal(**root: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "turns": [{"msg": "hi", "src": "user", "id": 1}],
        "agent": {"id": "a"},
        "session": "s",
        "schema_version": "storyline/v1",
    }
    doc.update(root)
    return doc


def turn(**fields: Any) -> dict[str, Any]:
    return {"id": 1, "src": "agent", "msg": "m", **fields}


def call(**fields: Any) -> dict[str, Any]:
    return {"tcid": "c", "fn": "f", "args": 1, **fields}


def first_turn(doc: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = canonical_storyline(doc)["turns"][0]
    return result


def keys_of(value: Any) -> Any:
    """The key order of every object in `value`, for order-sensitive comparisons."""
    if type(value) is dict:
        return [(k, keys_of(v)) for k, v in value.items()]
    if type(value) is list:
        return [keys_of(v) for v in value]
    return value


# --- key orders -----------------------------------------------------------------------------------


def test_root_key_order() -> None:
    doc = ordered(ROOT)
    doc.update(turns=[], agent={"id": "a"}, unknown_fields={"sources": {"x": {"fields": {"/a": 1}}}})
    doc.update(unknown_key_counts={"x": {"/a": 1}}, prompt={"system": "s"}, task={"llm": {"k": 1}})
    doc.update(origin={"format": "f"}, parent={"psid": "p"})
    assert list(canonical_storyline(doc)) == ROOT


def test_turn_and_tool_call_key_order() -> None:
    tool_call = ordered(TOOL_CALL) | {"response": {"exit_code": 0, "status": "ok"}}
    t = ordered(TURN) | {"tool_calls": [tool_call], "env": {"name": "e"}, "prompt": {"user": "u"}}
    out = first_turn(minimal(turns=[t]))
    assert list(out) == TURN
    assert list(out["tool_calls"][0]) == TOOL_CALL
    assert list(out["tool_calls"][0]["response"]) == ["status", "exit_code"]


@pytest.mark.parametrize(
    ("field", "order"),
    [("agent", AGENT), ("origin", ORIGIN), ("parent", PARENT)],
    ids=["agent", "origin", "parent"],
)
def test_owned_object_key_order(field: str, order: list[str]) -> None:
    assert list(canonical_storyline(minimal(**{field: ordered(order)}))[field]) == order


def test_task_key_orders() -> None:
    result = ordered(RESULT) | {"zeta": 1, "category": "c", "attempts_tried": 2}
    task = {"result": result, "llm": {"k": 3}, "env": ordered(ENV) | {"state": {"b": 1, "a": 2}}}
    out = canonical_storyline(minimal(task=task))["task"]
    assert list(out) == ["env", "llm", "result"]
    assert list(out["env"]) == ENV
    assert list(out["env"]["state"]) == ["a", "b"]
    assert list(out["result"]) == [*RESULT, "attempts_tried", "category", "zeta"]


def test_prompt_and_unknown_fields_key_orders() -> None:
    sources = {
        "openai-msg": {"fields": {"/z": 1, "/a": {"y": 1, "x": 2}}, "source_document_id": "p"},
        "atif": {"fields": {"/b": None}, "source_document_id": "h"},
    }
    doc = minimal(prompt={"user": "u", "system": "s"}, unknown_fields={"sources": sources})
    out = canonical_storyline(doc)
    assert list(out["prompt"]) == ["system", "user"]
    assert list(out["unknown_fields"]["sources"]) == ["atif", "openai-msg"]
    source = out["unknown_fields"]["sources"]["openai-msg"]
    assert list(source) == ["source_document_id", "fields"]
    assert keys_of(source["fields"]) == [("/a", [("x", 2), ("y", 1)]), ("/z", 1)]


def test_unknown_keys_stay_after_the_known_ones_in_their_order() -> None:
    doc = {"zz_vendor": {"b": 1, "a": 2}, "turns": [], "aa_vendor": 1} | minimal(turns=[])
    out = canonical_storyline(doc)
    assert list(out) == ["schema_version", "session", "agent", "turns", "zz_vendor", "aa_vendor"]
    assert list(out["zz_vendor"]) == ["a", "b"]
    out_turn = first_turn(minimal(turns=[{"x-late": 1, "msg": None, "src": "agent", "id": 1}]))
    assert list(out_turn) == ["id", "src", "msg", "x-late"]


# --- dropping rules --------------------------------------------------------------------------------


NULL_OPTIONALS = [
    (minimal(extra=None), ("extra",)),
    (minimal(run=None, meta=None), ("run",)),
    (minimal(started_at=None), ("started_at",)),
    (minimal(agent={"id": "a", "name": None}), ("agent", "name")),
    (minimal(origin={"format": "f", "document_id": None}), ("origin", "document_id")),
    (minimal(parent={"psid": "p", "scid": None}), ("parent", "scid")),
    (minimal(turns=[turn(reason=None, ts=None)]), ("turns", 0, "reason")),
    (minimal(turns=[turn(observation=None)]), ("turns", 0, "observation")),
    (minimal(turns=[turn(tool_calls=[call(result=None)])]), ("turns", 0, "tool_calls", 0, "result")),
    (
        minimal(turns=[turn(tool_calls=[call(response={"status": None, "exit_code": 1})])]),
        ("turns", 0, "tool_calls", 0, "response", "status"),
    ),
    (minimal(task={"env": {"name": None, "id": "i"}}), ("task", "env", "name")),
    (minimal(task={"llm": {"k": None}}), ("task", "llm", "k")),
    (minimal(task={"result": {"score": None, "status": "ok"}}), ("task", "result", "score")),
    (minimal(prompt={"system": "s", "user": None}), ("prompt", "user")),
]


@pytest.mark.parametrize(
    ("doc", "pointer"), NULL_OPTIONALS, ids=["/".join(map(str, pointer)) for _, pointer in NULL_OPTIONALS]
)
def test_null_optional_fields_are_dropped(doc: dict[str, Any], pointer: tuple[str | int, ...]) -> None:
    node: Any = canonical_storyline(doc)
    for token in pointer[:-1]:
        node = node[token]
    assert pointer[-1] not in node


def test_required_nulls_and_free_map_nulls_are_kept() -> None:
    call = {"tcid": "c", "fn": "f", "args": None}
    doc = minimal(turns=[turn(msg=None, tool_calls=[call])], task={"result": {"vendor": None}})
    doc["extra"] = {"a": None}
    out = canonical_storyline(doc)
    assert out["turns"][0]["msg"] is None and "msg" in out["turns"][0]
    assert "args" in out["turns"][0]["tool_calls"][0]
    assert out["task"]["result"] == {"vendor": None}
    assert out["extra"] == {"a": None}


@pytest.mark.parametrize(
    ("parent", "expected"),
    [
        ({"psid": "p", "rel": "spawn"}, {"psid": "p"}),
        ({"rel": "spawn", "ptid": 3, "psid": "p"}, {"psid": "p", "ptid": 3}),
        ({"psid": "p", "rel": "fork"}, {"psid": "p", "rel": "fork"}),
    ],
    ids=["spawn-dropped", "spawn-dropped-with-ptid", "other-kept"],
)
def test_parent_relation_default_is_dropped(parent: dict[str, Any], expected: dict[str, Any]) -> None:
    assert canonical_storyline(minimal(parent=parent))["parent"] == expected


def test_empty_env_state_is_dropped() -> None:
    doc = minimal(task={"env": {"name": "n", "state": {}}}, turns=[turn(env={"state": {}, "id": "x"})])
    out = canonical_storyline(doc)
    assert out["task"]["env"] == {"name": "n"}
    assert out["turns"][0]["env"] == {"id": "x"}
    kept = canonical_storyline(minimal(task={"env": {"state": {"k": None}}}))
    assert kept["task"]["env"] == {"state": {"k": None}}


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ({"system": "s", "user": ""}, {"system": "s"}),
        ({"user": "u", "system": ""}, {"user": "u"}),
        ({"system": "", "user": ""}, None),
        ({"system": ""}, None),
        ({}, None),
        ({"system": None, "user": ""}, None),
    ],
    ids=["drop-empty-user", "drop-empty-system", "both-empty", "one-empty", "no-keys", "null-and-empty"],
)
def test_document_prompt(prompt: dict[str, Any], expected: dict[str, Any] | None) -> None:
    out = canonical_storyline(minimal(prompt=prompt))
    assert out.get("prompt") == expected
    assert ("prompt" in out) == (expected is not None)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ({"user": "", "system": ""}, {"system": "", "user": ""}),
        ({"system": "s", "user": ""}, {"system": "s"}),
        ({"user": "u", "system": ""}, {"user": "u"}),
        ({"system": ""}, {}),
    ],
    ids=["explicit-clear", "drop-empty-user", "drop-empty-system", "lone-empty"],
)
def test_turn_prompt(prompt: dict[str, Any], expected: dict[str, Any]) -> None:
    out = first_turn(minimal(turns=[turn(prompt=prompt)]))
    assert keys_of(out["prompt"]) == keys_of(expected)


@pytest.mark.parametrize(
    "unknown",
    [
        {},
        {"sources": {}},
        {"sources": None},
        {"sources": {"atif": {"source_document_id": "h", "fields": {}}}},
        {"sources": {"atif": {"source_document_id": "h"}, "actf": {"fields": {}}}},
    ],
    ids=["empty", "no-sources", "null-sources", "source-without-fields", "two-empty-sources"],
)
def test_empty_unknown_fields_are_dropped(unknown: dict[str, Any]) -> None:
    assert "unknown_fields" not in canonical_storyline(minimal(unknown_fields=unknown))


def test_unknown_fields_with_a_field_are_kept_whole() -> None:
    sources = {"b": {"source_document_id": "h", "fields": {}}, "a": {"fields": {"/x": None}}}
    out = canonical_storyline(minimal(unknown_fields={"sources": sources}))
    assert keys_of(out["unknown_fields"]) == [
        (
            "sources",
            [("a", [("fields", [("/x", None)])]), ("b", [("source_document_id", "h"), ("fields", [])])],
        )
    ]


@pytest.mark.parametrize(
    ("counts", "kept"),
    [({}, False), ({"atif": {}}, True), ({"atif": {"/steps/*/v": 2}}, True)],
    ids=["empty", "empty-source", "counted"],
)
def test_unknown_key_counts(counts: dict[str, Any], kept: bool) -> None:
    out = canonical_storyline(minimal(unknown_key_counts=counts))
    assert ("unknown_key_counts" in out) == kept


# --- free values, timestamps, order ---------------------------------------------------------------------


def test_free_maps_are_sorted_recursively_and_arrays_keep_their_order() -> None:
    msg = [{"type": "text", "text": "t"}, {"z": [{"b": 1, "a": [3, 2, 1]}], "a": None}]
    call = {"tcid": "c", "fn": "f", "args": {"z": 1, "a": {"d": 1, "c": 2}}}
    doc = minimal(turns=[turn(msg=msg, tool_calls=[call], metrics={"b": 1, "a": 2})], meta={"y": 1, "x": 2})
    out = canonical_storyline(doc)
    t = out["turns"][0]
    assert keys_of(t["msg"]) == [
        [("text", "t"), ("type", "text")],
        [("a", None), ("z", [[("a", [3, 2, 1]), ("b", 1)]])],
    ]
    assert keys_of(t["tool_calls"][0]["args"]) == [("a", [("c", 2), ("d", 1)]), ("z", 1)]
    assert list(t["metrics"]) == ["a", "b"]
    assert list(out["meta"]) == ["x", "y"]


@pytest.mark.parametrize(
    ("ts", "text"),
    [
        ("2026-01-01 00:00:00+00:00", b'"2026-01-01 00:00:00+00:00"'),
        ("2026-08-20T00:00:00.1234567891z", b'"2026-08-20T00:00:00.1234567891z"'),
        (1785578400.25, b"1785578400.25"),
        (1785578400, b"1785578400"),
        (-1.25, b"-1.25"),
    ],
    ids=["space-separator", "ten-digit-fraction", "float-epoch", "int-epoch", "negative"],
)
def test_timestamps_are_re_emitted_verbatim(ts: Any, text: bytes) -> None:
    doc = minimal(started_at=ts, finished_at=ts, turns=[turn(ts=ts, finished_at=ts)])
    out = canonical_storyline(doc)
    assert out["started_at"] == ts and type(out["started_at"]) is type(ts)
    assert out["turns"][0]["ts"] == ts and type(out["turns"][0]["ts"]) is type(ts)
    assert dumps(doc).count(text) == 4


def test_turn_and_tool_call_order_never_change() -> None:
    calls = [{"tcid": f"c{i}", "fn": "f", "args": i} for i in (3, 1, 2)]
    turns = [turn(id=5), turn(id=-1, tool_calls=calls), turn(id=2, tool_calls=[])]
    out = canonical_storyline(minimal(turns=turns))
    assert [t["id"] for t in out["turns"]] == [5, -1, 2]
    assert [c["tcid"] for c in out["turns"][1]["tool_calls"]] == ["c3", "c1", "c2"]
    assert out["turns"][2]["tool_calls"] == []


def test_values_without_objects_are_shared_not_copied() -> None:
    children = ["a", "b"]
    extra = {"a": [1, 2], "b": "x"}
    out = canonical_storyline(minimal(children=children, extra=extra))
    assert out["children"] is children
    assert out["extra"] is extra  # already sorted


# --- dumps and loads --------------------------------------------------------------------------------


def test_dumps_compact_and_pretty() -> None:
    doc = minimal(extra={"b": 1, "a": 2})
    compact = dumps(doc)
    assert compact == (
        b'{"schema_version":"storyline/v1","session":"s","agent":{"id":"a"},'
        b'"extra":{"a":2,"b":1},"turns":[{"id":1,"src":"user","msg":"hi"}]}'
    )
    pretty = dumps(doc, pretty=True)
    assert pretty.endswith(b"}\n")
    assert pretty.startswith(b'{\n  "schema_version": "storyline/v1",\n  "session": "s",\n')
    assert loads(pretty) == loads(compact)


def test_dumps_falls_back_when_the_data_holds_the_tag_marker() -> None:
    doc = minimal(extra={"\ufdd0\u0100b": "\ufdd0", "a": 1}, notes="\ufdd0\u0101x")
    assert dumps(doc) == orjson.dumps(canonical_storyline(doc))
    assert "\ufdd0\u0101x" in loads(dumps(doc))["notes"]  # type: ignore[index]


def test_dumps_falls_back_when_an_object_has_too_many_keys() -> None:
    doc = minimal(**{f"vendor{i:05}": i for i in range(2500)})
    assert dumps(doc) == orjson.dumps(canonical_storyline(doc))


def test_loads_parses_json() -> None:
    assert loads('{"a":[1,2.5,null]}') == {"a": [1, 2.5, None]}
    assert loads(b"[]") == []
    with pytest.raises(orjson.JSONDecodeError):
        loads(b"{")


# --- laws over generated Storylines ----------------------------------------------------------------------

TEXT = st.one_of(
    st.sampled_from(["", "spawn", "a", "z", "~1", "/", "é", "system", "user", "id", "msg"]),
    st.text(st.characters(codec="utf-8", exclude_characters="\ufdd0"), max_size=5),
)
JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**64 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        TEXT,
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=4,
)
EDGY = st.one_of(JSON, st.sampled_from([None, "", {}, [], "spawn", {"system": "", "user": ""}]))


@st.composite
def owned(draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]], always: tuple[str, ...] = ()) -> dict[str, Any]:
    """An owned object: `always` and some other known keys, maybe unknown ones, in a random order."""
    keys = draw(st.lists(st.sampled_from(sorted(fields)), unique=True, min_size=len(fields) // 4))
    keys += [k for k in always if k not in keys]
    items = [(k, draw(fields[k])) for k in keys]
    for key, value in draw(st.dictionaries(TEXT.filter(lambda k: k not in fields), JSON, max_size=2)).items():
        items.insert(draw(st.integers(0, len(items))), (key, value))
    return dict(items)


def _fields(names: list[str], **special: st.SearchStrategy[Any]) -> dict[str, st.SearchStrategy[Any]]:
    return {name: special.get(name, EDGY) for name in names}


ENV_S = owned(_fields(ENV))
PROMPT_S = st.one_of(owned(_fields(["system", "user"])), EDGY)
TOOL_CALL_S = owned(_fields(TOOL_CALL, response=owned(_fields(["status", "exit_code"]))))
TURN_S = owned(
    _fields(TURN, tool_calls=st.lists(TOOL_CALL_S, max_size=2), env=ENV_S, prompt=PROMPT_S),
    always=("id", "src", "msg"),
)
UNKNOWN_S = owned({"sources": st.dictionaries(TEXT, owned(_fields(["source_document_id", "fields"])), max_size=2)})
TASK_S = owned(
    {
        "env": ENV_S,
        "llm": owned(_fields(["k"])),
        "result": st.dictionaries(st.sampled_from(RESULT) | TEXT, EDGY),
    }
)
STORYLINE = owned(
    _fields(
        ROOT,
        origin=owned(_fields(ORIGIN)),
        agent=owned(_fields(AGENT)),
        parent=owned(_fields(PARENT)),
        task=TASK_S,
        prompt=PROMPT_S,
        unknown_fields=UNKNOWN_S,
        turns=st.lists(TURN_S, min_size=1, max_size=2),
    ),
    always=("turns",),
)


@given(STORYLINE)
def test_canonical_storyline_is_idempotent_and_leaves_its_input_alone(doc: dict[str, Any]) -> None:
    before = copy.deepcopy(doc)
    once = canonical_storyline(doc)
    assert keys_of(doc) == keys_of(before)
    assert keys_of(canonical_storyline(once)) == keys_of(once)


def _with_tag_marker(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` holding the marker `dumps` tags keys with (U+FDD0), in a key and in a string."""
    return doc | {"meta": {"\ufdd0\u0100": "x\ufdd0\u07ffy"}}


@given(st.one_of(STORYLINE, STORYLINE.map(_with_tag_marker)))
def test_dumps_writes_the_canonical_storyline(doc: dict[str, Any]) -> None:
    canonical = canonical_storyline(doc)
    assert dumps(doc) == orjson.dumps(canonical)
    pretty = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
    assert dumps(doc, pretty=True) == orjson.dumps(canonical, option=pretty)
    assert keys_of(loads(dumps(doc))) == keys_of(canonical)


def _is_sorted_everywhere(value: Any) -> bool:
    if type(value) is dict:
        return list(value) == sorted(value) and all(_is_sorted_everywhere(v) for v in value.values())
    if type(value) is list:
        return all(_is_sorted_everywhere(v) for v in value)
    return True


def _in_declaration_order(obj: dict[str, Any], order: list[str]) -> bool:
    known = [k for k in obj if k in order]
    # Known keys in declaration order, and unknown keys only after them.
    return known == [k for k in order if k in obj] and list(obj)[: len(known)] == known


@given(STORYLINE)
def test_output_is_in_canonical_form(doc: dict[str, Any]) -> None:
    out = canonical_storyline(doc)
    assert _in_declaration_order(out, ROOT)
    for key in ("extra", "meta", "final_metrics", "children"):
        assert key not in out or (out[key] is not None and _is_sorted_everywhere(out[key]))
    for t in out["turns"]:
        assert _in_declaration_order(t, TURN)
        assert all(t[k] is not None for k in t if k in TURN and k not in ("id", "src", "msg"))
        for key in ("msg", "observation", "metrics", "effort"):
            assert _is_sorted_everywhere(t.get(key))
        for call in t.get("tool_calls") if type(t.get("tool_calls")) is list else []:
            assert _in_declaration_order(call, TOOL_CALL)
            assert _is_sorted_everywhere(call.get("args")) and _is_sorted_everywhere(call.get("result"))


@given(storyline_documents())
def test_valid_storylines_reach_a_fixed_point_after_one_dump(doc: dict[str, Any]) -> None:
    text = dumps(doc)
    assert json_equal(loads(text), canonical_storyline(doc))
    assert dumps(loads(text)) == text  # type: ignore[arg-type]
    assert dumps(loads(dumps(doc, pretty=True)), pretty=True) == dumps(doc, pretty=True)  # type: ignore[arg-type]


def test_shuffled_turn_keys_give_the_same_bytes() -> None:
    t = turn(ts=1.5, metrics={"b": 1, "a": 2}, reason="r", kind="k", extra={"y": [1, {"b": 0, "a": 0}]})
    items = list(t.items())
    random.Random(7).shuffle(items)
    assert dumps(minimal(turns=[t])) == dumps(minimal(turns=[dict(items)]))
