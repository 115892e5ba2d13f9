"""ACTF, old vs new, byte for byte: record every conversion of a fixed set of inputs, compare later.

Moving ACTF's named functions into actf.yaml (issue 16 §3: ACTF's Python ≤ 150 lines) must not change
one byte of any result.  `record DIR` draws the inputs once (kept in DIR/inputs.jsonl, so both sides
read the same documents): the shipped ACTF fixtures, the shipped ATIF and OpenAI Messages fixtures (as
hops), an OpenClaw event-log document, and from the hypothesis generators of tests/ (derandomized)
ACTF documents (`actf_documents()`, every tenth also as JSON lines) and Storylines from anywhere
(`storyline_documents()`).  For each it writes one output line: the forward into Storylines (or
problems), the reverse into ACTF, the forward of that, and the hops of those Storylines through ATIF
and openai-msg back into ACTF, each serialized by orjson (key order included).  `compare DIR` runs
the same again and counts the lines that differ.

    .venv/bin/python bench/actf_identity.py record /tmp/actf-old [--n 5000]
    .venv/bin/python bench/actf_identity.py compare /tmp/actf-old
    .venv/bin/python bench/actf_identity.py digest --n 40     # what tests/formats/test_actf_identity.py records
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "formats"), str(ROOT / "bench")]

import identity  # noqa: E402

import mapc  # noqa: E402

FMT = "actf"
FIXTURES = ROOT / "tests" / "data" / "fixtures"
HOP_FORMATS = ("atif", "openai-msg")


def _event_log_document() -> str:
    from test_actf_event_log import _document, _events

    return _document(_events()).decode()


def _inputs(n: int) -> list[dict[str, Any]]:
    """The inputs: fixtures, then n draws of each generator (hypothesis, derandomized)."""
    from actf_strategies import actf_documents
    from hypothesis import strategies as st
    from strategies import storyline_documents

    out: list[dict[str, Any]] = []
    for path in sorted((FIXTURES / FMT).glob("*.json")):
        out.append({"kind": "doc", "path": path.name, "data": path.read_bytes().decode()})
    out.append({"kind": "doc", "path": "events.actf.json", "data": _event_log_document()})
    for fmt in HOP_FORMATS:
        for path in sorted((FIXTURES / fmt).glob("*.json")):
            out.append({"kind": "hop", "format": fmt, "path": path.name, "data": path.read_bytes().decode()})

    drawn = [0]

    def document(value: Any) -> None:
        drawn[0] += 1
        jsonl = drawn[0] % 10 == 0
        out.append({"kind": "lines" if jsonl else "doc", "path": "d.actf.json", "data": orjson.dumps(value).decode()})

    identity.collect(n, actf_documents(), document)
    identity.collect(
        n, st.lists(storyline_documents(), min_size=1, max_size=2), lambda v: out.append({"kind": "stories", "data": v})
    )
    return out


def convert_one(item: dict[str, Any]) -> bytes:
    """One output line: forward, reverse, forward again, and the hops through ATIF and openai-msg."""
    kind = item["kind"]
    if kind == "stories":
        first, stories = b"", item["data"]
    elif kind == "hop":
        first, stories = identity.result(
            lambda: mapc.into_storyline(item["format"], item["data"].encode(), path=item["path"])
        )
    else:
        data = item["data"].encode()
        first, stories = identity.result(
            lambda: mapc.into_storyline(FMT, data, jsonl=kind == "lines", path=item["path"])
        )
    parts = [first]
    if stories is None:
        return b"\t".join(parts)
    back, doc = identity.result(lambda: mapc.from_storyline(FMT, stories))
    parts.append(back)
    if doc is not None:
        parts.append(identity.result(lambda: mapc.into_storyline(FMT, orjson.dumps(doc), path="again.actf.json"))[0])
    if kind != "hop":
        for fmt in HOP_FORMATS:
            there, other = identity.result(lambda: mapc.from_storyline(fmt, stories))  # noqa: B023
            parts.append(there)
            if other is None:
                continue
            hub, stories2 = identity.result(lambda: mapc.into_storyline(fmt, orjson.dumps(other), path="hop.json"))  # noqa: B023
            parts.append(hub)
            if stories2 is not None:
                parts.append(identity.result(lambda: mapc.from_storyline(FMT, stories2))[0])  # noqa: B023
    return b"\t".join(parts)


def digest(n: int) -> str:
    """The sha256 of every output line for the inputs of `n` draws (drawn afresh, deterministically)."""
    return identity.digest(_inputs, convert_one, n)


def main() -> int:
    """`record DIR`, `compare DIR` or `digest --n N` (bench/identity.py)."""
    description = __doc__.split("\n")[0]
    return identity.main(description, _inputs, convert_one, Path("/tmp/actf-identity"), warm=True)


if __name__ == "__main__":
    raise SystemExit(main())
