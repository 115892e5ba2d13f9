"""`mapc spec lint|table|coverage` and `mapc explain`."""

from __future__ import annotations

import json

from conftest import FIXTURES

from mapc.cli.main import cli

TICKET = str(FIXTURES / "atif" / "support-ticket.json")
BROKEN = """\
name: toy
arrays:
  "/items/{i}": "/turns/{t}"
objects:
  "": [items, name, bot, extra]
  "/items/{i}": [id, who, text]
rules:
  - {const: storyline/v1, to: /schema_version}
  - {from: /name, to: /session}
  - {from: /bot, to: /agent/id}
  - {from: "/items/{i}/id", to: "/turns/{t}/id"}
  - {from: "/items/{i}/text", to: "/turns/{t}/msg", keep_null: true}
  - {from: /name, call: no_such_fn, to: /notes}
"""


def test_lint_a_clean_spec(runner):
    result = runner.invoke(cli, ["spec", "lint", "atif"])
    assert result.exit_code == 0, result.output
    assert result.output == "atif.yaml: no problems\n"


def test_lint_a_broken_spec(runner, tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(BROKEN)
    result = runner.invoke(cli, ["spec", "lint", str(path)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert any(line.startswith(f"{path}:13:5: rules[5]:") and "[spec.unknown_function]" in line for line in lines)
    assert any("[lint.required_target]" in line and "/turns/{*}/src" in line for line in lines)
    assert any("[lint.unread_key]" in line and f"{path}:5:" in line for line in lines)
    data = json.loads(runner.invoke(cli, ["spec", "lint", str(path), "--json"]).output)
    assert {p["code"] for p in data} >= {"spec.unknown_function", "lint.required_target", "lint.unread_key"}


def test_lint_an_unreadable_spec_is_a_usage_error(runner, tmp_path):
    assert runner.invoke(cli, ["spec", "lint", str(tmp_path / "missing.yaml")]).exit_code == 2


def test_table(runner):
    result = runner.invoke(cli, ["spec", "table", "atif"])
    assert result.exit_code == 0
    assert result.output.startswith("| ATIF v1.7 pointer | Storyline pointer(s) |\n|---|---|\n")
    assert "| `/steps/{s}/step_id` | `/turns/{t}/id` |" in result.output


def test_coverage(runner):
    result = runner.invoke(cli, ["spec", "coverage", "atif", str(FIXTURES / "atif")])
    assert result.exit_code == 0, result.output
    assert "## Rows that never fired" in result.output
    data = json.loads(runner.invoke(cli, ["spec", "coverage", "atif", TICKET, "--json"]).output)
    assert data["documents"] == 1 and data["failures"] == []


def test_explain_forward(runner):
    result = runner.invoke(cli, ["explain", "atif", TICKET, "/steps/1/tool_calls/0/arguments"])
    assert result.exit_code == 0, result.output
    assert "/0/turns/1/tool_calls/0/args" in result.output and "atif.yaml:" in result.output


def test_explain_a_storyline_pointer(runner, tmp_path):
    result = runner.invoke(cli, ["explain", "atif", TICKET, "/turns/1/kind"])
    assert result.exit_code == 0, result.output
    assert "atif_turn_kind" in result.output
    story = tmp_path / "story.json"
    story.write_text(runner.invoke(cli, ["run", "atif", TICKET]).output)
    result = runner.invoke(cli, ["explain", "atif", str(story), "/turns/0/msg"])
    assert result.exit_code == 0, result.output
    assert "/steps/0/message" in result.output


def test_explain_in_an_array_input(runner, tmp_path):
    path = tmp_path / "two.json"
    ticket = json.loads((FIXTURES / "atif" / "support-ticket.json").read_text(encoding="utf-8"))
    path.write_text(json.dumps([ticket, {**ticket, "session_id": "other"}]))
    result = runner.invoke(cli, ["explain", "atif", str(path), "/1/session_id", "--json"])
    assert result.exit_code == 0, result.output
    [finding] = json.loads(result.output)
    assert finding["targets"] == ["/0/session"] and finding["fired"] is True
    assert runner.invoke(cli, ["explain", "atif", str(path), "/session_id"]).exit_code == 2


def test_explain_nothing_there(runner):
    result = runner.invoke(cli, ["explain", "atif", TICKET, "/steps/7"])
    assert result.exit_code == 1
    assert "explain.not_found" in result.stderr


# --- ACTF (document.each, fallback tool lists, the grown spec language) --------------------------

ACTF = FIXTURES / "actf"
REPAIR = str(ACTF / "code-repair.actf.json")


def test_lint_actf(runner):
    result = runner.invoke(cli, ["spec", "lint", "actf"])
    assert result.exit_code == 0, result.output
    assert result.output == "actf.yaml: no problems\n"


def test_table_actf(runner):
    result = runner.invoke(cli, ["spec", "table", "actf"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("| ACTF v1.0 pointer | Storyline pointer(s) |\n|---|---|\n")
    assert '| `/attempts/{a}` | `""` |' in result.output
    assert "| `/attempts/{a}/trajectory/steps/{s}/step_id` | `/turns/{t}/id` `/turns/{t}/tool_calls/{c}/tcid` |" in (
        result.output
    )
    assert "`/attempts/{a}/trajectory/steps/{s}/assistant_content/tool_calls/{c}/name`" in result.output


def test_coverage_actf(runner):
    result = runner.invoke(cli, ["spec", "coverage", "actf", str(ACTF)])
    assert result.exit_code == 0, result.output
    assert "| `/attempts/*/trajectory/steps/*/fixture_extension` | 1 | 1 |" in result.output
    data = json.loads(runner.invoke(cli, ["spec", "coverage", "actf", str(ACTF), "--json"]).output)
    assert (data["documents"], data["storylines"], data["failures"]) == (2, 2, [])
    [attempt_id] = [r for r in data["rows"] if r["targets"] == ["/attempt_id"]]
    assert (attempt_id["sources"], attempt_id["fired"], attempt_id["scope"]) == (["{a}"], 2, "/attempts/{a}")


def test_explain_actf(runner, tmp_path):
    result = runner.invoke(cli, ["explain", "actf", REPAIR, "/attempts/1/trajectory/steps/0/tools/0/name"])
    assert result.exit_code == 0, result.output
    assert "/0/turns/0/tool_calls/0/fn" in result.output and "actf.yaml:" in result.output
    result = runner.invoke(cli, ["explain", "actf", REPAIR, "/task_id", "--json"])
    assert result.exit_code == 0, result.output
    assert ["/0/run"] in [f.get("targets") for f in json.loads(result.output)]
    # a Storyline pointer (any root key of a Storyline), on the input or on a Storyline file
    result = runner.invoke(cli, ["explain", "actf", REPAIR, "/final_metrics/correct"])
    assert result.exit_code == 0, result.output
    assert "copies it from /attempts/1/correct" in result.output
    story = tmp_path / "story.json"
    story.write_text(runner.invoke(cli, ["run", "actf", REPAIR]).output)
    result = runner.invoke(cli, ["explain", "actf", str(story), "/turns/0/tool_calls/0/tcid"])
    assert result.exit_code == 0, result.output
    assert "actf_tool_id(/attempts/1/trajectory/steps/0/tools/0/id" in result.output


def test_lint_and_table_of_the_span_tree_specs(runner):
    # span-tree specs (mappings/traces/, engine/spans.py) are linted and tabled like mapping specs
    for fmt in ("otel-genai", "otel-openinference"):
        result = runner.invoke(cli, ["spec", "lint", fmt])
        assert (result.exit_code, result.output) == (0, f"mappings/traces/{fmt}.yaml: no problems\n")
        table = runner.invoke(cli, ["spec", "table", fmt])
        assert table.exit_code == 0, table.output
        assert "| `gen_ai.tool.call.id` | `/turns/{t}/tool_calls/{c}/tcid` |" in table.output.splitlines()


def test_lint_a_broken_span_tree_spec_at_its_line_and_pointer(runner, tmp_path):
    from mapc.engine import catalog

    text = catalog.installed().trace_spec_text("otel-genai")
    assert "trace_bytes: 16" in text and "read: otel_story" in text
    path = tmp_path / "broken.yaml"
    path.write_text(text.replace("trace_bytes: 16", 'trace_bytes: "16"').replace("read: otel_story", "read: nope"))
    result = runner.invoke(cli, ["spec", "lint", str(path), "--json"])
    assert result.exit_code == 1
    # the shape first: a function name is looked up only in a spec of the right shape
    assert [(p["code"], p["pointer"]) for p in json.loads(result.output)] == [
        ("spec.schema", "/document/spans/ids/trace_bytes")
    ]
    table = runner.invoke(cli, ["spec", "table", str(path)])
    assert table.exit_code == 1 and "Traceback" not in table.output
    assert "/document/spans/ids/trace_bytes: expected integer" in table.output
    path.write_text(text.replace("read: otel_story", "read: nope"))
    result = runner.invoke(cli, ["spec", "lint", str(path)])
    assert result.exit_code == 1
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "read: otel_story" in t)
    assert result.output.startswith(f"{path}:{line}:") and "[spec.unknown_function]" in result.output
