"""engine/rules.py: the semantic storyline/v1 rules (docs/storyline.md), reported in one pass."""

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mapc.engine.problems import Problem
from mapc.engine.residual import ANY_INDEX
from mapc.engine.rules import iter_problems, version_problem

ATIF: dict[Any, Any] = {"steps": {ANY_INDEX: {"tool_calls": {ANY_INDEX: {}}}}}
ATIF["subagent_trajectories"] = {ANY_INDEX: ATIF}
TREES = {"atif": ATIF}


def base() -> dict[str, Any]:
    """A valid document that exercises every rule's happy path."""
    return {
        "schema_version": "storyline/v1",
        "session": "s1",
        "agent": {"id": "a"},
        "task": {"env": {"name": "bench"}},
        "prompt": {"system": "be brief"},
        "started_at": "2026-08-20T00:00:00Z",
        "finished_at": 1785578400.25,
        "turns": [
            {"id": 1, "ts": "2026-08-20T00:00:01Z", "src": "user", "msg": "hi"},
            {
                "id": 2,
                "src": "agent",
                "msg": None,
                "tool_calls": [
                    {"tcid": "c1", "fn": "ls", "args": {}},
                    {"tcid": "c2", "fn": "ls", "args": {}},
                ],
                "finished_at": 1785578401,
            },
            {"id": 3, "src": "agent", "msg": "ok", "tool_calls": [{"tcid": "c3", "fn": "ls", "args": None}]},
        ],
    }


def found(doc: Any) -> list[tuple[str, str]]:
    return [(p.code, p.pointer) for p in iter_problems(doc, TREES)]


def with_(*edits: tuple[str, Any]) -> dict[str, Any]:
    """`base()` with each edit applied: (slash path, value); value `DELETE` removes the key."""
    doc = base()
    for path, value in edits:
        *parents, last = path.strip("/").split("/")
        node: Any = doc
        for token in parents:
            node = node[int(token)] if isinstance(node, list) else node[token]
        if value is DELETE:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return doc


DELETE = object()

FIELDS = {"sources": {"atif": {"source_document_id": "h", "fields": {"/steps/0/vendor": 1, "/steps/1/vendor": None}}}}


def test_base_document_is_valid():
    assert found(base()) == []


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(with_(("/turns/0/id", -5), ("/turns/1/id", -7)), id="R-TID negative, unsorted ids"),
        pytest.param(with_(("/turns/0/ts", "2026-01-01 00:00:00+00:00")), id="R-TS space separator"),
        pytest.param(with_(("/turns/0/ts", "2026-01-01t00:00:00.1234567891z")), id="R-TS lowercase, 10 digits"),
        pytest.param(with_(("/turns/0/ts", 0)), id="R-TS epoch 0"),
        pytest.param(with_(("/turns/0/ts", -1.25)), id="R-TS negative epoch"),
        pytest.param(with_(("/turns/0/ts", None)), id="R-TS null is absent"),
        pytest.param(with_(("/started_at", None), ("/finished_at", 1e-9)), id="R-TS root null and 1e-9"),
        pytest.param(with_(("/task", {"llm": {"k": 2}})), id="R-TASK llm.k"),
        pytest.param(with_(("/task", {"result": {"correct": False}})), id="R-TASK result false"),
        pytest.param(with_(("/task", {"result": {"retry_count": 0}})), id="R-TASK result extra key"),
        pytest.param(with_(("/task", {"env": {"state": {"k": None}}})), id="R-TASK env state"),
        pytest.param(with_(("/task", {"env": {}, "llm": None, "result": {"score": 1}})), id="R-TASK one part"),
        pytest.param(with_(("/task", DELETE), ("/prompt", DELETE)), id="no task, no prompt"),
        pytest.param(with_(("/prompt", {"system": None, "user": "u"})), id="R-P document user only"),
        pytest.param(with_(("/turns/0/prompt", {"user": "u"})), id="R-P turn non-empty"),
        pytest.param(with_(("/turns/0/prompt", {"system": "", "user": ""})), id="R-P turn explicit clear"),
        pytest.param(with_(("/turns/0/prompt", {"system": "s", "user": ""})), id="R-P turn one empty key"),
        pytest.param(with_(("/turns/0/copied", True)), id="R-P copied without prompt"),
        pytest.param(with_(("/turns/0/copied", True), ("/turns/0/prompt", None)), id="R-P copied, prompt null"),
        pytest.param(with_(("/turns/0/copied", False), ("/turns/0/prompt", {"user": "u"})), id="R-P copied false"),
        pytest.param(
            with_(("/unknown_fields", FIELDS), ("/unknown_key_counts", {"atif": {"/steps/*/vendor": 2}})),
            id="R-UKC matching counts",
        ),
        pytest.param(
            with_(
                (
                    "/unknown_fields",
                    {"sources": {"x": {"source_document_id": "d", "fields": {"/items/0/v": 1}}}},
                ),
                ("/unknown_key_counts", {"x": {"/items/0/v": 1}}),
            ),
            id="R-UKC source without tree kept literal",
        ),
        pytest.param(
            with_(("/unknown_fields", {"sources": {"atif": {"source_document_id": "h", "fields": {}}}})),
            id="R-UKC empty source needs no entry",
        ),
        pytest.param(
            with_(
                (
                    "/unknown_fields",
                    {"sources": {"a": {"source_document_id": "d", "fields": {"": 1, "/~01": 2}}}},
                ),
                ("/unknown_key_counts", {"a": {"": 1, "/~01": 1}}),
            ),
            id="R-UF root and escaped pointers",
        ),
        pytest.param(with_(("/turns", [])), id="no turns"),
    ],
)
def test_accepts(doc):
    assert found(doc) == []


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            with_(("/schema_version", "storyline/v2"), ("/turns/1/id", 1)),
            [("storyline.unsupported_version", "/schema_version")],
            id="R-V1 unsupported version stops the checks",
        ),
        pytest.param(with_(("/turns/2/id", 1)), [("storyline.duplicate_turn_id", "/turns/2/id")], id="R-TID duplicate"),
        pytest.param(
            with_(("/turns/2/tool_calls/0/tcid", "c1")),
            [("storyline.duplicate_tcid", "/turns/2/tool_calls/0/tcid")],
            id="R-TC1 duplicate across turns",
        ),
        pytest.param(
            with_(("/turns/1/tool_calls/1/tcid", "c1")),
            [("storyline.duplicate_tcid", "/turns/1/tool_calls/1/tcid")],
            id="R-TC1 duplicate within a turn",
        ),
        pytest.param(
            with_(("/turns/0/ts", "2026-01-01T00:00:00")),
            [("storyline.bad_timestamp", "/turns/0/ts")],
            id="R-TS missing offset",
        ),
        pytest.param(with_(("/turns/0/ts", "")), [("storyline.bad_timestamp", "/turns/0/ts")], id="R-TS empty string"),
        pytest.param(with_(("/turns/0/ts", 1e-10)), [("storyline.bad_timestamp", "/turns/0/ts")], id="R-TS 1e-10"),
        pytest.param(
            with_(("/turns/0/ts", 10_000_000_000)),
            [("storyline.bad_timestamp", "/turns/0/ts")],
            id="R-TS out of range",
        ),
        pytest.param(
            with_(("/turns/1/finished_at", "2026-01-01T24:00:00Z")),
            [("storyline.bad_timestamp", "/turns/1/finished_at")],
            id="R-TS turn finished_at",
        ),
        pytest.param(
            with_(("/started_at", "2026-02-30T00:00:00Z"), ("/finished_at", "2026-01-01T00:00:00+0000")),
            [("storyline.bad_timestamp", "/started_at"), ("storyline.bad_timestamp", "/finished_at")],
            id="R-TS root",
        ),
        pytest.param(
            with_(
                ("/unknown_fields", {"sources": {"atif": {"source_document_id": "h", "fields": {"x": 1}}}}),
                ("/unknown_key_counts", {"atif": {"x": 1}}),
            ),
            [("storyline.bad_unknown_pointer", "/unknown_fields/sources/atif/fields/x")],
            id="R-UF not a pointer",
        ),
        pytest.param(
            with_(("/unknown_key_counts", {"atif": {}})),
            [("storyline.unknown_key_counts_mismatch", "/unknown_key_counts")],
            id="R-UKC empty source entry without fields",
        ),
        pytest.param(
            with_(("/unknown_fields", FIELDS)),
            [("storyline.unknown_key_counts_mismatch", "")],
            id="R-UKC counts omitted while fields exist",
        ),
        pytest.param(
            with_(("/unknown_fields", FIELDS), ("/unknown_key_counts", {"atif": {"/steps/*/vendor": 1}})),
            [("storyline.unknown_key_counts_mismatch", "/unknown_key_counts")],
            id="R-UKC wrong count",
        ),
        pytest.param(
            with_(
                ("/unknown_fields", FIELDS),
                ("/unknown_key_counts", {"atif": {"/steps/0/vendor": 1, "/steps/1/vendor": 1}}),
            ),
            [("storyline.unknown_key_counts_mismatch", "/unknown_key_counts")],
            id="R-UKC counts not normalized",
        ),
        pytest.param(with_(("/task", {})), [("storyline.empty_task", "/task")], id="R-TASK {}"),
        pytest.param(
            with_(("/task", {"env": {"name": None, "state": {}}, "llm": {}, "result": {"error": None}})),
            [("storyline.empty_task", "/task")],
            id="R-TASK all parts empty",
        ),
        pytest.param(with_(("/prompt", {})), [("storyline.empty_prompt", "/prompt")], id="R-P document {}"),
        pytest.param(
            with_(("/prompt", {"system": "", "user": ""})),
            [("storyline.empty_prompt", "/prompt")],
            id="R-P document explicit clear",
        ),
        pytest.param(with_(("/turns/0/prompt", {})), [("storyline.empty_prompt", "/turns/0/prompt")], id="R-P turn {}"),
        pytest.param(
            with_(("/turns/0/prompt", {"system": ""})),
            [("storyline.empty_prompt", "/turns/0/prompt")],
            id="R-P turn half clear",
        ),
        pytest.param(
            with_(("/turns/0/prompt", {"system": "", "user": None})),
            [("storyline.empty_prompt", "/turns/0/prompt")],
            id="R-P turn null user is absent",
        ),
        pytest.param(
            with_(("/turns/0/copied", True), ("/turns/0/prompt", {"system": "", "user": ""})),
            [("storyline.prompt_on_copied_turn", "/turns/0/prompt")],
            id="R-P copied turn with explicit clear",
        ),
        pytest.param(
            with_(("/turns/0/copied", True), ("/turns/0/prompt", {"user": "u"})),
            [("storyline.prompt_on_copied_turn", "/turns/0/prompt")],
            id="R-P copied turn with prompt",
        ),
    ],
)
def test_rejects(doc, expected):
    assert found(doc) == expected


@pytest.mark.parametrize(
    "edits",
    [
        pytest.param([("/schema_version", 1)], id="version not a string"),
        pytest.param([("/turns", "x")], id="turns not an array"),
        pytest.param([("/turns/0", 5)], id="turn not an object"),
        pytest.param([("/turns/0/id", "1"), ("/turns/1/id", "1")], id="id strings"),
        pytest.param([("/turns/0/id", True), ("/turns/1/id", 1)], id="id bool vs 1"),
        pytest.param([("/turns/0/ts", True)], id="ts bool"),
        pytest.param([("/turns/0/ts", {"t": 1})], id="ts object"),
        pytest.param([("/turns/1/tool_calls", {"tcid": "c"})], id="tool_calls object"),
        pytest.param([("/turns/1/tool_calls/0", "c2")], id="tool call string"),
        pytest.param([("/turns/1/tool_calls/0/tcid", 2)], id="tcid number"),
        pytest.param(
            [("/turns/1/tool_calls/0/tcid", ""), ("/turns/2/tool_calls/0/tcid", "")],
            id="empty tcids (minLength), not also duplicates",
        ),
        pytest.param([("/turns/1/tool_calls/0/response", {})], id="response {} (schema minProperties)"),
        pytest.param([("/prompt", "s")], id="prompt string"),
        pytest.param([("/prompt", {"system": 5})], id="prompt value number"),
        pytest.param([("/turns/0/prompt", [])], id="turn prompt array"),
        pytest.param([("/task", "t")], id="task string"),
        pytest.param([("/task", {"bogus": 1})], id="task undeclared key"),
        pytest.param([("/task", {"env": "e"})], id="task env string"),
        pytest.param([("/task", {"env": {"state": []}})], id="task env state array"),
        pytest.param([("/task", {"llm": 3})], id="task llm number"),
        pytest.param([("/unknown_fields", "u"), ("/unknown_key_counts", {"a": {"/x": 1}})], id="fields string"),
        pytest.param([("/unknown_fields", {"sources": {"a": {"fields": []}}})], id="fields array"),
        pytest.param([("/unknown_fields", FIELDS), ("/unknown_key_counts", [])], id="counts array"),
        pytest.param([("/unknown_fields", FIELDS), ("/unknown_key_counts", {"atif": 2})], id="counts entry number"),
        pytest.param(
            [("/unknown_fields", FIELDS), ("/unknown_key_counts", {"atif": {"/steps/*/vendor": 2.0}})],
            id="count float",
        ),
        pytest.param(
            [("/unknown_fields", FIELDS), ("/unknown_key_counts", {"atif": {"/steps/*/vendor": -2}})],
            id="count negative",
        ),
        pytest.param([("/unknown_fields", FIELDS), ("/unknown_key_counts", None)], id="counts null"),
        pytest.param([("/unknown_fields", None), ("/unknown_key_counts", {"atif": {}})], id="fields null"),
        pytest.param(
            [("/unknown_fields", {"sources": {"atif": {"source_document_id": "h", "fields": None}}})],
            id="source fields null",
        ),
    ],
)
def test_structural_mistakes_are_left_to_the_schema(edits):
    assert found(with_(*edits)) == []


@pytest.mark.parametrize("doc", [None, [], "storyline/v1", 3], ids=repr)
def test_non_object_documents_yield_nothing(doc):
    assert found(doc) == []
    assert version_problem(doc) is None


@pytest.mark.parametrize(
    ("version", "code"),
    [
        ("storyline/v1", None),
        ("storyline/v2", "storyline.unsupported_version"),
        ("", "storyline.unsupported_version"),
        ("Storyline/v1", "storyline.unsupported_version"),
        (1, None),  # a type error: the schema's
        (None, None),
    ],
    ids=repr,
)
def test_version_problem(version, code):
    problem = version_problem({"schema_version": version})
    assert (problem.code if problem else None) == code
    if problem is not None:
        assert problem.pointer == "/schema_version"


def test_every_problem_of_a_document_in_one_pass_in_document_order():
    doc = with_(
        ("/task", {}),
        ("/prompt", {}),
        ("/started_at", "yesterday"),
        ("/unknown_fields", {"sources": {"atif": {"source_document_id": "h", "fields": {"/bad~2": 1}}}}),
        ("/turns/0/ts", "now"),
        ("/turns/0/prompt", {"system": ""}),
        ("/turns/1/id", 1),
        ("/turns/1/tool_calls/1/tcid", "c1"),
        ("/turns/1/finished_at", False),  # a type error: the schema's, not reported here
        ("/turns/2/copied", True),
        ("/turns/2/prompt", {"system": "", "user": ""}),
        ("/turns/2/tool_calls/0/tcid", ""),  # the schema's minLength, not reported here
        ("/turns/2/finished_at", 1e-10),
    )
    assert found(doc) == [
        ("storyline.empty_task", "/task"),
        ("storyline.empty_prompt", "/prompt"),
        ("storyline.bad_timestamp", "/started_at"),
        ("storyline.bad_unknown_pointer", "/unknown_fields/sources/atif/fields/~1bad~02"),
        ("storyline.unknown_key_counts_mismatch", ""),
        ("storyline.bad_timestamp", "/turns/0/ts"),
        ("storyline.empty_prompt", "/turns/0/prompt"),
        ("storyline.duplicate_turn_id", "/turns/1/id"),
        ("storyline.duplicate_tcid", "/turns/1/tool_calls/1/tcid"),
        ("storyline.prompt_on_copied_turn", "/turns/2/prompt"),
        ("storyline.bad_timestamp", "/turns/2/finished_at"),
    ]


def messages(doc: Any) -> list[str]:
    return [p.message for p in iter_problems(doc, TREES)]


def test_messages_say_what_was_expected_and_where_the_first_use_is():
    assert messages(with_(("/turns/2/id", 3), ("/turns/1/id", 3))) == [
        "expected a unique turn id; turn id 3 already used by /turns/1"
    ]
    [tcid] = messages(with_(("/turns/2/tool_calls/0/tcid", "c2")))
    assert 'tool call id "c2" already used by /turns/1/tool_calls/1' in tcid
    [version] = messages(with_(("/schema_version", "storyline/v2")))
    assert version == 'expected schema_version "storyline/v1", found "storyline/v2"'
    [ts] = messages(with_(("/turns/0/ts", "2026-01-01T00:00:00")))
    assert "offset" in ts


@pytest.mark.parametrize(
    ("counts", "phrase"),
    [
        ({}, 'source "atif" has 1 counted key(s) but no counts entry'),
        ({"atif": {}}, 'source "atif" key "/steps/*/vendor": expected 2, found none'),
        ({"atif": {"/steps/*/vendor": 1}}, 'source "atif" key "/steps/*/vendor": expected 2, found 1'),
        ({"atif": {"/steps/*/vendor": 2, "/x": 1}}, 'source "atif" key "/x": expected no entry, found 1'),
        ({"atif": {"/steps/*/vendor": 2}, "b": {}}, 'source "b" has no unknown fields'),
    ],
    ids=["missing source", "missing key", "wrong count", "extra key", "extra source"],
)
def test_count_mismatch_message_names_the_first_difference(counts, phrase):
    [message] = messages(with_(("/unknown_fields", FIELDS), ("/unknown_key_counts", counts)))
    assert message.startswith("expected unknown_key_counts to equal the counts recomputed from unknown_fields")
    assert phrase in message


def test_counts_follow_the_trees_given():
    fields = {"sources": {"atif": {"source_document_id": "h", "fields": {"/subagent_trajectories/0/steps/3/v": 1}}}}
    normalized = with_(
        ("/unknown_fields", fields),
        ("/unknown_key_counts", {"atif": {"/subagent_trajectories/*/steps/*/v": 1}}),
    )
    assert list(iter_problems(normalized, TREES)) == []
    # Without a tree for the source, the pointer is counted as stored.
    assert [p.code for p in iter_problems(normalized, {})] == ["storyline.unknown_key_counts_mismatch"]


def test_input_is_not_modified():
    doc = with_(("/turns/2/id", 1), ("/unknown_fields", FIELDS))
    before = copy.deepcopy(doc)
    list(iter_problems(doc, TREES))
    assert doc == before


def test_problems_are_problems():
    assert all(isinstance(p, Problem) for p in iter_problems(with_(("/task", {})), TREES))


json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats(allow_nan=False)
    | st.sampled_from(["", "x", "/", "/a~2", "2026-01-01T00:00:00Z", "storyline/v1"])
)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["", "a", "/x", "k", "system", "user"]), inner, max_size=3)
    ),
    max_leaves=6,
)
anything = st.one_of(json_values, json_leaves)
turns = st.lists(
    st.dictionaries(
        st.sampled_from(["id", "ts", "tool_calls", "prompt", "copied", "finished_at"]),
        st.one_of(
            anything,
            st.integers(0, 2),
            st.lists(
                st.dictionaries(st.sampled_from(["tcid", "response"]), st.sampled_from(["", "c", None, 1])),
                max_size=3,
            ),
        ),
    )
    | anything,
    max_size=4,
)
documents = st.dictionaries(
    st.sampled_from(
        [
            "schema_version",
            "task",
            "prompt",
            "started_at",
            "finished_at",
            "unknown_fields",
            "unknown_key_counts",
        ]
    ),
    anything,
).flatmap(lambda d: st.builds(lambda ts: {**d, "turns": ts}, turns))


@settings(max_examples=300)
@given(documents)
def test_never_crashes_on_structurally_invalid_documents(doc):
    for problem in iter_problems(doc, TREES):
        assert problem.code.startswith("storyline.")
        assert problem.pointer == "" or problem.pointer.startswith("/")
