"""store/identity.py: a stored document's id is its own identity (issue 15 §6), so continuation
segments of one run that share a session (ATIF v1.7 allows it) are stored, and read back."""

from __future__ import annotations

import json
from pathlib import Path

import lance

from mapc.cli.main import cli
from mapc.store.identity import file_document_ids, is_session_id

ATIF = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "atif" / "support-ticket.json"


def _segment(n: int) -> dict:
    doc = json.loads(ATIF.read_bytes())
    doc.pop("trajectory_id", None)
    doc["session_id"] = "harbor-run-7"  # every segment of the run names the same session
    doc["steps"][0]["message"] = f"segment {n}"
    return doc


def test_ids_are_the_trajectory_then_the_session_then_the_session_and_position():
    stories = [
        {"session": "a", "trajectory": "t1"},
        {"session": "a"},
        {"session": "b"},
        {"session": "a"},
        {"session": "c", "trajectory": ""},
    ]
    assert file_document_ids(stories) == ["t1", "a#2", "b", "a#4", "c"]
    assert is_session_id("a", "a") and is_session_id("a#2", "a") and is_session_id("x#y#3", "x#y")
    assert not is_session_id("a#", "a") and not is_session_id("a#02", "a") and not is_session_id("b#1", "a")


def test_continuation_segments_sharing_a_session_are_stored_and_read_back(tmp_path, runner):
    segments = tmp_path / "segments.jsonl"
    segments.write_text("".join(json.dumps(_segment(n)) + "\n" for n in (1, 2, 3)))
    root = tmp_path / "ds"
    result = runner.invoke(cli, ["store", str(segments), "--to", str(root)])
    assert result.exit_code == 0, result.output
    ids = lance.dataset(str(root / "runs.lance")).to_table(columns=["document_id"]).column(0).to_pylist()
    assert sorted(ids) == ["harbor-run-7#1", "harbor-run-7#2", "harbor-run-7#3"]
    out = runner.invoke(cli, ["export", str(root), "--to", "storyline"])
    assert out.exit_code == 0, out.stderr
    stories = json.loads(out.stdout)
    assert [s["turns"][0]["msg"] for s in stories] == ["segment 1", "segment 2", "segment 3"]
    assert all("trajectory" not in s for s in stories)  # nothing synthesized into the documents
    one = runner.invoke(cli, ["export", str(root), "--to", "atif", "--document", "harbor-run-7#2"])
    assert one.exit_code == 0, one.stderr
    assert json.loads(one.stdout) == _segment(2)


def test_a_session_stored_alone_keeps_the_id_earlier_datasets_have(tmp_path, runner):
    single = tmp_path / "one.json"
    single.write_text(json.dumps(_segment(1)))
    root = tmp_path / "ds"
    assert runner.invoke(cli, ["store", str(single), "--to", str(root)]).exit_code == 0
    ids = lance.dataset(str(root / "runs.lance")).to_table(columns=["document_id"]).column(0).to_pylist()
    assert ids == ["harbor-run-7"]


def test_openai_documents_are_named_by_their_relative_path(tmp_path, runner):
    fixture = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "openai-msg" / "training.json"
    corpus = tmp_path / "corpus" / "runs"
    corpus.mkdir(parents=True)
    (corpus / "training.json").write_bytes(fixture.read_bytes())
    root = tmp_path / "ds"
    result = runner.invoke(cli, ["store", str(tmp_path / "corpus"), "--to", str(root), "--from", "openai-msg"])
    assert result.exit_code == 0, result.output
    runs = lance.dataset(str(root / "runs.lance")).to_table(columns=["origin_json"]).column(0).to_pylist()
    assert {json.loads(o)["document_id"] for o in runs} == {"runs/training.json"}  # before: "source.json"


def test_export_of_one_session_brings_its_subagents(tmp_path, runner):
    doc = json.loads(ATIF.read_bytes())
    child = json.loads(ATIF.read_bytes())
    child["session_id"], child["trajectory_id"] = "child-session", "child-run"
    grandchild = json.loads(ATIF.read_bytes())
    grandchild["session_id"], grandchild["trajectory_id"] = "grandchild-session", "grandchild-run"
    child["subagent_trajectories"] = [grandchild]
    doc["subagent_trajectories"] = [child]
    path = tmp_path / "tree.json"
    path.write_text(json.dumps(doc))
    root = tmp_path / "ds"
    assert runner.invoke(cli, ["store", str(path), "--to", str(root)]).exit_code == 0
    out = runner.invoke(cli, ["export", str(root), "--to", "atif", "--session", doc["session_id"]])
    assert out.exit_code == 0, out.stderr  # before: tree.unknown_child
    assert json.loads(out.stdout) == doc
    out = runner.invoke(cli, ["export", str(root), "--to", "atif", "--document", "child-run"])
    assert out.exit_code == 0, out.stderr
    assert json.loads(out.stdout)["subagent_trajectories"][0]["trajectory_id"] == "grandchild-run"


def test_segments_in_different_files_sharing_a_session_are_named_by_their_paths(tmp_path, runner):
    corpus = tmp_path / "run"
    (corpus / "b").mkdir(parents=True)
    (corpus / "a.json").write_text(json.dumps(_segment(1)))
    (corpus / "b" / "c.json").write_text(json.dumps(_segment(2)))
    alone = _segment(3)
    alone["session_id"] = "another-run"
    (corpus / "d.json").write_text(json.dumps(alone))
    root = tmp_path / "ds"
    result = runner.invoke(cli, ["store", str(corpus), "--to", str(root)])
    assert result.exit_code == 0, result.output  # before: store.duplicate_document_id
    ids = lance.dataset(str(root / "runs.lance")).to_table(columns=["document_id"]).column(0).to_pylist()
    assert sorted(ids) == ["another-run", "harbor-run-7#a.json#1", "harbor-run-7#b/c.json#1"]
    assert all(is_session_id(i, "harbor-run-7") for i in ids if i != "another-run")
    one = runner.invoke(cli, ["export", str(root), "--to", "atif", "--document", "harbor-run-7#b/c.json#1"])
    assert one.exit_code == 0, one.stderr
    assert json.loads(one.stdout) == _segment(2)
    # the same files again: the same ids, so --skip-existing leaves every one of them out
    again = runner.invoke(cli, ["store", str(corpus), "--to", str(root), "--skip-existing"])
    assert again.exit_code == 0, again.output
    assert lance.dataset(str(root / "runs.lance")).count_rows() == 3


def test_a_path_qualified_id_is_a_session_id_and_a_plain_one_still_is():
    stories = [{"session": "s"}, {"session": "s"}, {"session": "t"}, {"session": "u", "trajectory": "x"}]
    assert file_document_ids(stories, "d/f.jsonl", frozenset({"t"})) == ["s#1", "s#2", "t#d/f.jsonl#3", "x"]
    assert is_session_id("t#d/f.jsonl#3", "t") and is_session_id("t#a#b#1", "t#a")
    assert not is_session_id("t##3", "t") and not is_session_id("t#p#0", "t")
