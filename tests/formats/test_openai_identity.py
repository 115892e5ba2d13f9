"""OpenAI Messages conversions are what they were before the fan-out became data (issue 16 §3).

The row → turns fan-out and its reverse moved from Python (mappings/openai_msg.py, 449 lines) into
`fanout:` in openai-msg.yaml, run by engine/fanout.py, with every result unchanged byte for byte.
bench/openai_identity.py compared old and new over the fixtures and 20,502 generated inputs;
this test keeps a smaller draw of the same inputs (seeded hypothesis: the shipped fixtures of every
JSON format, canonical and shuffled corpora, wild rows, Storylines from anywhere), forward, reverse
and forward again, against the digest the Python fan-out gave.  The draw runs in a plain
interpreter: under pytest hypothesis draws other examples from the same seed.

When a conversion result changes on purpose (or a generator gains a shape), record the digest
again: ``.venv/bin/python bench/openai_identity.py digest --n 60``.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from mapc.engine import catalog

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "bench"))  # bench/ is not a package: its modules import by their own names

import openai_identity  # noqa: E402

RECORDED = "71850009fb666ae4da2609a420650a663891b1efabd38ae0eba2e13ebf67bcb6"  # by the Python fan-out (b8e81a3^)


def test_every_conversion_gives_what_the_python_fan_out_gave():
    script = ROOT / "bench" / "openai_identity.py"
    done = subprocess.run([sys.executable, str(script), "digest", "--n", "60"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == RECORDED


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
