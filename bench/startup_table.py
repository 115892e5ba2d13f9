"""Start-up of small commands, before and after (issue 22): one table, every command in one run.

    .venv/bin/python bench/startup_table.py --repeat 15                 # this tree only
    .venv/bin/python bench/startup_table.py --repeat 15 --before REV    # and commit REV beside it

Each command is a fresh interpreter on the 5-step support-ticket fixture (or the Storyline it converts
to): `mapc run atif` forward, `mapc run atif --reverse`, `mapc validate`, `mapc convert --to storyline`,
beside `python -c pass` (the floor) and jq (the issue's reference).  The commands are run round-robin,
`--repeat` rounds, so a change of the machine's load falls on all of them alike; each is run once
untimed first (bytecode written, the spec cache filled).  Reported: the median wall seconds and the
median CPU seconds (user + system of the child, from `RUSAGE_CHILDREN`), and each median's ratio to
`python -c pass`.  The tree at REV is unpacked with `git archive` (bench/rows_startup.py) and
imported through PYTHONPATH, with its own spec cache.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rows_startup import FIXTURE, MAIN, _before_tree

BENCH = Path(__file__).resolve().parent


def _env(pythonpath: str | None, cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["MAPC_CACHE_DIR"] = cache
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def _commands(label: str, pythonpath: str | None, story: Path) -> list[tuple[str, list[str], dict[str, str]]]:
    env = _env(pythonpath, tempfile.mkdtemp(prefix=f"mapc-startup-{label}-"))
    mapc = [sys.executable, "-c", MAIN]
    return [
        (f"mapc run atif ({label})", [*mapc, "run", "atif", str(FIXTURE)], env),
        (f"mapc run atif --reverse ({label})", [*mapc, "run", "atif", str(story), "--reverse"], env),
        (f"mapc validate ({label})", [*mapc, "validate", str(FIXTURE)], env),
        (f"mapc convert --to storyline ({label})", [*mapc, "convert", str(FIXTURE), "--to", "storyline"], env),
    ]


def _once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--before", metavar="REV", help="also time the tree at this commit")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="mapc-startup-"))
    story = work / "story.json"
    made = subprocess.run([sys.executable, "-c", MAIN, "run", "atif", str(FIXTURE), "-o", str(story)], check=False)
    if made.returncode:
        sys.exit("cannot make the Storyline input of --reverse")
    rows: list[tuple[str, list[str], dict[str, str]]] = [
        ("python -c pass", [sys.executable, "-c", "pass"], _env(None, str(work)))
    ]
    jq = shutil.which("jq")
    if jq:
        rows.append(
            ("jq (bench/atif.jq)", [jq, "-c", "-f", str(BENCH / "atif.jq"), str(FIXTURE)], _env(None, str(work)))
        )
    if args.before:
        rows += _commands(args.before, str(_before_tree(args.before)), story)
    rows += _commands("this tree", None, story)

    for _, command, env in rows:
        _once(command, env)  # untimed
    walls: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    cpus: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    for _ in range(args.repeat):
        for name, command, env in rows:
            wall, cpu = _once(command, env)
            walls[name].append(wall)
            cpus[name].append(cpu)

    floor_wall = statistics.median(walls["python -c pass"])
    floor_cpu = statistics.median(cpus["python -c pass"])
    load = os.getloadavg()[0]
    print(f"medians of {args.repeat} rounds, load average {load:.1f}, {os.cpu_count()} CPUs\n")
    print("| command | wall s | CPU s | wall / python -c pass | CPU / python -c pass |")
    print("|---|---:|---:|---:|---:|")
    for name, _, _ in rows:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {wall / floor_wall:.2f}× | {cpu / floor_cpu:.2f}× |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
