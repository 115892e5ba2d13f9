"""store/capture.py (`mapc events capture`): the recording proxy between a client and a stub upstream,
all on loopback with real sockets, recording into a real events.lance."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from mapc.store import capture, events

SECRET = "sk-ant-api03-SECRET-never-recorded"
TOOL_RESPONSE = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "README.md"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 20, "output_tokens": 9},
}
STREAM_EVENTS = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_02",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 40},
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "It says "}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hello."}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
    {"type": "message_stop"},
]
STREAM = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in STREAM_EVENTS).encode()


def in_own_loop(coro: Any) -> Any:
    """`asyncio.run(coro)` in a thread of its own: a test run that drives the browser first has
    Playwright's event loop running in this thread for the rest of the session."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


class Stub:
    """A loopback Anthropic-like upstream: JSON for a plain request, an SSE stream sent in pieces that
    cut frames in half, which waits after its first piece until the client has received it."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.client_got_first = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.seen.append({"path": request.path_qs, "headers": dict(request.headers), "body": body})
        if not body.get("stream"):
            return web.json_response(TOOL_RESPONSE, headers={"request-id": "req_1"})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        pieces = [STREAM[:37], STREAM[37:150], STREAM[150:151], STREAM[151:]]
        await response.write(pieces[0])
        # Only a proxy that passes chunks on as they come lets the client see this one now.
        await asyncio.wait_for(self.client_got_first.wait(), timeout=10)
        for piece in pieces[1:]:
            await response.write(piece)
            await asyncio.sleep(0.01)
        await response.write_eof()
        return response


async def start(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, runner.addresses[0][1]


def request_body(messages: list[Any], stream: bool) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 256, "stream": stream, "messages": messages}


async def session_through_the_proxy(table: Path) -> tuple[Stub, list[bytes], bytes, dict[str, Any]]:
    stub = Stub()
    upstream_app = web.Application()
    upstream_app.router.add_post("/v1/messages", stub.handle)
    upstream, upstream_port = await start(upstream_app)
    recorder = capture.Recorder(table, "captured-session", "cli-agent")
    port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    proxy = asyncio.create_task(
        capture.serve("127.0.0.1", 0, f"http://127.0.0.1:{upstream_port}", recorder, port.set_result)
    )
    base = f"http://127.0.0.1:{await asyncio.wait_for(port, 10)}"
    headers = {"x-api-key": SECRET, "anthropic-version": "2023-06-01", "Accept-Encoding": "gzip"}
    question = {"role": "user", "content": "What does README.md say?"}
    try:
        async with aiohttp.ClientSession() as client:
            async with client.post(
                f"{base}/v1/messages?beta=true", json=request_body([question], False), headers=headers
            ) as first:
                assert first.status == 200 and first.headers["request-id"] == "req_1"
                plain = await first.json()
            assert plain == TOOL_RESPONSE
            history = [
                question,
                {"role": "assistant", "content": TOOL_RESPONSE["content"]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "hello."}],
                },
            ]
            chunks: list[bytes] = []
            async with client.post(f"{base}/v1/messages", json=request_body(history, True), headers=headers) as second:
                assert second.headers["Content-Type"].startswith("text/event-stream")
                async for chunk in second.content.iter_any():
                    chunks.append(chunk)
                    stub.client_got_first.set()
        return stub, chunks, b"".join(chunks), plain
    finally:
        proxy.cancel()
        with pytest.raises(asyncio.CancelledError):
            await proxy
        await upstream.cleanup()


def test_the_proxy_passes_the_stream_through_unchanged_and_records_a_projectable_session(tmp_path):
    table = tmp_path / "events.lance"
    stub, chunks, streamed, _ = in_own_loop(session_through_the_proxy(table))
    assert streamed == STREAM  # byte for byte
    assert len(chunks) >= 2 and chunks[0] == STREAM[:37]  # the first piece arrived before the rest was sent
    assert stub.seen[0]["path"] == "/v1/messages?beta=true"
    assert stub.seen[0]["headers"]["x-api-key"] == SECRET  # the upstream gets the credentials ...
    assert "Accept-Encoding" not in stub.seen[0]["headers"]  # so the upstream answers uncompressed

    records = events.read_records(table)
    assert SECRET not in json.dumps(records)  # ... the record never does
    assert [r["kind"] for r in records[:2]] == ["http.request", "http.response"]
    assert records[2]["kind"] == "http.request" and records[3]["kind"] == "http.response.stream"
    frames = [r for r in records if r["kind"] == "http.stream.frame"]
    assert "".join(f["payload"]["http"]["frame"] for f in frames).encode() == STREAM
    assert len(frames) == len(STREAM_EVENTS)  # one event per SSE frame, though the pieces cut frames
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    request = records[0]["payload"]["http"]
    assert request["headers"]["x-api-key"] == capture.REDACTED and request["headers_redacted"] is True
    assert request["request_body"]["messages"][0]["content"] == "What does README.md say?"
    assert records[1]["payload"]["http"]["response_body"] == TOOL_RESPONSE
    assert all(r["event_id"] and r["producer"] == "mapc events capture" for r in records)
    assert records[0]["payload"]["connection"]["http_version"] == "HTTP/1.1"
    assert records[0]["payload"]["connection"]["persistent"] is True  # HTTP/1.1 without Connection: close
    client = records[0]["payload"]["client"]
    assert client["peer_ip"] == "127.0.0.1" and client["peer"] == f"127.0.0.1:{client['peer_port']}"
    assert client["user_agent"].startswith("Python/")  # aiohttp's client says so

    story = events.project_records(records)
    turns = [(t["src"], t["msg"]) for t in story["turns"]]
    assert turns == [("user", "What does README.md say?"), ("agent", "Let me look."), ("agent", "It says hello.")]
    tool_turn, answer = story["turns"][1], story["turns"][2]
    assert tool_turn["tool_calls"] == [{"tcid": "toolu_01", "fn": "read_file", "args": {"path": "README.md"}}]
    assert tool_turn["observation"] == {"results": [{"source_call_id": "toolu_01", "content": "hello."}]}
    assert answer["metrics"] == {"input_tokens": 40, "output_tokens": 5}
    assert answer["ttft_ms"] >= 0 and answer["extra"]["stop_reason"] == "end_turn"


def test_an_unreachable_upstream_is_a_recorded_502(tmp_path):
    async def run() -> tuple[int, Any]:
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            dead = s.getsockname()[1]
        recorder = capture.Recorder(tmp_path / "events.lance", "s")
        port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        proxy = asyncio.create_task(
            capture.serve("127.0.0.1", 0, f"http://127.0.0.1:{dead}", recorder, port.set_result)
        )
        try:
            url = f"http://127.0.0.1:{await port}/v1/messages"
            async with aiohttp.ClientSession() as client, client.post(url, json={"messages": []}) as r:
                return r.status, await r.json()
        finally:
            proxy.cancel()
            with pytest.raises(asyncio.CancelledError):
                await proxy

    status, body = in_own_loop(run())
    assert status == 502 and body["error"]["type"] == "upstream_unreachable"
    records = events.read_records(tmp_path / "events.lance")
    assert [(r["kind"], r["payload"]["http"].get("status")) for r in records] == [
        ("http.request", None),
        ("http.response", 502),
    ]


def test_the_cli_command_listens_records_and_stops_on_ctrl_c(tmp_path):
    """`mapc events capture` as a process: it prints where it listens, records, and exits 130 on SIGINT."""

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    stub_app = web.Application()

    async def completion(request: web.Request) -> web.Response:
        return web.json_response({"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": []})

    stub_app.router.add_post("/v1/chat/completions", completion)

    async def run() -> tuple[int, str]:
        runner, upstream_port = await start(stub_app)
        mapc = Path(sys.executable).with_name("mapc")
        table = tmp_path / "events.lance"
        process = await asyncio.create_subprocess_exec(
            str(mapc), "events", "capture", "--listen", f"127.0.0.1:{port}",
            "--upstream", f"http://127.0.0.1:{upstream_port}", "--to", str(table), "--session", "cli",
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stderr is not None
        line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
        try:
            async with (
                aiohttp.ClientSession() as client,
                client.post(
                    f"http://127.0.0.1:{port}/v1/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                    headers={"Authorization": "Bearer " + SECRET},
                ) as r,
            ):
                assert r.status == 200
        finally:
            process.send_signal(signal.SIGINT)
            rest = (await asyncio.wait_for(process.stderr.read(), 30)).decode()
            code = await process.wait()
            await runner.cleanup()
        return code, line + rest

    code, err = in_own_loop(run())
    assert f"listening on http://127.0.0.1:{port}" in err
    assert code == 130 and "recorded 1 exchanges (2 events)" in err
    records = events.read_records(tmp_path / "events.lance")
    assert [r["session_id"] for r in records] == ["cli", "cli"]
    assert records[0]["payload"]["http"]["headers"]["authorization"] == capture.REDACTED


def test_frames_are_split_at_blank_lines_of_either_ending():
    frames, rest = capture.split_frames(b"data: 1\n\ndata: 2\r\n\r\ndata: 3")
    assert frames == [b"data: 1\n\n", b"data: 2\r\n\r\n"] and rest == b"data: 3"
    assert capture.redact({"Authorization": "Bearer x", "X-Other": "1"}) == (
        {"authorization": capture.REDACTED, "x-other": "1"},
        True,
    )


# --- WebSockets (OpenAI Realtime and the like) ---------------------------------------------------------------

REALTIME_KEY = "sk-proj-REALTIME-never-recorded"


async def realtime_upstream(request: web.Request) -> web.WebSocketResponse:
    """A loopback Realtime-like server: it says hello, answers each text event with two server events
    (a delta and a done), echoes binary audio reversed, and closes when the client does."""
    ws = web.WebSocketResponse(protocols=["realtime"])
    await ws.prepare(request)
    REALTIME_SEEN.append({"path": request.path_qs, "headers": dict(request.headers), "protocol": ws.ws_protocol})
    await ws.send_json({"type": "session.created", "session": {"id": "sess_1"}})
    async for message in ws:
        if message.type == aiohttp.WSMsgType.TEXT:
            event = json.loads(message.data)
            await ws.send_json({"type": "response.output_text.delta", "delta": "hi", "for": event["type"]})
            await ws.send_json({"type": "response.done"})
        elif message.type == aiohttp.WSMsgType.BINARY:
            await ws.send_bytes(message.data[::-1])
    return ws


REALTIME_SEEN: list[dict[str, Any]] = []


async def realtime_through_the_proxy(table: Path) -> list[Any]:
    upstream_app = web.Application()
    upstream_app.router.add_get("/v1/realtime", realtime_upstream)
    upstream, upstream_port = await start(upstream_app)
    recorder = capture.Recorder(table, "realtime-session", "voice-agent")
    port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    proxy = asyncio.create_task(
        capture.serve("127.0.0.1", 0, f"http://127.0.0.1:{upstream_port}", recorder, port.set_result)
    )
    url = f"http://127.0.0.1:{await asyncio.wait_for(port, 10)}/v1/realtime?model=gpt-realtime"
    got: list[Any] = []
    try:
        async with aiohttp.ClientSession() as client:
            headers = {"Authorization": f"Bearer {REALTIME_KEY}"}
            protocols = ("realtime", f"openai-insecure-api-key.{REALTIME_KEY}")
            async with client.ws_connect(url, headers=headers, protocols=protocols) as ws:
                assert ws.protocol == "realtime"  # the upstream's choice, passed on
                got.append(await ws.receive_json())
                await ws.send_json({"type": "response.create"})
                got += [await ws.receive_json(), await ws.receive_json()]
                await ws.send_bytes(b"\x00\x01\x02audio")
                got.append((await ws.receive()).data)
        for _ in range(100):  # the proxy commits the session after both sides closed
            if recorder.exchanges:
                break
            await asyncio.sleep(0.05)
        return got
    finally:
        proxy.cancel()
        with pytest.raises(asyncio.CancelledError):
            await proxy
        await upstream.cleanup()


def test_a_websocket_session_is_relayed_both_ways_and_recorded_as_transport_events(tmp_path):
    table = tmp_path / "events.lance"
    got = in_own_loop(realtime_through_the_proxy(table))
    assert got == [
        {"type": "session.created", "session": {"id": "sess_1"}},
        {"type": "response.output_text.delta", "delta": "hi", "for": "response.create"},
        {"type": "response.done"},
        b"oidua\x02\x01\x00",
    ]
    seen = REALTIME_SEEN[-1]
    assert seen["path"] == "/v1/realtime?model=gpt-realtime" and seen["protocol"] == "realtime"
    assert seen["headers"]["Authorization"] == f"Bearer {REALTIME_KEY}"  # the upstream gets the credentials ...

    records = events.read_records(table)
    assert REALTIME_KEY not in json.dumps(records)  # ... the record never does, in a header or a subprotocol
    kinds = [r["kind"] for r in records]
    assert kinds == ["transport.websocket.open", *["transport.websocket.message"] * 6, "transport.websocket.close"]
    assert [r["seq"] for r in records] == list(range(1, 9)) and len({r["call_id"] for r in records}) == 1
    opened = records[0]["payload"]
    assert opened["websocket"]["path"] == "/v1/realtime" and opened["websocket"]["headers_redacted"] is True
    assert (
        opened["websocket"]["headers"]["sec-websocket-protocol"]
        == f"realtime, openai-insecure-api-key.{capture.REDACTED}"
    )
    assert opened["connection"]["upgrade"].lower() == "websocket"
    messages = [r["payload"]["websocket"] for r in records[1:7]]
    assert [(m["direction"], m["type"]) for m in messages] == [
        ("server", "text"),
        ("client", "text"),
        ("server", "text"),
        ("server", "text"),
        ("client", "binary"),
        ("server", "binary"),
    ]
    assert json.loads(messages[1]["data"]) == {"type": "response.create"}
    assert messages[4] == {"direction": "client", "type": "binary", "data": "AAECYXVkaW8=", "body_encoding": "base64"}
    assert all(r["payload"]["timing"]["offset_ms"] >= 0 for r in records[1:7])
    assert records[-1]["payload"]["websocket"]["by"] == "client"

    story = events.project_records(records)  # not an HTTP call: each record an internal turn, in order
    assert [(t["src"], t["kind"], t["msg"]["kind"]) for t in story["turns"]] == [
        ("system", "internal", kind) for kind in kinds
    ]
    assert {t["extra"]["call_id"] for t in story["turns"]} == {records[0]["call_id"]}


def test_a_websocket_the_upstream_refuses_is_a_recorded_502(tmp_path):
    async def run() -> int:
        upstream, upstream_port = await start(web.Application())  # no WebSocket route: a 404 to the upgrade
        recorder = capture.Recorder(tmp_path / "events.lance", "s")
        port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        proxy = asyncio.create_task(
            capture.serve("127.0.0.1", 0, f"http://127.0.0.1:{upstream_port}", recorder, port.set_result)
        )
        try:
            async with aiohttp.ClientSession() as client:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await client.ws_connect(f"http://127.0.0.1:{await port}/v1/realtime")
                return refused.value.status
        finally:
            proxy.cancel()
            with pytest.raises(asyncio.CancelledError):
                await proxy
            await upstream.cleanup()

    assert in_own_loop(run()) == 502
    records = events.read_records(tmp_path / "events.lance")
    assert [r["kind"] for r in records] == ["transport.websocket.open", "transport.websocket.close"]
    assert records[1]["payload"]["websocket"]["status"] == 404
