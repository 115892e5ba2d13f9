"""`mapc events append|project|synthesize|capture`: the events.lance source of truth (docs/formats.md, "Events").

Events are Lance-only (E-7): JSONL EventRecords are a debug/test input of `append`, never a
format of `convert`.  Other formats reach events only through Storyline (`synthesize`) and leave
them only through Storyline (`project`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from mapc.cli.boundary import options, the_catalog
from mapc.cli.files import is_jsonl, read_bytes, write_bytes
from mapc.cli.output import document_bytes, fail_on
from mapc.cli.params import FORMAT
from mapc.cli.render import problem_line, report
from mapc.engine import convert
from mapc.engine.problems import Problem


@click.group("events")
def events_group() -> None:
    """Append to, project, synthesize and capture events.lance (docs/formats.md, "Events")."""


@events_group.command("append")
@click.argument("file", metavar="FILE.jsonl")
@click.option("--to", "to", required=True, metavar="EVENTS.lance", help="The events table (created if needed).")
def append_command(file: str, to: str) -> None:
    """Append the EventRecords of a JSONL file, idempotently.

    The records go to events.lance (created if needed) in one commit.

    An EventRecord needs seq (an unsigned integer), source, kind and payload on every record, and a
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
        records, lines = events.parse_jsonl_lines(data, allow_duplicate_keys=options().allow_duplicate_keys)
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

    One Storyline per session (docs/formats.md, "Events"), then through the hub.  Bodies of a known
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
            stories = events.project(records, session=session, skipped=skipped, notes=notes, options=options())
            result = convert.from_storyline(fmt, stories, catalog=the_catalog())
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
@click.option(
    "--protocol",
    metavar="NAME",
    help="Write wire bodies of this protocol (anthropic-messages, openai-chat-completions, openai-responses, "
    "gemini-generate-content); "
    "default: the protocol the Storyline was projected from, if any.",
)
@click.option("--generic", is_flag=True, help="Write the protocol-less degraded events even for a projected Storyline.")
def synthesize_command(file: str, to: str, protocol: str | None, generic: bool) -> None:
    """Append degraded events made from Storylines.

    With a protocol (--protocol, or the extra.protocol a projected Storyline carries) each agent
    turn becomes one call whose request body (the whole conversation so far, system prompt, tools,
    parameters) and response body (text, reasoning, tool calls, usage, model, stop reason) are
    valid for that protocol, and projecting them gives the Storyline back.  Values the protocol
    requires and the Storyline lacks (a response id, a created time) are written and listed in
    payload.synthesized, which projection ignores; what the protocol cannot carry is an error at
    its pointer, and extra keys that are not written back are warnings.  Without a protocol the
    events are generic.  Every request/response event carries payload.degraded = true.

    \b
    Examples:
      mapc events synthesize /tmp/corpus.json --to /tmp/synthesized.lance
      mapc events synthesize tests/data/events/openai-responses-parallel-tools.storyline.json --to /tmp/r.lance
    """
    from mapc.store import events

    data = read_bytes(file)
    notes: list[Problem] = []
    with fail_on(file):
        stories = convert.into_storyline(
            convert.STORYLINE, data, jsonl=is_jsonl(file), options=options(), catalog=the_catalog()
        )
        records = []
        for story in stories:
            chosen = None if generic else protocol or events.wire_protocol(story)
            if chosen is None:
                records += events.synthesize(story)
            else:
                records += events.synthesize_wire(story, chosen, notes=notes)
    for note in notes:
        click.echo(f"warning: {problem_line(file, note)}", err=True)
    with fail_on(to):
        events.append(Path(to), records)
    click.echo(f"appended {len(records)} event{'s' if len(records) != 1 else ''} to {to}")


@events_group.command("capture")
@click.option("--listen", "listen", required=True, metavar="HOST:PORT", help="Where the proxy listens (port 0: any).")
@click.option(
    "--upstream", required=True, metavar="URL", help="The API the requests go on to, e.g. https://api.openai.com."
)
@click.option("--to", "to", required=True, metavar="EVENTS.lance", help="The events table (created if needed).")
@click.option("--session", metavar="ID", help="The session_id of the events (default: capture-<UTC time>).")
@click.option("--agent", "agent", default="captured", show_default=True, metavar="ID", help="Their agent_id.")
def capture_command(listen: str, upstream: str, to: str, session: str | None, agent: str) -> None:
    """Record the HTTP exchanges of an LLM client: a reverse proxy in front of its API.

    Point the client at http://HOST:PORT instead of the API (e.g. OPENAI_BASE_URL or
    ANTHROPIC_BASE_URL); each request goes on to --upstream unchanged and its response comes back
    unchanged, streamed responses chunk by chunk as they arrive.  Each exchange is appended to
    EVENTS.lance in one commit when it ends: http.request, then http.response, or for an SSE
    stream http.response.stream and one http.stream.frame per frame.  Credentials (Authorization,
    x-api-key, cookies, ...) are recorded as [REDACTED].  Ctrl-C stops it.

    \b
    Example:
      mapc events capture --listen 127.0.0.1:8089 --upstream https://api.anthropic.com --to /tmp/events.lance
      mapc events project /tmp/events.lance
    """
    import asyncio
    import time

    from mapc.cli.boundary import on_interrupt
    from mapc.store import capture

    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise click.BadParameter(f"expected HOST:PORT, found {listen!r}", param_hint="--listen")
    if not upstream.startswith(("http://", "https://")):
        raise click.BadParameter(f"expected an http:// or https:// URL, found {upstream!r}", param_hint="--upstream")
    name = session or time.strftime("capture-%Y%m%dT%H%M%SZ", time.gmtime())
    recorder = capture.Recorder(Path(to), name, agent)
    on_interrupt(lambda: [f"recorded {recorder.exchanges} exchanges ({recorder.appended} events) to {to}"])

    def ready(port: int) -> None:
        click.echo(f"listening on http://{host}:{port} -> {upstream}; recording session {name} to {to}", err=True)

    asyncio.run(capture.serve(host, int(port_text), upstream, recorder, ready))
