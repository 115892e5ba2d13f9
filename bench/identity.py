"""The record/compare driver of the byte-for-byte identity benches (bench/actf_identity.py,
bench/openai_identity.py): draw a fixed set of inputs once, write one output line per input, and
later run the same again and count the lines that differ.

A format's bench says what its inputs are (`inputs(n)`: fixtures, then `n` draws of each generator,
using `collect`) and what one output line holds (`convert_one(item)`, its parts made with `result`);
`main` is the command line both share (`record DIR`, `compare DIR`, `digest --n N`).
"""

from __future__ import annotations

import argparse
import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from mapc.engine.problems import MapcError

Inputs = Callable[[int], list[dict[str, Any]]]
ConvertOne = Callable[[dict[str, Any]], bytes]


def collect(n: int, strategy: Any, keep: Callable[[Any], None]) -> None:
    """Hand `n` draws of hypothesis `strategy` to `keep` (derandomized: the same draws on every run)."""
    if n == 0:
        return
    from hypothesis import HealthCheck, Phase, given, seed, settings

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


def result(fn: Callable[[], Any]) -> tuple[bytes, Any]:
    """What `fn()` gives, as (its orjson bytes, it), or (its problems' bytes, None) when it raises MapcError."""
    try:
        value = fn()
    except MapcError as exc:
        return orjson.dumps([[p.code, p.pointer, p.message] for p in exc.problems]), None
    return orjson.dumps(value), value


def digest(inputs: Inputs, convert_one: ConvertOne, n: int) -> str:
    """The sha256 of every output line for the inputs of `n` draws (drawn afresh, deterministically)."""
    return hashlib.sha256(b"\n".join(convert_one(item) for item in inputs(n))).hexdigest()


def main(
    description: str,
    inputs: Inputs,
    convert_one: ConvertOne,
    default_dir: Path,
    *,
    n_help: str = "draws of each generator",
    warm: bool = False,
) -> int:
    """The command line: `record DIR` draws the inputs (kept in DIR/inputs.jsonl, so both sides read the
    same documents) and writes the outputs; `compare DIR` converts them again and counts the outputs that
    differ (exit 1 if any); `digest` prints the digest of `--n` fresh draws.  With `warm`, every spec and
    function is loaded (over the fixtures) before the inputs are drawn: the code may change meanwhile."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("mode", choices=["record", "compare", "digest"])
    parser.add_argument("dir", type=Path, nargs="?", default=default_dir)
    parser.add_argument("--n", type=int, default=5000, help=n_help)
    args = parser.parse_args()
    if args.mode == "digest":
        print(digest(inputs, convert_one, args.n))
        return 0
    args.dir.mkdir(parents=True, exist_ok=True)
    if warm:
        for item in inputs(0):
            convert_one(item)
    inputs_file = args.dir / "inputs.jsonl"
    if not inputs_file.exists():
        if args.mode == "compare":
            parser.error(f"{inputs_file} is missing: record first")
        inputs_file.write_bytes(b"\n".join(orjson.dumps(i) for i in inputs(args.n)))
    items = [orjson.loads(line) for line in inputs_file.read_bytes().splitlines()]
    start = time.process_time()
    lines = [convert_one(item) for item in items]
    seconds = time.process_time() - start
    total = hashlib.sha256(b"\n".join(lines)).hexdigest()
    kinds: dict[str, int] = {}
    for item in items:
        kinds[item["kind"]] = kinds.get(item["kind"], 0) + 1
    errors = sum(1 for line in lines if line.startswith(b'[["'))
    print(f"{len(items)} inputs {kinds}; {errors} refused forward; {seconds:.1f} CPU s; sha256 {total}")
    out = args.dir / "outputs.txt"
    if args.mode == "record":
        out.write_bytes(b"\n".join(lines))
        return 0
    old = out.read_bytes().split(b"\n")
    differ = [i for i, (a, b) in enumerate(zip(old, lines, strict=True)) if a != b]
    print(f"{len(lines) - len(differ)} of {len(lines)} outputs byte-identical; {len(differ)} differ")
    for i in differ[:5]:
        print(f"  input {i} ({items[i]['kind']}):\n    old {old[i][:300]!r}\n    new {lines[i][:300]!r}")
    return 1 if differ else 0
