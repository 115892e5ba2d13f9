"""Conversion through the hub between every two formats (docs/formats.md, "Hops between formats"; docs/envelope.md).

The laws, for every directed pair A → B:
- A → B → A gives back A's own round trip (A → Storyline → A) at the JSON data-model level, for
  A with a document of its own (atif, actf, openai-msg): what B cannot say rides in B's
  `_storyline` envelope as residuals of A (engine/provenance.py).  Where B's own reading of what
  it wrote is lossy (ACTF turns a list message into text), B's residuals are B's unknown fields
  and travel on in A's envelope, as every foreign source does (docs/envelope.md): the law holds
  for the document, `_storyline` entries of source B aside;
- A → B → Storyline keeps what B can say: the session, and per turn the message, the tool calls
  (tcid, fn, args) and the observation results — and B's own readings (docs/formats.md, "Hops between formats");
- a pair B cannot represent fails with a clear error, never a partial document.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from atif_strategies import atif_documents
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_strategies import corpora

import mapc
from mapc.engine.problems import MapcError
from mapc.mappings.openai_msg import has_value

DOCUMENT_FORMATS = ("atif", "actf", "openai-msg")
ALL = (
    "storyline",
    "atif",
    "actf",
    "openai-msg",
    "agenticmd",
    "openai-chat",
    "sharegpt",
    "otel-genai",
    "otel-openinference",
)
FILES = sorted(p for fmt in DOCUMENT_FORMATS for p in (FIXTURES / fmt).glob("*.json"))
# Every fixture converts to every format (issue 15 §5: ATIF runs ending with a user step give their
# complete interactions as OpenAI rows, and the rest rides in the envelope).
UNREPRESENTABLE: set[tuple[str, str]] = set()


def fmt_of(path: Path) -> str:
    return path.parent.name


PAIRS = [(p, b) for p in FILES for b in ALL if b != fmt_of(p)]  # same-format trips: each format's own tests
PAIR_IDS = [f"{p.name}-{b}" for p, b in PAIRS]


def hop_out(target: str, stories: list[dict[str, Any]]) -> list[bytes]:
    """The files `target` writes for `stories` (AgenticMD: one file per Storyline)."""
    if target == "agenticmd":
        return [mapc.from_storyline(target, [s]).encode() for s in stories]
    out = mapc.from_storyline(target, stories)
    return [out.encode() if isinstance(out, str) else orjson.dumps(out)]  # a codec writes text


def hop_in(target: str, files: list[bytes]) -> list[dict[str, Any]]:
    return [s for data in files for s in mapc.into_storyline(target, data, path="hop.json")]


def plain(value: Any) -> Any:
    return json.loads(orjson.dumps(value))


def without_source(doc: Any, source: str) -> Any:
    """`doc` without the `_storyline` entries of `source` (and without an envelope left empty).

    The envelope rides at the root, or in ATIF's `/extra/_storyline` (issue 15); an `extra` that
    held only the envelope was made for it and goes with it."""
    if type(doc) is list:
        return [without_source(d, source) for d in doc]
    if type(doc) is not dict:
        return doc
    extra = doc.get("extra")
    if type(extra) is dict and "_storyline" in extra:
        env, rest = extra["_storyline"], {**doc, "extra": {k: v for k, v in extra.items() if k != "_storyline"}}
        root = env["unknown_fields"]["by_trajectory"].get("", {}).get("sources", {})
        if not rest["extra"] and "_envelope_slot" not in root:  # an extra made for the envelope
            del rest["extra"]
        put = lambda d, e: {**d, "extra": {**d.get("extra", {}), "_storyline": e}}  # noqa: E731
    elif "_storyline" in doc:
        env, rest = doc["_storyline"], {k: v for k, v in doc.items() if k != "_storyline"}
        put = lambda d, e: {**d, "_storyline": e}  # noqa: E731
    else:
        return doc
    carriers = {}
    for carrier, entry in env["unknown_fields"]["by_trajectory"].items():
        # the slot note stays while other entries do (a second call, for another source, needs it)
        sources = {k: v for k, v in entry["sources"].items() if k != source}
        if set(sources) - {"_envelope_slot"}:
            carriers[carrier] = {"sources": sources}
    if any(set(c["sources"]) - {"_envelope_slot"} for c in carriers.values()):
        rest = put(rest, {"unknown_fields": {"version": 1, "by_trajectory": carriers}})
    return rest


def through(a: str, b: str, data: bytes, path: str = "x.json") -> tuple[Any, Any, list[dict], list[dict]]:
    """(A → A, A → B → A, A → Storyline, A → B → Storyline)."""
    stories = mapc.into_storyline(a, data, path=path)
    direct = mapc.from_storyline(a, stories)
    hopped = hop_in(b, hop_out(b, stories))
    return plain(direct), plain(mapc.from_storyline(a, hopped)), stories, hopped


def common(story: dict[str, Any]) -> list[Any]:
    """What every format says: per turn the message, tool calls and observation results."""
    out = []
    for turn in story["turns"]:
        calls = [(c["tcid"], c["fn"], c["args"]) for c in turn.get("tool_calls") or []]
        results = (turn.get("observation") or {}).get("results") if type(turn.get("observation")) is dict else None
        out.append((turn["msg"], calls, [(r.get("source_call_id"), r.get("content")) for r in results or []]))
    return out


@pytest.mark.parametrize(("path", "b"), PAIRS, ids=PAIR_IDS)
def test_a_to_b_to_a_gives_a_back(path: Path, b: str) -> None:
    a = fmt_of(path)
    if (path.name, b) in UNREPRESENTABLE:
        with pytest.raises(MapcError) as info:
            through(a, b, path.read_bytes())
        assert info.value.problems[0].code == "export.unrepresentable"
        return
    direct, back, _, _ = through(a, b, path.read_bytes(), path.name)
    assert without_source(back, b) == direct


@pytest.mark.parametrize(("path", "b"), [p for p in PAIRS if (p[0].name, p[1]) not in UNREPRESENTABLE], ids=str)
def test_a_to_b_to_storyline_keeps_what_b_can_say(path: Path, b: str) -> None:
    a = fmt_of(path)
    _, _, stories, hopped = through(a, b, path.read_bytes(), path.name)
    if b in ("storyline", "agenticmd", "otel-genai", "otel-openinference"):
        assert hopped == stories  # the hub, its Markdown view and a trace with storyline.* say everything
        return
    # ACTF and OpenAI regroup stories (by task, by session), so compare the turns in order.  ACTF
    # says a message as text: one that is not a string comes back as its JSON text.
    want = [t for s in stories for t in common(s)]
    have = [t for s in hopped for t in common(s)]
    if b == "sharegpt":  # ShareGPT says the messages only: tool calls and results ride in the envelope
        want, have = [w[0] for w in want], [h[0] for h in have]
    if b == "openai-msg":  # a turn that is no row (a trailing user turn) rides in the envelope only
        rows = [t for s in stories for t in common(s) if t in have]
        assert have == rows and len(have) >= sum(t["src"] == "agent" for s in stories for t in s["turns"]) > 0
        return
    if b == "actf":
        assert len(have) == len(want)
        have = [(m if isinstance(w[0], str) else json.loads(m), *r) for (m, *r), w in zip(have, want, strict=True)]
    assert have == want


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(atif_documents(), st.sampled_from(["actf", "openai-msg", "storyline", "agenticmd"]))
def test_generated_atif_with_unknown_keys_survives_every_hop(doc: Any, b: str) -> None:
    try:
        direct, back, _, _ = through("atif", b, orjson.dumps(doc))
    except MapcError as exc:  # what B cannot hold, said clearly
        codes = {p.code for p in exc.problems}
        if b == "openai-msg":  # a Storyline without an agent turn with output has no row at all
            stories = mapc.into_storyline("atif", orjson.dumps(doc))
            assert codes == {"export.unrepresentable"} and not all(map(has_row, stories))
        else:  # ACTF: no steps, or an observation result that is not an object
            assert b == "actf" and codes <= {"export.unrepresentable", "export.invalid"}
        return
    # B's residuals aside, and the tree links carried for B's documents (an ACTF task or OpenAI
    # session of subagents sharing their parent's session is a subtree ATIF says natively)
    assert without_source(without_source(back, b), "storyline") == direct


def is_row(turn: dict[str, Any]) -> bool:
    """An agent turn with output: what an OpenAI row is made of (issue 15 §5)."""
    return turn["src"] == "agent" and (has_value(turn["msg"]) or bool(turn.get("tool_calls")))


def has_row(story: dict[str, Any]) -> bool:
    """Whether `story` gives an OpenAI row: an agent turn with output after its context block (the
    leading copied-context and system turns, which become the rows' context messages)."""
    turns = story["turns"]
    n = 0
    while (
        n < len(turns)
        and turns[n]["src"] in ("system", "user", "agent")
        and (turns[n].get("copied") is True or turns[n]["src"] == "system")
    ):
        n += 1
    return any(map(is_row, turns[n:]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora(), st.sampled_from(["atif", "actf", "storyline"]))
def test_generated_openai_corpora_survive_every_hop(pair: Any, b: str) -> None:
    canonical, _ = pair
    try:
        direct, back, _, _ = through("openai-msg", b, orjson.dumps(canonical))
    except MapcError as exc:  # what ACTF cannot hold, said clearly
        codes = {p.code for p in exc.problems}
        assert b == "actf" and codes <= {"export.invalid", "tree.no_member_key"}  # a blank run id, or:
        if "tree.no_member_key" in codes:  # sessions sharing a run are one task, whose attempts need ids
            runs = [r.get("run_id") or r.get("run_bucket") or r.get("job_id") for r in canonical["session_steps"]]
            sessions = {r["session_id"] for r in canonical["session_steps"]}
            assert len(sessions) > 1 and len(set(runs)) < len(sessions)
        return
    assert without_source(back, b) == direct == canonical


# --- the target-specific readings (docs/formats.md, hops) -------------------------------------------------------


def _story(a: str, b: str, doc: Any) -> dict[str, Any]:
    stories = mapc.into_storyline(a, orjson.dumps(doc), path="x.json")
    (story,) = hop_in(b, hop_out(b, stories))
    return story


ACTF_TWO_STEPS = {
    "task_id": "t",
    "category": "c",
    "k": 1,
    "correct": True,
    "attempts_tried": 1,
    "solved_at": None,
    "attempts": {
        "1": {
            "correct": True,
            "final_answer": None,
            "ground_truth": "",
            "trajectory": {
                "schema_version": "ACTF_v1.0",
                "started_at": "2026-08-20 00:00:00+00:00",
                "finished_at": "2026-08-20 00:00:01+00:00",
                "steps": [
                    {
                        "step_id": 1,
                        "assistant_content": {"content": "look", "reasoning_content": "why", "tool_calls": []},
                        "metric": {
                            "prompt_tokens_len": 1,
                            "completion_tokens_len": 2,
                            "llm_infer_ms": 12,
                            "env_action_ms": 3,
                            "stop_reason": None,
                        },
                        "system_prompt": "",
                        "user_content": "",
                        "observation": [],
                        "tools": [{"type": "function", "id": "c1", "name": "ls", "input": {"p": "."}}],
                        "started_at": "2026-08-20 00:00:00+00:00",
                        "finished_at": "2026-08-20 00:00:01+00:00",
                    },
                    {
                        "step_id": 2,
                        "assistant_content": {"content": "done", "reasoning_content": "", "tool_calls": []},
                        "metric": {
                            "prompt_tokens_len": 1,
                            "completion_tokens_len": 2,
                            "llm_infer_ms": 12,
                            "env_action_ms": None,
                            "stop_reason": None,
                        },
                        "system_prompt": "",
                        "user_content": "",
                        "observation": [],
                        "tools": [],
                        "started_at": "2026-08-20 00:00:01+00:00",
                        "finished_at": "2026-08-20 00:00:01+00:00",
                    },
                ],
            },
        }
    },
}
OPENAI_ROW = [
    {
        "session_id": "s",
        "step_id": 1,
        "created_at": 1787184000,
        "llm_model": "model",
        "reward": None,
        "messages": [{"role": "user", "content": "q"}],
        "response": {"role": "assistant", "content": "a"},
    }
]
ATIF_PLAIN = {
    "schema_version": "ATIF-v1.7",
    "session_id": "s",
    "agent": {"name": "agent", "version": "1"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "q"},
        {"step_id": 2, "source": "agent", "message": "a", "reasoning_content": "r"},
    ],
}


def test_atif_to_actf_reads_as_actf() -> None:
    story = _story("atif", "actf", ATIF_PLAIN)
    assert story["agent"] == {"id": "actf-agent", "name": "ACTF Agent"}
    assert {t["src"] for t in story["turns"]} == {"agent"}
    assert {t["ts"] for t in story["turns"]} == {"1970-01-01 00:00:00+00:00"}
    assert all(t["metrics"]["prompt_tokens_len"] == 0 for t in story["turns"])


def test_actf_to_atif_reads_as_atif() -> None:
    story = _story("actf", "atif", ACTF_TWO_STEPS)
    assert story["agent"]["id"] == "ACTF Agent" and story["agent"]["ver"] == "unknown"
    first = story["turns"][0]
    assert first["reason"] == "why" and first["ts"] == "2026-08-20 00:00:00+00:00"
    assert first["latency_ms"] == 12 and first["tool_calls"][0]["duration_ms"] == 3


def test_actf_to_openai_reads_as_openai() -> None:
    story = _story("actf", "openai-msg", ACTF_TWO_STEPS)
    assert story["agent"]["id"] == "actf-agent"
    assert [t["id"] for t in story["turns"]] == [2, 4]
    first = story["turns"][0]
    assert first["metrics"]["total_latency_ms"] == 12 and first["latency_ms"] == 12
    assert "duration_ms" not in first["tool_calls"][0]


def test_openai_to_atif_reads_as_atif() -> None:
    story = _story("openai-msg", "atif", OPENAI_ROW)
    assert story["agent"]["id"] == "model" and story["agent"]["ver"] == "unknown"
    assert story["turns"][0]["ts"] == "2026-08-20T00:00:00Z"
    # Harbor's Metrics is closed: what it has no key for rides in its `extra` (issue 15)
    assert story["turns"][1]["metrics"]["extra"]["reward"] is None


def test_openai_to_actf_reads_as_actf() -> None:
    story = _story("openai-msg", "actf", OPENAI_ROW)
    assert {t["ts"] for t in story["turns"]} == {"2026-08-20 00:00:00+00:00"}
    assert all(t["metrics"]["prompt_tokens_len"] == 0 for t in story["turns"])
    assert story["turns"][1]["metrics"]["reward"] is None


def test_atif_to_openai_reads_as_openai() -> None:
    story = _story("atif", "openai-msg", ATIF_PLAIN)
    assert story["agent"]["id"] == "agent" and "ver" not in story["agent"]
    assert [t["src"] for t in story["turns"]] == ["user", "agent"]
    assert all("ts" not in t for t in story["turns"])
    assert "metrics" not in story["turns"][1] or story["turns"][1]["metrics"] == {}


# --- from the hub itself: a Storyline (or its Markdown view) through B ----------------------------


@pytest.mark.parametrize(("path", "b"), PAIRS, ids=PAIR_IDS)
def test_a_storyline_through_b_reads_as_b_and_exactly_through_its_own_format(path: Path, b: str) -> None:
    """Storyline → B → Storyline is B's reading of it (B's readings are part of the result: docs/formats.md);
    through the format it came from, it is the Storyline itself; the Markdown view says all of it."""
    stories = mapc.into_storyline(fmt_of(path), path.read_bytes(), path=path.name)
    if (path.name, b) in UNREPRESENTABLE or b == "storyline":
        return
    hopped = hop_in(b, hop_out(b, stories))
    # A trace carries the Storyline whole (storyline.*).
    if b in (fmt_of(path), "agenticmd", "otel-genai", "otel-openinference"):
        assert plain(hopped) == plain(stories)
    else:
        assert [t for s in hopped for t in common(s)][:1] or not stories[0]["turns"]
        assert {s["origin"]["format"] for s in hopped} == {b}


# --- issue 15: a tree of subagents through formats without trees ---------------------------------

SUBAGENT_TREE = {
    "schema_version": "ATIF-v1.7",
    "session_id": "S",
    "trajectory_id": "T",
    "agent": {"name": "lead", "version": "1.2"},
    "steps": [
        {"step_id": 1, "source": "user", "message": "fix it", "timestamp": "2026-01-01T00:00:00Z"},
        {"step_id": 2, "source": "agent", "message": "delegating", "timestamp": "2026-01-01T00:00:05Z"},
        {"step_id": 3, "source": "system", "message": "budget low"},
        {"step_id": 4, "source": "user", "message": "thanks"},
    ],
    "subagent_trajectories": [
        {
            "schema_version": "ATIF-v1.7",
            "session_id": "S-a",
            "trajectory_id": "A",
            "agent": {"name": "searcher", "version": "0.1"},
            "steps": [{"step_id": 1, "source": "system", "message": "look", "timestamp": "2026-01-01T00:00:01Z"}],
            "subagent_trajectories": [
                {
                    "schema_version": "ATIF-v1.7",
                    "session_id": "S-b",
                    "trajectory_id": "B",
                    "agent": {"name": "reader", "version": "0.2"},
                    "steps": [{"step_id": 1, "source": "agent", "message": "read"}],
                }
            ],
        },
        {
            "schema_version": "ATIF-v1.8",
            "session_id": "S-c",
            "trajectory_id": "C",
            "agent": {"name": "writer", "version": "0.3"},
            "steps": [{"step_id": 1, "source": "user", "message": [{"type": "text", "text": "t"}]}],
        },
    ],
}


@pytest.mark.parametrize("b", ["actf", "storyline", "agenticmd"])
def test_a_subagent_tree_comes_back_whole_from_a_format_without_trees(b: str) -> None:
    # The bug of issue 15: ATIF → ACTF → ATIF gave two documents, every step `source: agent`,
    # the agent `ACTF Agent`, timestamps of 1970; the hop back must give the tree as it was.
    direct, back, _stories, hopped = through("atif", b, orjson.dumps(SUBAGENT_TREE))
    assert direct == SUBAGENT_TREE
    # B's residuals aside, and the tree keys carried for B's own documents (an ACTF task of one
    # subagent is named by its attempt id: the hop through ATIF carries it, not the whole task)
    assert without_source(without_source(back, b), "storyline") == SUBAGENT_TREE
    assert len(hopped) == 4
    if b == "actf":  # B's own reading stays B's (docs/lossless.md, decision 4): the envelope is for the way back
        assert {s["agent"]["name"] for s in hopped} == {"ACTF Agent"}
