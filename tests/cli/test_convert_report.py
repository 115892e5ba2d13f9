"""`mapc convert --report FILE.json`, `--strict`, `--no-envelope`, and the line per inexact file (issue 15 §4)."""

from __future__ import annotations

import shutil

import orjson
from conftest import FIXTURES

import mapc
from mapc.cli.main import cli
from mapc.engine.envelope import ABSENT

ATIF = FIXTURES / "atif" / "support-ticket.json"
ACTF = FIXTURES / "actf" / "code-repair.actf.json"


def _pointers(fields):
    """The pointers an envelope source names: its values', and those its ABSENT note lists."""
    return [p for p in fields if p != ABSENT] + list(fields.get(ABSENT, []))


def test_a_conversion_that_is_not_exact_says_so_in_one_line(runner, tmp_path):
    result = runner.invoke(cli, ["convert", str(ATIF), "--to", "actf", "-o", str(tmp_path / "o.json")])
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"warning: {ATIF}: not exact (atif → actf): ")
    assert 'synthesized: /agent/name as "ACTF Agent"' in lines[0] and "carried in _storyline" in lines[0]


def test_an_exact_conversion_prints_nothing(runner, tmp_path):
    harbor_valid = FIXTURES / "atif" / "claude-code-harbor.json"
    result = runner.invoke(cli, ["convert", str(harbor_valid), "--to", "atif", "-o", str(tmp_path / "o.json")])
    assert result.exit_code == 0 and result.stderr == ""


def test_an_exact_output_its_owner_refuses_is_said(runner, tmp_path):
    # issue 15: exactness wins over Harbor validity (support-ticket carries keys Harbor forbids),
    # and the report says when the output cannot be valid there
    report = tmp_path / "r.json"
    args = ["convert", str(ATIF), "--to", "atif", "-o", str(tmp_path / "o.json"), "--report", str(report)]
    result = runner.invoke(cli, [*args, "--strict"])
    assert result.exit_code == 0, result.stderr  # exact: --strict lets it through, and no line
    assert result.stderr == ""
    entry = orjson.loads(report.read_bytes())["reports"][0]
    assert entry["exact"] is True and entry["valid_for_owner"] is False
    assert entry["owner"].startswith("Harbor 0.26") and entry["invalid"][0]["pointer"] == "/steps/1/tool_calls/0/result"
    data = orjson.loads(report.read_bytes())
    assert data["invalid_for_owner"] == 1
    inexact = runner.invoke(cli, ["convert", str(ACTF), "--to", "atif"])
    assert inexact.exit_code == 0 and "not valid for" not in inexact.stderr  # ATIF mapc writes is valid
    ok = runner.invoke(cli, ["convert", str(ACTF), "--to", "atif", "--report", str(report)])
    assert orjson.loads(report.read_bytes())["reports"][0]["valid_for_owner"] is True  # ATIF mapc writes
    assert ok.exit_code == 0


def test_report_writes_the_report_as_data(runner, tmp_path):
    report = tmp_path / "r.json"
    out = tmp_path / "o.json"
    result = runner.invoke(cli, ["convert", str(ATIF), "--to", "actf", "-o", str(out), "--report", str(report)])
    assert result.exit_code == 0, result.stderr
    data = orjson.loads(report.read_bytes())
    assert (data["version"], data["files"], data["exact"], data["not_exact"]) == (1, 1, 0, 1)
    (entry,) = data["reports"]
    _, expected = mapc.convert_reported("atif", "actf", ATIF)
    assert entry == orjson.loads(orjson.dumps(expected.at(str(ATIF)).as_dict()))
    envelope = orjson.loads(out.read_bytes())["_storyline"]["unknown_fields"]["by_trajectory"]
    fields = {(c, p) for c, e in envelope.items() for b in e["sources"].values() for p in _pointers(b["fields"])}
    assert {(c["carrier"], c["pointer"]) for c in entry["carried"]} == fields


def test_strict_refuses_what_is_not_exact_and_writes_nothing(runner, tmp_path):
    out = tmp_path / "o.json"
    report = tmp_path / "r.json"
    args = ["convert", str(ATIF), "--to", "actf", "-o", str(out), "--strict", "--report", str(report)]
    result = runner.invoke(cli, args)
    assert result.exit_code == 1
    assert "[convert.not_exact]" in result.stderr and "--strict refuses it" in result.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [report]  # no temporary file either
    assert orjson.loads(report.read_bytes())["reports"][0]["exact"] is False
    ok = runner.invoke(cli, ["convert", str(ATIF), "--to", "storyline", "--strict"])
    assert ok.exit_code == 0 and orjson.loads(ok.stdout)["origin"]["format"] == "atif"


def test_no_envelope_writes_the_pure_target_and_reports_what_it_dropped(runner, tmp_path):
    out = tmp_path / "o.json"
    report = tmp_path / "r.json"
    args = ["convert", str(ACTF), "--to", "atif", "-o", str(out), "--no-envelope", "--report", str(report)]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.stderr
    written = orjson.loads(out.read_bytes())
    assert "_storyline" not in written and "_storyline" not in (written.get("extra") or {})
    assert "dropped (no envelope)" in result.stderr
    entry = orjson.loads(report.read_bytes())["reports"][0]
    assert entry["envelope"] is False and entry["dropped"] and "carried" not in entry
    with_envelope = mapc.convert("actf", "atif", ACTF)
    carried = with_envelope["extra"]["_storyline"]["unknown_fields"]["by_trajectory"]
    assert {d["pointer"] for d in entry["dropped"]} == {
        p for e in carried.values() for b in e["sources"].values() for p in _pointers(b["fields"])
    }


def test_a_directory_reports_every_file_and_strict_fails_only_the_inexact(runner, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(ATIF, src / "a.json")
    (src / "b.storyline.json").write_bytes(
        orjson.dumps(mapc.into_storyline("atif", ATIF)[0])
    )  # a Storyline to Storyline: exact
    report = tmp_path / "r.json"
    args = ["convert", str(src), "--to", "storyline", "-o", str(tmp_path / "out"), "--report", str(report)]
    result = runner.invoke(cli, [*args, "--workers", "1"])
    assert result.exit_code == 0, result.stderr
    data = orjson.loads(report.read_bytes())
    assert (data["files"], data["exact"]) == (2, 2)
    args = ["convert", str(src), "--to", "actf", "-o", str(tmp_path / "o2"), "--strict", "--report", str(report)]
    result = runner.invoke(cli, [*args, "--workers", "1"])
    assert result.exit_code == 1
    assert result.stderr.count("[convert.not_exact]") == 2
    assert not (tmp_path / "o2" / "a.actf.json").exists()
    data = orjson.loads(report.read_bytes())
    assert data["strict"] is True and data["not_exact"] == 2


def test_a_directory_prints_a_line_per_inexact_file(runner, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(ATIF, src / "a.json")
    shutil.copy(ATIF, src / "b.json")
    result = runner.invoke(cli, ["convert", str(src), "--to", "actf", "-o", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.stderr
    lines = [x for x in result.stderr.splitlines() if "not exact" in x]
    assert len(lines) == 2 and lines[0].startswith(f"warning: {src / 'a.json'}: not exact (atif → actf)")


def test_a_streamed_jsonl_file_is_reported_as_one_file(runner, tmp_path):
    src = tmp_path / "runs.jsonl"
    line = orjson.dumps(orjson.loads(ATIF.read_bytes()))
    src.write_bytes(line + b"\n" + line + b"\n")
    report = tmp_path / "r.json"
    out = tmp_path / "o.jsonl"
    result = runner.invoke(cli, ["convert", str(src), "--to", "atif", "-o", str(out), "--report", str(report)])
    assert result.exit_code == 0, result.stderr
    data = orjson.loads(report.read_bytes())
    assert data["files"] == 1 and data["exact"] == 1
    assert len(out.read_bytes().splitlines()) == 2
    actf = tmp_path / "tasks.jsonl"
    line = orjson.dumps(orjson.loads(ACTF.read_bytes()))
    actf.write_bytes(line + b"\n" + line + b"\n")
    out = tmp_path / "x.jsonl"
    result = runner.invoke(cli, ["convert", str(actf), "--to", "atif", "-o", str(out), "--strict"])
    assert result.exit_code == 1
    assert "line 1: /: the conversion is not exact" in result.stderr and "line 2: " in result.stderr
    assert not out.exists()


def test_export_is_assessed_as_a_conversion_is(runner, tmp_path):
    root = tmp_path / "ds"
    assert runner.invoke(cli, ["store", str(ATIF), "--to", str(root)]).exit_code == 0
    same = runner.invoke(cli, ["export", str(root), "--to", "atif"])
    assert same.exit_code == 0 and same.stderr == ""
    report = tmp_path / "r.json"
    out = tmp_path / "o.json"
    result = runner.invoke(cli, ["export", str(root), "--to", "actf", "-o", str(out), "--report", str(report)])
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(f"warning: {root}: not exact (atif → actf)")
    assert orjson.loads(report.read_bytes())["reports"][0]["carried"]
    out.unlink()
    refused = runner.invoke(cli, ["export", str(root), "--to", "actf", "-o", str(out), "--strict"])
    assert refused.exit_code == 1 and "[convert.not_exact]" in refused.stderr and not out.exists()
    bare = runner.invoke(cli, ["export", str(root), "--to", "actf", "--no-envelope"])
    assert bare.exit_code == 0 and "_storyline" not in orjson.loads(bare.stdout)
    rows = tmp_path / "rows.jsonl"
    assert runner.invoke(cli, ["export", str(root), "--to", "openai-msg", "-o", str(rows)]).exit_code == 0
    assert len(rows.read_bytes().splitlines()) > 1
