"""`mapc view` without a browser: the page's data, escaping, CSP, paging, --serve and --redact.

tests/browser/ drives the same pages in a real Chromium.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import re
from pathlib import Path

import orjson
import pytest
from conftest import FIXTURES

import mapc
from mapc.cli import view
from mapc.cli.main import cli
from mapc.engine import catalog

ROOT = Path(__file__).resolve().parents[2]
SUBAGENTS = ROOT / "tests" / "data" / "viewer" / "subagents.atif.json"
DATA = re.compile(r'<script type="application/json" id="mapc-data">(.*?)</script>', re.S)


def page_data(html: str):
    (found,) = DATA.findall(html)
    return orjson.loads(found)


def _story(msg, **extra):
    return {
        "schema_version": "storyline/v1",
        "session": "s",
        "agent": {"id": "a"},
        "turns": [{"id": 1, "src": "agent", "msg": msg}],
        **extra,
    }


def _write(tmp_path: Path, story, name="s.storyline.json") -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(story))
    return path


def test_a_file_becomes_one_page_with_its_storylines(runner, tmp_path):
    out = tmp_path / "v.html"
    result = runner.invoke(cli, ["view", str(SUBAGENTS), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    data = page_data(out.read_text())
    (entry,) = data["entries"]
    assert [s["story"]["session"] for s in entry["stories"]] == ["review-main", "review-sub-1"]
    assert [s["depth"] for s in entry["stories"]] == [0, 1]
    assert entry["stories"] == [
        {"depth": d, "story": s, "unknown": view.placed_unknowns(s), "summary": view._header(s, d, "atif")}
        for d, s in zip([0, 1], mapc.into_storyline("atif", SUBAGENTS.read_bytes()), strict=True)
    ]


HOSTILE = "</script><script>window.pwned=1</script> <!-- \u2028 & </SCRIPT >"


def test_embedded_json_cannot_end_the_script(tmp_path, runner):
    out = tmp_path / "v.html"
    assert runner.invoke(cli, ["view", str(_write(tmp_path, _story(HOSTILE))), "-o", str(out)]).exit_code == 0
    html = out.read_text()
    assert html.count("</script>") == 2  # the data's and the code's own
    assert "<!--" not in html.split('id="mapc-data">', 1)[1]
    assert page_data(html)["entries"][0]["stories"][0]["story"]["turns"][0]["msg"] == HOSTILE
    assert view.script_json({"a": "</script>"}) == '{"a":"\\u003c/script\\u003e"}'


def test_the_policy_allows_only_the_pages_own_code(tmp_path, runner):
    out = tmp_path / "v.html"
    runner.invoke(cli, ["view", str(SUBAGENTS), "-o", str(out)])
    html = out.read_text()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)[1].replace("&#x27;", "'")
    script = re.findall(r"<script>(.*?)</script>", html, re.S)[-1]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    assert "default-src 'none'" in policy and "img-src data:" in policy
    assert "http" not in policy  # nothing from the network
    code = "\n".join(
        line
        for line in (ROOT / "cli" / "assets" / "view.js").read_text().splitlines()
        if not line.lstrip().startswith("//")
    )
    assert "innerHTML" not in code and "outerHTML" not in code and "eval(" not in code
    assert "document.write" not in code and "insertAdjacentHTML" not in code


def test_unknown_fields_are_placed_on_their_turn():
    story = mapc.into_storyline("actf", (FIXTURES / "actf" / "make-doom-for-mips_trimmed.actf.json").read_bytes())[0]
    placed = view.placed_unknowns(story)
    assert placed == {
        "turns": {"1": [["actf", "/attempts/1/trajectory/steps/1/fixture_extension", {"preserve": True}]]},
        "doc": [],
    }
    # A subagent's own session_id is a key ATIF defines: kept in origin.kept, not shown as unknown.
    story = mapc.into_storyline("atif", SUBAGENTS.read_bytes())[1]
    assert story["origin"]["kept"]["fields"] == {"/subagent_trajectories/0/session_id": "review-sub-1"}
    assert view.placed_unknowns(story)["doc"] == []


def test_a_directory_lists_every_file_and_its_failures(tmp_path, runner):
    out = tmp_path / "v.html"
    result = runner.invoke(cli, ["view", str(FIXTURES), "-o", str(out)])
    assert result.exit_code == 1  # the legacy AgenticMD (and the READMEs) cannot be read
    assert "[agenticmd.no_storyline]" in result.stderr
    entries = page_data(out.read_text())["entries"]
    names = [e["name"] for e in entries]
    assert "atif/support-ticket.json" in names and "agenticmd/legacy-demo-run-001.md" in names
    failed = {e["name"] for e in entries if e["error"]}
    assert failed == {"README.md", "codex/README.md", "otel-genai/README.md", "agenticmd/legacy-demo-run-001.md"}
    ok = [e for e in entries if not e["error"]]
    assert all(e["summary"]["lines"] and e["stories"] for e in ok)


def test_a_large_set_is_paged(tmp_path, runner, monkeypatch):
    monkeypatch.setattr(view, "PAGE_AFTER", 3)
    src = tmp_path / "runs"
    src.mkdir()
    for i in range(5):
        _write(src, {**_story(f"message {i}"), "session": f"s{i}"}, f"r{i}.storyline.json")
    result = runner.invoke(cli, ["view", str(src), "-o", str(tmp_path / "out.html")])
    assert result.exit_code == 0, result.stderr
    outdir = tmp_path / "out"
    index = page_data((outdir / "index.html").read_text())
    assert index["mode"] == "index"
    assert [e["href"] for e in index["entries"]] == [f"t/{i:04d}.html" for i in range(1, 6)]
    assert all("stories" not in e for e in index["entries"])  # the index holds summaries only
    one = page_data((outdir / "t" / "0003.html").read_text())
    assert one["mode"] == "page" and one["index_href"] == "../index.html"
    assert one["entries"][0]["stories"][0]["story"]["turns"][0]["msg"] == "message 2"


def test_redact_in_view(tmp_path, runner):
    path = _write(tmp_path, _story("Authorization: Bearer abcdefghijklmnop and sk-abcdefghijklmnopqrstuvwx"))
    out = tmp_path / "v.html"
    assert runner.invoke(cli, ["view", str(path), "-o", str(out), "--redact", "--redact-pattern", "and"]).exit_code == 0
    html = out.read_text()
    assert "abcdefghijklmnop" not in html and "sk-abc" not in html
    data = page_data(html)
    assert data["redacted"] is True
    assert data["entries"][0]["stories"][0]["story"]["turns"][0]["msg"] == (
        "Authorization: Bearer [REDACTED:bearer_token] [REDACTED:user1] [REDACTED:api_key]"
    )


def test_a_dataset_is_viewed_from_lance(tmp_path, runner):
    ds = tmp_path / "ds"
    result = runner.invoke(cli, ["store", str(FIXTURES / "atif"), "--to", str(ds), "--workers", "1"])
    assert result.exit_code == 0, result.stderr
    out = tmp_path / "v.html"
    assert runner.invoke(cli, ["view", str(ds), "-o", str(out)]).exit_code == 0
    entries = page_data(out.read_text())["entries"]
    assert len(entries) == 6
    assert {e["summary"]["session"] for e in entries} >= {"support-001", "fixture-sparse_13"}


def _request(port: int, method: str, path: str, host: str = "127.0.0.1"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, path, headers={"Host": f"{host}:{port}"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


def test_serve_is_read_only_on_loopback(tmp_path):
    entries = view.read_entries(str(FIXTURES / "atif"), None, None)
    server = view.make_server(entries, "t", redacted=False)
    view.serve_in_thread(server)
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        response, body = _request(port, "GET", "/")
        assert response.status == 200 and "default-src 'none'" in response.headers["Content-Security-Policy"]
        index = page_data(body.decode())
        assert index["mode"] == "index" and index["entries"][0]["href"] == "/t/0001"
        response, body = _request(port, "GET", "/t/0002")
        assert response.status == 200 and page_data(body.decode())["entries"][0]["stories"]
        assert _request(port, "GET", "/t/9999")[0].status == 404
        assert _request(port, "GET", "/../etc/passwd")[0].status == 404
        for method in ("POST", "PUT", "DELETE"):
            assert _request(port, method, "/")[0].status == 405
        assert _request(port, "GET", "/", host="evil.example")[0].status == 403
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("args", [["missing.json"], ["x.json", "--redact-pattern", "("]])
def test_usage_errors(runner, tmp_path, args):
    result = runner.invoke(cli, ["view", *[str(tmp_path / a) if a.endswith(".json") else a for a in args]])
    assert result.exit_code == 2


def test_the_serve_command_end_to_end(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    mapc_bin = Path(sys.executable).parent / "mapc"
    proc = subprocess.Popen(
        [str(mapc_bin), "view", str(SUBAGENTS), "--serve", "--redact"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        seen = []
        for line in proc.stderr:  # the line that names the address (other warnings may come first)
            seen.append(line)
            m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            if m or len(seen) > 50:
                break
        assert m, seen
        response, body = _request(int(m[1]), "GET", "/")
        assert response.status == 200
        data = page_data(body.decode())
        assert data["redacted"] is True and data["mode"] == "single"
        assert _request(int(m[1]), "POST", "/")[0].status == 405
    finally:
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=20) == 130


def test_a_file_name_is_never_taken_for_a_placeholder(tmp_path, runner):
    path = _write(tmp_path, _story("x"), "{{SCRIPT}}{{DATA}}.storyline.json")
    out = tmp_path / "v.html"
    assert runner.invoke(cli, ["view", str(path), "-o", str(out)]).exit_code == 0
    html = out.read_text()
    assert "<title>mapc view: {{SCRIPT}}{{DATA}}.storyline.json</title>" in html
    assert html.count('"use strict"') == 1


def test_the_header_names_the_files_format_and_the_origin(tmp_path, runner):
    out = tmp_path / "v.html"
    assert (
        runner.invoke(
            cli, ["view", str(ROOT / "tests" / "data" / "viewer" / "code-repair.md"), "-o", str(out)]
        ).exit_code
        == 0
    )
    assert page_data(out.read_text())["entries"][0]["stories"][0]["summary"]["format"] == "agenticmd (from actf)"


def test_a_source_name_from_the_data_is_never_read_as_a_spec_file(tmp_path, monkeypatch):
    """A residual's source names a format only if mapc ships it: a name that is a path to a spec on
    disk is not loaded (the data would choose which file mapc reads and compiles)."""
    spec = tmp_path / "atif.yaml"
    spec.write_text(catalog.spec_text("atif"))
    story = {"turns": [{"id": 1}], "unknown_fields": {"sources": {str(spec): {"fields": {"/steps/0/x": 1}}}}}
    compiled = []
    real = catalog.program
    monkeypatch.setattr(catalog, "program", lambda name: compiled.append(name) or real(name))
    assert view.placed_unknowns(story) == {"turns": {}, "doc": [[str(spec), "/steps/0/x", 1]]}
    assert compiled == []
    story["unknown_fields"]["sources"] = {"atif": {"fields": {"/steps/0/x": 1}}}
    assert view.placed_unknowns(story) == {"turns": {"0": [["atif", "/steps/0/x", 1]]}, "doc": []}
