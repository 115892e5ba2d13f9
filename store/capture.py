"""``mapc events capture``: a small recording reverse proxy in front of an LLM API (docs/formats.md, "Events").

Every exchange that passes is forwarded to the upstream unchanged and recorded in
``events.lance`` as EventRecords of one session: an ``http.request`` (method, path, query, headers
with credentials redacted, the body), then either an ``http.response`` (status, headers, the body)
or, for a streamed (``text/event-stream``) answer, an ``http.response.stream`` with the status and
headers followed by one ``http.stream.frame`` per SSE frame, each with its raw text and
``timing.offset_ms`` from the request (the frames are the record, the assembled text only a
projection: docs/formats.md, "Events").  Streamed bytes are written to the client as they arrive, so
the client sees the upstream's stream as it is.

A WebSocket upgrade (OpenAI Realtime, ...) is not an HTTP exchange and is not recorded as one (the
events RFC: other transports have kinds of their own): the proxy accepts the client's WebSocket,
opens one to the upstream with the same path, headers and subprotocols, and relays every message
both ways as it comes, recording ``transport.websocket.open`` (the handshake, credentials
redacted), one ``transport.websocket.message`` per message (``direction`` ``client`` or
``server``, ``text`` or base64 ``binary`` data, ``timing.offset_ms``) and
``transport.websocket.close`` (who closed, the code).  Its records are committed every
`WS_BATCH` messages and at the close, so a crash loses at most the messages of one batch.

The server and the upstream client are aiohttp's.  An exchange's events are appended in one Lance
commit when it ends (`events.admit`, off the event loop, one writer at a time), so a crash loses
at most the exchanges in flight, never half of one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

REDACTED: Final = "[REDACTED]"
# Credentials: their values are never written (the RFC's "red-line headers", marked headers_redacted).
SECRET_HEADERS: Final = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
    }
)
# Hop-by-hop headers (RFC 9110 §7.6.1) are the connection's, not the message's: not forwarded.
HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


# The WebSocket handshake's own headers: aiohttp's client makes them anew for the upstream connection.
WS_HANDSHAKE: Final = frozenset(
    {"sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-protocol"}
)
WS_BATCH: Final = 64  # WebSocket messages per commit (a long session is not held in memory until it ends)


@dataclass
class Recorder:
    """Where captured exchanges go: the table, the session, and the per-session ``seq`` counter."""

    table: Path
    session: str
    agent: str = "captured"
    append: Callable[[Path, list[dict[str, Any]]], Any] | None = None  # events.admit unless a test says
    seq: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    exchanges: int = 0
    appended: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def record(self, kind: str, call_id: str, payload: dict[str, Any], ms: int) -> dict[str, Any]:
        """One EventRecord of this session (event_id, producer and time, as new writers give them)."""
        return {
            "event_id": uuid.uuid4().hex,
            "producer": "mapc events capture",
            "seq": next(self.seq),
            "source": "mapc-capture",
            "kind": kind,
            "timestamp_unix_ms": ms,
            "session_id": self.session,
            "agent_id": self.agent,
            "call_id": call_id,
            "payload": payload,
        }

    async def commit(self, records: list[dict[str, Any]], *, ends: bool = True) -> None:
        """Append one exchange's records in one commit, off the event loop, one commit at a time
        (`ends`: the exchange ends with them; a WebSocket session commits in batches)."""
        if self.append is None:
            from mapc.store import events

            append: Callable[[Path, list[dict[str, Any]]], Any] = events.admit
        else:
            append = self.append
        async with self.lock:
            await asyncio.get_running_loop().run_in_executor(None, append, self.table, records)
            self.exchanges += 1 if ends else 0
            self.appended += len(records)


def redact(headers: Any) -> tuple[dict[str, str], bool]:
    """The headers as a dict (repeated names joined by ", "), credentials replaced; and whether any was.
    A WebSocket subprotocol that carries a key (browsers cannot set headers: ``openai-insecure-api-key.sk-…``)
    is a credential too: that protocol's name is kept, its key replaced."""
    out: dict[str, str] = {}
    redacted = False
    for name, value in headers.items():
        key = name.lower()
        if key in SECRET_HEADERS:
            value, redacted = REDACTED, True
        elif key == "sec-websocket-protocol" and "key" in value.lower():
            value = ", ".join(_redacted_protocol(p.strip()) for p in value.split(","))
            redacted = True
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out, redacted


def _redacted_protocol(protocol: str) -> str:
    head, dot, _ = protocol.partition(".")
    return f"{head}.{REDACTED}" if dot and "key" in head.lower() else protocol


def body_fields(data: bytes, content_type: str, key: str) -> dict[str, Any]:
    """A body as the payload holds it: JSON as the value, text as text, other bytes base64."""
    if not data:
        return {key: None}
    if "json" in content_type:
        with contextlib.suppress(orjson.JSONDecodeError):
            return {key: orjson.loads(data), "body_encoding": "json"}
    try:
        return {key: data.decode("utf-8"), "body_encoding": "utf8"}
    except UnicodeDecodeError:
        return {key: base64.b64encode(data).decode("ascii"), "body_encoding": "base64"}


def split_frames(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Complete SSE frames (each with its blank-line end) at the start of `buffer`, and the rest."""
    frames = []
    while True:
        ends = [(i, n) for i, n in ((buffer.find(b"\n\n"), 2), (buffer.find(b"\r\n\r\n"), 4)) if i >= 0]
        if not ends:
            return frames, buffer
        i, n = min(ends)
        frames.append(buffer[: i + n])
        buffer = buffer[i + n :]


def connection(request: Any) -> dict[str, Any]:
    """The record's ``connection.*`` (docs/events.md): the HTTP version, the raw Connection / Keep-Alive headers, and
    whether the connection is persistent (``close`` → no, ``keep-alive`` → yes, else HTTP/1.1+)."""
    version = f"HTTP/{request.version.major}.{request.version.minor}"
    header = request.headers.get("Connection")
    out: dict[str, Any] = {"http_version": version}
    tokens = {t.strip().lower() for t in header.split(",")} if header else set()
    if "close" in tokens:
        out["persistent"] = False
    elif "keep-alive" in tokens:
        out["persistent"] = True
    else:
        out["persistent"] = (request.version.major, request.version.minor) >= (1, 1)
    if header is not None:
        out["connection_header"] = header
    if request.headers.get("Keep-Alive") is not None:
        out["keep_alive"] = request.headers["Keep-Alive"]
    if request.headers.get("Upgrade") is not None:
        out["upgrade"] = request.headers["Upgrade"]
    return out


def client_info(request: Any, peer: Any) -> dict[str, Any]:
    """The record's ``client.*``: the peer (``ip:port``, and apart) and the User-Agent."""
    out: dict[str, Any] = {}
    if peer:
        out.update(peer=f"{peer[0]}:{peer[1]}", peer_ip=peer[0], peer_port=peer[1])
    if request.headers.get("User-Agent") is not None:
        out["user_agent"] = request.headers["User-Agent"]
    return out


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def make_app(upstream: str, recorder: Recorder) -> Any:
    """The aiohttp application: every method and path forwarded to `upstream` and recorded."""
    from aiohttp import ClientSession, ClientTimeout, web

    base = upstream.rstrip("/")
    base_path = urlsplit(upstream).path.rstrip("/")

    # the upstream client lives in this closure, not in the app's state: aiohttp's AppKey must be
    # made at a module's top level, and a proxy started from a thread has no module frame to name it
    clients: list[ClientSession] = []

    async def on_startup(app: web.Application) -> None:
        clients.append(
            ClientSession(
                timeout=ClientTimeout(total=None, sock_connect=30),
                auto_decompress=False,  # the bytes the upstream sent are the bytes the client gets
                skip_auto_headers=("Accept-Encoding", "User-Agent"),  # only the client's own headers go on
            )
        )

    async def on_cleanup(app: web.Application) -> None:
        await clients.pop().close()

    async def forward(request: web.Request) -> web.StreamResponse:
        call_id = uuid.uuid4().hex
        started = _now_ms()
        clock = time.monotonic()
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return await websocket(request, call_id, started, clock)
        data = await request.read()
        headers, redacted = redact(request.headers)
        http: dict[str, Any] = {
            "method": request.method,
            "url": str(request.rel_url),
            "path": base_path + request.path,
            "headers": headers,
            "headers_redacted": redacted,
            **body_fields(data, request.headers.get("Content-Type", ""), "request_body"),
        }
        if request.query_string:
            http["query"] = request.query_string
        peer = request.transport.get_extra_info("peername") if request.transport is not None else None
        payload = {"http": http, "connection": connection(request), "client": client_info(request, peer)}
        records = [recorder.record("http.request", call_id, payload, started)]
        # Accept-Encoding is not forwarded: the upstream then answers uncompressed, so the record
        # holds the body itself and the client gets the same bytes the upstream sent.
        sent = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP | {"accept-encoding"}}
        client = clients[0]
        try:
            upstream_response = await client.request(
                request.method, base + str(request.rel_url), headers=sent, data=data, allow_redirects=False
            )
        except OSError as exc:  # the upstream cannot be reached: the client gets a 502, and it is recorded
            body = orjson.dumps({"error": {"type": "upstream_unreachable", "message": str(exc)}})
            response_payload = {"http": {"status": 502, "headers": {}, "response_body": orjson.loads(body)}}
            records.append(recorder.record("http.response", call_id, response_payload, _now_ms()))
            await recorder.commit(records)
            return web.Response(status=502, body=body, content_type="application/json")
        async with upstream_response:
            out_headers = {k: v for k, v in upstream_response.headers.items() if k.lower() not in HOP_BY_HOP}
            response_headers, response_redacted = redact(upstream_response.headers)
            content_type = upstream_response.headers.get("Content-Type", "")
            streamed = content_type.startswith("text/event-stream")
            response = web.StreamResponse(status=upstream_response.status, reason=upstream_response.reason)
            response.headers.update(out_headers)
            await response.prepare(request)
            head = {
                "status": upstream_response.status,
                "headers": response_headers,
                "headers_redacted": response_redacted,
            }
            if streamed:
                head.update(response_body=None, body_encoding="sse-wire")
                records.append(recorder.record("http.response.stream", call_id, {"http": head}, _now_ms()))
            buffer = b""
            whole = bytearray()
            async for chunk in upstream_response.content.iter_any():
                await response.write(chunk)  # passed through as it came, before it is recorded
                if not streamed:
                    whole += chunk
                    continue
                frames, buffer = split_frames(buffer + chunk)
                for frame in frames:
                    records.append(_frame(recorder, call_id, frame, clock))
            if streamed and buffer:  # a stream cut before its last blank line: the partial frame is kept
                records.append(_frame(recorder, call_id, buffer, clock))
            await response.write_eof()
            duration = round((time.monotonic() - clock) * 1000)
            if not streamed:
                head.update(body_fields(bytes(whole), content_type, "response_body"))
                records.append(
                    recorder.record(
                        "http.response", call_id, {"http": head, "timing": {"duration_ms": duration}}, _now_ms()
                    )
                )
        await recorder.commit(records)
        return response

    async def websocket(request: web.Request, call_id: str, started: int, clock: float) -> web.StreamResponse:
        """Relay one WebSocket session between the client and the upstream, recording every message."""
        from aiohttp import WSMsgType, WSServerHandshakeError

        headers, redacted = redact(request.headers)
        protocols = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        opened: dict[str, Any] = {"url": str(request.rel_url), "path": base_path + request.path, "headers": headers}
        opened["headers_redacted"] = redacted
        peer = request.transport.get_extra_info("peername") if request.transport is not None else None
        payload = {"websocket": opened, "connection": connection(request), "client": client_info(request, peer)}
        pending = [recorder.record("transport.websocket.open", call_id, payload, started)]
        sent = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP | WS_HANDSHAKE}
        try:
            upstream_ws = await clients[0].ws_connect(
                base + str(request.rel_url), headers=sent, protocols=protocols, autoclose=False, max_msg_size=0
            )
        except (OSError, WSServerHandshakeError) as exc:  # refused or unreachable: a 502, recorded
            status = exc.status if isinstance(exc, WSServerHandshakeError) else 502
            closed = {"websocket": {"by": "upstream", "error": str(exc), "status": status}}
            pending.append(recorder.record("transport.websocket.close", call_id, closed, _now_ms()))
            await recorder.commit(pending)
            return web.Response(status=502, text=f"upstream WebSocket: {exc}")
        client_ws = web.WebSocketResponse(protocols=[upstream_ws.protocol] if upstream_ws.protocol else ())
        await client_ws.prepare(request)

        async def note(direction: str, message: Any) -> None:
            offset = round((time.monotonic() - clock) * 1000)
            if message.type == WSMsgType.TEXT:
                frame: dict[str, Any] = {"direction": direction, "type": "text", "data": message.data}
            else:
                data = base64.b64encode(message.data).decode("ascii")
                frame = {"direction": direction, "type": "binary", "data": data, "body_encoding": "base64"}
            payload = {"websocket": frame, "timing": {"offset_ms": offset}}
            pending.append(recorder.record("transport.websocket.message", call_id, payload, _now_ms()))
            if len(pending) >= WS_BATCH:
                batch = pending[:]
                pending.clear()
                await recorder.commit(batch, ends=False)

        async def pump(source: Any, sink: Any, direction: str) -> tuple[str, Any]:
            async for message in source:  # ends at a close frame (or a dropped connection)
                if message.type == WSMsgType.TEXT:
                    await sink.send_str(message.data)
                elif message.type == WSMsgType.BINARY:
                    await sink.send_bytes(message.data)
                else:
                    continue
                await note(direction, message)
            return direction, source.close_code

        pumps = [
            asyncio.ensure_future(pump(client_ws, upstream_ws, "client")),
            asyncio.ensure_future(pump(upstream_ws, client_ws, "server")),
        ]
        done, rest = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        by, code = next(iter(done)).result()
        for side in (upstream_ws, client_ws):  # the other side is closed with the code the first gave
            await side.close(code=code or 1000)
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)
        closed = {"websocket": {"by": "client" if by == "client" else "upstream", "code": code}}
        pending.append(recorder.record("transport.websocket.close", call_id, closed, _now_ms()))
        await recorder.commit(pending)
        return client_ws

    app = web.Application(client_max_size=1024**3)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


def _frame(recorder: Recorder, call_id: str, frame: bytes, clock: float) -> dict[str, Any]:
    offset = round((time.monotonic() - clock) * 1000)
    try:
        http: dict[str, Any] = {"frame": frame.decode("utf-8")}
    except UnicodeDecodeError:
        http = {"frame": base64.b64encode(frame).decode("ascii"), "body_encoding": "base64"}
    return recorder.record("http.stream.frame", call_id, {"http": http, "timing": {"offset_ms": offset}}, _now_ms())


async def serve(host: str, port: int, upstream: str, recorder: Recorder, ready: Callable[[int], None]) -> None:
    """Run the proxy on `host`:`port` until cancelled; `ready` gets the bound port (0 picks one)."""
    from aiohttp import web

    runner = web.AppRunner(make_app(upstream, recorder), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    addresses = runner.addresses
    ready(addresses[0][1] if addresses else port)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
