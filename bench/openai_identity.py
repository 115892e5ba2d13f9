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

import argparse
import hashlib
import sys
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "formats")]

import mapc  # noqa: E402
from mapc.engine.problems import MapcError  # noqa: E402

FMT = "openai-msg"
FIXTURES = ROOT / "tests" / "data" / "fixtures"
JSON_FORMATS = ("atif", "actf", "openai-chat")


def _inputs(n: int) -> list[dict[str, Any]]:
    """The inputs: fixtures, then n draws of each generator (hypothesis, derandomized)."""
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies as st
    from openai_strategies import corpora, wild_corpora
    from strategies import storyline_documents

    out: list[dict[str, Any]] = []
    for path in sorted((FIXTURES / FMT).glob("*.json")):
        out.append({"kind": "corpus", "path": path.name, "data": path.read_bytes().decode()})
    for fmt in JSON_FORMATS:
        for path in sorted((FIXTURES / fmt).glob("*.json")):
            out.append({"kind": "hop", "format": fmt, "path": path.name, "data": path.read_bytes().decode()})

    def collect(strategy: Any, keep: Any) -> None:
        if n == 0:
            return

        @seed(20261202)
        @settings(
            max_examples=n,
            database=None,
            phases=[Phase.generate],
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def draw(value: Any) -> None:
            keep(value)

        draw()

    drawn = [0]

    def pair(value: Any) -> None:
        canonical, shuffled = value
        drawn[0] += 1
        out.append({"kind": "corpus", "path": "corpus.json", "data": orjson.dumps(canonical).decode()})
        out.append({"kind": "corpus", "path": "corpus.json", "data": orjson.dumps(shuffled).decode()})
        if drawn[0] % 10 == 0:  # some as JSON lines
            lines = b"\n".join(orjson.dumps(r) for r in shuffled["session_steps"]).decode()
            out.append({"kind": "lines", "path": "corpus.jsonl", "data": lines})

    collect(corpora(), pair)
    collect(
        wild_corpora(), lambda v: out.append({"kind": "corpus", "path": "w.json", "data": orjson.dumps(v).decode()})
    )
    collect(
        st.lists(storyline_documents(), min_size=1, max_size=2), lambda v: out.append({"kind": "stories", "data": v})
    )
    return out


def _result(fn: Any) -> tuple[bytes, Any]:
    try:
        value = fn()
    except MapcError as exc:
        return orjson.dumps([[p.code, p.pointer, p.message] for p in exc.problems]), None
    return orjson.dumps(value), value


def convert_one(item: dict[str, Any]) -> bytes:
    """One output line: forward, reverse of it, forward again (each its bytes or its problems)."""
    kind = item["kind"]
    if kind == "stories":
        first, stories = b"", item["data"]
    elif kind == "hop":
        first, stories = _result(lambda: mapc.into_storyline(item["format"], item["data"].encode(), path=item["path"]))
    else:
        data = item["data"].encode()
        first, stories = _result(lambda: mapc.into_storyline(FMT, data, jsonl=kind == "lines", path=item["path"]))
    parts = [first]
    if stories is not None:
        back, rows = _result(lambda: mapc.from_storyline(FMT, stories))
        parts.append(back)
        if rows is not None:
            again, stories2 = _result(lambda: mapc.into_storyline(FMT, orjson.dumps(rows), path="again.json"))
            parts.append(again)
            if kind == "hop" and stories2 is not None:
                parts.append(_result(lambda: mapc.from_storyline(item["format"], stories2))[0])
    return b"\t".join(parts)


def digest(n: int) -> str:
    """The sha256 of every output line for the inputs of `n` draws (drawn afresh, deterministically)."""
    return hashlib.sha256(b"\n".join(convert_one(item) for item in _inputs(n))).hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["record", "compare", "digest"])
    parser.add_argument("dir", type=Path, nargs="?", default=Path("/tmp/openai-identity"))
    parser.add_argument("--n", type=int, default=5000, help="draws of each generator (corpora gives two documents)")
    args = parser.parse_args()
    if args.mode == "digest":
        print(digest(args.n))
        return 0
    args.dir.mkdir(parents=True, exist_ok=True)
    inputs_file = args.dir / "inputs.jsonl"
    if not inputs_file.exists():
        if args.mode == "compare":
            parser.error(f"{inputs_file} is missing: record first")
        inputs_file.write_bytes(b"\n".join(orjson.dumps(i) for i in _inputs(args.n)))
    inputs = [orjson.loads(line) for line in inputs_file.read_bytes().splitlines()]
    start = time.process_time()
    lines = [convert_one(item) for item in inputs]
    seconds = time.process_time() - start
    total = hashlib.sha256(b"\n".join(lines)).hexdigest()
    kinds: dict[str, int] = {}
    for item in inputs:
        kinds[item["kind"]] = kinds.get(item["kind"], 0) + 1
    errors = sum(1 for line in lines if line.startswith(b'[["'))
    print(f"{len(inputs)} inputs {kinds}; {errors} refused forward; {seconds:.1f} CPU s; sha256 {total}")
    out = args.dir / "outputs.txt"
    if args.mode == "record":
        out.write_bytes(b"\n".join(lines))
        return 0
    old = out.read_bytes().split(b"\n")
    differ = [i for i, (a, b) in enumerate(zip(old, lines, strict=True)) if a != b]
    print(f"{len(lines) - len(differ)} of {len(lines)} outputs byte-identical; {len(differ)} differ")
    for i in differ[:5]:
        print(f"  input {i} ({inputs[i]['kind']}):\n    old {old[i][:300]!r}\n    new {lines[i][:300]!r}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
