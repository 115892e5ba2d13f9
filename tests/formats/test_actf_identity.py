"""ACTF conversions are what they were before its named functions moved into actf.yaml (issue 16 §3).

ACTF's Python (mappings/functions.py) was cut from 234 to 150 code lines, by data in actf.yaml and
smaller functions, with every result unchanged byte for byte: bench/actf_identity.py compared old
and new over 10,011 inputs (fixtures and generated documents), 62,850 conversions.  This test keeps
a smaller draw of the same inputs (seeded hypothesis: the shipped ACTF fixtures, the ATIF and OpenAI
Messages fixtures as hops, an OpenClaw event log, generated ACTF documents and Storylines from
anywhere), forward, reverse, forward again and through ATIF and openai-msg, against the digest the
old functions gave.  The inputs are the ones `digest --n 40` drew, kept in
tests/data/actf-identity/inputs.jsonl.gz (28 KB): a seeded draw is not stable across installs and
changes of mapc itself (a clean CI install drew other examples from the same seed).

When a conversion result changes on purpose, record the digest again over that file's inputs.
"""

from __future__ import annotations

import gzip
import hashlib
import sys
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "bench"))  # bench/ is not a package: its modules import by their own names

import actf_identity  # noqa: E402

# By the old functions (main at f589b0b) it was af79d329…17442.  Recorded again when openai-msg
# kept the histories its way back would not write as they are: 14 of the 91 outputs changed, each
# in its openai-msg reading only (the cybergym fixture repeats its response as the last history
# message; generated ACTF gives two results of one call, which the reading de-duplicates).
RECORDED = "ae8abf0d9972361e86a55af5750e80bd8bfaaa9ca0424d6fd7af02ff96dc9461"
INPUTS = ROOT / "tests" / "data" / "actf-identity" / "inputs.jsonl.gz"


def test_every_conversion_gives_what_the_old_functions_gave():
    inputs = [orjson.loads(line) for line in gzip.decompress(INPUTS.read_bytes()).splitlines()]
    assert len(inputs) == 91
    lines = b"\n".join(actf_identity.convert_one(item) for item in inputs)
    assert hashlib.sha256(lines).hexdigest() == RECORDED


def test_the_comparison_sees_a_change_of_one_field():
    """Not vacuous: one observation's ``tool_use_id`` dropped from a fixture changes its outputs."""
    inputs = [i for i in actf_identity._inputs(0) if i["path"] == "code-repair.actf.json"]
    before = actf_identity.convert_one(inputs[0])
    doc = orjson.loads(inputs[0]["data"])
    steps = next(iter(doc["attempts"].values()))["trajectory"]["steps"]
    del steps[0]["observation"][0]["tool_use_id"]
    after = actf_identity.convert_one({**inputs[0], "data": orjson.dumps(doc).decode()})
    assert hashlib.sha256(after).digest() != hashlib.sha256(before).digest()
