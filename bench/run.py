"""Run the benchmark rows and print a Markdown table.

    python bench/run.py                               # every row, 30 MB inputs, 5 repeats
    python bench/run.py --only atif --repeat 3        # one group (its baselines come along)
    python bench/run.py --only "handwritten forward" --mb 1 --repeat 1
    python bench/run.py --list

Missing inputs are generated into bench/data/ first (deterministic; see generate.py). Rows come from every
``bench/rows_*.py`` module (see harness.py for how to add one). All rows run in this one process; a
subprocess row times its child's CPU.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))  # bench/ is not a package: its modules import by their own names

import harness  # noqa: E402
import orjson  # noqa: E402


def load_rows() -> None:
    """Import every ``rows_*.py`` next to this file, which registers their rows."""
    for path in sorted(BENCH_DIR.glob("rows_*.py")):
        importlib.import_module(path.stem)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Run mapc's benchmark rows and print a Markdown table.")
    parser.add_argument("--only", nargs="+", default=[], metavar="NAME", help="row or group names")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per row (default 5)")
    parser.add_argument("--mb", type=float, default=30.0, help="input size in MB of 10^6 bytes (default 30)")
    parser.add_argument("--data-dir", type=Path, default=harness.DATA_DIR, help="where inputs are cached")
    parser.add_argument("--json", type=Path, help="also write the raw timings here")
    parser.add_argument("--list", action="store_true", help="list the rows and exit")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the selected rows; the table goes to stdout, progress to stderr."""
    args = _parser().parse_args(argv)
    load_rows()
    if args.list:
        for row in harness.ROWS.values():
            print(f"{row.group}\t{row.name}\t(data: {row.data}, baseline: {row.baseline or '-'})")
        return 0
    if args.repeat < 1:
        print("--repeat must be at least 1", file=sys.stderr)
        return 2
    try:
        rows = harness.select(args.only)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2

    samples: dict[str, harness.Sample] = {}
    results = []
    for row in rows:
        if row.data not in samples:
            print(f"loading {row.data} ({args.mb:g} MB)…", file=sys.stderr)
            samples[row.data] = harness.load(row.data, args.mb, args.data_dir)
        print(f"running {row.name} ×{args.repeat}…", file=sys.stderr)
        results.append(harness.run_row(row, samples[row.data], args.repeat))

    print(
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, --repeat {args.repeat}, "
        f"--mb {args.mb:g}. CPU seconds: process time, or the child's for subprocess rows.\n"
    )
    print(harness.table(results))
    if args.json:
        records = [
            {
                "row": r.row.name,
                "group": r.row.group,
                "mb": r.mb,
                "cpu": r.cpu,
                "wall": r.wall,
                "skipped": r.skipped,
            }
            for r in results
        ]
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_bytes(orjson.dumps(records, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
