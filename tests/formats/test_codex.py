"""Codex CLI rollouts (`codex`, issue 18 §2–§5): the laws and the readings.

- A rollout → Storyline → rollout gives every record back exactly, in its order (the fixtures,
  written from the public format description, and generated rollouts of every shape);
- rollout → B → rollout gives the rollout's own round trip back for every other format B (what B
  cannot say rides in B's `_storyline` envelope), and A → rollout → A for every other format's
  fixtures;
- function calls are paired with their outputs by `call_id`, reasoning is kept (encrypted too),
  `turn_context` is the turn's env, token counts follow OpenAI's semantics;
- records and keys of a newer version are kept and counted as unknown;
- the fixtures fit the JSON Schema of the record types (checked by `jsonschema` too);
- the ATIF written from a rollout is one Harbor accepts.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from codex_strategies import jsonl, rollouts, thread_trees
from conftest import FIXTURES, kept_for_the_way_back
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_harbor import harbor_valid, recorded
from test_hops import hop_in, hop_out, plain, without_source

import mapc
from mapc.cli.main import cli
from mapc.engine import convert, detect
from mapc.engine.problems import MapcError

ROLLOUTS = sorted((FIXTURES / "codex").glob("rollout-*.jsonl"))
BASIC, NEWER, SUBAGENT = ROLLOUTS
OTHERS = [
    "storyline",
    "atif",
    "actf",
    "openai-msg",
    "openai-chat",
    "sharegpt",
    "agenticmd",
    "otel-genai",
    "claude-code",
]
SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "codex.schema.json"


def records(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def read(data: bytes) -> list[dict[str, Any]]:
    return mapc.into_storyline("codex", data, jsonl=True, path="rollout.jsonl")


def write(stories: list[dict[str, Any]]) -> Any:
    return plain(mapc.from_storyline("codex", stories))


def args_decoded(recs: Any) -> Any:
    """Records with JSON-text `arguments` decoded (AgenticMD writes a tool call's arguments with
    its keys sorted: the same JSON value, another text)."""
    out = []
    for r in recs:
        p = r.get("payload") if type(r) is dict else None
        if type(p) is dict and type(p.get("arguments")) is str:
            with contextlib.suppress(ValueError):
                r = {**r, "payload": {**p, "arguments": json.loads(p["arguments"])}}
        out.append(r)
    return out


# --- the fixtures ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: p.name[:28])
def test_a_rollout_comes_back_record_for_record(path: Path) -> None:
    (story,) = read(path.read_bytes())
    assert write([story]) == records(path)


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: p.name[:28])
def test_the_fixtures_fit_the_json_schema_of_the_record_types(path: Path) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(records(path))) == []


def test_the_schema_refuses_what_codex_cannot_read_with_a_pointer() -> None:
    bad = records(BASIC)
    bad[8] = {**bad[8], "payload": {k: v for k, v in bad[8]["payload"].items() if k != "call_id"}}
    with pytest.raises(MapcError) as info:
        read(jsonl(bad))
    (problem,) = info.value.problems
    assert (problem.code, problem.pointer, problem.line) == ("schema.required", "/8/payload", 9)
    assert "call_id" in problem.message


def test_the_session_its_agent_and_its_turns() -> None:
    (story,) = read(BASIC.read_bytes())
    assert story["session"] == "0199a1b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"
    assert story["agent"] == {"id": "codex", "ver": "0.46.0", "name": "codex_cli_rs", "model": "gpt-5-codex"}
    assert (story["started_at"], story["finished_at"]) == ("2025-10-06T09:14:02.101Z", "2025-10-06T09:14:21.882Z")
    fields = story["unknown_fields"]["sources"]["codex"]["fields"]
    assert fields["/0"]["payload"]["git"]["branch"] == "main"  # the session_meta rides whole
    assert [(t["src"], bool(t.get("tool_calls"))) for t in story["turns"]] == [
        ("user", False), ("user", False), ("agent", True), ("agent", True), ("agent", True), ("agent", False)
    ]  # fmt: skip
    assert convert.drift("codex", BASIC.read_bytes()) == []  # every record type and key of this file is known


def test_function_calls_are_paired_with_their_outputs_by_call_id() -> None:
    (story,) = read(NEWER.read_bytes())
    parallel = story["turns"][2:4]  # two calls, then both outputs
    for turn in parallel:
        (call,) = turn["tool_calls"]
        (result,) = turn["observation"]["results"]
        assert result["source_call_id"] == call["tcid"]
    assert parallel[1]["observation"]["results"][0]["content"].endswith("in health")
    # each output record keeps its call_id as its place mark: the reverse puts it back where it was
    # (a key codex defines: kept in origin.kept, not among the unknown fields)
    fields = kept_for_the_way_back(story, "codex")
    assert [fields["/9/payload/call_id"], fields["/10/payload/call_id"]] == [
        t["tool_calls"][0]["tcid"] for t in parallel
    ]
    custom = story["turns"][4]
    assert custom["tool_calls"][0]["args"] == {"input": records(NEWER)[12]["payload"]["input"]}
    assert custom["observation"]["results"][0]["extra"]["codex_item"] == "custom_tool_call_output"
    shell = read(SUBAGENT.read_bytes())[0]["turns"][1]["tool_calls"][0]
    assert (shell["fn"], shell["args"]["command"]) == ("local_shell", ["git", "diff", "--", "app/health.py"])


def test_reasoning_is_kept_even_when_encrypted() -> None:
    (story,) = read(BASIC.read_bytes())
    turn = story["turns"][2]
    assert turn["reason"] == "**Running the test suite**"
    kept = story["unknown_fields"]["sources"]["codex"]["fields"]["/7"]  # the reasoning record, whole
    assert kept["payload"]["encrypted_content"].startswith("gAAAAAB")
    (newer,) = read(NEWER.read_bytes())
    only_encrypted = newer["turns"][2]
    assert "reason" not in only_encrypted  # no text to show, but the record rides whole
    assert newer["unknown_fields"]["sources"]["codex"]["fields"]["/6"]["payload"]["summary"] == []
    sub = read(SUBAGENT.read_bytes())[0]["turns"][1]
    assert sub["reason"] == "**Reading the diff**\n\nI should look at git diff for the file."


def test_turn_context_is_the_env_of_the_turn_it_precedes() -> None:
    (story,) = read(NEWER.read_bytes())
    env = story["turns"][0]["env"]
    assert env["event_type"] == "turn_context" and env["id"] == "1"
    assert env["state"]["sandbox_policy"] == {"type": "danger-full-access"}
    assert story["agent"]["model"] == "gpt-5.1-codex"
    assert all("env" not in t for t in story["turns"][1:])  # one turn context, before the first turn


def test_token_counts_follow_openai_semantics() -> None:
    (story,) = read(BASIC.read_bytes())
    first_call = story["turns"][2]
    # input_tokens includes the cached ones and output_tokens the reasoning ones (OpenAI), so they
    # are ATIF's prompt_tokens (with cached_tokens a part of it) and completion_tokens as they are
    assert first_call["metrics"] == {
        "prompt_tokens": 5120,
        "completion_tokens": 142,
        "cached_tokens": 3968,
        "extra": {"reasoning_output_tokens": 64, "total_tokens": 5262},
    }
    # a token_count without info (the turn's start) gives no metrics, and users get none
    assert all("metrics" not in t for t in story["turns"] if t["src"] != "agent")


def test_records_and_keys_of_a_newer_version_are_kept_and_counted() -> None:
    (story,) = read(NEWER.read_bytes())
    fields = story["unknown_fields"]["sources"]["codex"]["fields"]
    assert fields["/15"]["type"] == "world_state"  # kept whole at its line
    assert fields["/18/payload/internal_chat_message_metadata_passthrough"] == {"turn_id": "1"}
    (types, keys) = convert.drift("codex", NEWER.read_bytes())
    assert types.startswith("unknown record types from a newer version, kept whole: world_state ×1")
    assert "response_item/payload/internal_chat_message_metadata_passthrough ×1" in keys
    assert "0.46.0, 0.58.0, 0.63.0" in types  # the versions the spec was checked against
    newer_meta = {**records(NEWER)[0], "payload": {**records(NEWER)[0]["payload"], "cli_version": "0.99.0"}}
    (versions,) = convert.drift("codex", jsonl([newer_meta]))
    assert versions.startswith("versions the spec was not checked against: 0.99.0")


# --- generated rollouts ---------------------------------------------------------------------------

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(rollouts())
def test_generated_rollouts_come_back_exactly(recs: list[dict[str, Any]]) -> None:
    assert write(read(jsonl(recs))) == recs


@_SETTINGS
@given(rollouts(), st.sampled_from(OTHERS))
def test_generated_rollouts_survive_every_hop(recs: list[dict[str, Any]], b: str) -> None:
    stories = read(jsonl(recs))
    direct = write(stories)
    try:
        hopped = hop_in(b, hop_out(b, stories))
    except MapcError as exc:
        # what B refuses, clearly: OpenAI Messages has no row for a run ending with a user turn or
        # with a system turn after the start (issue 15 §5); ShareGPT and the chat format no tool
        # result before its call; ACTF only agent steps with ids it can take
        assert b in ("openai-msg", "actf", "openai-chat", "sharegpt"), exc.problems
        assert {p.code for p in exc.problems} <= {"export.unrepresentable", "export.invalid", "fold.orphan"}
        return
    back = without_source(plain(mapc.from_storyline("codex", hopped)), b)
    if b == "agenticmd":
        back, direct = args_decoded(back), args_decoded(direct)
    assert back == direct


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(thread_trees(), st.sampled_from(OTHERS))
def test_generated_thread_trees_link_and_survive_every_hop(streams: list[list[dict[str, Any]]], b: str) -> None:
    root, *kids = streams
    stories = convert.into_storyline_with("codex", jsonl(root), [(f"c{n}.jsonl", jsonl(k)) for n, k in enumerate(kids)])
    by_session = {s["session"]: s for s in stories}
    for story, recs in zip(stories[1:], kids, strict=True):  # each child names the thread that spawned it
        meta = next(r for r in recs if r["type"] == "session_meta")
        psid = meta["payload"]["source"]["subagent"]["thread_spawn"]["parent_thread_id"]
        assert story["parent"] == {"psid": psid} and story["session"] in by_session[psid]["children"]
    assert [write([s]) for s in stories] == streams
    try:
        hopped = hop_in(b, hop_out(b, stories))
    except MapcError as exc:  # as for one rollout (test_generated_rollouts_survive_every_hop)
        assert b in ("openai-msg", "actf", "openai-chat", "sharegpt"), exc.problems
        assert {p.code for p in exc.problems} <= {"export.unrepresentable", "export.invalid", "fold.orphan"}
        return
    assert len(hopped) == len(stories)
    # The tree's links come back (formats without trees carry them, as the hub's own, in the envelope).
    tree = [(s.get("parent") or {}).get("psid") is not None for s in hopped]
    assert tree == [s.get("parent") is not None for s in stories]
    assert [len(s.get("children") or ()) for s in hopped] == [len(s.get("children") or ()) for s in stories]
    # Each rollout comes back, B's residuals and the carried tree keys aside (a rollout cannot say them).
    back = [without_source(without_source(plain(mapc.from_storyline("codex", [s])), b), "storyline") for s in hopped]
    if b == "agenticmd":
        back, streams = [args_decoded(x) for x in back], [args_decoded(x) for x in streams]
    assert back == streams


@_SETTINGS
@given(rollouts())
def test_the_atif_written_from_a_rollout_is_harbor_valid(recs: list[dict[str, Any]]) -> None:
    out = mapc.from_storyline("atif", read(jsonl(recs)))
    assert harbor_valid(out) == []


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: p.name[:28])
@pytest.mark.parametrize("b", OTHERS)
def test_a_fixture_through_every_format_comes_back(path: Path, b: str) -> None:
    stories = read(path.read_bytes())
    try:
        hopped = hop_in(b, hop_out(b, stories))
    except MapcError as exc:
        # OpenAI Messages has no row for a user turn not followed by an agent turn (here the
        # <environment_context> message before the request), issue 15 §5: refused, clearly
        assert (b, {p.code for p in exc.problems}) == ("openai-msg", {"export.unrepresentable"})
        return
    back = without_source(plain(mapc.from_storyline("codex", hopped)), b)
    want = write(stories)
    assert want == records(path)
    if b == "agenticmd":
        back, want = args_decoded(back), args_decoded(want)
    assert back == want


FOREIGN = sorted(p for fmt in ("atif", "actf", "openai-msg") for p in (FIXTURES / fmt).glob("*.json"))


@pytest.mark.parametrize("path", FOREIGN, ids=lambda p: p.name)
def test_every_other_fixture_through_codex_comes_back(path: Path) -> None:
    a = path.parent.name
    stories = mapc.into_storyline(a, path.read_bytes(), path=path.name)
    direct = plain(mapc.from_storyline(a, stories))
    out = mapc.from_storyline("codex", stories)
    files = out if type(out[0]) is list else [out]
    hopped = [s for f in files for s in read(jsonl(f))]
    assert without_source(plain(mapc.from_storyline(a, hopped)), "codex") == direct


def test_a_storyline_from_elsewhere_starts_with_the_session_meta_the_head_rules_write() -> None:
    story = {"schema_version": "storyline/v1", "session": "s-1", "agent": {"id": "x", "name": "harbor"}}
    story["turns"] = [{"id": 1, "src": "user", "msg": "hi"}]
    head, turn = mapc.from_storyline("codex", [story])
    epoch = "1970-01-01T00:00:00.000Z"  # no started_at, no agent version: the rules' `else`
    meta = {"id": "s-1", "timestamp": epoch, "cwd": "", "originator": "harbor", "cli_version": ""}
    assert head == {"timestamp": epoch, "payload": meta, "type": "session_meta"}
    assert turn["payload"] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


def test_images_from_another_format_become_input_images() -> None:
    stories = mapc.into_storyline("atif", (FIXTURES / "atif" / "multimodal_18.json").read_bytes())
    recs = mapc.from_storyline("codex", stories)
    images = [c for r in recs for c in (r["payload"].get("content") or []) if c.get("type") == "input_image"]
    assert images and all(type(c["image_url"]) is str for c in images)


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: p.name[:28])
def test_the_atif_of_every_fixture_is_harbor_valid(path: Path) -> None:
    out = mapc.from_storyline("atif", read(path.read_bytes()))
    assert harbor_valid(out) == []
    assert out["steps"][0]["step_id"] == 1


def test_harbor_itself_accepted_the_atif_of_the_fixtures_and_of_generated_rollouts() -> None:
    # Harbor 0.26's own Trajectory.model_validate verdicts, recorded by tests/data/harbor/record.py
    rows = [r for r in recorded() if r["name"].startswith(("mapc/codex/", "mapc/codex-rollouts/"))]
    assert {r["name"] for r in rows} >= {f"mapc/codex/{p.name}/0" for p in ROLLOUTS}
    assert len(rows) >= 40 and all(r["valid"] for r in rows)
    for path in ROLLOUTS:  # and what mapc writes today is what Harbor judged
        (row,) = [r for r in rows if r["name"] == f"mapc/codex/{path.name}/0"]
        assert plain(mapc.convert("codex", "atif", path.read_bytes(), jsonl=True, path=path.name)) == row["doc"]


def test_spec_table_says_what_each_record_kind_becomes() -> None:
    from click.testing import CliRunner

    done = CliRunner().invoke(cli, ["spec", "table", "codex"])
    assert done.exit_code == 0, done.output
    rows = done.output.splitlines()
    assert "| `/{r}/payload`, lent to the next turn | `/turns/{t}/env/state` |" in rows
    lent = '`/{r}/payload/info/last_token_usage/input_tokens`, lent to the previous turn with /src = "agent"'
    assert f"| {lent} | `/turns/{{t}}/metrics/prompt_tokens` |" in rows
    assert '| `/{r}/payload/id` (first record) where /type = "session_meta" | `/session` |' in rows
    assert rows[-1] == "Checked against versions: 0.46.0, 0.58.0, 0.63.0."


# --- detection and the CLI --------------------------------------------------------------------------


def test_detection_by_path_and_by_content() -> None:
    assert detect.by_path("/home/u/.codex/sessions/2025/10/06/rollout-2025-10-06T09-14-02-x.jsonl") == "codex"
    assert detect.by_path(".codex/sessions/2025/10/06/r.jsonl") == "codex"
    assert detect.by_path("/home/u/.codex/config.toml") is None
    assert detect.by_content(BASIC.read_bytes(), jsonl=True) == "codex"
    headless = b"".join(line + b"\n" for line in BASIC.read_bytes().splitlines()[1:])
    assert detect.by_content(headless, jsonl=True) == "codex"


def test_mapc_convert_writes_a_rollout_as_jsonl(tmp_path: Path) -> None:
    from click.testing import CliRunner

    atif, back = tmp_path / "s.atif.json", tmp_path / "back.jsonl"
    runner = CliRunner()
    done = runner.invoke(cli, ["convert", str(NEWER), "--to", "atif", "-o", str(atif)])
    assert done.exit_code == 0, done.output
    done = runner.invoke(cli, ["convert", str(atif), "--to", "codex", "-o", str(back)])
    assert done.exit_code == 0, done.output
    assert [json.loads(line) for line in back.read_bytes().splitlines()] == records(NEWER)


def test_mapc_convert_a_sessions_tree_finds_the_rollouts_by_their_path(tmp_path: Path) -> None:
    from click.testing import CliRunner

    day = tmp_path / "home" / ".codex" / "sessions" / "2025" / "11" / "20"
    day.mkdir(parents=True)
    for path in ROLLOUTS:  # renamed, so only the path says what they are
        (day / path.name.replace("rollout-", "r-")).write_bytes(path.read_bytes())
    out = tmp_path / "out"
    done = CliRunner().invoke(
        cli, ["convert", str(tmp_path / "home" / ".codex" / "sessions"), "--to", "atif", "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    written = sorted(out.rglob("*.json"))
    # the sub-agent's rollout names its parent's thread: it is read with it, as one tree
    assert len(written) == 2 and "converted 2 files (3 documents), 0 failed, 1 skipped" in done.stderr
    child = day / SUBAGENT.name.replace("rollout-", "r-")
    assert f"skipped {child}: read with {day / NEWER.name.replace('rollout-', 'r-')}" in done.stderr
    docs = {d["session_id"]: d for d in (json.loads(p.read_bytes()) for p in written)}
    assert set(docs) == {read(p.read_bytes())[0]["session"] for p in (BASIC, NEWER)}
    (sub,) = docs[read(NEWER.read_bytes())[0]["session"]]["subagent_trajectories"]
    assert sub["trajectory_id"] == read(SUBAGENT.read_bytes())[0]["session"]
    assert harbor_valid(docs[read(NEWER.read_bytes())[0]["session"]]) == []


def test_a_sub_agent_rollout_is_a_child_of_the_thread_that_spawned_it(tmp_path: Path) -> None:
    (alone,) = read(SUBAGENT.read_bytes())
    assert alone["parent"] == {"psid": read(NEWER.read_bytes())[0]["session"]}
    parent, child = convert.into_storyline_with("codex", NEWER.read_bytes(), [(SUBAGENT.name, SUBAGENT.read_bytes())])
    assert parent["children"] == [child["session"]] and child["parent"] == {"psid": parent["session"]}
    assert [write([s]) for s in (parent, child)] == [records(NEWER), records(SUBAGENT)]
    # a tree written back: the sub-agent's rollout beside the parent's, named by its id
    tree = tmp_path / "tree.storyline.json"
    tree.write_bytes(orjson.dumps([parent, child]))
    from click.testing import CliRunner

    done = CliRunner().invoke(cli, ["convert", str(tree), "--to", "codex", "-o", str(tmp_path / "r.jsonl")])
    assert done.exit_code == 0, done.output
    assert records(tmp_path / "r.jsonl") == records(NEWER)
    assert records(tmp_path / f"r.{child['session']}.jsonl") == records(SUBAGENT)


def test_a_rollout_without_a_session_meta_is_refused_clearly() -> None:
    with pytest.raises(MapcError) as info:
        read(jsonl(records(BASIC)[1:]))
    assert [p.code for p in info.value.problems] == ["schema.required"]
    assert "session" in info.value.problems[0].message


def test_the_json_array_of_the_records_reads_the_same() -> None:
    as_array = mapc.into_storyline("codex", orjson.dumps(records(BASIC)), path="rollout.jsonl")
    assert as_array == read(BASIC.read_bytes())


def test_a_call_appended_to_the_storyline_is_written_after_the_last_record_with_its_output() -> None:
    original = ROLLOUTS[0].read_bytes()
    (story,) = mapc.into_storyline("codex", original)
    call = {"tcid": "c-new", "fn": "shell", "args": {"command": ["ls"]}}
    story["turns"].append(
        {
            "id": len(story["turns"]) + 1,
            "src": "agent",
            "msg": "",
            "ts": "2025-10-06T10:00:00.000Z",
            "tool_calls": [call],
            "observation": {"results": [{"source_call_id": "c-new", "content": "a"}]},
        }
    )
    out = plain(mapc.from_storyline("codex", [story]))
    lines = [json.loads(line) for line in original.splitlines() if line.strip()]
    assert out[: len(lines)] == lines  # the rollout as it was, then the new call and its output
    assert [r["payload"]["type"] for r in out[len(lines) :]] == ["function_call", "function_call_output"]
    assert out[-1]["payload"] == {"type": "function_call_output", "call_id": "c-new", "output": "a"}
    (again,) = mapc.into_storyline("codex", b"".join(orjson.dumps(r) + b"\n" for r in out))
    assert again["turns"][-1]["observation"]["results"] == [{"source_call_id": "c-new", "content": "a"}]
