"""Claude Code session transcripts (`claude-code`, issue 18): the laws and the readings.

- A → Storyline → A gives every record back (the real 1,863-record session with its subagents,
  and generated sessions in every shape: branches, sidechains, compactions, parallel calls,
  orphan results, unknown record types and keys, nulls);
- A → B → A gives A back for every other format B (what B cannot say rides in B's envelope);
- the readings: the active branch in order, tool results paired into the turns that called,
  usage as metrics with cache read and cache creation kept apart, subagents as linked children,
  bookkeeping records kept whole, drift counted and reported;
- detection (a `.claude/projects/` path, or the content) and `mapc convert DIR` over a project;
- the records Claude Code writes and mapc writes back pass schemas/claude-code.schema.json.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from claude_strategies import SESSION, sessions, subagent
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hops import FILES as HOP_FILES
from test_hops import hop_in, hop_out, through, without_source

import mapc
from mapc.cli.main import cli
from mapc.engine import convert, detect
from mapc.engine.problems import MapcError
from mapc.engine.schema import reference_validator

DIR = FIXTURES / "claude-code"
SESSION_FILE = DIR / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
SUBAGENTS = sorted((DIR / "258c7280-ae70-4798-800f-63464d01a85d" / "subagents").glob("*.jsonl"))
OTHERS = ["storyline", "atif", "actf", "openai-msg", "agenticmd", "openai-chat", "sharegpt", "otel-genai", "codex"]


def records(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def jsonl(recs: list[Any]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in recs)


def plain(value: Any) -> Any:
    return json.loads(orjson.dumps(value))


def round_trip(recs: list[Any]) -> Any:
    return plain(mapc.from_storyline("claude-code", mapc.into_storyline("claude-code", jsonl(recs))))


def tree() -> list[dict[str, Any]]:
    companions = [(p.relative_to(DIR).as_posix(), p.read_bytes()) for p in SUBAGENTS]
    return convert.into_storyline_with("claude-code", SESSION_FILE.read_bytes(), companions, path=SESSION_FILE.name)


# --- the real session ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", [SESSION_FILE, *SUBAGENTS], ids=lambda p: p.name)
def test_the_real_session_comes_back_record_for_record(path: Path) -> None:
    original = records(path)
    assert round_trip(original) == original


def test_most_lines_come_back_byte_for_byte() -> None:
    # Claude Code writes two key orders for one record kind (usage keys, and some user records):
    # the spec's order is the common one, so those lines differ only in key order.
    stories = mapc.into_storyline("claude-code", SESSION_FILE.read_bytes())
    lines = jsonl(mapc.from_storyline("claude-code", stories)).splitlines()
    original = SESSION_FILE.read_bytes().splitlines()
    same = sum(a == b for a, b in zip(lines, original, strict=True))
    assert same == 1726 and len(lines) == 1863


def test_turns_follow_the_chain_with_results_paired_to_their_calls() -> None:
    (story,) = mapc.into_storyline("claude-code", SESSION_FILE.read_bytes())
    turns = story["turns"]
    assert [t["id"] for t in turns] == list(range(1, len(turns) + 1))
    assert {t["src"] for t in turns} == {"user", "agent", "system"}
    calls = [c["tcid"] for t in turns for c in t.get("tool_calls") or []]
    answered = [r["source_call_id"] for t in turns for r in (t.get("observation") or {}).get("results", [])]
    assert len(calls) == 186 and sorted(answered) == sorted(calls)  # every tool_use got its tool_result
    for t in turns:  # each result sits on the turn that made the call
        own = {c["tcid"] for c in t.get("tool_calls") or []}
        assert {r["source_call_id"] for r in (t.get("observation") or {}).get("results", [])} <= own
    assert any(t["src"] == "system" and t["msg"] == "Conversation compacted" for t in turns)
    assert sum(1 for t in turns if t.get("reason")) == 19  # the thinking blocks
    assert story["session"] == "258c7280-ae70-4798-800f-63464d01a85d"
    assert story["agent"] == {"id": "claude-code", "ver": "2.1.39", "model": "claude-opus-4-6"}


def test_usage_is_counted_once_per_message_with_cache_tokens_apart() -> None:
    (story,) = mapc.into_storyline("claude-code", SESSION_FILE.read_bytes())
    last: dict[str, dict[str, int]] = {}
    for r in records(SESSION_FILE):
        if r["type"] == "assistant":
            last[r["message"]["id"]] = r["message"]["usage"]
    metrics = [t["metrics"] for t in story["turns"] if "metrics" in t]
    assert len(metrics) == len(last)  # one turn per API message carries its usage
    assert sum(m["completion_tokens"] for m in metrics) == sum(u["output_tokens"] for u in last.values())
    assert sum(m["cached_tokens"] for m in metrics) == sum(u["cache_read_input_tokens"] for u in last.values())
    creation = sum(m["extra"]["cache_creation_input_tokens"] for m in metrics)
    assert creation == sum(u["cache_creation_input_tokens"] for u in last.values())
    prompt = sum(m["prompt_tokens"] for m in metrics)
    want = sum(
        u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"] for u in last.values()
    )
    assert prompt == want


def test_subagents_are_linked_children() -> None:
    root, task, compact = tree()
    assert root["children"] == [task["session"], compact["session"]]
    assert task["session"] == f"{root['session']}/agent-a881341" == task["trajectory"]
    assert task["parent"]["psid"] == root["session"]
    spawn = next(t for t in root["turns"] if t["id"] == task["parent"]["ptid"])
    assert [c["fn"] for c in spawn["tool_calls"] if c["tcid"] == task["parent"]["scid"]] == ["Task"]
    assert compact["parent"] == {"psid": root["session"]}  # nothing in the session names the compaction agent
    assert task["agent"]["model"] == "claude-sonnet-4-5-20250929"
    for story, path in zip((task, compact), SUBAGENTS, strict=True):
        assert plain(mapc.from_storyline("claude-code", [story])) == records(path)


def test_the_atif_of_the_tree_passes_the_harbor_rules() -> None:
    from mapc.mappings import atif_harbor

    doc = mapc.from_storyline("atif", tree())
    assert atif_harbor.problems(plain(doc)) == []
    assert [s["trajectory_id"] for s in doc["subagent_trajectories"]] == [
        "258c7280-ae70-4798-800f-63464d01a85d/agent-a881341",
        "258c7280-ae70-4798-800f-63464d01a85d/agent-acompact-fffbd0",
    ]


@pytest.mark.parametrize("b", OTHERS)
def test_the_real_session_survives_every_hop(b: str) -> None:
    original = records(SESSION_FILE)
    stories = mapc.into_storyline("claude-code", SESSION_FILE.read_bytes())
    back = plain(mapc.from_storyline("claude-code", hop_in(b, hop_out(b, stories))))
    assert without_source(back, b) == original


def test_records_pass_the_published_schema() -> None:
    validator = reference_validator("claude-code")
    for path in [SESSION_FILE, *SUBAGENTS]:
        for r in records(path):
            assert validator.is_valid(r), r.get("uuid")
    assert not validator.is_valid({"type": "assistant", "message": {"role": "assistant"}})
    assert validator.is_valid({"type": "x-from-a-newer-version", "anything": 1})


# --- generated sessions -------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(sessions(), subagent()))
def test_generated_sessions_come_back_record_for_record(recs: list[Any]) -> None:
    assert round_trip(recs) == recs
    validator = reference_validator("claude-code")
    assert all(validator.is_valid(r) for r in round_trip(recs))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions(), st.sampled_from(OTHERS))
def test_generated_sessions_survive_every_hop(recs: list[Any], b: str) -> None:
    stories = mapc.into_storyline("claude-code", jsonl(recs))
    try:
        hopped = hop_in(b, hop_out(b, stories))
    except MapcError as exc:  # ACTF refuses a result that answers no call of its step: said clearly
        assert b in ("actf", "openai-msg"), exc.problems
        assert {p.code for p in exc.problems} <= {"export.invalid", "export.unrepresentable"}
        return
    back = plain(mapc.from_storyline("claude-code", hopped))
    assert without_source(back, b) == recs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sessions(), subagent())
def test_generated_trees_link_and_come_back(recs: list[Any], child: list[Any]) -> None:
    stories = convert.into_storyline_with(
        "claude-code", jsonl(recs), [("s/subagents/agent-a1b2c3d.jsonl", jsonl(child))]
    )
    root, kid = stories
    assert root["children"] == [kid["session"]] and kid["parent"]["psid"] == root["session"]
    assert [plain(mapc.from_storyline("claude-code", [s])) for s in stories] == [recs, child]


# --- the readings, one shape at a time -------------------------------------------------------


def _rec(kind: str, uuid: str | None, parent: str | None, **more: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/p",
        "sessionId": SESSION,
        "version": "2.1.39",
        "gitBranch": "main",
        "type": kind,
    }
    base.update(more)
    if uuid is not None:
        base.update({"uuid": uuid, "timestamp": f"2026-02-11T20:00:0{len(uuid) % 10}.000Z"})
    return base


def _user(uuid: str, parent: str | None, text: str) -> dict[str, Any]:
    return _rec("user", uuid, parent, message={"role": "user", "content": text})


def _assistant(uuid: str, parent: str, text: str, mid: str = "m1") -> dict[str, Any]:
    usage = {"input_tokens": 1, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3, "output_tokens": 4}
    message = {
        "model": "claude-opus-4-6",
        "id": mid,
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return _rec("assistant", uuid, parent, message=message, requestId="r")


def test_an_abandoned_branch_is_kept_whole_but_is_not_a_turn() -> None:
    recs = [
        _user("u1", None, "first"),
        _assistant("a1", "u1", "old answer", "m1"),
        _user("u2", "u1", "edited"),
        _assistant("a2", "u2", "new answer", "m2"),
    ]
    (story,) = mapc.into_storyline("claude-code", jsonl(recs))
    assert [t["msg"] for t in story["turns"]] == ["first", "edited", "new answer"]
    fields = story["unknown_fields"]["sources"]["claude-code"]["fields"]
    assert fields["/1"] == recs[1]
    assert round_trip(recs) == recs


def test_unknown_record_types_keys_and_versions_are_kept_counted_and_reported(tmp_path: Path) -> None:
    future = _rec("attachment", "x1", "u1", payload={"deep": [1, None]})
    newer = {**_user("u2", "x1", "again"), "version": "2.9.0", "futureFlag": True}
    recs = [_user("u1", None, "hi"), future, newer]
    (story,) = mapc.into_storyline("claude-code", jsonl(recs))
    fields = story["unknown_fields"]["sources"]["claude-code"]["fields"]
    assert fields["/1"] == future and fields["/2/futureFlag"] is True
    assert story["unknown_key_counts"]["claude-code"]["/*"] == 1
    assert round_trip(recs) == recs
    path = tmp_path / "s.jsonl"
    path.write_bytes(jsonl(recs))
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["convert", str(path), "--from", "claude-code", "--to", "atif"])
    assert result.exit_code == 0, result.output
    assert "unknown record types from a newer version, kept whole: attachment ×1" in result.stderr
    assert "unknown keys from a newer version, kept: user/futureFlag ×1" in result.stderr
    assert "versions the spec was not checked against: 2.9.0" in result.stderr
    # and the same lines, naming the file, when a directory is converted (a subagent's too)
    (tmp_path / "s" / "subagents").mkdir(parents=True)
    kid = {**_rec("user", "k1", None, message={"role": "user", "content": "go"}), "agentId": "a1", "isSidechain": True}
    (tmp_path / "s" / "subagents" / "agent-a1.jsonl").write_bytes(jsonl([{**kid, "newerKey": 1}]))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["convert", str(tmp_path), "--from", "claude-code", "--to", "atif", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert f"{path}: warning: unknown record types from a newer version, kept whole: attachment ×1" in "\n".join(lines)
    assert any(f"{path}: warning: unknown keys from a newer version, kept: user/futureFlag ×1" in x for x in lines)
    assert any(
        f"{path}: warning: s/subagents/agent-a1.jsonl: unknown keys" in x and "user/newerKey ×1" in x for x in lines
    )
    assert "converted 1 file (2 documents)" in result.stderr


def test_an_edited_storyline_is_written_back_or_refused_saying_which_edit(tmp_path: Path) -> None:
    recs = [
        _user("u1", None, "first"),
        _assistant("a1", "u1", "answer", "m1"),
        _user("u2", "a1", "more"),
        _assistant("a2", "u2", "again", "m2"),
    ]
    (story,) = mapc.into_storyline("claude-code", jsonl(recs))
    story["turns"][2]["msg"] = "edited"  # a value inside a turn: written back, the rest as it was
    (back,) = [plain(mapc.from_storyline("claude-code", [story]))]
    assert back == [recs[0], recs[1], {**recs[2], "message": {"role": "user", "content": "edited"}}, recs[3]]
    removed = {**story, "turns": [story["turns"][0], *story["turns"][2:]]}
    inserted = {**story, "turns": [story["turns"][0], {"id": 9, "src": "user", "msg": "new"}, *story["turns"][1:]]}
    cut = {**story, "turns": story["turns"][:2]}
    for edited, where, says in [
        (removed, "/0/turns/1", "turn id 3 where the claude-code stream's records put turn 2"),
        (inserted, "/0/turns/1", "turns were removed, inserted or moved after the Storyline was read"),
        (cut, "/0/turns", "record 2 of the claude-code stream has no turn to write it from"),
    ]:
        with pytest.raises(MapcError) as info:
            mapc.from_storyline("claude-code", [edited])
        (problem,) = info.value.problems
        assert (problem.code, problem.pointer) == ("export.edited", where) and says in problem.message
        assert "without unknown_fields.sources.claude-code" in problem.message
    path = tmp_path / "edited.storyline.json"
    path.write_bytes(orjson.dumps(removed))
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["convert", str(path), "--from", "storyline", "--to", "claude-code"])
    assert result.exit_code == 1 and "export.edited" in result.stderr and "turn id 3" in result.stderr
    bare = {k: v for k, v in removed.items() if k not in ("unknown_fields", "unknown_key_counts")}
    fresh = mapc.from_storyline("claude-code", [bare])  # written as a new session, as the message says
    assert [r["message"]["content"] for r in fresh] == ["first", "edited", [{"type": "text", "text": "again"}]]
    assert [r["parentUuid"] for r in fresh[1:]] == [r["uuid"] for r in fresh[:-1]]  # threaded anew


def test_a_record_that_is_not_an_object_is_refused_with_its_line() -> None:
    with pytest.raises(MapcError) as info:
        mapc.into_storyline("claude-code", jsonl([_user("u1", None, "hi")]) + b"[1]\n")
    (problem,) = info.value.problems
    assert (problem.code, problem.line) == ("stream.not_object", 2)


def test_a_storyline_from_elsewhere_becomes_a_threaded_session() -> None:
    atif = (FIXTURES / "atif" / "parallel_tools_14.json").read_bytes()
    stories = mapc.into_storyline("atif", atif)
    recs = plain(mapc.from_storyline("claude-code", stories))
    recs = [{k: v for k, v in r.items() if k != "_storyline"} for r in recs]
    validator = reference_validator("claude-code")
    assert all(validator.is_valid(r) for r in recs)
    assert recs[0]["parentUuid"] is None
    assert all(b["parentUuid"] == a["uuid"] for a, b in itertools.pairwise(recs))
    assert len({r["uuid"] for r in recs}) == len(recs)
    again = mapc.into_storyline("claude-code", jsonl(recs))[0]
    want = [(c["tcid"], c["fn"]) for t in stories[0]["turns"] for c in t.get("tool_calls") or []]
    assert [(c["tcid"], c["fn"]) for t in again["turns"] for c in t.get("tool_calls") or []] == want


# --- detection and directories -------------------------------------------------------------------


def test_detected_by_path_and_by_content(tmp_path: Path) -> None:
    project = tmp_path / ".claude" / "projects" / "-home-u-x"
    project.mkdir(parents=True)
    (project / "s.jsonl").write_bytes(b'{"type":"summary"}\n')
    assert detect.detect(str(project / "s.jsonl"), b'{"type":"summary"}\n') == "claude-code"
    assert detect.detect("elsewhere.jsonl", SESSION_FILE.read_bytes()) == "claude-code"
    assert detect.detect("a.jsonl", SUBAGENTS[0].read_bytes()) == "claude-code"
    chat = (FIXTURES / "openai-chat" / "stock_toolcall_training.jsonl").read_bytes()
    assert detect.detect("a.jsonl", chat) == "openai-chat"


def test_convert_a_project_directory_with_its_subagents(tmp_path: Path) -> None:
    from click.testing import CliRunner

    project = tmp_path / ".claude" / "projects" / "-home-u-spotter"
    (project / SUBAGENTS[0].parent.relative_to(DIR)).mkdir(parents=True)
    for path in [SESSION_FILE, *SUBAGENTS]:
        (project / path.relative_to(DIR)).write_bytes(path.read_bytes())
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["convert", str(project), "--to", "atif", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json")) == [SESSION_FILE.stem + ".json"]
    assert "converted 1 file (3 documents), 0 failed, 2 skipped" in result.stderr
    assert "the session it belongs to" in result.stderr
    doc = json.loads((out / (SESSION_FILE.stem + ".json")).read_bytes())
    assert len(doc["subagent_trajectories"]) == 2


def test_explain_says_where_a_record_value_went() -> None:
    from click.testing import CliRunner

    def explain(ptr: str) -> str:
        result = CliRunner().invoke(cli, ["explain", "claude-code", str(SESSION_FILE), ptr])
        assert result.exit_code == 0, result.output
        return result.output

    assert "copies it to /turns/1/ts" in explain("/5/timestamp")
    assert "a residual (kept under its pointer)" in explain("/5/uuid")
    assert "a residual (its record is kept whole)" in explain("/1/data")  # a progress record
    assert "it becomes /turns/0" in explain("/4")


@pytest.mark.parametrize("path", HOP_FILES, ids=lambda p: p.name)
def test_every_other_fixture_survives_a_hop_through_claude_code(path: Path) -> None:
    direct, back, _, _ = through(path.parent.name, "claude-code", path.read_bytes(), path.name)
    assert without_source(back, "claude-code") == direct


def test_a_tree_is_written_back_as_the_session_and_its_subagent_files(tmp_path: Path) -> None:
    from click.testing import CliRunner

    atif = tmp_path / "run.atif.json"
    atif.write_bytes(orjson.dumps(mapc.from_storyline("atif", tree())))
    out = tmp_path / "back" / SESSION_FILE.name
    result = CliRunner().invoke(cli, ["convert", str(atif), "--to", "claude-code", "-o", str(out)])
    assert result.exit_code == 0, result.output
    for path in [SESSION_FILE, *SUBAGENTS]:
        written = records(out.parent / path.relative_to(DIR))
        # what ATIF could not say of the tree (the spawning call) rides in the first record's envelope
        assert [{k: v for k, v in r.items() if k != "_storyline"} for r in written] == records(path)


def test_a_single_session_file_is_converted_with_the_subagents_beside_it(tmp_path: Path) -> None:
    """`mapc convert SESSION.jsonl` (no directory) reads SESSION/subagents/agent-*.jsonl beside it:
    → atif nests them as subagent_trajectories; → claude-code -o writes them back beside the output."""
    from click.testing import CliRunner

    for path in [SESSION_FILE, *SUBAGENTS]:
        (tmp_path / "in" / path.relative_to(DIR)).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "in" / path.relative_to(DIR)).write_bytes(path.read_bytes())
    session = tmp_path / "in" / SESSION_FILE.name
    result = CliRunner().invoke(cli, ["convert", str(session), "--to", "atif", "-o", str(tmp_path / "run.json")])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "run.json").read_bytes())
    assert [s["trajectory_id"] for s in doc["subagent_trajectories"]] == [
        f"{SESSION_FILE.stem}/agent-a881341",
        f"{SESSION_FILE.stem}/agent-acompact-fffbd0",
    ]
    alone = tmp_path / "alone.jsonl"  # without the subagents beside it: no children
    alone.write_bytes(SESSION_FILE.read_bytes())
    result = CliRunner().invoke(cli, ["convert", str(alone), "--to", "atif"])
    assert result.exit_code == 0, result.output
    assert "subagent_trajectories" not in json.loads(result.stdout)
    out = tmp_path / "back" / SESSION_FILE.name
    result = CliRunner().invoke(cli, ["convert", str(session), "--to", "claude-code", "-o", str(out)])
    assert result.exit_code == 0, result.output
    for path in [SESSION_FILE, *SUBAGENTS]:
        assert records(out.parent / path.relative_to(DIR)) == records(path)


def test_a_turn_appended_to_the_storyline_is_threaded_with_made_ids_the_report_lists() -> None:
    recs = [_user("u1", None, "first"), _assistant("a1", "u1", "answer", "m1")]
    (story,) = mapc.into_storyline("claude-code", jsonl(recs))
    call = {"tcid": "toolu_new", "fn": "Bash", "args": {"command": "ls"}}
    story["turns"] += [
        {"id": 3, "src": "user", "msg": "more", "ts": "2026-02-11T20:01:00.000Z"},
        {
            "id": 4,
            "src": "agent",
            "msg": "",
            "model": "claude-opus-4-6",
            "ts": "2026-02-11T20:01:01.000Z",
            "tool_calls": [call],
            "observation": {"results": [{"source_call_id": "toolu_new", "content": "a b"}]},
        },
    ]
    out = plain(mapc.from_storyline("claude-code", [story]))
    assert out[:2] == recs and len(out) == 5  # the read records as they were, then the new turns' records
    new = out[2:]
    assert [r["type"] for r in new] == ["user", "assistant", "user"]  # the result as a tool_result record
    assert [r["parentUuid"] for r in new] == ["a1", new[0]["uuid"], new[1]["uuid"]]  # threaded to the previous
    assert len({r["uuid"] for r in new}) == 3 and all(r["sessionId"] == SESSION for r in new)
    assert plain(mapc.from_storyline("claude-code", [story])) == out  # made deterministically
    validator = reference_validator("claude-code")
    assert all(validator.is_valid(r) for r in out)
    (again,) = mapc.into_storyline("claude-code", jsonl(out))
    assert [(t["src"], t["msg"]) for t in again["turns"]][2:] == [("user", "more"), ("agent", "")]
    assert again["turns"][3]["observation"]["results"][0]["content"] == "a b"
    _, report = mapc.convert_reported("storyline", "claude-code", orjson.dumps(story))
    made = {s.pointer: s.value for s in report.synthesized}
    fields = "/unknown_fields/sources/claude-code/fields/"
    assert made[fields + "~12~1uuid"] == new[0]["uuid"] and made[fields + "~12~1parentUuid"] == "a1"
    assert made[fields + "~14~1parentUuid"] == new[1]["uuid"]
    assert not any(p.startswith((fields + "~10~1", fields + "~11~1")) for p in made)  # nothing made for the read
    assert fields in report.line() and report.exact  # made, not lost: the way back needs none of them
    _, same = mapc.convert_reported(
        "storyline", "claude-code", orjson.dumps(mapc.into_storyline("claude-code", jsonl(recs))[0])
    )
    assert same.synthesized == ()


def test_an_older_sessions_sidechain_chain_is_kept_whole_beside_the_main_chain() -> None:
    """An older version's Task subagent written inside the session file (its own chain, every record
    `isSidechain: true`): not turns of the session (no child Storyline yet: docs/formats.md), kept
    whole at their lines, so the file comes back the same, through every format."""
    side = {"isSidechain": True}
    recs = [
        _user("u1", None, "go"),
        _assistant("a1", "u1", "delegating", "m1"),
        {**_user("s1", None, "Task: look"), **side},
        {**_assistant("s2", "s1", "found it", "ms"), **side},
        _user("u2", "a1", "thanks"),
    ]
    (story,) = mapc.into_storyline("claude-code", jsonl(recs))
    assert [t["msg"] for t in story["turns"]] == ["go", "delegating", "thanks"]
    fields = story["unknown_fields"]["sources"]["claude-code"]["fields"]
    assert fields["/2"] == recs[2] and fields["/3"] == recs[3]
    assert round_trip(recs) == recs
    for b in OTHERS:
        back = plain(mapc.from_storyline("claude-code", hop_in(b, hop_out(b, [story]))))
        assert without_source(back, b) == recs, b
