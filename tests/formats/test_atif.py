"""The ATIF v1.7 mapping (mappings/atif.yaml) against docs/formats.md (ATIF) and docs/envelope.md.

1. laws over the real fixtures and generated trajectories: GetPut, PutGet, valid output;
2. one test per row of the ATIF pointer table (mappings/atif.yaml, docs/formats.md), and the rules beside it;
3. the reverse direction: write-backs, defaults, the subagent tree;
4. every reject rule, with its error code and the pointer of the offending value;
5. file containers: arrays and JSONL;
6. the ``_storyline`` envelope.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from atif_strategies import atif_containers, atif_documents, has_known_nulls, without_known_nulls
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from through_hub import Format, at

from mapc.engine import canonical, envelope, pointer, storyline
from mapc.engine.convert import from_storyline, into_storyline
from mapc.engine.problems import MapcError
from mapc.engine.values import MISSING, json_equal

ATIF_FIXTURES = sorted((FIXTURES / "atif").glob("*.json"))
FIXTURE_IDS = [p.stem for p in ATIF_FIXTURES]
LAWS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CONTAINER_LAWS = settings(LAWS, max_examples=50)


# --- helpers -------------------------------------------------------------------------------


_FORMAT = Format("atif")
forward, reverse, roundtrip = _FORMAT.forward, _FORMAT.reverse, _FORMAT.roundtrip
problems, reverse_problems = _FORMAT.problems, _FORMAT.reverse_problems


def atif(**fields: Any) -> dict[str, Any]:
    """A minimal valid ATIF trajectory; keyword fields replace or add root keys (None drops one)."""
    doc: dict[str, Any] = {
        "schema_version": "ATIF-v1.7",
        "session_id": "sess-1",
        "agent": {"name": "agent-x", "version": "1.0"},
        "steps": [{"step_id": 1, "source": "user", "message": "hi"}],
    }
    doc.update(fields)
    return {k: v for k, v in doc.items() if v is not None}


def step(step_id: int = 1, **fields: Any) -> dict[str, Any]:
    return {"step_id": step_id, "source": "agent", "message": "m", **fields}


def call(tool_call_id: str = "c1", **fields: Any) -> dict[str, Any]:
    return {"tool_call_id": tool_call_id, "function_name": "fn", "arguments": {"a": 1}, **fields}


def child(trajectory_id: str, **fields: Any) -> dict[str, Any]:
    """A subagent trajectory: identified by `trajectory_id`, no session_id unless given."""
    return atif(**{"session_id": None, "trajectory_id": trajectory_id, **fields})


def one_turn(st: dict[str, Any]) -> dict[str, Any]:
    """The Storyline turn a one-step trajectory makes of `st`."""
    (story,) = forward(atif(steps=[st]))
    return story["turns"][0]


def storyline_doc(**fields: Any) -> dict[str, Any]:
    """A minimal valid Storyline (not from ATIF); keyword fields replace or add keys."""
    doc: dict[str, Any] = {
        "schema_version": "storyline/v1",
        "session": "s",
        "agent": {"id": "ag"},
        "turns": [{"id": 1, "src": "agent", "msg": "m"}],
    }
    doc.update(fields)
    return doc


def with_residuals(story: dict[str, Any], **sources: dict[str, Any]) -> dict[str, Any]:
    """`story` with unknown fields of each source (document id ``doc-<source>``) and their counts.

    The pointers used with this helper normalize to themselves, so each counts 1.
    """
    story["unknown_fields"] = {
        "sources": {s: {"source_document_id": f"doc-{s}", "fields": f} for s, f in sources.items()}
    }
    story["unknown_key_counts"] = {s: dict.fromkeys(f, 1) for s, f in sources.items() if f}
    return story


def fixture(name: str) -> dict[str, Any]:
    return orjson.loads((FIXTURES / "atif" / f"{name}.json").read_bytes())


def with_document_id(stories: list[dict[str, Any]], sdid: str) -> list[dict[str, Any]]:
    """`stories` with their ATIF `source_document_id` replaced by `sdid`."""
    out = copy.deepcopy(stories)
    for story in out:
        entry = (story.get("unknown_fields") or {}).get("sources", {}).get("atif")
        if entry:
            entry["source_document_id"] = sdid
        kept = (story.get("origin") or {}).get("kept")  # ATIF's own keys kept (engine/known.py)
        if kept:
            kept["source_document_id"] = sdid
    return out


# === 1. Laws =================================================================================


@pytest.mark.parametrize("path", ATIF_FIXTURES, ids=FIXTURE_IDS)
def test_fixture_forward_output_is_valid_storyline(path: Path) -> None:
    stories = into_storyline("atif", path.read_bytes())
    assert stories
    for story in stories:
        assert storyline.check(story) == []


@pytest.mark.parametrize("path", ATIF_FIXTURES, ids=FIXTURE_IDS)
def test_fixture_get_put(path: Path) -> None:
    source = orjson.loads(path.read_bytes())
    back = from_storyline("atif", into_storyline("atif", path.read_bytes()))
    assert json_equal(back, source)


@pytest.mark.parametrize("path", ATIF_FIXTURES, ids=FIXTURE_IDS)
def test_fixture_put_get(path: Path) -> None:
    stories = into_storyline("atif", path.read_bytes())
    again = into_storyline("atif", orjson.dumps(from_storyline("atif", copy.deepcopy(stories))))
    assert json_equal(again, stories)


@pytest.mark.parametrize("path", ATIF_FIXTURES, ids=FIXTURE_IDS)
def test_fixture_has_no_unknown_fields(path: Path) -> None:
    # docs/envelope.md: the fixtures hold no key outside the ATIF model, so nothing is residual.
    for story in into_storyline("atif", path.read_bytes()):
        assert "unknown_fields" not in story
        assert "unknown_key_counts" not in story


# Generated documents may hold explicit nulls of known optional fields (e.g. "notes": null);
# the fidelity boundary lets those come back missing, so GetPut compares against the input
# with them removed (`without_known_nulls`).  Unknown keys keep their nulls and are compared
# as they are.


@LAWS
@given(atif_documents())
def test_generated_forward_output_is_valid_storyline(doc: dict[str, Any]) -> None:
    for story in forward(doc):
        assert storyline.check(story) == []


@LAWS
@given(atif_documents())
def test_generated_get_put(doc: dict[str, Any]) -> None:
    assert json_equal(roundtrip(doc), without_known_nulls(doc))


@LAWS
@given(atif_documents())
def test_generated_put_get(doc: dict[str, Any]) -> None:
    stories = forward(doc)
    back = reverse(stories)
    again = forward(back)
    # The ATIF source_document_id hashes the raw input: when export normalized a known null
    # away, the rebuilt document (and so its hash) differs in exactly that; all else is equal.
    assert json_equal(again, with_document_id(stories, canonical.document_id(back)))
    if not has_known_nulls(doc):
        assert json_equal(again, stories)


@CONTAINER_LAWS
@given(atif_containers())
def test_generated_arrays_and_jsonl_round_trip(docs: list[dict[str, Any]]) -> None:
    from_array = into_storyline("atif", orjson.dumps(docs))
    from_jsonl = into_storyline("atif", b"\n".join(orjson.dumps(d) for d in docs) + b"\n", jsonl=True)
    assert json_equal(from_array, from_jsonl)
    back = reverse(from_array)
    expected = [without_known_nulls(d) for d in docs]
    assert json_equal(back, expected if len(docs) > 1 else expected[0])


def test_child_session_id_survives_an_unknown_key_in_the_child() -> None:
    # A child whose session_id is not derivable (≠ its trajectory_id) gets it written back on
    # export; an unknown key restored inside the same child must not lose it.
    doc = atif(subagent_trajectories=[child("c1", session_id="child-session", vendor=1)])
    assert json_equal(roundtrip(doc), doc)


def test_child_session_id_survives_an_unknown_key_in_the_child_agent() -> None:
    doc = atif(
        subagent_trajectories=[child("c1", session_id="child-session", agent={"name": "a", "version": "1", "x": None})]
    )
    assert json_equal(roundtrip(doc), doc)


def test_root_session_equal_to_a_child_trajectory_id_is_rejected() -> None:
    # The root's document id is its session "S", the child's its trajectory_id "S": two Storylines
    # with one identity could not be linked by /children (nor stored), so import refuses it.
    doc = atif(session_id="S", subagent_trajectories=[child("S", session_id="c")])
    with pytest.raises(MapcError) as info:
        forward(doc)
    assert [(p.code, p.pointer) for p in info.value.problems] == [
        ("tree.duplicate_identity", "/subagent_trajectories/0")
    ]


# === 2. The mapping table, row by row ========================================================


def _story(doc: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return forward(doc)[index]


ROWS = [
    # (id, ATIF document, {Storyline pointer: expected value})
    ("schema_version", atif(schema_version="ATIF-v1.5"), {"/origin/schema_version": "ATIF-v1.5"}),
    ("session_id", atif(session_id="abc"), {"/session": "abc"}),
    ("trajectory_id", atif(trajectory_id="t-1"), {"/trajectory": "t-1", "/session": "sess-1"}),
    (
        "trajectory_id without session_id",
        atif(session_id=None, trajectory_id="t-1"),
        {"/trajectory": "t-1", "/session": "t-1"},
    ),
    (
        "agent/name",
        atif(agent={"name": "bot", "version": "2"}),
        {"/agent/id": "bot", "/agent/name": "bot"},
    ),
    ("agent/version", atif(agent={"name": "bot", "version": "2.1"}), {"/agent/ver": "2.1"}),
    (
        "agent/model_name",
        atif(agent={"name": "b", "version": "1", "model_name": "m-1"}),
        {"/agent/model": "m-1"},
    ),
    (
        "agent/tool_definitions",
        atif(agent={"name": "b", "version": "1", "tool_definitions": [{"name": "t"}]}),
        {"/agent/tools": [{"name": "t"}]},
    ),
    (
        "agent/extra",
        atif(agent={"name": "b", "version": "1", "extra": {"k": [1, None]}}),
        {"/agent/extra": {"k": [1, None]}},
    ),
    ("notes", atif(notes="n"), {"/notes": "n"}),
    ("final_metrics", atif(final_metrics={"cost": 1.5}), {"/final_metrics": {"cost": 1.5}}),
    (
        "continued_trajectory_ref",
        atif(continued_trajectory_ref="next.json"),
        {"/continued_trajectory_ref": "next.json"},
    ),
    ("extra", atif(extra={"a": {"b": None}}), {"/extra": {"a": {"b": None}}}),
    ("steps/step_id", atif(steps=[step(7)]), {"/turns/0/id": 7}),
    (
        "steps/timestamp",
        atif(steps=[step(timestamp="2026-08-01T09:00:00.5+02:00")]),
        {"/turns/0/ts": "2026-08-01T09:00:00.5+02:00"},
    ),
    ("steps/source", atif(steps=[step(source="system")]), {"/turns/0/src": "system"}),
    ("steps/message", atif(steps=[step(message=[{"type": "text"}])]), {"/turns/0/msg": [{"type": "text"}]}),
    ("steps/message null", atif(steps=[step(message=None)]), {"/turns/0/msg": None}),
    ("steps/model_name", atif(steps=[step(model_name="m")]), {"/turns/0/model": "m"}),
    ("steps/reasoning_effort", atif(steps=[step(reasoning_effort={"l": 2})]), {"/turns/0/effort": {"l": 2}}),
    ("steps/reasoning_content", atif(steps=[step(reasoning_content="why")]), {"/turns/0/reason": "why"}),
    (
        "steps/tool_calls",
        atif(steps=[step(tool_calls=[call("a"), call("b")])]),
        {"/turns/0/tool_calls/0/tcid": "a", "/turns/0/tool_calls/1/tcid": "b"},
    ),
    ("steps/tool_calls empty", atif(steps=[step(tool_calls=[])]), {"/turns/0/tool_calls": []}),
    ("steps/tool_calls absent", atif(steps=[step()]), {"/turns/0/tool_calls": MISSING}),
    (
        "tool_calls/tool_call_id",
        atif(steps=[step(tool_calls=[call("id-9")])]),
        {"/turns/0/tool_calls/0/tcid": "id-9"},
    ),
    (
        "tool_calls/function_name",
        atif(steps=[step(tool_calls=[call(function_name="grep")])]),
        {"/turns/0/tool_calls/0/fn": "grep"},
    ),
    (
        "tool_calls/arguments",
        atif(steps=[step(tool_calls=[call(arguments={"q": [1]})])]),
        {"/turns/0/tool_calls/0/args": {"q": [1]}},
    ),
    (
        "tool_calls/arguments null",
        atif(steps=[step(tool_calls=[call(arguments=None)])]),
        {"/turns/0/tool_calls/0/args": None},
    ),
    (
        "tool_calls/result",
        atif(steps=[step(tool_calls=[call(result={"ok": True})])]),
        {"/turns/0/tool_calls/0/result": {"ok": True}},
    ),
    (
        "tool_calls/extra",
        atif(steps=[step(tool_calls=[call(extra={"raw": "x"})])]),
        {"/turns/0/tool_calls/0/extra": {"raw": "x"}, "/turns/0/tool_calls/0/duration_ms": MISSING},
    ),
    (
        "tool_calls/extra/duration_ms integer",
        atif(steps=[step(tool_calls=[call(extra={"duration_ms": 42, "raw": 1})])]),
        {
            "/turns/0/tool_calls/0/extra": {"duration_ms": 42, "raw": 1},
            "/turns/0/tool_calls/0/duration_ms": 42,
        },
    ),
    (
        "tool_calls/extra/duration_ms float is not promoted",
        atif(steps=[step(tool_calls=[call(extra={"duration_ms": 42.0})])]),
        {"/turns/0/tool_calls/0/extra": {"duration_ms": 42.0}, "/turns/0/tool_calls/0/duration_ms": MISSING},
    ),
    (
        "tool_calls/extra/duration_ms string is not promoted",
        atif(steps=[step(tool_calls=[call(extra={"duration_ms": "42"})])]),
        {"/turns/0/tool_calls/0/duration_ms": MISSING},
    ),
    (
        "tool_calls/extra/duration_ms bool is not promoted",
        atif(steps=[step(tool_calls=[call(extra={"duration_ms": True})])]),
        {"/turns/0/tool_calls/0/duration_ms": MISSING},
    ),
    (
        "observation/results",
        atif(steps=[step(observation={"results": [{"content": "x", "status": "ok"}]})]),
        {"/turns/0/observation": {"results": [{"content": "x", "status": "ok"}]}},
    ),
    (
        "metrics whole",
        atif(steps=[step(metrics={"prompt_tokens": 3, "latency_ms": 9})]),
        {"/turns/0/metrics": {"prompt_tokens": 3, "latency_ms": 9}},
    ),
    ("metrics not an object", atif(steps=[step(metrics="fast")]), {"/turns/0/metrics": "fast"}),
    ("steps/extra", atif(steps=[step(extra={"k": 1})]), {"/turns/0/extra": {"k": 1}}),
    ("steps/llm_call_count", atif(steps=[step(llm_call_count=3)]), {"/turns/0/nllm": 3}),
    ("steps/is_copied_context", atif(steps=[step(is_copied_context=True)]), {"/turns/0/copied": True}),
    (
        "origin",
        atif(),
        {"/schema_version": "storyline/v1", "/origin": {"format": "atif", "schema_version": "ATIF-v1.7"}},
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [pytest.param(d, e, id=i) for i, d, e in ROWS])
def test_mapping_row(doc: dict[str, Any], expected: dict[str, Any]) -> None:
    story = _story(doc)
    for ptr, value in expected.items():
        got = at(story, ptr)
        if value is MISSING:
            assert got is MISSING, (ptr, got)
        else:
            assert json_equal(got, value), (ptr, got)
    assert json_equal(roundtrip(doc), doc)


def test_steps_keep_their_array_order_not_id_order() -> None:
    story = _story(atif(steps=[step(5), step(2), step(9)]))
    assert [t["id"] for t in story["turns"]] == [5, 2, 9]


def test_step_ids_need_not_start_at_one_or_be_contiguous() -> None:
    story = _story(atif(steps=[step(2), step(5)]))
    assert [t["id"] for t in story["turns"]] == [2, 5]


def test_explicit_null_of_known_optional_fields_is_absent() -> None:
    turn = one_turn(step(timestamp=None, model_name=None, metrics=None, tool_calls=None, observation=None))
    assert set(turn) == {"id", "src", "msg"}


# --- metrics promotions: latency_ms, elapsed_ms, duration_ms, ttft_ms -------------------------

LATENCY = [
    ("latency_ms int", {"latency_ms": 12}, 12),
    ("latency_ms float truncated", {"latency_ms": 12.9}, 12),
    ("negative float truncated toward zero", {"latency_ms": -3.7}, -3),
    ("elapsed_ms fallback", {"elapsed_ms": 7}, 7),
    ("duration_ms fallback", {"duration_ms": 8.5}, 8),
    ("latency_ms before elapsed_ms", {"elapsed_ms": 7, "latency_ms": 12}, 12),
    ("elapsed_ms before duration_ms", {"duration_ms": 8, "elapsed_ms": 7}, 7),
    ("string latency_ms blocks the fallback", {"latency_ms": "12", "elapsed_ms": 7}, MISSING),
    ("null latency_ms blocks the fallback", {"latency_ms": None, "elapsed_ms": 7}, MISSING),
    ("bool elapsed_ms blocks the fallback", {"elapsed_ms": True, "duration_ms": 8}, MISSING),
    ("object latency_ms gives none", {"latency_ms": {"v": 1}}, MISSING),
    ("no timing key", {"prompt_tokens": 5}, MISSING),
]


@pytest.mark.parametrize(("metrics", "expected"), [pytest.param(m, e, id=i) for i, m, e in LATENCY])
def test_latency_ms_is_the_first_present_timing_key(metrics: dict[str, Any], expected: Any) -> None:
    turn = one_turn(step(metrics=metrics))
    assert json_equal(turn["metrics"], metrics)  # the whole metrics value is kept as it is
    got = turn.get("latency_ms", MISSING)
    assert got is expected if expected is MISSING else json_equal(got, expected)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(25, 25), (25.99, 25), ("25", MISSING), (None, MISSING)],
    ids=["int", "float truncated", "string gives none", "null gives none"],
)
def test_ttft_ms_comes_from_metrics_ttft_ms(value: Any, expected: Any) -> None:
    turn = one_turn(step(metrics={"ttft_ms": value, "latency_ms": 1}))
    got = turn.get("ttft_ms", MISSING)
    assert got is expected if expected is MISSING else json_equal(got, expected)
    assert turn["latency_ms"] == 1


def test_metrics_that_are_not_an_object_promote_nothing() -> None:
    turn = one_turn(step(metrics=[{"latency_ms": 5}]))
    assert "latency_ms" not in turn and "ttft_ms" not in turn


@pytest.mark.parametrize(
    "metrics",
    [{"latency_ms": 1e300}, {"elapsed_ms": -1e19}, {"ttft_ms": 1e20, "latency_ms": 1}, {"latency_ms": 2**63}],
    ids=["float 1e300", "float -1e19", "ttft float 1e20", "integer 2^63"],
)
def test_timings_beyond_i64_do_not_reject_a_valid_trajectory(metrics: dict[str, Any]) -> None:
    # ATIF metrics are free JSON and no ATIF reject rule looks at them; the reference truncates
    # a float with Rust's saturating `as i64` and takes only i64 integers.  So the trajectory is
    # accepted and any promoted value fits the Storyline's i64 fields.
    turn = one_turn(step(metrics=metrics))
    for key in ("latency_ms", "ttft_ms"):
        assert -(2**63) <= turn.get(key, 0) <= 2**63 - 1


def test_tool_duration_beyond_i64_is_not_promoted() -> None:
    # docs/formats.md (ATIF): `duration_ms` = `extra.duration_ms` only if it is an i64.
    turn = one_turn(step(tool_calls=[call(extra={"duration_ms": 2**63})]))
    assert "duration_ms" not in turn["tool_calls"][0]
    assert turn["tool_calls"][0]["extra"] == {"duration_ms": 2**63}


# --- kind ----------------------------------------------------------------------------------

KINDS = [
    ("agent with tool calls", "agent", [call()], "autonomous"),
    ("agent without tool calls", "agent", None, MISSING),
    ("agent with empty tool calls", "agent", [], MISSING),
    ("user", "user", None, MISSING),
    ("user with tool calls", "user", [call()], MISSING),
    ("system", "system", None, MISSING),
    ("non-standard tool", "tool", None, "dialogue"),
    ("non-standard environment with tool calls", "environment", [call()], "dialogue"),
    ("case matters: Agent", "Agent", [call()], "dialogue"),
]


@pytest.mark.parametrize(("source", "calls", "expected"), [pytest.param(s, c, e, id=i) for i, s, c, e in KINDS])
def test_kind_is_written_only_where_a_reader_would_not_assume_it(
    source: str, calls: list[Any] | None, expected: Any
) -> None:
    st = step(source=source) if calls is None else step(source=source, tool_calls=calls)
    assert one_turn(st).get("kind", MISSING) == expected


# --- session, identity, children and parents ------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "session"),
    [
        ({"session_id": "s", "trajectory_id": "t"}, "s"),
        ({"session_id": None, "trajectory_id": "t"}, "t"),
        ({"session_id": "", "trajectory_id": "t"}, "t"),
    ],
    ids=["session_id first", "trajectory_id when no session_id", "trajectory_id when session_id empty"],
)
def test_root_session_choice(fields: dict[str, Any], session: str) -> None:
    assert _story(atif(**fields))["session"] == session


def test_child_session_is_own_session_id_then_own_trajectory_id() -> None:
    # docs/formats.md (ATIF): the format's order session_id → trajectory_id → parent's session (not
    # the reference code's "parent's session before own trajectory_id").  A child must have a
    # non-empty trajectory_id (reject rule 2), so the parent's session is never reached.
    stories = forward(atif(session_id="root-s", subagent_trajectories=[child("c1"), child("c2", session_id="own")]))
    assert [s["session"] for s in stories] == ["root-s", "c1", "own"]


def test_children_and_parent_links_in_pre_order() -> None:
    doc = atif(
        trajectory_id="root",
        subagent_trajectories=[
            child("a", subagent_trajectories=[child("a1"), child("a2")]),
            child("b"),
        ],
    )
    stories = forward(doc)
    assert [s.get("trajectory") for s in stories] == ["root", "a", "a1", "a2", "b"]
    assert stories[0]["children"] == ["a", "b"]
    assert stories[1]["children"] == ["a1", "a2"]
    assert "parent" not in stories[0]
    parents = [s["parent"]["psid"] for s in stories[1:]]
    assert parents == ["root", "a", "a", "root"]
    for s in stories[1:]:
        assert s["parent"].get("rel", "spawn") == "spawn"


def test_child_parent_is_the_parent_session_when_the_parent_has_no_trajectory_id() -> None:
    stories = forward(atif(session_id="only-session", subagent_trajectories=[child("c")]))
    assert stories[0]["children"] == ["c"]
    assert stories[1]["parent"]["psid"] == "only-session"


def test_no_children_key_without_subagents() -> None:
    assert "children" not in _story(atif())


# --- unknown keys --------------------------------------------------------------------------


def _put(doc: dict[str, Any], where: str, key: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    target = at(doc, where)
    target[key] = value
    return doc


BASE_WITH_EVERYTHING = atif(
    steps=[step(1, tool_calls=[call("c1")], observation={"results": [1]}), step(2)],
)
UNKNOWNS = [
    # (id, object pointer, key, value, stored P)
    ("root key with slash", "", "vendor/root", 1, "/vendor~1root"),
    ("root key with tilde", "", "a~b", "x", "/a~0b"),
    ("root key ~01", "", "~01", [1], "/~001"),
    ("root empty key", "", "", None, "/"),
    ("agent key", "/agent", "vendor", {"n": [None]}, "/agent/vendor"),
    ("step numeric key", "/steps/0", "0", True, "/steps/0/0"),
    ("second step key", "/steps/1", "x/y", 2.5, "/steps/1/x~1y"),
    ("tool call key", "/steps/0/tool_calls/0", "~", {}, "/steps/0/tool_calls/0/~0"),
    ("observation key", "/steps/0/observation", "meta", {"a": []}, "/steps/0/observation/meta"),
]


@pytest.mark.parametrize(
    ("where", "key", "value", "stored"), [pytest.param(w, k, v, p, id=i) for i, w, k, v, p in UNKNOWNS]
)
def test_unknown_key_is_stored_under_its_escaped_source_pointer(where: str, key: str, value: Any, stored: str) -> None:
    doc = _put(BASE_WITH_EVERYTHING, where, key, value)
    story = _story(doc)
    fields = story["unknown_fields"]["sources"]["atif"]["fields"]
    assert fields == {stored: value}
    assert json_equal(fields[stored], value)
    # E(P): the stored key is addressed from the Storyline root by escaping P once more.
    assert json_equal(at(story, "/unknown_fields/sources/atif/fields/" + pointer.escape(stored)), value)
    assert json_equal(roundtrip(doc), doc)


def test_source_document_id_is_the_blake3_of_the_input_document() -> None:
    doc = fixture("dialogue_10")
    doc["vendor/key"] = {"nested": [1, None]}
    (story,) = forward(doc)
    sdid = story["unknown_fields"]["sources"]["atif"]["source_document_id"]
    assert sdid == canonical.document_id(doc)
    assert len(sdid) == 64 and sdid == sdid.lower()


def test_dialogue_10_document_id_matches_the_reference_hash() -> None:
    expected = "16cb43b9c826b5d4f570a46367aafa8287aa7e357d92cb284067c974cc3aec75"  # docs/envelope.md
    assert canonical.document_id(fixture("dialogue_10")) == expected


def test_child_unknowns_live_on_the_child_with_top_level_pointers() -> None:
    doc = atif(
        x=0,
        subagent_trajectories=[
            child("c0"),
            child("c1", y=1, steps=[step(1, z=2)], subagent_trajectories=[child("g", w=3)]),
        ],
    )
    stories = forward(doc)
    by_id = {s.get("trajectory", s["session"]): s for s in stories}

    def fields(ident: str) -> Any:
        return (by_id[ident].get("unknown_fields") or {}).get("sources", {}).get("atif", {}).get("fields")

    assert fields("sess-1") == {"/x": 0}
    assert fields("c0") is None
    assert fields("c1") == {"/subagent_trajectories/1/y": 1, "/subagent_trajectories/1/steps/0/z": 2}
    assert fields("g") == {"/subagent_trajectories/1/subagent_trajectories/0/w": 3}
    ids = {s["unknown_fields"]["sources"]["atif"]["source_document_id"] for s in stories if "unknown_fields" in s}
    assert ids == {canonical.document_id(doc)}  # every node hashes the top-level document
    assert json_equal(roundtrip(doc), doc)


def test_unknown_key_counts_are_normalized() -> None:
    doc = atif(
        steps=[
            step(1, vendor=1, tool_calls=[call("a", v=1), call("b", v=2)], observation={"results": [], "o": 1}),
            step(2, vendor=2, **{"0": "zero"}),
        ],
        subagent_trajectories=[child("c", steps=[step(1, vendor=3), step(2, vendor=4)])],
    )
    root, kid = forward(doc)
    assert root["unknown_key_counts"] == {
        "atif": {
            "/steps/*/vendor": 2,
            "/steps/*/tool_calls/*/v": 2,
            "/steps/*/observation/o": 1,
            "/steps/*/0": 1,
        }
    }
    assert kid["unknown_key_counts"] == {"atif": {"/subagent_trajectories/*/steps/*/vendor": 2}}


# === 3. Reverse ==============================================================================


def _export(**fields: Any) -> Any:
    return reverse([storyline_doc(**fields)])


def _exported_step(turn: dict[str, Any]) -> dict[str, Any]:
    return _export(turns=[turn])["steps"][0]


@pytest.mark.parametrize(
    ("turn_fields", "metrics"),
    [
        ({"latency_ms": 12, "metrics": {"tokens": 4}}, {"tokens": 4, "latency_ms": 12}),
        ({"latency_ms": 12, "ttft_ms": 3}, {"latency_ms": 12, "ttft_ms": 3}),
        ({"ttft_ms": 3}, {"ttft_ms": 3}),
        ({"latency_ms": 12, "metrics": {"elapsed_ms": 12}}, {"elapsed_ms": 12}),
        ({"latency_ms": 12, "metrics": {"elapsed_ms": 5}}, {"elapsed_ms": 5, "latency_ms": 12}),
        ({"latency_ms": 12, "metrics": {"latency_ms": 12.5}}, {"latency_ms": 12.5}),
        ({"metrics": {"tokens": 4}}, {"tokens": 4}),
    ],
    ids=[
        "written into metrics without latency keys",
        "metrics synthesized",
        "ttft only",
        "derivable from elapsed_ms: left alone",
        "not derivable from elapsed_ms: latency_ms added",
        "derivable from a float: left alone",
        "no promotion",
    ],
)
def test_metrics_write_back(turn_fields: dict[str, Any], metrics: dict[str, Any]) -> None:
    turn = {"id": 1, "src": "agent", "msg": "m", **turn_fields}
    exported = _exported_step(turn)
    assert exported["metrics"] == metrics
    # …so that importing the ATIF gives the same promoted values back.
    (again,) = forward(_export(turns=[turn]))
    for key in ("latency_ms", "ttft_ms"):
        assert again["turns"][0].get(key) == turn.get(key)


def test_no_metrics_written_without_metrics_or_timings() -> None:
    assert "metrics" not in _exported_step({"id": 1, "src": "agent", "msg": "m"})


@pytest.mark.parametrize(
    "metrics",
    [{"elapsed_ms": 5}, {"duration_ms": 5.7}, {"latency_ms": "5", "elapsed_ms": 3}, {"ttft_ms": 1.5}],
    ids=["elapsed_ms", "duration_ms float", "string latency", "ttft float"],
)
def test_same_source_metrics_come_back_exactly(metrics: dict[str, Any]) -> None:
    doc = atif(steps=[step(metrics=metrics)])
    assert roundtrip(doc)["steps"][0]["metrics"] == metrics


def test_tool_duration_written_back_into_extra() -> None:
    turn = {
        "id": 1,
        "src": "agent",
        "msg": "m",
        "tool_calls": [{"tcid": "c", "fn": "f", "args": 1, "duration_ms": 7}],
    }
    (exported_call,) = _exported_step(turn)["tool_calls"]
    assert exported_call["extra"] == {"duration_ms": 7}


def test_write_backs_survive_a_restored_residual_in_the_same_step() -> None:
    # Restoring the own-source residual /steps/0/tool_calls/0/v must not lose the write-backs
    # of that step (metrics.latency_ms) and tool call (extra.duration_ms).
    turn = {
        "id": 1,
        "src": "agent",
        "msg": "m",
        "latency_ms": 12,
        "metrics": {"t": 1},
        "tool_calls": [{"tcid": "c", "fn": "f", "args": 1, "duration_ms": 7}],
    }
    story = with_residuals(storyline_doc(turns=[turn]), atif={"/steps/0/tool_calls/0/v": 1})
    story["unknown_key_counts"] = {"atif": {"/steps/*/tool_calls/*/v": 1}}
    (exported,) = reverse([story])["steps"]
    assert exported["metrics"] == {"t": 1, "latency_ms": 12}
    assert exported["tool_calls"][0]["extra"] == {"duration_ms": 7}
    assert exported["tool_calls"][0]["v"] == 1


def test_tool_duration_float_comes_back_exactly() -> None:
    doc = atif(steps=[step(tool_calls=[call(extra={"duration_ms": 5.5})])])
    assert roundtrip(doc)["steps"][0]["tool_calls"][0]["extra"] == {"duration_ms": 5.5}


@pytest.mark.parametrize(
    ("origin", "schema_version"),
    [
        ({"format": "atif", "schema_version": "ATIF-v1.5"}, "ATIF-v1.5"),
        ({"format": "actf", "schema_version": "ACTF_v1.0"}, "ATIF-v1.7"),
        (None, "ATIF-v1.7"),
    ],
    ids=["origin atif", "origin actf", "no origin"],
)
def test_schema_version_on_export(origin: dict[str, Any] | None, schema_version: str) -> None:
    fields = {"origin": origin} if origin else {}
    assert _export(**fields)["schema_version"] == schema_version


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ({"id": "ag"}, {"name": "ag", "version": "unknown"}),
        ({"id": "ag", "name": "nm", "ver": "2"}, {"name": "nm", "version": "2"}),
        (
            {"id": "ag", "model": "m", "tools": [1], "extra": {"e": 1}},
            {
                "name": "ag",
                "version": "unknown",
                "model_name": "m",
                "tool_definitions": [1],
                "extra": {"e": 1},
            },
        ),
    ],
    ids=["defaults", "name and version", "model, tools, extra"],
)
def test_agent_on_export(agent: dict[str, Any], expected: dict[str, Any]) -> None:
    assert _export(agent=agent)["agent"] == expected


@pytest.mark.parametrize(
    ("ts", "timestamp"),
    [
        (1785578400.25, "2026-08-01T10:00:00.250Z"),
        (0, "1970-01-01T00:00:00Z"),
        ("2026-01-01 00:00:00+00:00", "2026-01-01 00:00:00+00:00"),
    ],
    ids=["epoch float", "epoch zero", "string kept verbatim"],
)
def test_timestamp_on_export_is_rfc3339_text(ts: Any, timestamp: str) -> None:
    exported = _exported_step({"id": 1, "src": "agent", "msg": "m", "ts": ts})
    assert exported["timestamp"] == timestamp
    assert forward(_export(turns=[{"id": 1, "src": "agent", "msg": "m", "ts": ts}]))  # valid ATIF


@pytest.mark.parametrize(
    ("fields", "session_id", "trajectory_id"),
    [
        ({"session": "s"}, "s", MISSING),
        ({"session": "s", "trajectory": "t"}, "s", "t"),
        ({"session": "t", "trajectory": "t"}, MISSING, "t"),
    ],
    ids=["session only", "session and trajectory", "session derivable from trajectory"],
)
def test_session_id_written_when_not_derivable(fields: dict[str, Any], session_id: Any, trajectory_id: Any) -> None:
    doc = _export(**fields)
    assert doc.get("session_id", MISSING) == session_id
    assert doc.get("trajectory_id", MISSING) == trajectory_id
    (again,) = forward(doc)
    assert again["session"] == fields["session"]


def test_export_fields_of_a_turn() -> None:
    turn = {
        "id": 4,
        "kind": "autonomous",
        "src": "agent",
        "msg": None,
        "reason": "r",
        "effort": "high",
        "model": "m",
        "nllm": 2,
        "copied": False,
        "extra": {"e": 1},
        "observation": {"results": ["ok"]},
        "tool_calls": [{"tcid": "c", "fn": "f", "args": None, "result": 3, "extra": {"x": 1}}],
    }
    assert _exported_step(turn) == {
        "step_id": 4,
        "source": "agent",
        "message": None,
        "reasoning_content": "r",
        "reasoning_effort": "high",
        "model_name": "m",
        "llm_call_count": 2,
        "is_copied_context": False,
        "extra": {"e": 1},
        "observation": {"results": ["ok"]},
        "tool_calls": [{"tool_call_id": "c", "function_name": "f", "arguments": None, "result": 3, "extra": {"x": 1}}],
    }


@pytest.mark.parametrize(
    "observation",
    [[1], {"x": 1}, {"results": 5}, "text"],
    ids=["array", "object without results", "results not an array", "string"],
)
def test_observation_that_is_not_atif_shaped_is_an_export_error(observation: Any) -> None:
    # the reference's ATIF export: "observation must decode as {results:[…], …}, else error" — never
    # silently dropped, and never written as something ATIF import rejects.
    turn = {"id": 1, "src": "agent", "msg": "m", "observation": observation}
    with pytest.raises(MapcError):
        _export(turns=[turn])


def test_observation_keys_beside_results_are_kept_on_export() -> None:
    turn = {"id": 1, "src": "agent", "msg": "m", "observation": {"results": [1], "meta": {"k": 2}}}
    assert _exported_step(turn)["observation"] == {"results": [1], "meta": {"k": 2}}


def test_several_roots_export_as_an_array_in_order() -> None:
    out = reverse([storyline_doc(session="b"), storyline_doc(session="a")])
    assert isinstance(out, list)
    assert [d["session_id"] for d in out] == ["b", "a"]


def test_subagent_tree_is_rebuilt_from_children_in_children_order() -> None:
    stories = [
        storyline_doc(session="c2", trajectory="c2", parent={"psid": "root"}),
        storyline_doc(session="g", trajectory="g", parent={"psid": "c1"}),
        storyline_doc(session="root", children=["c1", "c2"]),
        storyline_doc(session="c1", trajectory="c1", parent={"psid": "root"}, children=["g"]),
    ]
    doc = reverse(stories)
    assert isinstance(doc, dict)
    assert doc["session_id"] == "root"
    kids = doc["subagent_trajectories"]
    assert [k["trajectory_id"] for k in kids] == ["c1", "c2"]
    assert [g["trajectory_id"] for g in kids[0]["subagent_trajectories"]] == ["g"]
    assert "subagent_trajectories" not in kids[1]
    again = forward(doc)
    assert [s.get("trajectory", s["session"]) for s in again] == ["root", "c1", "g", "c2"]


TREE_ERRORS = [
    (
        "duplicate identity",
        [storyline_doc(session="a"), storyline_doc(session="a")],
        [("tree.duplicate_identity", "/1")],
    ),
    (
        "duplicate identity by trajectory",
        [storyline_doc(session="a", trajectory="t"), storyline_doc(session="b", trajectory="t")],
        [("tree.duplicate_identity", "/1")],
    ),
    (
        "cycle",
        [storyline_doc(session="a", children=["b"]), storyline_doc(session="b", children=["a"])],
        [("tree.no_root", "")],
    ),
    (
        "self cycle",
        [storyline_doc(session="a", children=["a"])],
        [("tree.no_root", "")],
    ),
    (
        "cycle beside a root",
        [
            storyline_doc(session="r"),
            storyline_doc(session="a", children=["b"]),
            storyline_doc(session="b", children=["a"]),
        ],
        [("tree.unreachable", "/1"), ("tree.unreachable", "/2")],
    ),
    (
        "unknown child",
        [storyline_doc(session="a", children=["zz"])],
        [("tree.unknown_child", "/0/children/0")],
    ),
    (
        "multiple parents",
        [
            storyline_doc(session="a", children=["c"]),
            storyline_doc(session="b", children=["c"]),
            storyline_doc(session="c"),
        ],
        [("tree.multiple_parents", "/1/children/0")],
    ),
]


@pytest.mark.parametrize(("stories", "expected"), [pytest.param(s, e, id=i) for i, s, e in TREE_ERRORS])
def test_tree_errors(stories: list[dict[str, Any]], expected: list[tuple[str, str]]) -> None:
    assert reverse_problems(stories) == expected


def test_export_of_an_invalid_storyline_is_rejected() -> None:
    assert reverse_problems([storyline_doc(session="")]) == [("schema.minLength", "/session")]


def test_export_of_nothing_is_rejected() -> None:
    with pytest.raises(MapcError) as info:
        from_storyline("atif", [])
    assert [p.code for p in info.value.problems] == ["input.empty"]


# === 4. Reject rules =========================================================================

REJECTS = [
    # identity
    ("no session_id nor trajectory_id", atif(session_id=None), [("check.nonempty_any", "")]),
    (
        "empty session_id and trajectory_id",
        atif(session_id="", trajectory_id=""),
        [("check.nonempty_any", "")],
    ),
    ("null session_id", atif(session_id=None, trajectory_id=""), [("check.nonempty_any", "")]),
    (
        "child without trajectory_id",
        atif(subagent_trajectories=[atif(session_id="c")]),
        [("check.nonempty", "/subagent_trajectories/0/trajectory_id")],
    ),
    (
        "child with empty trajectory_id",
        atif(subagent_trajectories=[child("ok"), child("")]),
        [("check.nonempty", "/subagent_trajectories/1/trajectory_id")],
    ),
    (
        "grandchild without trajectory_id",
        atif(subagent_trajectories=[child("c", subagent_trajectories=[atif()])]),
        [("check.nonempty", "/subagent_trajectories/0/subagent_trajectories/0/trajectory_id")],
    ),
    (
        "child trajectory_id equal to the root's",
        atif(trajectory_id="t", subagent_trajectories=[child("t")]),
        [("check.unique", "/subagent_trajectories/0/trajectory_id")],
    ),
    (
        "sibling trajectory_ids equal",
        atif(subagent_trajectories=[child("c"), child("c")]),
        [("check.unique", "/subagent_trajectories/1/trajectory_id")],
    ),
    (
        "grandchild trajectory_id equal to the root's",
        atif(trajectory_id="t", subagent_trajectories=[child("c", subagent_trajectories=[child("t")])]),
        [("check.unique", "/subagent_trajectories/0/subagent_trajectories/0/trajectory_id")],
    ),
    # agent
    ("empty agent name", atif(agent={"name": "", "version": "1"}), [("check.nonempty", "/agent/name")]),
    ("empty agent version", atif(agent={"name": "a", "version": ""}), [("check.nonempty", "/agent/version")]),
    (
        "empty agent name in a child",
        atif(subagent_trajectories=[child("c", agent={"name": "", "version": "1"})]),
        [("check.nonempty", "/subagent_trajectories/0/agent/name")],
    ),
    # steps
    ("step_id 0", atif(steps=[step(0)]), [("check.minimum", "/steps/0/step_id")]),
    ("negative step_id", atif(steps=[step(1), step(-4)]), [("check.minimum", "/steps/1/step_id")]),
    ("duplicate step_id", atif(steps=[step(3), step(1), step(3)]), [("check.unique", "/steps/2/step_id")]),
    (
        "duplicate step_id in a child",
        atif(subagent_trajectories=[child("c", steps=[step(1), step(1)])]),
        [("check.unique", "/subagent_trajectories/0/steps/1/step_id")],
    ),
    ("float step_id", atif(steps=[step(1.0)]), [("schema.type", "/steps/0/step_id")]),
    ("string step_id", atif(steps=[step("1")]), [("schema.type", "/steps/0/step_id")]),
    # tool calls
    (
        "empty tool_call_id",
        atif(steps=[step(tool_calls=[call("")])]),
        [("check.nonempty", "/steps/0/tool_calls/0/tool_call_id")],
    ),
    (
        "duplicate tool_call_id in a step",
        atif(steps=[step(tool_calls=[call("a"), call("a")])]),
        [("check.unique", "/steps/0/tool_calls/1/tool_call_id")],
    ),
    (
        "duplicate tool_call_id across steps",
        atif(steps=[step(1, tool_calls=[call("a")]), step(2, tool_calls=[call("a")])]),
        [("check.unique", "/steps/1/tool_calls/0/tool_call_id")],
    ),
    # timestamps
    ("empty timestamp", atif(steps=[step(timestamp="")]), [("check.timestamp", "/steps/0/timestamp")]),
    (
        "timestamp without offset",
        atif(steps=[step(timestamp="2026-08-01T09:00:00")]),
        [("check.timestamp", "/steps/0/timestamp")],
    ),
    (
        "timestamp offset without colon",
        atif(steps=[step(timestamp="2026-08-01T09:00:00+0000")]),
        [("check.timestamp", "/steps/0/timestamp")],
    ),
    (
        "timestamp with trailing space",
        atif(steps=[step(1), step(2, timestamp="2026-08-01T09:00:00Z ")]),
        [("check.timestamp", "/steps/1/timestamp")],
    ),
    ("timestamp a number", atif(steps=[step(timestamp=1785578400)]), [("schema.type", "/steps/0/timestamp")]),
    ("timestamp a bool", atif(steps=[step(timestamp=True)]), [("schema.type", "/steps/0/timestamp")]),
    # observation
    (
        "observation without results",
        atif(steps=[step(observation={"content": "x"})]),
        [("schema.required", "/steps/0/observation")],
    ),
    (
        "observation results not an array",
        atif(steps=[step(observation={"results": {}})]),
        [("schema.type", "/steps/0/observation/results")],
    ),
    (
        "observation not an object",
        atif(steps=[step(observation=[1])]),
        [("schema.type", "/steps/0/observation")],
    ),
    # missing required keys
    ("missing schema_version", atif(schema_version=None), [("schema.required", "")]),
    ("missing agent", atif(agent=None), [("schema.required", "")]),
    ("missing steps", atif(steps=None), [("schema.required", "")]),
    ("missing agent name", atif(agent={"version": "1"}), [("schema.required", "/agent")]),
    ("missing agent version", atif(agent={"name": "a"}), [("schema.required", "/agent")]),
    ("missing step_id", atif(steps=[{"source": "user", "message": 1}]), [("schema.required", "/steps/0")]),
    ("missing source", atif(steps=[{"step_id": 1, "message": 1}]), [("schema.required", "/steps/0")]),
    ("missing message", atif(steps=[{"step_id": 1, "source": "user"}]), [("schema.required", "/steps/0")]),
    (
        "missing tool_call_id",
        atif(steps=[step(tool_calls=[{"function_name": "f", "arguments": 1}])]),
        [("schema.required", "/steps/0/tool_calls/0")],
    ),
    (
        "missing function_name",
        atif(steps=[step(tool_calls=[{"tool_call_id": "c", "arguments": 1}])]),
        [("schema.required", "/steps/0/tool_calls/0")],
    ),
    (
        "missing arguments",
        atif(steps=[step(tool_calls=[{"tool_call_id": "c", "function_name": "f"}])]),
        [("schema.required", "/steps/0/tool_calls/0")],
    ),
    (
        "missing required key in a child",
        atif(subagent_trajectories=[{"trajectory_id": "c", "agent": {"name": "a", "version": "1"}, "steps": []}]),
        [("schema.required", "/subagent_trajectories/0")],
    ),
    # wrong shapes
    ("document not an object", "trajectory", [("schema.type", "")]),
    ("steps not an array", atif(steps={"0": step()}), [("schema.type", "/steps")]),
    ("agent name not a string", atif(agent={"name": 1, "version": "1"}), [("schema.type", "/agent/name")]),
]


@pytest.mark.parametrize(("doc", "expected"), [pytest.param(d, e, id=i) for i, d, e in REJECTS])
def test_reject_rule(doc: Any, expected: list[tuple[str, str]]) -> None:
    assert problems(doc) == expected


def test_every_problem_is_reported_at_once() -> None:
    doc = atif(
        agent={"name": "", "version": ""},
        steps=[step(0, timestamp=""), step(0, tool_calls=[call(""), call("")])],
    )
    assert set(problems(doc)) == {
        ("check.nonempty", "/agent/name"),
        ("check.nonempty", "/agent/version"),
        ("check.minimum", "/steps/0/step_id"),
        ("check.minimum", "/steps/1/step_id"),
        ("check.unique", "/steps/1/step_id"),
        ("check.nonempty", "/steps/1/tool_calls/0/tool_call_id"),
        ("check.nonempty", "/steps/1/tool_calls/1/tool_call_id"),
        ("check.unique", "/steps/1/tool_calls/1/tool_call_id"),
        ("check.timestamp", "/steps/0/timestamp"),
    }


ACCEPTED = [
    ("same step_id in parent and child", atif(subagent_trajectories=[child("c")])),
    (
        "same tool_call_id in parent and child",
        atif(
            steps=[step(tool_calls=[call("a")])],
            subagent_trajectories=[child("c", steps=[step(tool_calls=[call("a")])])],
        ),
    ),
    ("step ids 2 and 5", atif(steps=[step(2), step(5)])),
    ("no steps", atif(steps=[])),
    ("space separator and lowercase z", atif(steps=[step(timestamp="2026-08-01 09:00:00.123z")])),
    ("lowercase t and offset", atif(steps=[step(timestamp="2026-08-01t09:00:00-05:30")])),
    ("leap second", atif(steps=[step(timestamp="2016-12-31T23:59:60Z")])),
    ("null timestamp", atif(steps=[step(timestamp=None)])),
    ("any schema_version", atif(schema_version="ATIF-v9")),
    ("empty session_id with trajectory_id", atif(session_id="", trajectory_id="t")),
]


@pytest.mark.parametrize("doc", [pytest.param(d, id=i) for i, d in ACCEPTED])
def test_accepted(doc: dict[str, Any]) -> None:
    stories = forward(doc)
    assert all(storyline.check(s) == [] for s in stories)
    assert json_equal(reverse(stories), without_known_nulls(doc))


@pytest.mark.parametrize(
    ("doc", "storyline_pointer"),
    [
        (atif(steps=[step(source="")]), "/turns/0/src"),
        (atif(steps=[step(tool_calls=[call(function_name="")])]), "/turns/0/tool_calls/0/fn"),
        (atif(schema_version=""), "/origin/schema_version"),
    ],
    ids=["empty source", "empty function_name", "empty schema_version"],
)
def test_input_that_makes_an_invalid_storyline_is_rejected(doc: dict[str, Any], storyline_pointer: str) -> None:
    with pytest.raises(MapcError) as info:
        forward(doc)
    (problem,) = info.value.problems
    assert problem.code == "schema.minLength"
    assert storyline_pointer in problem.message


# === 5. Containers ===========================================================================


def test_array_elements_each_get_their_own_hash_and_storylines() -> None:
    first = atif(session_id="a", vendor=1)
    second = atif(session_id="b", vendor=1, subagent_trajectories=[child("c", other=2)])
    stories = into_storyline("atif", orjson.dumps([first, second]))
    assert [s["session"] for s in stories] == ["a", "b", "c"]
    ids = [s["unknown_fields"]["sources"]["atif"]["source_document_id"] for s in stories]
    assert ids == [canonical.document_id(first), canonical.document_id(second), canonical.document_id(second)]
    assert ids[0] != ids[1]
    # pointers stay relative to each element, never prefixed with its index
    assert stories[0]["unknown_fields"]["sources"]["atif"]["fields"] == {"/vendor": 1}
    assert stories[2]["unknown_fields"]["sources"]["atif"]["fields"] == {"/subagent_trajectories/0/other": 2}
    assert json_equal(reverse(stories), [first, second])


def test_array_element_errors_are_prefixed_with_the_index() -> None:
    doc = [atif(), atif(steps=[step(0)]), atif(agent={"name": "", "version": "1"})]
    assert problems(doc) == [("check.minimum", "/1/steps/0/step_id"), ("check.nonempty", "/2/agent/name")]


def test_array_element_that_is_not_an_object() -> None:
    assert problems([atif(), 3]) == [("schema.type", "/1")]


def test_array_element_with_an_envelope_error_is_prefixed() -> None:
    bad = atif()
    bad["_storyline"] = None
    assert problems([atif(), bad]) == [("envelope.invalid", "/1/_storyline")]


def _jsonl(*lines: Any) -> bytes:
    return b"\n".join(line if isinstance(line, bytes) else orjson.dumps(line) for line in lines) + b"\n"


def test_jsonl_records_skip_blank_lines() -> None:
    data = _jsonl(b"", atif(session_id="a", k=1), b"   ", b"", atif(session_id="b"))
    stories = into_storyline("atif", data, jsonl=True)
    assert [s["session"] for s in stories] == ["a", "b"]
    sdid = stories[0]["unknown_fields"]["sources"]["atif"]["source_document_id"]
    assert sdid == canonical.document_id(atif(session_id="a", k=1))


def test_jsonl_errors_name_the_line() -> None:
    data = _jsonl(atif(session_id="a"), b"", atif(steps=[step(0)]), atif(agent={"name": "", "version": "1"}))
    with pytest.raises(MapcError) as info:
        into_storyline("atif", data, jsonl=True)
    got = [(p.code, p.pointer, p.line) for p in info.value.problems]
    assert got == [("check.minimum", "/steps/0/step_id", 3), ("check.nonempty", "/agent/name", 4)]
    assert str(info.value.problems[0]).startswith("line 3: /steps/0/step_id: ")


def test_jsonl_line_that_is_not_json_names_the_line() -> None:
    with pytest.raises(MapcError) as info:
        into_storyline("atif", _jsonl(atif(), b"{not json"), jsonl=True)
    assert [(p.code, p.line) for p in info.value.problems] == [("json.invalid", 2)]


@pytest.mark.parametrize(
    ("data", "jsonl"),
    [(b"[]", False), (b" [ ] ", False), (b"", True), (b"\n\n  \n", True)],
    ids=["empty array", "empty array with spaces", "empty jsonl", "blank jsonl"],
)
def test_empty_containers_are_rejected(data: bytes, jsonl: bool) -> None:
    assert problems(data, jsonl=jsonl) == [("input.empty", "")]


def test_not_json_is_rejected() -> None:
    assert problems(b"{") == [("json.invalid", "")]


# === 6. The _storyline envelope ==============================================================


def test_foreign_source_travels_in_the_envelope_at_the_root_carrier() -> None:
    story = with_residuals(storyline_doc(), vendor={"/x": 1, "/a~1b": None, "/n": {"k": [1]}})
    doc = reverse([story])
    assert "_storyline" not in doc  # issue 15: in ATIF's own extension slot, where Harbor accepts it
    assert doc["extra"]["_storyline"] == {
        "unknown_fields": {
            "version": 1,
            "by_trajectory": {
                "": {
                    "sources": {
                        "vendor": {
                            "source_document_id": "doc-vendor",
                            "fields": {"/x": 1, "/a~1b": None, "/n": {"k": [1]}},
                        }
                    }
                }
            },
        }
    }
    (again,) = forward(doc)
    assert again["unknown_fields"] == story["unknown_fields"]
    assert again["unknown_key_counts"] == story["unknown_key_counts"]
    assert storyline.check(again) == []


def test_foreign_source_of_a_child_uses_the_child_carrier() -> None:
    stories = [
        storyline_doc(session="p", children=["c"]),
        with_residuals(
            storyline_doc(session="c", trajectory="c", parent={"psid": "p"}, children=["g"]), vendor={"/y": 2}
        ),
        with_residuals(storyline_doc(session="g", trajectory="g", parent={"psid": "c"}), vendor={"/z": 3}),
    ]
    doc = reverse(stories)
    by_trajectory = doc["extra"]["_storyline"]["unknown_fields"]["by_trajectory"]
    assert set(by_trajectory) == {
        "/subagent_trajectories/0",
        "/subagent_trajectories/0/subagent_trajectories/0",
    }
    assert by_trajectory["/subagent_trajectories/0"]["sources"]["vendor"]["fields"] == {"/y": 2}
    again = forward(doc)
    assert [s.get("unknown_fields") for s in again] == [s.get("unknown_fields") for s in stories]


def test_own_source_is_restored_natively_and_never_enveloped() -> None:
    story = with_residuals(storyline_doc(), atif={"/zz": 3, "/steps/0/v": [1]}, vendor={"/x": 1})
    story["unknown_key_counts"]["atif"] = {"/zz": 1, "/steps/*/v": 1}
    doc = reverse([story])
    assert doc["zz"] == 3 and doc["steps"][0]["v"] == [1]
    assert set(doc["extra"]["_storyline"]["unknown_fields"]["by_trajectory"][""]["sources"]) == {"vendor"}
    (again,) = forward(doc)
    assert again["unknown_fields"]["sources"]["vendor"] == story["unknown_fields"]["sources"]["vendor"]
    assert again["unknown_fields"]["sources"]["atif"]["fields"] == {"/zz": 3, "/steps/0/v": [1]}


def test_no_envelope_without_foreign_fields() -> None:
    story = with_residuals(storyline_doc(), vendor={})
    assert "_storyline" not in reverse([story])


def test_multi_root_export_with_foreign_fields_writes_one_envelope_per_element() -> None:
    # mapc's decision (docs/formats.md, ATIF): unlike the reference, this must work.
    stories = [
        with_residuals(storyline_doc(session="a"), vendor={"/x": 1}),
        with_residuals(storyline_doc(session="b"), vendor={"/y": 2}),
    ]
    out = reverse(stories)
    assert [list(d["extra"]["_storyline"]["unknown_fields"]["by_trajectory"]) for d in out] == [[""], [""]]
    again = forward(out)
    assert [s["unknown_fields"] for s in again] == [s["unknown_fields"] for s in stories]


def test_envelope_in_extra_beside_the_documents_own_extra() -> None:
    story = with_residuals(storyline_doc(), vendor={"/x": 1})
    story["extra"] = {"k": [1]}
    doc = reverse([story])
    assert set(doc["extra"]) == {"k", "_storyline"}
    (again,) = forward(doc)
    assert again["extra"] == {"k": [1]}
    assert again["unknown_fields"] == story["unknown_fields"]


def test_envelope_in_an_extra_that_was_empty_says_so() -> None:
    # An `extra` left empty by taking the envelope out is dropped on reading (the writer made it);
    # one that was already empty is noted in the envelope (source _envelope_slot), so it stays.
    story = with_residuals(storyline_doc(), vendor={"/x": 1})
    story["extra"] = {}
    doc = reverse([story])
    assert "_storyline" not in doc
    carried = doc["extra"]["_storyline"]["unknown_fields"]["by_trajectory"][""]["sources"]
    assert carried["_envelope_slot"] == {"source_document_id": "", "fields": {"/extra": {}}}
    (again,) = forward(doc)
    assert again["extra"] == {}
    assert again["unknown_fields"] == story["unknown_fields"]
    del story["extra"]
    (again,) = forward(reverse([story]))
    assert "extra" not in again


def test_envelope_is_read_at_the_root_and_in_extra_but_not_both() -> None:
    story = with_residuals(storyline_doc(), vendor={"/x": 1})
    doc = reverse([story])
    old = {k: v for k, v in doc.items() if k != "extra"} | {"_storyline": doc["extra"]["_storyline"]}
    assert forward(old)[0]["unknown_fields"] == forward(doc)[0]["unknown_fields"] == story["unknown_fields"]
    both = {**doc, "_storyline": doc["extra"]["_storyline"]}
    with pytest.raises(MapcError) as info:
        forward(both)
    assert info.value.problems[0].code == "envelope.invalid"


def test_envelope_is_not_hashed() -> None:
    doc = fixture("dialogue_10")
    doc["vendor"] = 1
    plain = canonical.document_id(doc)
    doc["_storyline"] = {
        "unknown_fields": {
            "version": 1,
            "by_trajectory": {"": {"sources": {"x": {"source_document_id": "i", "fields": {"/a": 1}}}}},
        }
    }
    (story,) = forward(doc)
    assert story["unknown_fields"]["sources"]["atif"]["source_document_id"] == plain
    assert story["unknown_fields"]["sources"]["x"]["fields"] == {"/a": 1}


def _envelope(by_trajectory: Any, version: Any = 1, **extra: Any) -> dict[str, Any]:
    return {"unknown_fields": {"version": version, "by_trajectory": by_trajectory, **extra}}


GOOD_ENTRY = {"sources": {"vendor": {"source_document_id": "d", "fields": {"/x": 1}}}}
ENV_AT = "/_storyline/unknown_fields"
ENVELOPE_REJECTS = [
    ("null envelope", None, [("envelope.invalid", "/_storyline")]),
    ("envelope not an object", [], [("envelope.invalid", "/_storyline")]),
    (
        "extra key beside unknown_fields",
        {**_envelope({"": GOOD_ENTRY}), "more": 1},
        [("envelope.invalid", "/_storyline")],
    ),
    (
        "missing version",
        {"unknown_fields": {"by_trajectory": {"": GOOD_ENTRY}}},
        [("envelope.invalid", ENV_AT)],
    ),
    (
        "version 2",
        _envelope({"": GOOD_ENTRY}, version=2),
        [("envelope.unsupported_version", ENV_AT + "/version")],
    ),
    (
        "version as a string",
        _envelope({"": GOOD_ENTRY}, version="1"),
        [("envelope.unsupported_version", ENV_AT + "/version")],
    ),
    (
        "version 1.0",
        _envelope({"": GOOD_ENTRY}, version=1.0),
        [("envelope.unsupported_version", ENV_AT + "/version")],
    ),
    (
        "version true",
        _envelope({"": GOOD_ENTRY}, version=True),
        [("envelope.unsupported_version", ENV_AT + "/version")],
    ),
    ("extra key in unknown_fields", _envelope({"": GOOD_ENTRY}, extra=1), [("envelope.invalid", ENV_AT)]),
    ("by_trajectory not an object", _envelope([]), [("envelope.invalid", ENV_AT)]),
    (
        "carrier not a pointer",
        _envelope({"x": GOOD_ENTRY}),
        [("envelope.bad_carrier", ENV_AT + "/by_trajectory/x")],
    ),
    (
        "carrier with a bad escape",
        _envelope({"/bad~2": GOOD_ENTRY}),
        [("envelope.bad_carrier", ENV_AT + "/by_trajectory/~1bad~02")],
    ),
    (
        "unbound child carrier",
        _envelope({"/subagent_trajectories/0": GOOD_ENTRY}),
        [("envelope.carrier_unbound", ENV_AT + "/by_trajectory/~1subagent_trajectories~10")],
    ),
    (
        "carrier that is not a trajectory",
        _envelope({"/steps/0": GOOD_ENTRY}),
        [("envelope.carrier_unbound", ENV_AT + "/by_trajectory/~1steps~10")],
    ),
    (
        "carries the target source atif",
        _envelope({"": {"sources": {"atif": {"source_document_id": "d", "fields": {"/x": 1}}}}}),
        [("envelope.own_source", ENV_AT + "/by_trajectory//sources/atif")],
    ),
    (
        "field key not a pointer",
        _envelope({"": {"sources": {"vendor": {"source_document_id": "d", "fields": {"x": 1}}}}}),
        [("envelope.bad_pointer", ENV_AT + "/by_trajectory//sources/vendor/fields/x")],
    ),
    (
        "source with an extra key",
        _envelope({"": {"sources": {"vendor": {"source_document_id": "d", "fields": {}, "z": 1}}}}),
        [("envelope.invalid", ENV_AT + "/by_trajectory//sources/vendor")],
    ),
    (
        "source document id not a string",
        _envelope({"": {"sources": {"vendor": {"source_document_id": 1, "fields": {}}}}}),
        [("envelope.invalid", ENV_AT + "/by_trajectory//sources/vendor")],
    ),
    (
        "carrier entry with an extra key",
        _envelope({"": {**GOOD_ENTRY, "x": 1}}),
        [("envelope.invalid", ENV_AT + "/by_trajectory/")],
    ),
]


@pytest.mark.parametrize(("env", "expected"), [pytest.param(e, x, id=i) for i, e, x in ENVELOPE_REJECTS])
def test_envelope_read_reject(env: Any, expected: list[tuple[str, str]]) -> None:
    doc = atif()
    doc["_storyline"] = env
    assert problems(doc) == expected


def test_envelope_bound_to_a_child_carrier() -> None:
    doc = atif(subagent_trajectories=[child("c")])
    doc["_storyline"] = _envelope({"/subagent_trajectories/0": GOOD_ENTRY})
    root, kid = forward(doc)
    assert "unknown_fields" not in root
    assert kid["unknown_fields"]["sources"]["vendor"]["fields"] == {"/x": 1}
    assert kid["unknown_key_counts"] == {"vendor": {"/x": 1}}


@pytest.mark.parametrize(
    ("carried", "expected"),
    [
        (
            {"source_document_id": "other", "fields": {"/x": 1}},
            [("envelope.conflict", "/sources/vendor/source_document_id")],
        ),
        (
            {"source_document_id": "doc-vendor", "fields": {"/x": 2}},
            [("envelope.conflict", "/sources/vendor/fields/~1x")],
        ),
        ({"source_document_id": "doc-vendor", "fields": {"/x": 1, "/y": 5}}, []),
    ],
    ids=["conflicting document id", "conflicting value", "identical value merges"],
)
def test_envelope_merge_conflicts(carried: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    # An ATIF node only holds its own source before the merge, so conflicts are shown on
    # `envelope.attach` directly, as a second carrier of the same source would meet them.
    story = with_residuals(storyline_doc(), vendor={"/x": 1})
    found = envelope.attach({"": {"sources": {"vendor": carried}}}, {"": story}, "atif")
    prefix = "/_storyline/unknown_fields/by_trajectory/"
    assert [(p.code, p.pointer.removeprefix(prefix)) for p in found] == expected
    if not expected:
        assert story["unknown_fields"]["sources"]["vendor"]["fields"] == {"/x": 1, "/y": 5}
