"""How much of a corpus is repeated large values: what an objects table (one copy per BLAKE3 key) would save.

Issue 20 §3 asks for this figure before any deduplication is built. For each corpus, every string value of
the JSON (at any depth; object keys excluded) at or above a threshold is a candidate; the saving is the bytes
of every occurrence after the first of the same text. Figures are shares of the corpus's total bytes.

    .venv/bin/python bench/measure_repeats.py
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).parent))
import generate

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent.parent / "shared" / "fixtures"
THRESHOLDS = (256, 1024, 4096)


def strings(value: Any) -> Iterator[str]:
    """Every string value under `value` (object keys excluded)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is str:
            yield v
        elif type(v) is dict:
            stack.extend(v.values())
        elif type(v) is list:
            stack.extend(v)


def measure(name: str, values: list[Any], total: int) -> list[str]:
    counts = Counter(s for v in values for s in strings(v))
    lines = []
    for threshold in THRESHOLDS:
        large = {s: n for s, n in counts.items() if len(s.encode()) >= threshold}
        held = sum(len(s.encode()) * n for s, n in large.items())
        saved = sum(len(s.encode()) * (n - 1) for s, n in large.items())
        lines.append(
            f"| {name} | {total / 1e6:.2f} | ≥ {threshold} B | {sum(large.values()):,} ({len(large):,} distinct) "
            f"| {held / total:.1%} | {saved / total:.1%} |"
        )
    return lines


def main() -> None:
    print("| corpus | MB | values | large values | share of bytes | saved by one copy each |")
    print("|---|---:|---|---:|---:|---:|")
    claude = sorted((SHARED / "claude-code").rglob("*.jsonl"))
    records = [orjson.loads(line) for path in claude for line in path.read_bytes().splitlines() if line.strip()]
    print(
        "\n".join(
            measure("Claude Code session (+ subagents), raw JSONL", records, sum(p.stat().st_size for p in claude))
        )
    )
    harbor = SHARED / "atif" / "claude-code-harbor.json"
    print(
        "\n".join(measure("claude-code-harbor.json (ATIF)", [orjson.loads(harbor.read_bytes())], harbor.stat().st_size))
    )
    doc = generate.atif(5 * generate.MB, 0)
    print("\n".join(measure("bench/generate.py atif, 5 MB", [doc], len(orjson.dumps(doc)))))
    for label, fmt, data in (
        ("claude-code-harbor.json stored: the cells", "atif", harbor.read_bytes()),
        ("generated atif 5 MB stored: the cells", "atif", orjson.dumps(doc)),
    ):
        cells, total = stored_cells(fmt, data)
        print("\n".join(measure(label, cells, total)))


def stored_cells(fmt: str, data: bytes) -> tuple[list[Any], int]:
    """The parsed JSON cells (and plain strings) of every table of `data` stored, and their total bytes."""
    from mapc.engine import convert
    from mapc.store import rows

    tables = rows.split(convert.into_storyline(fmt, data))
    values, total = [], 0
    for table in tables.by_name().values():
        for name in table.column_names:
            column = table.column(name)
            if column.type != "string":
                continue
            for text in column.to_pylist():
                if text is None:
                    continue
                total += len(text.encode())
                values.append(orjson.loads(text) if name.endswith("_json") or name == "message_json" else text)
    return values, total


if __name__ == "__main__":
    main()
