"""engine/detect.py: path first, then content rules in the order of docs/formats.md (Detection)."""

from __future__ import annotations

import orjson
import pytest
from conftest import FIXTURES

from mapc.engine import detect


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        ("run.storyline.json", "storyline"),
        ("dir/task.actf.json", "actf"),
        ("storyline.json", None),  # only the *.storyline.json suffix counts by path
        ("x.json", None),
    ],
)
def test_by_path(path, fmt):
    assert detect.by_path(path) == fmt


@pytest.mark.parametrize(
    ("doc", "fmt"),
    [
        ({"schema_version": "storyline/v1"}, "storyline"),
        ([{"schema_version": "storyline/v2"}], "storyline"),  # an array: its first element
        ({"schema_version": "ATIF-v1.7"}, "atif"),
        ({"steps": [], "agent": {}}, "atif"),
        ([{"steps": [], "agent": {}}], "atif"),
        ([{"session_id": "s", "step_id": 1, "agent_name": "a"}], "atif"),
        ({"task_id": "t", "attempts": {"1": {"trajectory": {"schema_version": "ACTF_v1.0"}}}}, "actf"),
        ({"task_id": "t", "attempts": {"1": {"trajectory": [{"type": "message"}]}}}, "actf"),
        ({"task_id": "t", "attempts": {}}, None),  # attempts must not be empty
        ({"task_id": "t", "attempts": {"1": {"trajectory": {"schema_version": "other"}}}}, None),
        ({"session": "s"}, None),  # a Storyline without schema_version is not detected
        ([], None),
    ],
)
def test_by_content(doc, fmt):
    assert detect.by_content(orjson.dumps(doc)) == fmt


def test_storyline_rule_comes_before_atif():
    assert detect.by_content(orjson.dumps({"schema_version": "storyline/v1", "steps": [], "agent": {}})) == "storyline"


def test_jsonl_uses_its_first_non_empty_line():
    data = b"\n" + orjson.dumps({"schema_version": "ATIF-v1.7"}) + b"\nnot json\n"
    assert detect.by_content(data, jsonl=True) == "atif"


def test_path_wins_over_content(tmp_path):
    path = tmp_path / "x.storyline.json"
    path.write_bytes(orjson.dumps({"schema_version": "ATIF-v1.7"}))
    assert detect.detect(str(path)) == "storyline"


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("*/*.json")), ids=lambda p: p.name)
def test_shared_fixtures(fixture):
    detected_as_itself = ("atif", "actf", "openai-msg", "otel-genai")
    expected = fixture.parent.name if fixture.parent.name in detected_as_itself else None
    assert detect.detect(str(fixture)) == expected


def test_not_json_is_unknown():
    assert detect.by_content(b"# a markdown file") is None
