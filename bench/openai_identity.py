"""OpenAI Messages, old vs new, byte for byte: record every conversion of a fixed set of inputs, compare later.

A refactoring of the openai-msg mapping (issue 16 §3: the row → turns fan-out as data) must not change
one byte of any result.  `record DIR` draws the inputs once (kept in DIR/inputs.jsonl, so both sides
read the same documents): every shipped fixture of every JSON format, and from the hypothesis
generators of tests/ (derandomized) canonical corpora and their shuffled rows (`corpora()`), corpora of
rows of any shape (`wild_corpora()`) and Storylines from anywhere (`storyline_documents()`).  For each
it writes one output line: the forward (Storylines or problems), the reverse of what the forward gave,
and the forward of that reverse, each serialized by orjson (key order included).  `compare DIR` runs
the same again and counts the lines that differ.

    .venv/bin/python bench/openai_identity.py record /tmp/openai-old [--n 5000]
    .venv/bin/python bench/openai_identity.py compare /tmp/openai-old
    .venv/bin/python bench/openai_identity.py digest --n 60     # what tests/formats/test_openai_identity.py records
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

FMT = "openai-msg"
FIXTURES = ROOT / "tests" / "data" / "fixtures"
JSON_FORMATS = ("atif", "actf", "openai-chat")


def _inputs(n: int) -> list[dict[str, Any]]:
    """The inputs: fixtures, then n draws of each generator (hypothesis, derandomized)."""
    from hypothesis import strategies as st
    from openai_strategies import corpora, wild_corpora
    from strategies import storyline_documents

    out: list[dict[str, Any]] = []
    for path in sorted((FIXTURES / FMT).glob("*.json")):
        out.append({"kind": "corpus", "path": path.name, "data": path.read_bytes().decode()})
    for fmt in JSON_FORMATS:
        for path in sorted((FIXTURES / fmt).glob("*.json")):
            out.append({"kind": "hop", "format": fmt, "path": path.name, "data": path.read_bytes().decode()})

    drawn = [0]

    def pair(value: Any) -> None:
        canonical, shuffled = value
        drawn[0] += 1
        out.append({"kind": "corpus", "path": "corpus.json", "data": orjson.dumps(canonical).decode()})
        out.append({"kind": "corpus", "path": "corpus.json", "data": orjson.dumps(shuffled).decode()})
        if drawn[0] % 10 == 0:  # some as JSON lines
            lines = b"\n".join(orjson.dumps(r) for r in shuffled["session_steps"]).decode()
            out.append({"kind": "lines", "path": "corpus.jsonl", "data": lines})

    identity.collect(n, corpora(), pair)
    identity.collect(
        n, wild_corpora(), lambda v: out.append({"kind": "corpus", "path": "w.json", "data": orjson.dumps(v).decode()})
    )
    identity.collect(
        n, st.lists(storyline_documents(), min_size=1, max_size=2), lambda v: out.append({"kind": "stories", "data": v})
    )
    return out


def convert_one(item: dict[str, Any]) -> bytes:
    """One output line: forward, reverse of it, forward again (each its bytes or its problems)."""
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
    if stories is not None:
        back, rows = identity.result(lambda: mapc.from_storyline(FMT, stories))
        parts.append(back)
        if rows is not None:
            again, stories2 = identity.result(lambda: mapc.into_storyline(FMT, orjson.dumps(rows), path="again.json"))
            parts.append(again)
            if kind == "hop" and stories2 is not None:
                parts.append(identity.result(lambda: mapc.from_storyline(item["format"], stories2))[0])
    return b"\t".join(parts)


def digest(n: int) -> str:
    """The sha256 of every output line for the inputs of `n` draws (drawn afresh, deterministically)."""
    return identity.digest(_inputs, convert_one, n)


def main() -> int:
    """`record DIR`, `compare DIR` or `digest --n N` (bench/identity.py)."""
    description = __doc__.split("\n")[0]
    return identity.main(
        description,
        _inputs,
        convert_one,
        Path("/tmp/openai-identity"),
        n_help="draws of each generator (corpora gives two documents)",
    )


if __name__ == "__main__":
    raise SystemExit(main())
