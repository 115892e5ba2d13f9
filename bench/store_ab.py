"""`mapc store` and `mapc export --to storyline` of one corpus file, in this process, for before/after runs.

Put a tree on ``PYTHONPATH`` (a `git archive`, laid out as in rows_startup.py) and run it alternately with
another, so both see the same load:

    PYTHONPATH=DIR .venv/bin/python bench/store_ab.py bench/data/storyline-corpus-64mb-v1.json 4 before

Stores the corpus once (untimed), then times `mapc export DS --to storyline` and `mapc store --from
storyline FILE --to NEW` REPEAT times each through click's runner; prints (CPU s median, CPU s min, wall s
median) per command.
"""

from __future__ import annotations

import gc
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

from mapc.cli.main import cli


def _run(*args: str) -> None:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"mapc {' '.join(args)} exited {result.exit_code}: {result.stderr[-2000:]}")


def main(corpus: str, repeat: int, label: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="mapc-store-ab-"))
    try:
        _run("store", "--from", "storyline", corpus, "--to", str(tmp / "ds"))
        out = {}
        for what in ("export", "store"):
            cpu, wall = [], []
            for i in range(repeat):
                gc.collect()
                c, w = time.process_time(), time.perf_counter()
                if what == "store":
                    _run("store", "--from", "storyline", corpus, "--to", str(tmp / f"s{i}"))
                else:
                    _run("export", str(tmp / "ds"), "--to", "storyline")
                cpu.append(time.process_time() - c)
                wall.append(time.perf_counter() - w)
            out[what] = (round(statistics.median(cpu), 3), round(min(cpu), 3), round(statistics.median(wall), 3))
        print(label, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
