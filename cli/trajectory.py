"""What `mapc show` and `mapc view` share: reading trajectories of any format, and summarising them.

`load_file` reads one file through the ordinary path (detection, `into_storyline`, so every check a
conversion makes applies); `load_dataset` reads a Lance dataset.  `summary` turns the Storylines
of one file into plain data — a header per Storyline (session, agent, model, counts, tokens,
duration, result) and one line per turn — ordered as a tree: a subagent's Storyline follows its
parent, with its depth.  The summary is the `--json` output of `mapc show` and what the HTML
viewer's index lists; it reads only Storyline fields, never a format's own.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mapc.cli.boundary import the_catalog
from mapc.engine import convert, detect
from mapc.engine.problems import MapcError, Problem
from mapc.engine.timestamp import TimestampError, timestamp_ns

FIRST_LINE = 100  # characters of a message shown on its turn's line

# Token counters under turn metrics, as the formats name them (Storyline keeps metrics verbatim).
PROMPT_KEYS = ("prompt_tokens", "prompt_tokens_len", "input_tokens")
COMPLETION_KEYS = ("completion_tokens", "completion_tokens_len", "output_tokens")


@dataclass(frozen=True, slots=True)
class Loaded:
    """The Storylines of one input (a file, or a dataset's documents) and what they came from."""

    path: str
    fmt: str
    stories: list[dict[str, Any]]
    warnings: tuple[str, ...] = ()  # warning lines about the input (an edited AgenticMD view, …)


class LoadError(Exception):
    """An input that could not be read: `usage` (exit 2: unreadable, unknown format) or invalid data."""

    def __init__(self, path: str, problems: list[Problem], *, usage: bool = False) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.path = path
        self.problems = problems
        self.usage = usage


def is_dataset(path: str) -> bool:
    """A directory holding a mapc Lance dataset (its `runs.lance` table)."""
    return Path(path, "runs.lance").is_dir()


def load_file(path: str, fmt: str | None = None) -> Loaded:
    """The Storylines of file `path` (format `fmt`, detected when None); LoadError otherwise."""
    from mapc.cli.files import document_path, is_jsonl, read_limited

    try:
        data = read_limited(path)
    except OSError as exc:
        problem = Problem("usage.unreadable", "", f"cannot read: {exc.strerror or exc}")
        raise LoadError(path, [problem], usage=True) from None
    except MapcError as exc:
        raise LoadError(path, exc.problems) from None
    fmt = fmt or detect.detect(path, data, catalog=the_catalog())
    if fmt is None:
        message = "cannot tell the format from the file's name or content; say it with --format"
        raise LoadError(path, [Problem("usage.format_unknown", "", message)], usage=True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            stories = convert.into_storyline(
                fmt, data, jsonl=is_jsonl(path), path=document_path(path), catalog=the_catalog()
            )
    except MapcError as exc:
        raise LoadError(exc.source or path, exc.problems) from None
    from mapc.cli.render import warning_line

    lines = []
    for w in caught:
        if isinstance(getattr(w.message, "pointer", None), str):
            lines.append(warning_line(path, w.message))
        else:  # not about the input: shown as Python would have shown it
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return Loaded(path, fmt, stories, tuple(lines))


def load_dataset(path: str) -> Loaded:
    """Every Storyline of the Lance dataset at `path`."""
    from mapc.store import dataset

    try:
        return Loaded(path, "dataset", dataset.read(Path(path)))
    except MapcError as exc:
        raise LoadError(path, exc.problems) from None


def walk(root: str, fmt: str | None = None) -> Iterator[str]:
    """The trajectory files under directory `root`, sorted; hidden entries and symbolic links skipped."""
    from mapc.cli.corpus import walked_suffixes

    suffixes = walked_suffixes(fmt, the_catalog())
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not os.path.islink(Path(dirpath, d)))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if not name.startswith(".") and name.endswith(suffixes) and not os.path.islink(full):
                yield full


# --- the summary --------------------------------------------------------------------------------------


def first_line(msg: Any, limit: int | None = FIRST_LINE) -> str:
    """The first non-blank line of a message's text (content parts joined), cut to `limit` characters."""
    text = message_text(msg)
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    if limit is not None and len(line) > limit:
        line = line[: limit - 1] + "…"
    return line


def message_text(msg: Any) -> str:
    """A message as text: a string itself; content parts their text, media as ``[image]``-style tags."""
    if msg is None:
        return ""
    if type(msg) is str:
        return msg
    if type(msg) is list:
        return "\n".join(_part_text(part) for part in msg)
    if type(msg) is dict:
        return _part_text(msg)
    return _compact(msg)


def _part_text(part: Any) -> str:
    if type(part) is str:
        return part
    if type(part) is dict:
        if type(part.get("text")) is str:
            return str(part["text"])
        kind = part.get("type")
        if type(kind) is str and kind:
            return f"[{kind.removesuffix('_url')}]"
    return _compact(part)


def _compact(value: Any) -> str:
    import orjson

    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return repr(value)


def tokens(metrics: Any) -> dict[str, int]:
    """The prompt/completion/total token counts a turn's metrics hold (absent ones left out)."""
    out: dict[str, int] = {}
    if type(metrics) is not dict:
        return out
    for name, keys in (("prompt", PROMPT_KEYS), ("completion", COMPLETION_KEYS), ("total", ("total_tokens",))):
        value = next((metrics[k] for k in keys if type(metrics.get(k)) is int), None)
        if value is not None:
            out[name] = value
    if "total" not in out and ("prompt" in out or "completion" in out):
        out["total"] = out.get("prompt", 0) + out.get("completion", 0)
    return out


def tool_status(turn: dict[str, Any], call: dict[str, Any]) -> str | None:
    """A tool call's result status: its `response`, else the observation result naming its id."""
    response = call.get("response")
    if type(response) is dict:
        if response.get("status") is not None:
            return str(response["status"])
        if response.get("exit_code") is not None:
            return f"exit {response['exit_code']}"
    result = observation_for(turn, call)
    if result is not None:
        if type(result.get("status")) is str:
            return str(result["status"])
        if type(result.get("is_error")) is bool:
            return "error" if result["is_error"] else "ok"
        return "ok"
    return "ok" if "result" in call else None


def observation_for(turn: dict[str, Any], call: dict[str, Any]) -> dict[str, Any] | None:
    """The entry of the turn's observation results that names the call's id, if any."""
    observation = turn.get("observation")
    results = observation.get("results") if type(observation) is dict else None
    if type(results) is not list:
        return None
    tcid = call.get("tcid")
    for result in results:
        if type(result) is dict and tcid is not None and tcid in result.values():
            return result
    return None


def _ns(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return timestamp_ns(value)
    except TimestampError:
        return None


def duration_s(story: dict[str, Any]) -> float | None:
    """Seconds from the start to the end of a Storyline (its own times, else its turns')."""
    times = [_ns(t.get("ts")) for t in story.get("turns") or []]
    times += [_ns(t.get("finished_at")) for t in story.get("turns") or []]
    known = [t for t in times if t is not None]
    start = _ns(story.get("started_at")) or (min(known) if known else None)
    end = _ns(story.get("finished_at")) or (max(known) if known else None)
    if start is None or end is None or end < start:
        return None
    return (end - start) / 1e9


def result(story: dict[str, Any]) -> dict[str, Any]:
    """The evaluation result: `task.result`'s status, score, correct, error (those present)."""
    task = story.get("task")
    found = task.get("result") if type(task) is dict else None
    if type(found) is not dict:
        return {}
    keys = ("status", "score", "max_score", "correct", "task_correct", "error")
    return {k: found[k] for k in keys if found.get(k) is not None}


def result_label(res: dict[str, Any]) -> str:
    """One word for filters and lists: the status, else pass/fail from `correct`, else the score."""
    if "status" in res:
        return str(res["status"])
    for key in ("correct", "task_correct"):
        if key in res:
            return "pass" if res[key] else "fail"
    if "score" in res:
        return f"score {res['score']}"
    return "unknown"


def turn_summary(turn: dict[str, Any], *, full: bool = False) -> dict[str, Any]:
    """One turn's line as data: id, time, source, kind, first line (or whole text), calls, latency, tokens."""
    calls = []
    for call in turn.get("tool_calls") or []:
        calls.append({"tcid": call.get("tcid"), "fn": call.get("fn"), "args": call.get("args")} | _status(turn, call))
    out: dict[str, Any] = {
        "id": turn.get("id"),
        "ts": turn.get("ts"),
        "src": turn.get("src"),
        "kind": turn.get("kind"),
        "text": message_text(turn.get("msg")) if full else first_line(turn.get("msg")),
        "tool_calls": calls,
        "latency_ms": turn.get("latency_ms"),
        "tokens": tokens(turn.get("metrics")),
    }
    if turn.get("reason"):
        out["reasoning"] = turn["reason"] if full else first_line(turn["reason"])
    return out


def _status(turn: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    status = tool_status(turn, call)
    return {} if status is None else {"status": status}


def story_summary(story: dict[str, Any], *, full: bool = False, depth: int = 0) -> dict[str, Any]:
    """A Storyline's header and turn lines as data."""
    turns = story.get("turns") or []
    total: dict[str, int] = {}
    for turn in turns:
        for key, value in tokens(turn.get("metrics")).items():
            total[key] = total.get(key, 0) + value
    agent = story.get("agent") or {}
    models = sorted({t["model"] for t in turns if type(t.get("model")) is str})
    parent = story.get("parent")
    res = result(story)
    return {
        "session": story.get("session"),
        "agent": agent.get("name") or agent.get("id"),
        "model": agent.get("model") or (", ".join(models) if models else None),
        "format": (story.get("origin") or {}).get("format"),
        "depth": depth,
        "parent": {"session": parent.get("psid"), "turn": parent.get("ptid")} if type(parent) is dict else None,
        "turns": len(turns),
        "tool_calls": sum(len(t.get("tool_calls") or []) for t in turns),
        "tokens": total,
        "duration_s": duration_s(story),
        "result": res,
        "result_label": result_label(res),
        "lines": [turn_summary(t, full=full) for t in turns],
    }


def tree_order(stories: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """``(depth, story)`` with every subagent right after its parent (input order otherwise).

    A Storyline whose `parent.psid` names no Storyline of the input is a root, as is any in a cycle.
    """
    sessions = {s.get("session") for s in stories}
    kids: dict[Any, list[dict[str, Any]]] = {}
    roots = []
    for story in stories:
        parent = story.get("parent")
        psid = parent.get("psid") if type(parent) is dict else None
        if psid is not None and psid in sessions and psid != story.get("session"):
            kids.setdefault(psid, []).append(story)
        else:
            roots.append(story)
    out: list[tuple[int, dict[str, Any]]] = []
    seen: set[int] = set()

    def visit(story: dict[str, Any], depth: int) -> None:
        if id(story) in seen:
            return
        seen.add(id(story))
        out.append((depth, story))
        for kid in kids.get(story.get("session"), []):
            visit(kid, depth + 1)

    for story in roots:
        visit(story, 0)
    for story in stories:  # a cycle of parents: shown at the top level rather than dropped
        visit(story, 0)
    return out


def summary(loaded: Loaded, *, full: bool = False) -> dict[str, Any]:
    """The `mapc show --json` document: the file, its format and each Storyline's summary, as a tree."""
    return {
        "file": loaded.path,
        "format": loaded.fmt,
        "storylines": [story_summary(s, full=full, depth=d) for d, s in tree_order(loaded.stories)],
    }
