"""What provenance costs on a cross-format export (issue 16 §5): `from_storyline(B, stories)` with
`carry=True` (engine/provenance.py: A's document rebuilt, the hop A → B → A run and what differs
carried in B's envelope) against the same export with `carry=False`.  The Storylines are made once
per row, outside the timed work, so the ratio is the export's alone.  Target: ≤ 1.3×.

    .venv/bin/python bench/run.py --only provenance --mb 5 --repeat 7
"""

from __future__ import annotations

from harness import Sample, Work, bench

import mapc  # noqa: F401  (installs the shipped catalog)
from mapc.engine import convert

_PAIRS = (("atif", "actf"), ("atif", "openai-msg"), ("actf", "atif"), ("openai", "atif"), ("claude", "atif"))
_FORMAT = {"openai": "openai-msg", "claude": "claude-code"}

for _data, _target in _PAIRS:
    _source = _FORMAT.get(_data, _data)
    _base = f"{_source} → {_target}, export without provenance"

    @bench(_base, group="provenance", data=_data, baseline=_base)
    def _plain(sample: Sample, source: str = _source, target: str = _target) -> Work:
        stories = convert.into_storyline(source, sample.data)
        return lambda: convert.from_storyline(target, stories, carry=False)

    @bench(f"{_source} → {_target}, export with provenance", group="provenance", data=_data, baseline=_base)
    def _carried(sample: Sample, source: str = _source, target: str = _target) -> Work:
        stories = convert.into_storyline(source, sample.data)
        return lambda: convert.from_storyline(target, stories, carry=True)
