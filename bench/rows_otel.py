"""The OTel GenAI rows (`--only otel --mb 5`): the orjson floor, the hand-written converter, and
mapc's span-tree spec `otel-genai` (mappings/traces/otel-genai.yaml, engine/spans.py) both ways.

Data sets: `otel-storyline` (the Storylines of the `chat` corpus of rows_chat.py: system prompt,
user turns, tool calls with results, answers) and `otel` (those Storylines as one OTLP/JSON trace
request, as mapc writes it).  The hand-written converter is the codec mapc shipped before the spec
(tests/formats/otel_reference.py, frozen): dicts, loops, orjson, the same output byte for byte
(tests/formats/test_otel_reference.py), so the race is fair.  Both sides parse their input inside
the timed call; mapc's also validate every Storyline (as `mapc convert` does), the baseline does not.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
from harness import Sample, Work, bench, dataset, load

from mapc.engine import convert, storyline

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests" / "formats"))
import otel_reference as handwritten


@dataset("otel-storyline")
def _otel_storyline(mb: float, data_dir: Path) -> bytes:
    return orjson.dumps(convert.into_storyline("openai-chat", load("chat", mb, data_dir).data, jsonl=True))


@dataset("otel")
def _otel(mb: float, data_dir: Path) -> bytes:
    stories = orjson.loads(load("otel-storyline", mb, data_dir).data)
    return convert.from_storyline("otel-genai", stories).encode()


@bench("orjson loads+dumps otel (floor)", group="otel", data="otel", baseline="handwritten otel read")
def _floor(sample: Sample) -> Work:
    return lambda: orjson.dumps(orjson.loads(sample.data))


@bench("handwritten otel read", group="otel", data="otel", baseline="handwritten otel read")
def _handwritten_read(sample: Sample) -> Work:
    return lambda: orjson.dumps(handwritten.decode(sample.data))


@bench("mapc otel read", group="otel", data="otel", baseline="handwritten otel read")
def _mapc_read(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.into_storyline("otel-genai", sample.data))


@bench("handwritten otel write", group="otel", data="otel-storyline", baseline="handwritten otel write")
def _handwritten_write(sample: Sample) -> Work:
    return lambda: handwritten.encode(orjson.loads(sample.data))


@bench("mapc otel write", group="otel", data="otel-storyline", baseline="handwritten otel write")
def _mapc_write(sample: Sample) -> Work:
    return lambda: convert.from_storyline("otel-genai", storyline.documents(orjson.loads(sample.data)))
