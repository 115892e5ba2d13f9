"""Envelope size on the shipped fixtures: for every fixture A and target B, the bytes of B's output
and of its `_storyline` envelope (issue 15: proportional to what B lost, not A's whole document).

    .venv/bin/python bench/envelope_size.py
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson

import mapc

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "data" / "fixtures"
TARGETS = ("atif", "actf", "openai-msg")


def envelopes(doc: Any) -> list[Any]:
    """Every `_storyline` envelope of an output (the root place, or ATIF's /extra)."""
    out = []
    for d in doc if type(doc) is list else [doc]:
        if type(d) is not dict:
            continue
        if "_storyline" in d:
            out.append(d["_storyline"])
        if type(d.get("extra")) is dict and "_storyline" in d["extra"]:
            out.append(d["extra"]["_storyline"])
    return out


def main() -> None:
    print("| fixture | A bytes | → B | B bytes | envelope bytes | ms (median of 3) |")
    print("|---|---:|---|---:|---:|---:|")
    for fmt in TARGETS:
        for path in sorted((FIXTURES / fmt).glob("*.json")):
            data = path.read_bytes()
            for target in TARGETS:
                if target == fmt:
                    continue
                times = []
                try:
                    for _ in range(3):
                        t0 = time.perf_counter()
                        out = mapc.convert(fmt, target, data, path=path.name)
                        times.append(time.perf_counter() - t0)
                except mapc.MapcError as exc:
                    print(f"| {fmt}/{path.name} | {len(data)} | {target} | — | — | {exc.problems[0].code} |")
                    continue
                env = sum(len(orjson.dumps(e)) for e in envelopes(out))
                ms = sorted(times)[1] * 1000
                print(f"| {fmt}/{path.name} | {len(data)} | {target} | {len(orjson.dumps(out))} | {env} | {ms:.1f} |")


if __name__ == "__main__":
    main()
