"""events.lance → Storyline (issue 19 "bench"): projection throughput against reading the table alone.

The data set ``wire-events`` is JSONL EventRecords made here deterministically: sessions of calls
in the three wire protocols the tables read (Anthropic Messages, Chat Completions, Responses),
each request resending the whole conversation so far (as clients do), responses with text, tool
calls and usage, one call in four streamed as SSE.  ``--mb`` is the JSONL size.  It is appended
to a fresh events.lance once, untimed; the rows then time:

- ``read events.lance`` (the baseline): `events.read_records`, the rows checked against their JSON;
- ``project, summary fields``: the same events with an unknown path, so the pre-wire projection
  (summary fields, degraded) runs: the previous path, re-measured in the same run (it shares the
  per-record timestamp check, made cheaper on this branch, so it is not the old code's number);
- ``project, wire tables``: read + `events.project` through mappings/wire/ (history once,
  tool calls, results, SSE assembly);
- ``synthesize + project``: the projected Storylines written back as wire events and projected.

Events/s = the event count the setup prints (stderr) / the median CPU seconds.

    .venv/bin/python bench/run.py --only events --mb 5 --repeat 3
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
from harness import Sample, Work, bench, dataset

from mapc.store import events

PROTOCOLS = {
    "anthropic": "/v1/messages",
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
}
_root: list[Path] = []


def _fresh(name: str) -> Path:
    if not _root:
        _root.append(Path(tempfile.mkdtemp(prefix="mapc-bench-events-")))
        atexit.register(shutil.rmtree, _root[0], ignore_errors=True)
    return _root[0] / f"{name}-{len(list(_root[0].iterdir()))}"


def _reply(kind: str, n: int, text: str, call: str | None) -> dict[str, Any]:
    usage = {"input_tokens": 100 + n, "output_tokens": 20}
    if kind == "anthropic":
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if call:
            content.append({"type": "tool_use", "id": call, "name": "read_file", "input": {"path": f"f{n}.py"}})
        return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "m", "content": content,
                "stop_reason": "tool_use" if call else "end_turn", "usage": usage}  # fmt: skip
    if kind == "chat":
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if call:
            message["tool_calls"] = [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": f'{{"path": "f{n}.py"}}'},
                }
            ]
        return {"id": f"c{n}", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100 + n, "completion_tokens": 20, "total_tokens": 120 + n}}  # fmt: skip
    output: list[dict[str, Any]] = [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
    ]
    if call:
        output.append(
            {"type": "function_call", "call_id": call, "name": "read_file", "arguments": f'{{"path": "f{n}.py"}}'}
        )
    return {"id": f"r{n}", "object": "response", "model": "m", "output": output, "usage": usage, "status": "completed"}


def _history(kind: str, reply: dict[str, Any], call: str | None, result: str) -> list[dict[str, Any]]:
    if kind == "anthropic":
        out = [{"role": "assistant", "content": reply["content"]}]
        if call:
            out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": result}]})
        return out
    if kind == "chat":
        out = [reply["choices"][0]["message"]]
        if call:
            out.append({"role": "tool", "tool_call_id": call, "content": result})
        return out
    out = list(reply["output"])
    if call:
        out.append({"type": "function_call_output", "call_id": call, "output": result})
    return out


def _words(text: str) -> list[str]:
    """`text` in stream pieces: its words, each after the first with its space."""
    words = text.split(" ")
    return [w if i == 0 else " " + w for i, w in enumerate(words)]


def _sse(kind: str, reply: dict[str, Any]) -> str:
    """An SSE rendering of a text-only reply (the streamed calls)."""
    if kind == "anthropic":
        events_ = [
            {"type": "message_start", "message": {**reply, "content": []}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}}
              for w in _words(reply["content"][0]["text"])),
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 20}},
        ]  # fmt: skip
    elif kind == "chat":
        text = reply["choices"][0]["message"]["content"]
        events_ = [{"id": reply["id"], "model": "m", "choices": [{"index": 0, "delta": {"content": w}}]}
                   for w in _words(text)]  # fmt: skip
    else:
        text = reply["output"][0]["content"][0]["text"]
        events_ = [
            {"type": "response.created", "response": {**reply, "output": []}},
            {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "role": "assistant"}},
            *({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": w}
              for w in _words(text)),
            {"type": "response.completed", "response": {**reply, "output": []}},
        ]  # fmt: skip
    return "".join(f"data: {orjson.dumps(e).decode()}\n\n" for e in events_)


def generate(mb: float, sessions_calls: int = 12) -> bytes:
    """JSONL EventRecords of about `mb` MB: sessions of `sessions_calls` calls, protocols in turn."""
    lines: list[bytes] = []
    size = 0
    session = 0
    while size < mb * 1_000_000:
        kind = list(PROTOCOLS)[session % 3]
        history: list[dict[str, Any]] = []
        ts = 1_767_225_600_000 + session * 1_000_000
        for n in range(sessions_calls):
            history.append({"role": "user", "content": f"step {n} of session {session}: please look at f{n}.py"})
            call = f"call_{session}_{n}" if n % 2 == 0 else None
            reply = _reply(kind, n, f"Looking at f{n}.py now, as asked, in session {session}.", call)
            body = {"model": "m", "messages" if kind != "responses" else "input": list(history)}
            streamed = n % 4 == 3
            base = {"source": "bench", "session_id": f"s{session}", "call_id": f"s{session}-c{n}"}
            wire = {"method": "POST", "path": PROTOCOLS[kind], "request_body": body}
            request = {**base, "event_id": f"s{session}-{2 * n}", "seq": 2 * n, "kind": "http.request",
                       "timestamp_unix_ms": ts + 2000 * n, "payload": {"http": wire}}  # fmt: skip
            http: dict[str, Any] = {"status": 200, "response_body": _sse(kind, reply) if streamed else reply}
            if streamed:
                http["body_encoding"] = "sse"
            response = {**base, "event_id": f"s{session}-{2 * n + 1}", "seq": 2 * n + 1, "kind": "http.response",
                        "timestamp_unix_ms": ts + 2000 * n + 900, "payload": {"http": http}}  # fmt: skip
            for record in (request, response):
                line = orjson.dumps(record)
                lines.append(line)
                size += len(line) + 1
            history += _history(kind, reply, call, f"contents of f{n}.py")
        session += 1
    return b"\n".join(lines) + b"\n"


@dataset("wire-events")
def _wire_events(mb: float, data_dir: Path) -> bytes:
    return generate(mb)


def _table(sample: Sample, *, summary: bool) -> Path:
    records = events.parse_jsonl(sample.data)
    if summary:  # no table reads this path: the summary-field projection, as before the wire tables
        for record in records:
            http = record["payload"].get("http", {})
            if "path" in http:
                http["path"] = "/v1/unknown"
    path = _fresh("events")
    events.admit(path, records)
    print(f"  {len(records)} events in {path.name}", file=sys.stderr)
    return path


@bench("read events.lance", group="events", data="wire-events", baseline="read events.lance")
def _read(sample: Sample) -> Work:
    path = _table(sample, summary=False)
    return lambda: events.read_records(path)


@bench("project, summary fields", group="events", data="wire-events", baseline="read events.lance")
def _project_summary(sample: Sample) -> Work:
    path = _table(sample, summary=True)
    return lambda: events.project(events.read_records(path))


@bench("project, wire tables", group="events", data="wire-events", baseline="read events.lance")
def _project_wire(sample: Sample) -> Work:
    path = _table(sample, summary=False)
    return lambda: events.project(events.read_records(path))


@bench("synthesize + project (wire)", group="events", data="wire-events", baseline="read events.lance")
def _synthesize(sample: Sample) -> Work:
    path = _table(sample, summary=False)
    stories = events.project(events.read_records(path))

    def work() -> None:
        for story in stories:
            events.project_records(events.synthesize_wire(story, events.wire_protocol(story) or ""))

    return work
