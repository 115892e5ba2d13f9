"""What the loss report costs (issue 15 §4): a conversion as `mapc convert` did it before (parse,
map, export with the envelope), the same with the report (engine/loss.py: the envelope's entries,
and the output read back as the target to see what it says natively), and with `--no-envelope`
(the report, then the envelope taken out), the report as it was made before it reused what the
conversion had already read (the output read back as the target once more), and what
`mapc convert` adds for ATIF (Harbor's rules, mappings/atif_harbor.py).  Rows of one conversion
share a baseline: an exact one (ATIF → Storyline) and one that carries values (ACTF → ATIF).

    .venv/bin/python bench/run.py --only loss --mb 5 --repeat 3
"""

from __future__ import annotations

from harness import Sample, Work, bench

import mapc  # noqa: F401  (installs the shipped catalog)
from mapc.engine import convert

for _source, _target in (("atif", "storyline"), ("actf", "atif")):
    _base = f"{_source} → {_target}, no report"

    @bench(_base, group="loss", data=_source, baseline=_base)
    def _plain(sample: Sample, source: str = _source, target: str = _target) -> Work:
        return lambda: convert.from_storyline(target, convert.into_storyline(source, sample.data))

    @bench(f"{_source} → {_target}, with the loss report", group="loss", data=_source, baseline=_base)
    def _reported(sample: Sample, source: str = _source, target: str = _target) -> Work:
        def work() -> None:
            stories = convert.into_storyline(source, sample.data)
            convert.from_storyline_reported(target, stories, from_format=source)

        return work

    @bench(f"{_source} → {_target}, the report reading the output again", group="loss", data=_source, baseline=_base)
    def _reread(sample: Sample, source: str = _source, target: str = _target) -> Work:
        # How the report was made before it reused what the conversion had read (engine/convert.py
        # `_known_reading`): the output serialized and read back as the target once more.
        def work() -> None:
            known, convert._known_reading = convert._known_reading, lambda *a: None
            try:
                stories = convert.into_storyline(source, sample.data)
                convert.from_storyline_reported(target, stories, from_format=source)
            finally:
                convert._known_reading = known

        return work

    @bench(f"{_source} → {_target}, --no-envelope", group="loss", data=_source, baseline=_base)
    def _bare(sample: Sample, source: str = _source, target: str = _target) -> Work:
        def work() -> None:
            stories = convert.into_storyline(source, sample.data)
            convert.from_storyline_reported(target, stories, from_format=source, keep_envelope=False)

        return work


@bench(
    "actf → atif, with the loss report and Harbor's check", group="loss", data="actf", baseline="actf → atif, no report"
)
def _owner_checked(sample: Sample) -> Work:
    from mapc.cli.report import owner_checked

    def work() -> None:
        stories = convert.into_storyline("actf", sample.data)
        output, report = convert.from_storyline_reported("atif", stories, from_format="actf")
        owner_checked(report, "atif", output)

    return work
