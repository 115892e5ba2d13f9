"""A mixed corpus for the engine tests (test_engines.py, test_ray.py), and what a dataset holds, to compare.

Good files of every stored format (ATIF, ACTF, OpenAI Messages, Storyline objects, arrays and JSONL) in
nested directories, and, with `bad=True`, files that fail (invalid Storylines and ATIF, a JSONL line) or
are skipped (not JSON, no known format), placed between the good ones so that failures sit in
several chunks.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import lance

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"


def story(session: str, steps: int = 3) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    for i in range(steps):
        turn: dict[str, Any] = {"id": i + 1, "src": "user" if i % 2 == 0 else "agent", "msg": f"{session} {i}"}
        if i % 2:
            turn["tool_calls"] = [{"tcid": f"{session}-{i}", "fn": "grep", "args": {"q": i}}]
            turn["observation"] = {"results": [{"source_call_id": f"{session}-{i}", "content": "ok"}]}
        turns.append(turn)
    return {"schema_version": "storyline/v1", "session": session, "agent": {"id": "agent"}, "turns": turns}


def _dump(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(value if isinstance(value, bytes) else json.dumps(value).encode())


def mixed_corpus(root: Path, *, bad: bool = False, tag: str = "a") -> Path:
    """Write the corpus under `root` and return it; `tag` makes the Storyline sessions of one call unique."""
    for sub in ("atif", "actf", "openai-msg"):
        for path in sorted((FIXTURES / sub).glob("*.json")):
            target = root / "fixtures" / sub / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    for i in range(12):
        _dump(root / "stories" / f"{i // 4}" / f"s{i:02d}.storyline.json", story(f"{tag}-one-{i}", steps=2 + i))
    _dump(root / "stories" / "array.json", [story(f"{tag}-arr-{i}") for i in range(3)])
    lines = "\n".join(json.dumps(story(f"{tag}-line-{i}", steps=4)) for i in range(4)) + "\n"
    _dump(root / "stories" / "lines.jsonl", lines.encode())
    if bad:
        atif = json.loads((FIXTURES / "atif" / "support-ticket.json").read_bytes())
        atif["steps"][1]["source"] = 5
        _dump(root / "fixtures" / "atif" / "m-broken.json", atif)
        _dump(root / "stories" / "1" / "s04b-invalid.storyline.json", {**story(f"{tag}-bad"), "session": ""})
        bad_lines = json.dumps(story(f"{tag}-ok")) + "\n" + json.dumps({**story(f"{tag}-x"), "turns": 3}) + "\n"
        _dump(root / "stories" / "2" / "s08b-lines.jsonl", bad_lines.encode())
        _dump(root / "stories" / "0" / "garbage.json", b'{"schema_version": "storyline/v1", ')
        _dump(root / "stories" / "unknown.json", {"hello": 1})
    return root


def snapshot(dataset: Path) -> dict[str, Any] | None:
    """CURRENT, the files beside the tables, and every row of each table at the version CURRENT names."""
    if not dataset.exists():
        return None
    current_path = dataset / "CURRENT"
    current = json.loads(current_path.read_bytes())["tables"] if current_path.exists() else {}
    tables = {
        name: lance.dataset(str(dataset / f"{name}.lance"), version=version).to_table().to_pylist()
        for name, version in current.items()
    }
    return {"entries": sorted(p.name for p in dataset.iterdir()), "current": current, "tables": tables}
