"""mapc's own rows: the ATIF spec run by the engine, and Storyline validation.

The "mapc atif forward/reverse" rows time what a user's call does: parse, validate the input,
map, validate the output, serialize (forward); parse, validate, map back, validate the result as
ATIF, serialize (reverse).  The "(mapping only)" rows do what the hand-written converter does
(parse, map with residuals and the BLAKE3 document id, serialize) and nothing more, so that
ratio compares the engine with hand-written code like for like.
"""

from __future__ import annotations

import orjson
from harness import Sample, Work, bench

from mapc.engine import catalog, convert, run, storyline


@bench("mapc atif forward", group="atif", data="atif", baseline="handwritten forward")
def _mapc_forward(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.into_storyline("atif", sample.data))


@bench("mapc atif forward (mapping only)", group="atif", data="atif", baseline="handwritten forward")
def _mapc_forward_mapping(sample: Sample) -> Work:
    program = catalog.program("atif")
    return lambda: orjson.dumps([m.story for m in run.forward(program, orjson.loads(sample.data))])


@bench("mapc atif reverse (mapping only)", group="atif", data="atif-storyline", baseline="handwritten reverse")
def _mapc_reverse_mapping(sample: Sample) -> Work:
    program = catalog.program("atif")

    def work() -> bytes:
        docs = [r.document for r in run.reverse(program, storyline.documents(orjson.loads(sample.data)))]
        return orjson.dumps(docs[0] if len(docs) == 1 else docs)

    return work


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
