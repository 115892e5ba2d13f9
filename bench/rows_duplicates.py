"""What refusing repeated keys by default costs (issue 14 §7): the parse alone, the parse plus
mapc's check (engine/duplicates.py: one orjson.dumps of the parsed value and a few byte scans), and
the parse plus the second parse with the standard library that the check replaced.

    .venv/bin/python bench/run.py --only duplicates --mb 30 --repeat 5
"""

from __future__ import annotations

import orjson
from harness import Sample, Work, bench

from mapc.engine import duplicates

for _data in ("atif", "storyline"):

    @bench(f"parse {_data}", group="duplicates", data=_data, baseline=f"parse {_data}")
    def _parse(sample: Sample) -> Work:
        return lambda: orjson.loads(sample.data)

    @bench(f"parse + duplicate-key check {_data}", group="duplicates", data=_data, baseline=f"parse {_data}")
    def _checked(sample: Sample) -> Work:
        def work() -> None:
            doc = orjson.loads(sample.data)
            assert not duplicates.problems_of(sample.data, doc)

        return work

    @bench(
        f"parse + stdlib second parse {_data} (before)",
        group="duplicates",
        data=_data,
        baseline=f"parse {_data}",
    )
    def _second_parse(sample: Sample) -> Work:
        def work() -> None:
            orjson.loads(sample.data)
            assert not duplicates.problems(sample.data)

        return work
