"""The ACTF rows: the orjson floor, the hand-written converter both ways, and mapc's ACTF spec both ways.

Data sets: `actf` (generate.py's ACTF generator: one task, 12 attempts of many steps) and `actf-storyline`
(the hand-written forward output of `actf`: the input of both reverse rows).  Each row times what a user's
call does: parse, (validate, map, validate,) serialize — as the ATIF rows do (rows_baseline.py, rows_mapc.py).
"""

from __future__ import annotations

from pathlib import Path

import generate
import handwritten_actf
import orjson
from harness import Sample, Work, bench, dataset, load

from mapc.engine import convert, storyline


@dataset("actf")
def _actf(mb: float, data_dir: Path) -> bytes:
    return generate.generate_bytes("actf", mb)


@dataset("actf-storyline")
def _actf_storyline(mb: float, data_dir: Path) -> bytes:
    """The Storylines of the `actf` data set: the input of reverse converters."""
    return handwritten_actf.forward_bytes(load("actf", mb, data_dir).data)


@bench("orjson loads+dumps actf (floor)", group="actf", data="actf", baseline="handwritten actf forward")
def _orjson_floor(sample: Sample) -> Work:
    return lambda: orjson.dumps(orjson.loads(sample.data))


@bench("handwritten actf forward", group="actf", data="actf", baseline="handwritten actf forward")
def _handwritten_forward(sample: Sample) -> Work:
    return lambda: handwritten_actf.forward_bytes(sample.data)


@bench("handwritten actf reverse", group="actf", data="actf-storyline", baseline="handwritten actf forward")
def _handwritten_reverse(sample: Sample) -> Work:
    return lambda: handwritten_actf.reverse_bytes(sample.data)


@bench("mapc actf forward", group="actf", data="actf", baseline="handwritten actf forward")
def _mapc_forward(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.into_storyline("actf", sample.data))


@bench("mapc actf reverse", group="actf", data="actf-storyline", baseline="handwritten actf reverse")
def _mapc_reverse(sample: Sample) -> Work:
    return lambda: orjson.dumps(convert.from_storyline("actf", storyline.documents(orjson.loads(sample.data))))


@bench("mapc actf forward (mapping only)", group="actf", data="actf", baseline="handwritten actf forward")
def _mapc_forward_mapping(sample: Sample) -> Work:
    from mapc.engine import catalog, run

    program = catalog.program("actf")
    return lambda: orjson.dumps([m.story for m in run.forward(program, orjson.loads(sample.data))])


@bench("mapc actf reverse (mapping only)", group="actf", data="actf-storyline", baseline="handwritten actf reverse")
def _mapc_reverse_mapping(sample: Sample) -> Work:
    from mapc.engine import catalog, run

    program = catalog.program("actf")

    def work() -> bytes:
        docs = [r.document for r in run.reverse(program, storyline.documents(orjson.loads(sample.data)))]
        return orjson.dumps(docs[0] if len(docs) == 1 else docs)

    return work
