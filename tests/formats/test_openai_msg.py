"""OpenAI Messages ↔ Storyline (docs/formats.md, OpenAI Messages): one test per rule, the laws, the fixtures."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from conftest import FIXTURES, kept_for_the_way_back
from hypothesis import HealthCheck, given, settings
from openai_strategies import corpora

import mapc
from mapc.engine.problems import MapcError

FMT = "openai-msg"


def forward(doc: Any, path: str = "corpus.json", *, jsonl: bool = False) -> list[dict[str, Any]]:
    data = b"\n".join(orjson.dumps(r) for r in doc) if jsonl else orjson.dumps(doc)
    return mapc.into_storyline(FMT, data, jsonl=jsonl, path=path)


def problems(doc: Any, path: str = "corpus.json") -> list[tuple[str, str]]:
    with pytest.raises(MapcError) as info:
        forward(doc, path)
    return [(p.code, p.pointer) for p in info.value.problems]


def row(sid: str = "s", step: int = 1, **extra: Any) -> dict[str, Any]:
    base = {
        "session_id": sid,
        "step_id": step,
        "messages": [{"role": "user", "content": f"q{step}"}],
        "response": {"role": "assistant", "content": f"a{step}"},
    }
    return {**base, **extra}


def fields(story: dict[str, Any]) -> dict[str, Any]:
    """What `story` keeps for the way back: unknown keys and the known ones it cannot say (engine/known.py)."""
    return kept_for_the_way_back(story, FMT)


def canonical_order(doc: dict[str, Any]) -> dict[str, Any]:
    """The rows grouped by session (first appearance first) and ordered by step."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in doc["session_steps"]:
        groups.setdefault(r["session_id"], []).append(r)
    rows = [r for g in groups.values() for r in sorted(g, key=lambda r: r["step_id"])]
    return dict(doc, session_steps=rows)


# --- input shapes ------------------------------------------------------------------------------


def test_an_array_an_object_and_jsonl_give_the_same_storylines():
    rows = [row("a"), row("b")]
    assert forward(rows) == forward({"session_steps": rows}) == forward(rows, jsonl=True)
    assert [s["session"] for s in forward(rows)] == ["a", "b"]


@pytest.mark.parametrize(
    ("doc", "code"),
    [([], "rows.empty"), ({"session_steps": []}, "rows.empty"), ({"rows": []}, "rows.shape"), (5, "rows.shape")],
)
def test_shapes_that_are_rejected(doc, code):
    assert problems(doc)[0][0] == code


def test_other_root_keys_are_kept_and_come_back():
    doc = {"session_steps": [row()], "vendor": {"k": 1}}
    (story,) = forward(doc)
    assert fields(story) == {"/vendor": {"k": 1}}
    assert mapc.from_storyline(FMT, [story])["vendor"] == {"k": 1}


# --- row validation: pointers use the row's index in the file ----------------------------------


def test_row_problems_point_at_the_row_in_the_file():
    rows = [row("a", 1), row("b", 1), {"session_id": "", "step_id": 1}, row("a", "2"), 7, row("b", 1)]
    assert problems(rows) == [
        ("rows.group_key", "/session_steps/2/session_id"),
        ("rows.order_key", "/session_steps/3/step_id"),
        ("rows.not_object", "/session_steps/4"),
        ("rows.duplicate_order_key", "/session_steps/5/step_id"),
    ]


@pytest.mark.parametrize("step", [0, -1, 1.0, 1.5, "1", None, 2**63])
def test_step_id_must_be_a_positive_i64(step):
    assert problems([row(step=step)]) == [("rows.order_key", "/session_steps/0/step_id")]


def test_a_bad_created_at_is_rejected_at_its_row():
    assert problems([row(), row(step=2, created_at="yesterday")]) == [
        ("openai.created_at", "/session_steps/1/created_at")
    ]


# --- grouping, ordering, turn ids --------------------------------------------------------------


def test_sessions_in_first_appearance_order_and_rows_ordered_by_step():
    rows = [row("b", 3), row("a", 2), row("b", 1), row("a", 1)]
    stories = forward(rows)
    assert [s["session"] for s in stories] == ["b", "a"]
    assert [t["msg"] for t in stories[0]["turns"]] == ["q1", "a1", "q3", "a3"]
    assert [t["id"] for t in stories[0]["turns"]] == [1, 2, 5, 6]  # 2·step − 1, 2·step


def test_context_turns_come_from_the_first_row_before_its_last_user_message():
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "developer", "content": "skipped, kept whole"},
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "now"},
    ]
    (story,) = forward([row(messages=messages), row(step=2)])
    turns = story["turns"]
    assert [(t["id"], t["src"], t["kind"], t["msg"]) for t in turns[:3]] == [
        (1, "system", "context", "be brief"),
        (2, "user", "llm.request", "earlier"),
        (3, "agent", "llm.response", "noted"),
    ]
    assert all(t["copied"] is True for t in turns[:3])
    assert [t["id"] for t in turns[3:]] == [3 + 1, 3 + 2, 3 + 3, 3 + 4]  # context_count + 2·step − 1 …
    # The developer message is no turn, and the second row has no history: the way back would write
    # other messages, so each row's messages are kept whole (kept at its index, the developer
    # message was put back over the user message written there).
    assert fields(story) == {
        "/session_steps/0/messages": messages,
        "/session_steps/1/messages": [{"role": "user", "content": "q2"}],
    }


def test_no_context_when_the_last_user_message_has_no_content():
    messages = [{"role": "system", "content": "s"}, {"role": "user"}]
    (story,) = forward([row(messages=messages)])
    assert [t["src"] for t in story["turns"]] == ["agent"]  # no context, no request turn


# --- output selection --------------------------------------------------------------------------


def test_the_response_is_used_when_it_has_output_else_the_last_assistant_message_with_output():
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "first"},
        {"role": "assistant", "content": [{"type": "text", "text": "second"}]},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
    ]
    (story,) = forward([row(messages=messages, response={"role": "assistant", "content": ""})])
    assert story["turns"][-1]["msg"] == [{"type": "text", "text": "second"}]
    (story,) = forward([row(messages=messages)])
    assert story["turns"][-1]["msg"] == "a1"


def test_no_assistant_output_is_rejected():
    r = row(response={"role": "assistant", "content": None})
    assert problems([r]) == [("openai.no_output", "/session_steps/0")]


def test_a_refusal_is_the_message_when_there_is_no_content():
    (story,) = forward([row(response={"role": "assistant", "content": None, "refusal": "no"})])
    assert story["turns"][-1]["msg"] == "no"


def test_response_turn_fields():
    r = row(
        created_at=1787184000,
        llm_model="m",
        response={"role": "assistant", "content": "a", "reasoning_content": "because"},
        meta_json={"env_state": {"total_latency_ms": 12.9, "ttft_ms": 3}},
        reward=None,
    )
    (story,) = forward([r])
    request, response = story["turns"]
    assert request == {"id": 1, "src": "user", "kind": "llm.request", "msg": "q1", "ts": 1787184000}
    assert response["reason"] == "because" and response["model"] == "m" and response["nllm"] == 1
    assert (response["latency_ms"], response["ttft_ms"]) == (12, 3)
    assert response["metrics"] == {"total_latency_ms": 12.9, "ttft_ms": 3, "reward": None}
    assert story["final_metrics"] == response["metrics"]


def test_row_metric_keys_win_over_env_state():
    (story,) = forward([row(reward=1, meta_json={"env_state": {"reward": 0, "total_tokens": 5}})])
    assert story["turns"][-1]["metrics"] == {"reward": 1, "total_tokens": 5}


# --- tool calls and results --------------------------------------------------------------------


def test_argument_text_other_than_the_export_writes_is_kept():
    calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"b": 1, "a": 2}'}}]
    rows = [row(response={"role": "assistant", "content": None, "tool_calls": calls})]
    (story,) = forward(rows)
    assert story["turns"][-1]["tool_calls"][0]["args"] == {"b": 1, "a": 2}
    assert fields(story) == {"/session_steps/0/response/tool_calls/0/function/arguments": '{"b": 1, "a": 2}'}
    assert mapc.from_storyline(FMT, [story])["session_steps"][0]["response"]["tool_calls"] == calls


def test_tool_calls_decode_string_arguments_and_keep_others():
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"q":1}'}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "not json"}},
        {"id": "c3", "type": "function", "function": {"name": "h", "arguments": {"already": True}}},
        {"id": "c4", "type": "function", "function": {"name": "k"}},
        {"id": "", "type": "function", "function": {"name": "bad"}},
    ]
    (story,) = forward([row(response={"role": "assistant", "content": None, "tool_calls": calls})])
    turn = story["turns"][-1]
    assert turn["kind"] == "autonomous"
    assert [(c["tcid"], c["args"]) for c in turn["tool_calls"]] == [
        ("c1", {"q": 1}),
        ("c2", "not json"),
        ("c3", {"already": True}),
        ("c4", None),
    ]
    assert fields(story) == {
        "/session_steps/0/response/tool_calls/2/function/arguments": {"already": True},  # the export writes text
        "/session_steps/0/response/tool_calls/4": calls[4],
    }


def test_embedded_tool_call_markers_make_a_call_when_there_is_no_structured_one():
    text = "I'll look. <function=search><parameter=q> cats </parameter><parameter=n>2</parameter></function>"
    (story,) = forward([row(step=3, response={"role": "assistant", "content": text})])
    assert story["turns"][-1]["tool_calls"] == [
        {"tcid": "embedded-3-search", "fn": "search", "args": {"q": "cats", "n": "2"}}
    ]
    back = mapc.from_storyline(FMT, [story])
    assert "tool_calls" not in back["session_steps"][0]["response"]  # the text gives them again


def test_tool_results_attach_to_the_turn_that_made_the_call_once():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    first = row(response={"role": "assistant", "content": "calling", "tool_calls": [call]})
    result = {"role": "tool", "tool_call_id": "c1", "content": "out"}
    orphan = {"role": "tool", "tool_call_id": "zz", "content": "late"}
    second = row(step=2, messages=[{"role": "user", "content": "go"}, result, result, orphan])
    (story,) = forward([first, second])
    turns = story["turns"]
    assert turns[1]["observation"] == {"results": [{"source_call_id": "c1", "content": "out"}]}
    assert turns[3]["observation"] == {"results": [{"source_call_id": "zz", "content": "late"}]}


# --- env and identity ----------------------------------------------------------------------------


def test_env_first_value_to_the_task_a_different_later_one_to_the_turn():
    rows = [
        row(env_name="e", dataset_type="TEST", id="r1", meta_json={"group_id": "g", "env_state": {"endpoint": "u"}}),
        row(step=2, env_name="e", dataset_type="PROD", id="r2", meta_json={"env_state": {"request_id": "q"}}),
    ]
    (story,) = forward(rows)
    assert story["task"]["env"] == {"name": "e", "endpoint": "u", "state": {"dataset_type": "TEST", "group_id": "g"}}
    assert story["turns"][1]["env"] == {"id": "r1"}
    assert story["turns"][3]["env"] == {"state": {"dataset_type": "PROD"}, "id": "r2", "request_id": "q"}
    assert "env" not in story["turns"][0]


def test_identity_run_agent_and_model():
    history = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
    ]
    rows = [row(run_bucket="b", llm_model="m1"), row(step=2, job_id="b", agent_model="m2", messages=history)]
    (story,) = forward(rows, path="dir/x.json")
    assert story["run"] == "b"
    assert story["agent"] == {"id": "m1", "name": "m1", "model": "m1"}
    assert story["origin"] == {"format": FMT, "document_id": "dir/x.json"}
    (story,) = forward([row(agent_id="A", meta_json={"source": "S"})])
    assert story["agent"]["id"] == "A"
    (story,) = forward([row(meta_json={"source": "S"})])
    assert story["agent"]["id"] == "S" and "unknown_fields" not in story  # source consumed: it is the id
    (story,) = forward([row()])
    assert story["agent"] == {"id": "openai-import", "name": "openai-import"}


def test_conflicting_run_ids_are_rejected():
    assert problems([row(run_id="x"), row(step=2, job_id="y")]) == [
        ("openai.conflicting_run", "/session_steps/1/job_id")
    ]


@pytest.mark.parametrize("path", ["/abs/x.json", "../x.json", "a/../x.json", "./x.json", ""])
def test_the_document_id_is_a_relative_path(path):
    assert problems([row()], path=path) == [("input.bad_path", "")]


# --- residual consumption ------------------------------------------------------------------------


def test_values_consumed_only_when_they_equal_what_was_chosen():
    same = row(
        "s",
        env_id="s",
        requested_model="m",
        agent_model="m",
        llm_step_index=1,
        meta_json={"env_state": {"session_id": "s"}},
        x=1,
    )
    (story,) = forward([same])
    assert fields(story) == {"/session_steps/0/x": 1}
    other = row(
        "s",
        env_id="t",
        requested_model="n",
        agent_model="m",
        llm_step_index=2,
        meta_json={"env_state": {"session_id": "t"}},
    )
    (story,) = forward([other])
    assert fields(story) == {
        "/session_steps/0/env_id": "t",
        "/session_steps/0/requested_model": "n",
        "/session_steps/0/llm_step_index": 2,
        "/session_steps/0/meta_json/env_state/session_id": "t",
    }


def test_known_empties_are_dropped_and_non_empty_ones_kept():
    empties = {"chosen_response": None, "rejected_response": None, "ground_truth_answer": None}
    message = {"role": "user", "content": "q", "name": None, "refusal": None, "tool_call_id": None, "tool_calls": []}
    (story,) = forward([row(messages=[message], blob_manifest=[], reference_answer={}, **empties)])
    assert "unknown_fields" not in story
    (story,) = forward([row(chosen_response="yes", dt="", messages=[{**message, "name": "bob"}])])
    assert fields(story) == {
        "/session_steps/0/chosen_response": "yes",
        "/session_steps/0/dt": "",
        "/session_steps/0/messages/0/name": "bob",
    }


def test_odd_values_are_kept_whole_and_unknown_keys_at_their_decoded_paths():
    call = {"id": "c", "type": "custom", "function": {"name": "f", "arguments": "{}", "strict": True}}
    r = row(
        messages=["raw text", None, {"role": "user", "content": "q"}],
        response={"role": "assistant", "content": "a", "tool_calls": [call]},
        meta_json=json.dumps({"env_state": json.dumps({"vendor": 1}), "other": 2}),
    )
    (story,) = forward([r])
    assert fields(story) == {
        "/session_steps/0/messages": ["raw text", None, {"role": "user", "content": "q"}],  # (see above)
        "/session_steps/0/response/tool_calls/0/type": "custom",
        "/session_steps/0/response/tool_calls/0/function/strict": True,
        "/session_steps/0/meta_json/other": 2,
    }
    assert story["turns"][-1]["metrics"] == {"vendor": 1}  # every other env_state key is a metric
    # `type` is a key the format defines: its odd value is kept (origin.kept), not counted as unknown
    assert story["origin"]["kept"]["fields"] == {
        "/session_steps/0/messages": ["raw text", None, {"role": "user", "content": "q"}],
        "/session_steps/0/response/tool_calls/0/type": "custom",
    }
    assert "/session_steps/*/response/tool_calls/*/type" not in story["unknown_key_counts"][FMT]
    (story,) = forward([row(meta_json="{not json")])
    assert fields(story) == {"/session_steps/0/meta_json": "{not json"}


# --- export --------------------------------------------------------------------------------------


def test_export_writes_full_history_compact_arguments_and_the_object_form():
    stories = mapc.into_storyline("atif", (FIXTURES / "atif" / "sparse_13.json").read_bytes())
    doc = mapc.from_storyline(FMT, stories)
    assert set(doc) == {"session_steps", "_storyline"}  # the envelope: what rows cannot say of the ATIF file
    rows = doc["session_steps"]
    assert [r["step_id"] for r in rows] == list(range(1, len(rows) + 1))  # synthesized: 1, 2, 3…
    for k, r in enumerate(rows[1:], start=1):
        previous = rows[k - 1]
        assert r["messages"][: len(previous["messages"])] == previous["messages"]
        assert r["messages"][len(previous["messages"])] == previous["response"]
    for r in rows:
        for call in r["response"].get("tool_calls", []):
            assert call["type"] == "function"
            text = call["function"]["arguments"]
            assert text == orjson.dumps(json.loads(text), option=orjson.OPT_SORT_KEYS).decode()


def test_export_recovers_step_ids_from_turn_ids():
    rows = [row(step=2), row(step=7)]
    doc = mapc.from_storyline(FMT, forward(rows))
    assert [r["step_id"] for r in doc["session_steps"]] == [2, 7]


def test_export_writes_the_complete_interactions_and_refuses_a_storyline_without_one():
    """Issue 15 §5: a turn that is no row (another source, a trailing user turn) does not stop the
    export; the complete interactions are written.  A Storyline without an agent turn with output
    has no row at all, and is refused."""
    (story,) = forward([row(), row(step=2)])
    story["turns"][0]["src"] = "tool"
    story["turns"].append({"id": 99, "src": "user", "msg": "and then?"})
    doc = mapc.from_storyline(FMT, [story])
    assert [r["step_id"] for r in doc["session_steps"]] == [1, 2]
    assert doc["session_steps"][0]["messages"] == [{"role": "user"}]  # the "tool" turn has no role
    (story,) = forward([row()])
    story["turns"].pop()
    with pytest.raises(MapcError) as info:
        mapc.from_storyline(FMT, [story])
    assert [(p.code, p.pointer) for p in info.value.problems] == [("export.unrepresentable", "/0/turns")]


def test_export_of_two_openai_files_into_one_document_is_rejected():
    stories = forward([row("a")], path="one.json") + forward([row("b")], path="two.json")
    with pytest.raises(MapcError) as info:
        mapc.from_storyline(FMT, stories)
    assert info.value.problems[0].code == "export.several_documents"


def test_the_envelope_carries_foreign_residuals_once_under_the_first_row_and_reads_repeats_back():
    # Issue 15: the envelope is proportional to what was lost, so a story's residuals ride once,
    # under its first row; copies under other rows (as mapc wrote them before) still merge.
    atif = json.loads((FIXTURES / "atif" / "sparse_13.json").read_bytes())
    atif["vendor"] = {"x": 1}
    stories = mapc.into_storyline("atif", orjson.dumps(atif))
    doc = mapc.from_storyline(FMT, stories)
    carriers = doc["_storyline"]["unknown_fields"]["by_trajectory"]
    assert len(doc["session_steps"]) > 1
    assert sorted(carriers) == ["/session_steps/0"]
    again = mapc.into_storyline(FMT, orjson.dumps(doc))
    carried = again[0]["unknown_fields"]["sources"]["atif"]
    assert carried["fields"]["/vendor"] == {"x": 1}  # with what rows cannot say of the ATIF file
    assert carried["source_document_id"] == stories[0]["unknown_fields"]["sources"]["atif"]["source_document_id"]
    doc = json.loads(orjson.dumps(doc))  # the written copies, not one shared object
    entry = carriers["/session_steps/0"]
    for i in range(1, len(doc["session_steps"])):
        doc["_storyline"]["unknown_fields"]["by_trajectory"][f"/session_steps/{i}"] = json.loads(orjson.dumps(entry))
    assert mapc.into_storyline(FMT, orjson.dumps(doc)) == again
    doc["_storyline"]["unknown_fields"]["by_trajectory"]["/session_steps/1"]["sources"]["atif"]["fields"]["/vendor"] = 2
    with pytest.raises(MapcError) as info:
        mapc.into_storyline(FMT, orjson.dumps(doc))
    assert info.value.problems[0].code == "envelope.conflict"


# --- the laws ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", sorted((FIXTURES / "openai-msg").glob("*.json")), ids=lambda p: p.name)
def test_fixtures_export_is_a_fixed_point_and_keeps_the_storylines(fixture):
    stories = mapc.into_storyline(FMT, fixture.read_bytes(), path=fixture.name)
    exported = mapc.from_storyline(FMT, stories)
    again = mapc.into_storyline(FMT, orjson.dumps(exported), path=fixture.name)
    assert again == stories
    assert mapc.from_storyline(FMT, again) == exported


def test_training_fixture_round_trips_exactly():
    fixture = FIXTURES / "openai-msg" / "training.json"
    stories = mapc.into_storyline(FMT, fixture.read_bytes(), path=fixture.name)
    assert mapc.from_storyline(FMT, stories) == {"session_steps": json.loads(fixture.read_bytes())}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora())
def test_reverse_of_forward_gives_the_corpus_back(pair):
    canonical, shuffled = pair
    assert mapc.from_storyline(FMT, forward(canonical)) == canonical
    stories = forward(shuffled)
    assert mapc.from_storyline(FMT, stories) == canonical_order(shuffled)
    assert forward(mapc.from_storyline(FMT, stories)) == forward(canonical_order(shuffled))


@pytest.mark.parametrize(
    ("carrier", "source", "code"),
    [("/session_steps/9", "atif", "envelope.carrier_unbound"), ("/session_steps/0", FMT, "envelope.own_source")],
)
def test_envelope_reject_rules(carrier, source, code):
    body = {"source_document_id": "d", "fields": {"/x": 1}}
    envelope = {"unknown_fields": {"version": 1, "by_trajectory": {carrier: {"sources": {source: body}}}}}
    with pytest.raises(MapcError) as info:
        forward({"session_steps": [row()], "_storyline": envelope})
    assert info.value.problems[0].code == code


def test_spec_coverage_counts_a_corpus_and_its_unknown_keys():
    from mapc.engine import catalog, coverage

    corpus = orjson.dumps([row("a", x=1), row("a", step=2, x=2), row("b", y=3)])
    report = coverage.measure(
        catalog.program(FMT),
        [("c.json", corpus, False), ("bad.json", b"{", False)],
    )
    assert (report.files, report.documents, report.storylines, len(report.failures)) == (2, 1, 2, 1)
    assert {k: (v.occurrences, v.documents) for k, v in report.residuals.items()} == {
        "/session_steps/*/x": (2, 1),
        "/session_steps/*/y": (1, 1),
        "/session_steps/*/messages": (1, 1),  # the second row has no history: kept as it is
    }


def test_an_agent_turn_without_output_is_refused_not_written_as_an_unreadable_row():
    """Found by the hop law: such a row was written and then refused by the reader (openai.no_output).
    Such a turn is no row; a run with no other agent turn has none."""
    doc = {
        "schema_version": "ATIF-v1.7",
        "agent": {"name": "a", "version": "1"},
        "session_id": "S",
        "steps": [{"step_id": 1, "source": "agent", "message": None}],
    }
    with pytest.raises(MapcError) as caught:
        mapc.convert("atif", "openai-msg", orjson.dumps(doc))
    assert [(p.code, p.pointer) for p in caught.value.problems] == [("export.unrepresentable", "/0/turns")]


# --- the spec as a table (issue 16 §3: the fan-out is data) ---------------------------------------


def test_spec_table_prints_the_pointer_table_of_the_turns():
    from mapc.engine import catalog
    from mapc.engine.table import mapping_rows

    table = {r.sources: r.targets for r in mapping_rows(catalog.program(FMT).spec)}
    at = "/session_steps/{r}"
    for source, target in [
        (f"{at}/messages/{{m}}/role", "/turns/{t}/src"),
        (f"{at}/messages/{{m}}/content", "/turns/{t}/msg"),
        (f"{at}/response/content", "/turns/{t}/msg"),
        (f"{at}/response/refusal", "/turns/{t}/msg"),
        (f"{at}/response/reasoning_content", "/turns/{t}/reason"),
        (f"{at}/response/tool_calls", "/turns/{t}/tool_calls"),
        (f"{at}/created_at", "/turns/{t}/ts"),
        (f"{at}/agent_model", "/turns/{t}/model"),
        (f"{at}/step_id", "/turns/{t}/id"),
        (f"{at}/meta_json/env_state/total_latency_ms", "/turns/{t}/latency_ms"),
        (f"{at}/messages/{{m}}/tool_call_id", "/turns/{t}/observation/results/{k}/source_call_id"),
    ]:
        assert target in table[(source,)], source


def test_explain_names_the_fan_out_row_that_reads_a_value():
    from mapc.engine import catalog
    from mapc.engine.explain import explain_source

    doc = {"session_steps": [row(created_at=5)]}
    findings = explain_source(catalog.program(FMT), doc, "/session_steps/0/created_at")
    assert [(f.kind, f.targets) for f in findings if f.kind == "read"] == [("read", ("/turns/{t}/ts",))]


def test_a_history_the_way_back_would_not_write_is_kept_whole_and_comes_back():
    # A system message added mid-run sits in the later rows' histories only: no rule reads a
    # history, so it was dropped silently; a message no turn reads was put back by its index,
    # over the message written there.  Each such history is now kept whole (origin.kept).
    first = row(
        messages=[
            {"role": "system", "content": "s"},
            {"role": "developer", "content": "d"},
            {"role": "user", "content": "q1"},
        ]
    )
    history = [*first["messages"], {"role": "assistant", "content": "a1"}, {"role": "system", "content": "be brief"}]
    second = row(step=2, messages=[*history, {"role": "user", "content": "q2"}])
    third = row(
        step=3,
        messages=[*second["messages"], {"role": "assistant", "content": "a2"}, {"role": "user", "content": "q3"}],
    )
    corpus = {"session_steps": [first, second, third]}
    (story,) = forward(corpus)
    assert set(story["origin"]["kept"]["fields"]) == {f"/session_steps/{r}/messages" for r in range(3)}
    assert orjson.loads(orjson.dumps(mapc.from_storyline(FMT, [story]))) == corpus
    (plain,) = forward(
        {
            "session_steps": [
                row(),
                row(
                    step=2,
                    messages=[
                        {"role": "user", "content": "q1"},
                        {"role": "assistant", "content": "a1"},
                        {"role": "user", "content": "q2"},
                    ],
                ),
            ]
        }
    )
    assert "origin" not in plain or "kept" not in plain["origin"]  # a history the way back writes is not kept
