"""A coverage-guided fuzzer (atheris, libFuzzer) for every decoder, for runs longer than CI's.

    .venv/bin/pip install atheris                       # not a dependency: only for fuzzing runs
    .venv/bin/python tests/fuzz/atheris_harness.py -atheris_runs=200000 [corpus_dir]

Each input picks a format with its first byte and feeds the rest to `mapc.into_storyline`, then
writes what was read back in every format.  The only allowed outcomes are a result or a
`mapc.MapcError`; anything else is a crash that libFuzzer saves as `crash-*` for a regression case
in conformance/ (tests/hardening/test_fuzz.py runs the same property with hypothesis in CI).
"""

from __future__ import annotations

import contextlib
import sys

import atheris

with atheris.instrument_imports():
    import mapc
    import mapc.mappings.agenticmd
    import mapc.mappings.functions
    from mapc.engine import convert
    from mapc.engine.problems import MapcError

FORMATS = ["storyline", "atif", "actf", "openai-msg", "agenticmd"]


def one_input(data: bytes) -> None:
    if not data:
        return
    fmt = FORMATS[data[0] % len(FORMATS)]
    try:
        stories = convert.into_storyline(fmt, data[1:], path="fuzz.json")
    except MapcError:
        return
    for target in FORMATS:
        with contextlib.suppress(MapcError):
            mapc.from_storyline(target, stories)


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
