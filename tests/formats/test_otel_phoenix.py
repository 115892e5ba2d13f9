"""A real receiver: Arize Phoenix, started here on 127.0.0.1, takes mapc's traces over OTLP/HTTP.

Phoenix's `/v1/traces` takes OTLP protobuf only (JSON is answered 415), so the file is sent as a
client would send it: parsed into `ExportTraceServiceRequest` with the opentelemetry-proto
messages (its hex ids turned into the bytes they are) and posted as `application/x-protobuf`.
Phoenix's REST API then gives every span back with the trace and span ids, parents and names the
file says, and reads the GenAI conventions (agent, chat and tool spans are its AGENT, LLM and TOOL
spans), as it reads the `otel-openinference` dialect's own attributes.

Phoenix pins older `anthropic` and `google-genai` than the dev extra's SDK checks need, so it
lives in a venv of its own, `.venv-phoenix` (`.ci/run` makes it:
`python3 -m venv .venv-phoenix && .venv-phoenix/bin/pip install arize-phoenix==20.26.1`).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import mapc

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = ROOT / ".venv-phoenix" / "bin" / "phoenix"

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def protobuf(text: str) -> bytes:
    doc = json.loads(text)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in s:
                        s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    return bytes(json_format.ParseDict(doc, ExportTraceServiceRequest()).SerializeToString())


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not PHOENIX.is_file():
        message = f"no Phoenix at {PHOENIX}: see this module's docstring for the one-line install"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI makes it: a missing receiver there is a failure, not a skip
        pytest.skip(message)
    port, grpc = free_port(), free_port()
    work = tmp_path_factory.mktemp("phoenix")
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (work / "phoenix.log").open("wb")
    proc = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            if proc.poll() is not None:
                pytest.fail(f"Phoenix exited: {(work / 'phoenix.log').read_text()[-2000:]}")
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2).close()
                break
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        else:
            pytest.fail("Phoenix did not start in 120 s")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def spans_of(text: str) -> list[dict[str, Any]]:
    return [s for rs in json.loads(text)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]


def received(base: str, want: int) -> list[dict[str, Any]]:
    for _ in range(120):
        data = get(f"{base}/v1/projects/default/spans?limit=1000")["data"]
        if len(data) >= want:
            return list(data)
        time.sleep(0.5)
    raise AssertionError(f"Phoenix holds {len(data)} spans, not {want}")


def test_phoenix_receives_mapcs_trace_over_otlp_http(phoenix: str) -> None:
    (story,) = mapc.into_storyline("atif", (FIXTURES / "atif" / "parallel_tools_14.json").read_bytes())
    text = mapc.from_storyline("otel-genai", [story])
    real = (FIXTURES / "otel-genai" / "openai_v2_weather.otlp.json").read_text()
    (other,) = mapc.into_storyline("atif", (FIXTURES / "atif" / "support-ticket.json").read_bytes())
    dialect = mapc.from_storyline("otel-openinference", [other])
    sent = spans_of(text) + spans_of(real) + spans_of(dialect)
    for body in (text, real, dialect):
        request = urllib.request.Request(
            f"{phoenix}/v1/traces", data=protobuf(body), headers={"Content-Type": "application/x-protobuf"}
        )
        with urllib.request.urlopen(request, timeout=30) as reply:
            assert reply.status == 200
    got = {(s["context"]["trace_id"], s["context"]["span_id"]): s for s in received(phoenix, len(sent))}
    assert len(got) == len(sent)
    for span in sent:
        stored = got[(span["traceId"], span["spanId"])]  # the hex ids name the bytes Phoenix stored
        assert stored["name"] == span["name"]
        assert stored["parent_id"] == span.get("parentSpanId")

    def kinds(text: str) -> dict[str, str]:
        return {s["name"].split()[0]: got[(s["traceId"], s["spanId"])]["span_kind"] for s in spans_of(text)}

    # Phoenix 20 reads the GenAI conventions itself; the OpenInference dialect says the same kinds.
    assert kinds(text) == kinds(dialect) == {"invoke_agent": "AGENT", "chat": "LLM", "execute_tool": "TOOL"}
    # A file posted as JSON is refused: Phoenix takes protobuf only (README says how to send it).
    request = urllib.request.Request(
        f"{phoenix}/v1/traces", data=text.encode(), headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 415
