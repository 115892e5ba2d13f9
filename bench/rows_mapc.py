"""mapc's own rows: the ATIF spec run by the engine, and Storyline validation.

Each row times what a user's call does: parse, validate the input, map, validate the output,
serialize (forward); parse, validate, map back, serialize (reverse).
"""

from __future__ import annotations

import orjson
from harness import Sample, Work, bench

from mapc.engine import convert, storyline


@bench("mapc atif forward", group="atif", data="atif", baseline="handwritten forward")
def _mapc_forward(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.into_storyline("atif", sample.data))


@bench("mapc atif reverse", group="atif", data="atif-storyline", baseline="handwritten reverse")
def _mapc_reverse(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.from_storyline("atif", storyline.documents(orjson.loads(sample.data))))


@bench(
    "mapc validate storyline (parse + schema + rules)",
    group="validate",
    data="storyline",
    baseline="orjson.loads storyline",
)
def _mapc_validate(sample: Sample) -> Work:
    def work() -> None:
        problems = storyline.check_all(storyline.documents(orjson.loads(sample.data)), prefix=False)
        assert not problems, problems[:3]

    return work


@bench(
    "mapc validate storyline (schema + rules only)",
    group="validate",
    data="storyline",
    baseline="orjson.loads storyline",
)
def _mapc_validate_only(sample: Sample) -> Work:
    docs = storyline.documents(orjson.loads(sample.data))
    return lambda: storyline.check_all(docs, prefix=False)
