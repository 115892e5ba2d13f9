"""Peak memory of converting a large JSONL file: `mapc convert BIG.jsonl --to FMT -o OUT`.

    .venv/bin/python bench/memory.py --mb 1000            # a 1 GB file of ATIF trajectories (JSONL)

Each line is one ATIF trajectory of about 1 MB (generate.py, a different seed per line), written to
bench/data/ (git-ignored) once and reused.  mapc converts it line by line when each line maps alone
(to storyline, to atif), so peak RSS stays near that of one line whatever the file's size; the table
gives the child process's peak RSS (getrusage), the wall time and MB/s.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import orjson

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import generate  # noqa: E402

MAPC = [sys.executable, "-c", "from mapc.cli.main import main; main()"]


def big_jsonl(mb: int) -> Path:
    path = BENCH / "data" / f"atif-{mb}mb-v1.jsonl"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as out:
        for seed in range(mb):
            out.write(orjson.dumps(generate.atif(1_000_000, seed)) + b"\n")
    os.replace(tmp, path)
    return path


def peak_of(args: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one mapc run in a fresh child process."""
    code = "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
    code += "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *MAPC, *args], check=True, capture_output=True, text=True)
    return time.perf_counter() - start, int(done.stdout.split()[-1]) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1000, help="input size in MB (one ~1 MB trajectory per line)")
    args = parser.parse_args()
    src = big_jsonl(args.mb)
    size = src.stat().st_size / 1e6
    out = Path("/tmp") / "mapc-memory-bench.json"
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; input {src.name}, {size:.0f} MB.\n")
    print("| command | input MB | wall s | MB/s | peak RSS MB |")
    print("|---|---:|---:|---:|---:|")
    for to in ("storyline", "atif"):
        wall, rss = peak_of(["convert", str(src), "--to", to, "-o", str(out)])
        print(f"| mapc convert {src.name} --to {to} -o OUT | {size:.0f} | {wall:.1f} | {size / wall:.1f} | {rss:.0f} |")
    out.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.exit(main())
