"""The baseline rows the mapping engine is compared with (bench/README.md says the method).

Group `validate`: parsing the Storyline is the floor under any validator. Group `atif`: orjson alone (the
floor), the hand-written converter both ways, and the generic tools jq and glom on the same renames.
"""

from __future__ import annotations

import shutil
import subprocess

import handwritten_atif
import orjson
from harness import BENCH_DIR, Sample, Unavailable, Work, bench


@bench("orjson.loads storyline", group="validate", data="storyline")
def _orjson_loads_storyline(sample: Sample) -> Work:
    return lambda: orjson.loads(sample.data)


@bench("orjson loads+dumps (floor)", group="atif", data="atif", baseline="handwritten forward")
def _orjson_floor(sample: Sample) -> Work:
    return lambda: orjson.dumps(orjson.loads(sample.data))


@bench("handwritten forward", group="atif", data="atif", baseline="handwritten forward")
def _handwritten_forward(sample: Sample) -> Work:
    return lambda: handwritten_atif.forward_bytes(sample.data)


@bench("handwritten reverse", group="atif", data="atif-storyline", baseline="handwritten forward")
def _handwritten_reverse(sample: Sample) -> Work:
    return lambda: handwritten_atif.reverse_bytes(sample.data)


@bench("jq forward", group="atif", data="atif", baseline="handwritten forward", subprocess=True)
def _jq_forward(sample: Sample) -> Work:
    jq = shutil.which("jq")
    if jq is None:
        raise Unavailable("jq is not installed")
    command = [jq, "-c", "-f", str(BENCH_DIR / "atif.jq"), str(sample.path)]
    # Output to /dev/null: jq still serializes it all, and no disk write is timed.
    return lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


@bench("glom forward", group="atif", data="atif", baseline="handwritten forward")
def _glom_forward(sample: Sample) -> Work:
    try:
        import glom_atif  # glom is a dev-venv extra, not a mapc dependency
    except ImportError as exc:
        raise Unavailable(f"glom is not installed ({exc})") from exc
    return lambda: glom_atif.forward_bytes(sample.data)
