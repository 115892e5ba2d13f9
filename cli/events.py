"""`mapc events append|project|synthesize`: the events.lance source of truth (RFC-0002).

Events are Lance-only (E-7): JSONL EventRecords are a debug/test input of `append`, never a
format of `convert`.  Other formats reach events only through Storyline (`synthesize`) and leave
them only through Storyline (`project`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mapc.cli.boundary import options
from mapc.cli.files import is_jsonl, read_bytes, write_bytes
from mapc.cli.output import document_bytes, fail_on
from mapc.cli.params import FORMAT
from mapc.cli.render import problem_line, report
from mapc.engine import convert
from mapc.engine.problems import Problem


@click.group("events")
def events_group() -> None:
    """Append to, project and synthesize events.lance (RFC-0002)."""


@events_group.command("append")
@click.argument("file", metavar="FILE.jsonl")
@click.option("--to", "to", required=True, metavar="EVENTS.lance", help="The events table (created if needed).")
def append_command(file: str, to: str) -> None:
    """Append the EventRecords of a JSONL file, idempotently.

    The records go to events.lance (created if needed) in one commit.

    RFC-0002 requires seq (an unsigned integer), source, kind and payload on every record, and a
    time: timestamp_unix_ms or timestamp (RFC 3339; both must agree).  New writers must also give
    event_id, timestamp_unix_ms and producer.  Delivery is at-least-once: a record whose event_id
    is already stored with the same content is skipped and counted; the same event_id with other
    content is a conflict.  Records without event_id (legacy) are appended as they are (projection
    ignores exact repeats).  seq is kept as given.  A problem is reported with its line and
    nothing is appended.

    \b
    Example:
      mapc events append tests/store/data/capture.jsonl --to /tmp/events.lance
    """
    from mapc.store import events

    data = read_bytes(file)
    with fail_on(file):
        records, lines = events.parse_jsonl_lines(data)
    with fail_on(file):  # conflicts are the input's lines
        done = events.admit(Path(to), records, lines=lines)
    message = f"appended {done.appended} event{'s' if done.appended != 1 else ''} to {to}"
    if done.skipped:
        message += f" ({done.skipped} already stored, skipped)"
    click.echo(message)


@events_group.command("project")
@click.argument("events_path", metavar="EVENTS.lance", type=click.Path(exists=True, file_okay=False))
@click.option("--to", "fmt", default="storyline", show_default=True, metavar="FMT", type=FORMAT, help="Output format.")
@click.option("-o", "--output", metavar="OUT", help="Write here (atomically) instead of stdout.")
@click.option("--session", metavar="ID", help="Only the Storyline of this session.")
def project_command(events_path: str, fmt: str, output: str | None, session: str | None) -> None:
    """Project events into Storylines, in any format.

    One Storyline per session (REFERENCE.md §1.2), then through the hub.  Bodies of a known
    wire protocol (mappings/wire/: Anthropic Messages, OpenAI Chat Completions, OpenAI
    Responses) are re-parsed: text, thinking, tool calls
    and their results, usage, model, stop reason; each turn appears once although every request
    resends the history, and a request whose history contradicts earlier ones is a warning.
    Other bodies give the summary fields only, marked extra.degraded.  A stored row
    that cannot be projected (an older mapc or another tool wrote it) is reported and left
    out, the other events are still projected, and the exit status is 1.

    \b
    Examples:
      mapc events project /tmp/events.lance
      mapc events project /tmp/events.lance --to atif -o /tmp/events-atif.json
    """
    from mapc.store import events

    skipped: list[Problem] = []  # rows and sessions that cannot be projected: reported, the rest still is
    notes: list[Problem] = []  # projected, but worth a look (a request whose history forks): warnings
    with fail_on(events_path):
        try:
            records = events.read_records(Path(events_path), skipped=skipped)
            stories = events.project(records, session=session, skipped=skipped, notes=notes)
            result = convert.from_storyline(fmt, stories)
        finally:
            report(events_path, skipped)
            for note in notes:
                click.echo(f"warning: {problem_line(events_path, note)}", err=True)
    write_bytes(output, document_bytes(result))
    if skipped:
        sys.exit(1)


@events_group.command("synthesize")
@click.argument("file", metavar="STORYLINE")
@click.option("--to", "to", required=True, metavar="EVENTS.lance", help="The events table (created if needed).")
def synthesize_command(file: str, to: str) -> None:
    """Append degraded events made from Storylines.

    Each request/response event carries payload.degraded = true.

    \b
    Example:
      mapc events synthesize /tmp/corpus.json --to /tmp/synthesized.lance
    """
    from mapc.store import events

    data = read_bytes(file)
    with fail_on(file):
        stories = convert.into_storyline(convert.STORYLINE, data, jsonl=is_jsonl(file), options=options())
        records = [record for story in stories for record in events.synthesize(story)]
    with fail_on(to):
        events.append(Path(to), records)
    click.echo(f"appended {len(records)} event{'s' if len(records) != 1 else ''} to {to}")
