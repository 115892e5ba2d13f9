"""`mapc show FILE [--format F] [--turn N] [--json] [--full]`: a trajectory summarised on a terminal.

The summary (cli/trajectory.py) is printed with rich: a header per Storyline, then one line per
turn and one per tool call under it; subagents follow their parent, indented.  Colours only on a
terminal.  Trajectory text is untrusted: it is printed as plain text (never as rich markup) and
control characters are shown escaped, so a message cannot drive the terminal.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from typing import Any

import click

from mapc.cli import trajectory
from mapc.cli.output import dump_json, redact_options, redactor_of
from mapc.cli.render import report
from mapc.engine.timestamp import TimestampError, format_rfc3339, timestamp_ns

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
STYLE = {"user": "bold green", "agent": "bold cyan", "system": "bold magenta"}
ARGS_SHOWN = 80  # characters of a tool call's arguments on its line (all of them with --full)


def safe(text: str) -> str:
    """`text` with control and bidirectional-override characters shown as ``\\xNN``/``\\uNNNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


@click.command("show")
@click.argument("file", metavar="FILE")
@click.option("--format", "fmt", metavar="F", help="Format of FILE (default: detected from its path or content).")
@click.option("--turn", "turn_id", type=int, metavar="N", help="Show only turn N (its id), in full.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON instead.")
@click.option("--full", is_flag=True, help="Whole messages, reasoning and tool arguments, not first lines.")
@redact_options
def show_command(
    file: str,
    fmt: str | None,
    turn_id: int | None,
    as_json: bool,
    full: bool,
    redact: bool,
    redact_patterns: tuple[str, ...],
) -> None:
    """Summarise the trajectory in FILE (any format mapc reads) on the terminal.

    A header per Storyline (session, agent, model, turns, tool calls, tokens, duration, result),
    then one line per turn (id, time, source, kind, the message's first line, latency) and one per
    tool call (name, arguments, result status); subagents are indented under their parent.

    \b
    Examples:
      mapc show tests/data/fixtures/atif/support-ticket.json
      mapc show tests/data/fixtures/actf/code-repair.actf.json --turn 1
      mapc show run.md --json
    """
    redactor = redactor_of(redact, redact_patterns)
    try:
        loaded = trajectory.load_file(file, fmt)
    except trajectory.LoadError as exc:
        if exc.usage:
            raise click.BadParameter(f"{exc.path}: {exc.problems[0].message}", param_hint="FILE") from None
        report(exc.path, exc.problems, as_json=as_json)
        sys.exit(1)
    for line in loaded.warnings:
        click.echo(line, err=True)
    if redactor is not None:
        loaded = trajectory.Loaded(loaded.path, loaded.fmt, redactor.value(loaded.stories, Counter()))
    data = trajectory.summary(loaded, full=full or turn_id is not None)
    if turn_id is not None:
        for story in data["storylines"]:
            story["lines"] = [line for line in story["lines"] if line["id"] == turn_id]
        if not any(story["lines"] for story in data["storylines"]):
            raise click.BadParameter(f"{file} has no turn with id {turn_id}", param_hint="--turn")
    if as_json:
        sys.stdout.buffer.write(dump_json(data))
        return
    print_summary(data, full=full or turn_id is not None)


def print_summary(data: dict[str, Any], *, full: bool = False, file: Any = None) -> None:
    """Print a summary with rich: colours on a terminal, plain text otherwise."""
    from rich.console import Console

    out = file or sys.stdout
    tty = out.isatty()
    console = Console(
        file=out,
        force_terminal=tty,
        color_system="auto" if tty else None,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=True,
    )
    for line in summary_lines(data, full=full):
        console.print("" if line is None else line)


def summary_lines(data: dict[str, Any], *, full: bool = False) -> list[Any]:
    """Every line of a summary (None: a blank line between Storylines).

    A subagent's Storyline is printed right under the turn that spawned it (its `parent.turn`),
    else after its parent's turns; either way indented one level deeper.
    """
    stories = data["storylines"]
    sessions = {s["session"] for s in stories}
    kids: dict[Any, list[dict[str, Any]]] = {}
    roots = []
    for story in stories:
        parent = story["parent"]
        if story["depth"] and parent is not None and parent["session"] in sessions:
            kids.setdefault(parent["session"], []).append(story)
        else:
            roots.append(story)
    out: list[Any] = []
    done: set[int] = set()

    def emit(story: dict[str, Any]) -> None:
        done.add(id(story))
        out.extend(story_lines(data, story, turns=False))
        mine = [k for k in kids.get(story["session"], []) if id(k) not in done]
        pad = "    " * story["depth"]
        for turn in story["lines"]:
            out.extend(_turn_lines(pad, turn, full=full))
            for kid in mine:
                if id(kid) not in done and kid["parent"]["turn"] == turn["id"]:
                    emit(kid)
        for kid in mine:
            if id(kid) not in done:
                out.append(None)
                emit(kid)

    for story in [*roots, *stories]:
        if id(story) not in done:
            if out:
                out.append(None)
            emit(story)
    return out


def story_lines(data: dict[str, Any], story: dict[str, Any], *, full: bool = False, turns: bool = True) -> list[Any]:
    """The rich Text lines of one Storyline: its header, then (with `turns`) its turns."""
    from rich.text import Text

    pad = "    " * story["depth"]
    lines = []
    title = Text(pad)
    if story["parent"] is not None:
        title.append("↳ subagent ", "yellow")
    title.append(safe(str(story["session"])), "bold")
    fmt, origin = data["format"], story["format"]
    title.append(f"  {fmt if origin in (None, fmt) else f'{fmt} (from {origin})'}  ", "dim")
    title.append(safe(data["file"]), "dim")
    if story["parent"] is not None and story["parent"]["turn"] is not None:
        title.append(f"  (from turn {story['parent']['turn']})", "dim")
    lines.append(title)
    lines.append(_fields(pad, [("agent", story["agent"]), ("model", story["model"])]))
    lines.append(
        _fields(
            pad,
            [
                ("turns", story["turns"]),
                ("tool calls", story["tool_calls"]),
                ("tokens", _tokens(story["tokens"])),
                ("duration", _duration(story["duration_s"])),
                ("result", _result(story["result"])),
            ],
        )
    )
    for turn in story["lines"] if turns else []:
        lines.extend(_turn_lines(pad, turn, full=full))
    return lines


def _fields(pad: str, pairs: list[tuple[str, Any]]) -> Any:
    from rich.text import Text

    text = Text(pad + "  ")
    for i, (name, value) in enumerate(pairs):
        if i:
            text.append("   ")
        text.append(f"{name}: ", "dim")
        text.append(safe("-" if value is None or value == "" else str(value)))
    return text


def _turn_lines(pad: str, turn: dict[str, Any], *, full: bool) -> list[Any]:
    from rich.text import Text

    line = Text(pad + "  ")
    line.append(f"#{turn['id']:<3}", "bold")
    line.append(f" {_clock(turn['ts']):8} ", "dim")
    src = str(turn["src"])
    line.append(f"{safe(src):7}", STYLE.get(src, "bold"))
    if turn["kind"]:
        line.append(f" [{safe(str(turn['kind']))}]", "dim")
    extra = []
    if turn["latency_ms"] is not None:
        extra.append(f"{turn['latency_ms']} ms")
    if turn["tokens"]:
        extra.append(f"{turn['tokens'].get('total', 0)} tok")
    if extra:
        line.append(f" ({', '.join(extra)})", "dim")
    out = [line]
    indent = pad + "       "
    text = turn["text"]
    if full:
        for body in (text or "").splitlines() or [""]:
            out.append(Text(indent + safe(body)))
        if turn.get("reasoning"):
            for body in turn["reasoning"].splitlines():
                out.append(Text(indent + "reasoning: " + safe(body), "italic dim"))
    else:
        line.append("  ")
        line.append(safe(text) if text else "(no text)", "" if text else "dim")
        if turn.get("reasoning"):
            out.append(Text(indent + "reasoning: " + safe(turn["reasoning"]), "italic dim"))
    for call in turn["tool_calls"]:
        args = trajectory._compact(call["args"])
        if not full and len(args) > ARGS_SHOWN:
            args = args[: ARGS_SHOWN - 1] + "…"
        item = Text(indent + "→ ")
        item.append(safe(str(call["fn"])), "bold yellow")
        item.append(safe(f"({args})"))
        status = call.get("status")
        if status is not None:
            bad = status not in ("ok", "success", "completed", "exit 0")
            item.append(f"  {safe(status)}", "red" if bad else "green")
        out.append(item)
    return out


def _clock(ts: Any) -> str:
    """A turn's time of day (UTC), or ``-``."""
    if ts is None:
        return "-"
    try:
        return format_rfc3339(timestamp_ns(ts))[11:19]
    except TimestampError:
        return safe(str(ts))[:8]


def _tokens(total: dict[str, int]) -> str | None:
    if not total:
        return None
    parts = [f"{total[k]} {k[:4] if k == 'completion' else k}" for k in ("prompt", "completion") if k in total]
    return f"{total.get('total', 0)}" + (f" ({', '.join(parts)})" if parts else "")


def _duration(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def _result(res: dict[str, Any]) -> str | None:
    if not res:
        return None
    return ", ".join(f"{k}={v if type(v) is str else trajectory._compact(v)}" for k, v in res.items())
