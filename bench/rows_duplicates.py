"""What refusing repeated keys by default costs (issue 14 §7): the parse alone; the parse plus
mapc's check with the C scanner (engine/_dupscan.c, one scan of the bytes); the parse plus the
pure-Python check that an installation without a compiler uses (and that was the default before
the scanner: one orjson.dumps of the parsed value and a few byte scans); and the parse plus the
second parse with the standard library that the Python check replaced.  Every row returns the parsed
value, so that freeing it (about 50 ms at 30 MB) falls after the clock in each, as in the parse row.

    .venv/bin/python bench/run.py --only duplicates --mb 30 --repeat 7
"""

from __future__ import annotations

import orjson
from harness import Sample, Work, bench

from mapc.engine import duplicates

for _data in ("atif", "storyline"):

    @bench(f"parse {_data}", group="duplicates", data=_data, baseline=f"parse {_data}")
    def _parse(sample: Sample) -> Work:
        return lambda: orjson.loads(sample.data)

    @bench(
        f"parse + duplicate-key check {_data} (C scanner, now)",
        group="duplicates",
        data=_data,
        baseline=f"parse {_data}",
    )
    def _checked(sample: Sample) -> Work:
        if duplicates.native is None:
            raise RuntimeError("the C scanner is not built in this installation (pip install . with a compiler)")

        def work() -> object:
            doc = orjson.loads(sample.data)
            assert not duplicates.problems_of(sample.data, doc)
            return doc  # freed after the clock stops, as in the parse row

        return work

    @bench(f"duplicate-key check alone {_data} (C scanner)", group="duplicates", data=_data, baseline=f"parse {_data}")
    def _alone(sample: Sample) -> Work:
        if duplicates.native is None:
            raise RuntimeError("the C scanner is not built in this installation (pip install . with a compiler)")
        doc = orjson.loads(sample.data)
        return lambda: duplicates.problems_of(sample.data, doc)

    @bench(
        f"parse + Python check {_data} (before; no compiler)",
        group="duplicates",
        data=_data,
        baseline=f"parse {_data}",
    )
    def _python(sample: Sample) -> Work:
        def work() -> object:
            doc = orjson.loads(sample.data)
            assert not duplicates.python_problems_of(sample.data, doc)
            return doc

        return work

    @bench(
        f"parse + stdlib second parse {_data} (first check)",
        group="duplicates",
        data=_data,
        baseline=f"parse {_data}",
    )
    def _second_parse(sample: Sample) -> Work:
        def work() -> object:
            doc = orjson.loads(sample.data)
            assert not duplicates.problems(sample.data)
            return doc

        return work
