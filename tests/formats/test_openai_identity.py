"""OpenAI Messages conversions are what they were before the fan-out became data (issue 16 §3).

The row → turns fan-out and its reverse moved from Python (mappings/openai_msg.py, 449 lines) into
`fanout:` in openai-msg.yaml, run by engine/fanout.py, with every result unchanged byte for byte.
bench/openai_identity.py compared old and new over the fixtures and 20,502 generated inputs;
this test keeps a smaller draw of the same inputs (seeded hypothesis: the shipped fixtures of every
JSON format, canonical and shuffled corpora, wild rows, Storylines from anywhere), forward, reverse
and forward again, against the digest the Python fan-out gave.  The inputs are the ones that draw gave,
kept in tests/data/openai-identity/inputs.jsonl.gz (26 KB): a seeded draw is not stable across changes
of mapc itself (caching a function the generators call gave other examples from the same seed).

When a conversion result changes on purpose, record the digest again:
``.venv/bin/python bench/openai_identity.py compare DIR`` with DIR holding that inputs file, unzipped.
"""

from __future__ import annotations

import gzip
import hashlib
import sys
from pathlib import Path

import orjson

from mapc.engine import catalog

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "bench"))  # bench/ is not a package: its modules import by their own names

import openai_identity  # noqa: E402

# By the Python fan-out (b8e81a3^) it was 71850009…cb6.  Recorded again when the values of keys
# openai-msg defines that a Storyline has no field for moved from unknown_fields to origin.kept
# (issue 15 §7): 109 of the 256 outputs changed, their rows written back identical but for the key
# order of 7 malformed `tool_calls` objects (keys "0", "1", "2"), equal as JSON.
# Recorded again when a row's history that the way back would not write as it is (a system
# message mid-history, a message no turn reads, a row without its history) became kept whole:
# 12 of the 256 outputs changed; of their 44 input rows, 43 now come back with their messages
# as they were, against 7 before (the other one is a null `messages`, read as none).
RECORDED = "ad1eef734520e8f7c2e7ef2db9eb9eb735a9e6dbba1369e652ca23bb16ed9982"
INPUTS = ROOT / "tests" / "data" / "openai-identity" / "inputs.jsonl.gz"  # `digest --n 60` drew them then


def test_every_conversion_gives_what_the_python_fan_out_gave():
    inputs = [orjson.loads(line) for line in gzip.decompress(INPUTS.read_bytes()).splitlines()]
    assert len(inputs) == 256
    lines = b"\n".join(openai_identity.convert_one(item) for item in inputs)
    assert hashlib.sha256(lines).hexdigest() == RECORDED


def test_the_comparison_sees_a_change_of_one_field():
    """Not vacuous: without the context turns' `copied` field the fixtures' outputs differ."""
    inputs = [i for i in openai_identity._inputs(0) if i["kind"] in ("corpus", "hop")]

    def digest() -> str:
        return hashlib.sha256(b"\n".join(openai_identity.convert_one(i) for i in inputs)).hexdigest()

    before = digest()
    context = catalog.program("openai-msg").spec.rows.fanout.kinds[0]
    puts = context.puts  # (field index, spread, key, tokens): what a turn of this kind is given
    object.__setattr__(context, "puts", tuple(p for p in puts if p[2] != "copied"))
    try:
        assert digest() != before
    finally:
        object.__setattr__(context, "puts", puts)
    assert digest() == before
