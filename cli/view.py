"""`mapc view FILE|DIR|DATASET [-o OUT] [--serve]`: trajectories as one self-contained HTML page.

The page is `assets/view.html` with the data embedded as JSON and the viewer's own small script and
stylesheet inlined (`assets/view.js`, `assets/view.css`): no network, no framework, works from
``file://``.  Trajectory content is untrusted, so

* the JSON is escaped so that no ``</script>`` (nor ``<!--``, ``&``, U+2028/9) in a message can end
  or bend the script element that holds it;
* the script builds the page with DOM calls and ``textContent`` only (never ``innerHTML``): its
  Markdown renderer knows a few block and inline forms and makes no element from message text, and
  links are kept only for ``http(s):`` and ``mailto:`` URLs;
* a Content-Security-Policy allows only the page's own script and style (by hash) and ``data:``
  images and audio, so even a mistake in the above could not run code or reach the network;
* `--redact` replaces secrets (engine/redact.py) before anything is embedded.

A directory or dataset of more than `PAGE_AFTER` trajectories (or `PAGE_BYTES` of data) is written
as a directory: ``index.html`` (the list, filters and compare) beside one page per trajectory; or it
is served (`--serve`), read-only, on 127.0.0.1.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import importlib.resources
import os
import re
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import orjson

from mapc.cli import trajectory
from mapc.cli.boundary import the_catalog
from mapc.cli.files import write_atomically
from mapc.cli.output import redact_options, redactor_of
from mapc.cli.render import report
from mapc.engine.redact import Redactor

PAGE_AFTER = 25  # trajectories in one page at most; more are paged
PAGE_BYTES = 8 << 20  # embedded JSON in one page at most, likewise


@dataclass
class Entry:
    """One trajectory of the list: a file's Storylines (or a dataset's root Storyline and its subagents)."""

    id: str
    path: str
    fmt: str
    stories: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    name: str = ""  # as the list shows it: the path relative to the directory given


# --- the data the page embeds --------------------------------------------------------------------------


def _turn_arrays(fmt: str) -> list[re.Pattern[str]]:
    """Patterns matching a source pointer into the format's turn array; group `turn` the index.

    Read from the spec's `arrays` (the source array that becomes ``/turns/{t}``), so no format is
    named here; a codec declares no arrays, and its residuals are shown with the document.
    """
    if fmt not in the_catalog().shipped_names() and fmt not in the_catalog().aliases():
        return []  # a codec, or a source no shipped spec reads: nothing to place by (and never a file path)
    spec = the_catalog().program(fmt).spec
    out = []
    for array in spec.arrays:
        if array.dst.text == "/turns/{t}":
            parts, last_var = [], None
            for token in array.src.tokens:
                if isinstance(token, str):
                    parts.append(re.escape(token.replace("~", "~0").replace("/", "~1")))
                else:
                    parts.append("(?P<turn>\\d+)" if token is array.src.tokens[-1] else "\\d+")
                    last_var = token
            if last_var is not None:
                out.append(re.compile("^/" + "/".join(parts) + "(?:/|$)"))
    return out


def placed_unknowns(story: dict[str, Any]) -> dict[str, Any]:
    """This story's residuals as ``{"turns": {index: [[source, pointer, value], …]}, "doc": [...]}``.

    A residual whose pointer lies inside the source's turn array (by the spec's `arrays`) is shown
    with that turn; every other one with the document.  Nothing is dropped: every field appears once.
    """
    unknown = story.get("unknown_fields")
    sources = unknown.get("sources") if type(unknown) is dict else None
    turns: dict[str, list[Any]] = {}
    doc: list[Any] = []
    count = len(story.get("turns") or [])
    for source, entry in (sources or {}).items():
        fields = entry.get("fields") if type(entry) is dict else None
        patterns = _turn_arrays(source)
        for ptr, value in (fields or {}).items():
            index = next((int(m["turn"]) for p in patterns if (m := p.match(ptr))), None)
            if index is not None and index < count:
                turns.setdefault(str(index), []).append([source, ptr, value])
            else:
                doc.append([source, ptr, value])
    return {"turns": turns, "doc": doc}


def entry_data(entry: Entry, *, full: bool, href: str | None = None) -> dict[str, Any]:
    """An entry as the page sees it: its summary always, its Storylines when `full`."""
    ordered = trajectory.tree_order(entry.stories)
    out: dict[str, Any] = {
        "id": entry.id,
        "path": entry.path,
        "name": entry.name or entry.path,
        "fmt": entry.fmt,
        "error": entry.error,
        "href": href,
    }
    if ordered:
        out["summary"] = trajectory.story_summary(ordered[0][1])
        out["sessions"] = len(ordered)
    if full:
        out["stories"] = [
            {
                "depth": depth,
                "story": story,
                "unknown": placed_unknowns(story),
                "summary": _header(story, depth, entry.fmt),
            }
            for depth, story in ordered
        ]
    return out


def _header(story: dict[str, Any], depth: int, fmt: str | None = None) -> dict[str, Any]:
    """A Storyline's summary without its turn lines; `format` names the file's format and the origin's."""
    header = trajectory.story_summary(story, depth=depth)
    del header["lines"]
    origin = header["format"]
    if fmt not in (None, "?", "dataset", origin):
        header["format"] = fmt if origin is None else f"{fmt} (from {origin})"
    return header


def script_json(value: Any) -> str:
    """JSON safe inside a ``<script type="application/json">`` element.

    ``<``, ``>`` and ``&`` are written as ``\\u003c`` … (the same JSON), so no ``</script>`` or
    ``<!--`` can appear; U+2028/U+2029 too, for older JavaScript parsers.
    """
    text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def _asset(name: str) -> str:
    return importlib.resources.files("mapc.cli").joinpath("assets", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def csp() -> str:
    """The page's Content-Security-Policy: its own script and style only, data: media, no network."""
    script, style = _asset("view.js"), _asset("view.css")
    return (
        f"default-src 'none'; script-src 'sha256-{_sha256(script)}'; style-src 'sha256-{_sha256(style)}'; "
        "img-src data:; media-src data:; base-uri 'none'; form-action 'none'"
    )


def page(data: dict[str, Any], title: str) -> str:
    """The HTML of one page holding `data`."""
    from html import escape

    values = {
        "CSP": escape(csp(), quote=True),
        "TITLE": escape(title),
        "STYLE": _asset("view.css"),
        "SCRIPT": _asset("view.js"),
        "DATA": script_json(data),
    }
    # One pass: a value (a file name in the title, say) is never searched for placeholders.
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: values[m[1]], _asset("view.html"))


# --- reading the input ---------------------------------------------------------------------------------


def read_entries(input: str, fmt: str | None, redactor: Redactor | None) -> list[Entry]:
    """The trajectories of a file, a directory (each file one entry) or a dataset (each root Storyline)."""
    entries: list[Entry] = []
    if trajectory.is_dataset(input):
        loaded = trajectory.load_dataset(input)
        for depth, story in trajectory.tree_order(loaded.stories):
            if depth == 0:
                entries.append(Entry(f"{len(entries) + 1:04d}", input, "dataset", name=str(story.get("session"))))
            entries[-1].stories.append(story)
    elif Path(input).is_dir():
        for path in trajectory.walk(input, fmt):
            entry = Entry(f"{len(entries) + 1:04d}", path, fmt or "?", name=os.path.relpath(path, input))
            try:
                loaded = trajectory.load_file(path, fmt)
            except trajectory.LoadError as exc:
                entry.error = "; ".join(f"{p.pointer or '/'}: {p.message} [{p.code}]" for p in exc.problems)
                report(exc.path, exc.problems)
            else:
                entry.fmt, entry.stories = loaded.fmt, loaded.stories
                for line in loaded.warnings:
                    click.echo(line, err=True)
            entries.append(entry)
    else:
        loaded = trajectory.load_file(input, fmt)
        for line in loaded.warnings:
            click.echo(line, err=True)
        entries.append(Entry("0001", input, loaded.fmt, loaded.stories))
    if redactor is not None:
        for entry in entries:
            entry.stories = redactor.value(entry.stories, Counter())
    return entries


def _document(entries: list[Entry], title: str, *, redacted: bool) -> dict[str, Any]:
    return {
        "title": title,
        "mode": "single",
        "redacted": redacted,
        "entries": [entry_data(e, full=True) for e in entries],
    }


def _paged(entries: list[Entry]) -> bool:
    if len(entries) > PAGE_AFTER:
        return True
    size = sum(len(orjson.dumps(e.stories, option=orjson.OPT_NON_STR_KEYS)) for e in entries)
    return size > PAGE_BYTES


def index_data(entries: list[Entry], title: str, *, redacted: bool, href: str) -> dict[str, Any]:
    """The index page of a paged set: summaries only, each entry linking to its own page."""
    return {
        "title": title,
        "mode": "index",
        "redacted": redacted,
        "entries": [entry_data(e, full=False, href=href.format(id=e.id)) for e in entries],
    }


def entry_page_data(entry: Entry, title: str, *, redacted: bool, index_href: str) -> dict[str, Any]:
    """The page of one trajectory of a paged set, linking back to the index."""
    return {
        "title": title,
        "mode": "page",
        "redacted": redacted,
        "index_href": index_href,
        "entries": [entry_data(entry, full=True)],
    }


# --- the command ----------------------------------------------------------------------------------------


@click.command("view")
@click.argument("input", metavar="FILE|DIR|DATASET")
@click.option("-o", "--output", metavar="OUT", help="Write the page here (default: mapc-view.html; a set: OUT/).")
@click.option("--format", "fmt", metavar="F", help="Format of the input files (default: detected).")
@click.option("--serve", is_flag=True, help="Serve the pages read-only on 127.0.0.1 instead of writing them.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="Port for --serve (0: any free one)."
)
@redact_options
def view_command(
    input: str,
    output: str | None,
    fmt: str | None,
    serve: bool,
    port: int,
    redact: bool,
    redact_patterns: tuple[str, ...],
) -> None:
    """Write trajectories as a self-contained HTML page (no network, opens from file://).

    FILE is any format mapc reads; DIR every trajectory file under it; DATASET a `mapc store`
    dataset.  The page shows the conversation (Markdown, code highlighted), tool calls and their
    results folded under each turn, reasoning, images and audio, a latency/token timeline, the
    subagent tree and each turn's unknown fields; a set adds a list with filters and side-by-side
    compare.  More than 25 trajectories are written as OUT/index.html and one page each.

    \b
    Examples:
      mapc view tests/data/fixtures/atif/claude-code-harbor.json -o run.html
      mapc view tests/data/fixtures -o fixtures.html
      mapc view /tmp/corpus --serve --redact
    """
    redactor = redactor_of(redact, redact_patterns)
    if not Path(input).exists():
        raise click.BadParameter(f"{input} does not exist", param_hint="FILE|DIR|DATASET")
    try:
        entries = read_entries(input, fmt, redactor)
    except trajectory.LoadError as exc:
        if exc.usage:
            raise click.BadParameter(f"{exc.path}: {exc.problems[0].message}", param_hint="FILE|DIR|DATASET") from None
        report(exc.path, exc.problems)
        sys.exit(1)
    if not entries:
        raise click.BadParameter(f"{input} holds no trajectory file", param_hint="FILE|DIR|DATASET")
    title = f"mapc view: {Path(input).name or input}"
    redacted = redactor is not None
    if serve:
        server = make_server(entries, title, redacted=redacted, port=port)
        host, bound = server.server_address[:2]
        click.echo(f"serving {len(entries)} trajectories read-only on http://{host}:{bound}/ (Ctrl-C stops)", err=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            sys.exit(130)
        finally:
            server.server_close()
        return
    target = Path(output or "mapc-view.html")
    try:
        if _paged(entries):
            outdir = target.with_suffix("") if target.suffix == ".html" else target
            write_paged(entries, outdir, title, redacted=redacted)
            click.echo(f"wrote {outdir}/index.html and {len(entries)} pages under {outdir}/t/", err=True)
        else:
            write_atomically(target, page(_document(entries, title, redacted=redacted), title).encode("utf-8"))
            click.echo(f"wrote {target}", err=True)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {exc.filename or target}: {exc.strerror or exc}", param_hint="-o"
        ) from None
    if any(e.error for e in entries):
        sys.exit(1)


def write_paged(entries: list[Entry], outdir: Path, title: str, *, redacted: bool) -> None:
    """OUTDIR/index.html and OUTDIR/t/ID.html per entry, each written atomically (the index last)."""
    (outdir / "t").mkdir(parents=True, exist_ok=True)
    for entry in entries:
        if entry.error is None:
            data = entry_page_data(entry, f"{title} / {entry.path}", redacted=redacted, index_href="../index.html")
            write_atomically(outdir / "t" / f"{entry.id}.html", page(data, title).encode("utf-8"))
    data = index_data([e for e in entries], title, redacted=redacted, href="t/{id}.html")
    for item, entry in zip(data["entries"], entries, strict=True):
        if entry.error is not None:
            item["href"] = None
    write_atomically(outdir / "index.html", page(data, title).encode("utf-8"))


# --- --serve -----------------------------------------------------------------------------------------------


def make_server(entries: list[Entry], title: str, *, redacted: bool, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A read-only HTTP server on 127.0.0.1: ``/`` the index (or the page of a single trajectory),
    ``/t/ID`` each trajectory.  Only GET and HEAD; a request naming another host is refused
    (so a web page elsewhere cannot reach it through DNS rebinding)."""
    by_id = {e.id: e for e in entries}
    single = len(entries) == 1

    def render(path: str) -> bytes | None:
        if path == "/":
            if single:
                data = _document(entries, title, redacted=redacted)
            else:
                data = index_data(entries, title, redacted=redacted, href="/t/{id}")
            return page(data, title).encode("utf-8")
        m = re.fullmatch(r"/t/(\d{4,})", path)
        entry = by_id.get(m[1]) if m else None
        if entry is None or entry.error is not None:
            return None
        return page(
            entry_page_data(entry, f"{title} / {entry.path}", redacted=redacted, index_href="/"), title
        ).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "mapc-view"

        def _host_ok(self) -> bool:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            return host in ("127.0.0.1", "localhost")

        def _send(self, code: int, body: bytes, kind: str = "text/plain; charset=utf-8", head: bool = False) -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", csp())
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _get(self, head: bool) -> None:
            if not self._host_ok():
                self._send(403, b"forbidden: this server answers only to 127.0.0.1 or localhost\n", head=head)
                return
            body = render(self.path.split("?", 1)[0])
            if body is None:
                self._send(404, b"not found\n", head=head)
            else:
                self._send(200, body, "text/html; charset=utf-8", head=head)

        def do_GET(self) -> None:
            self._get(head=False)

        def do_HEAD(self) -> None:
            self._get(head=True)

        def _refuse(self) -> None:
            self.send_response(405)
            self.send_header("Allow", "GET, HEAD")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

        def log_message(self, format: str, *args: Any) -> None:  # quiet: stderr is for problems
            pass

    return http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)


def serve_in_thread(server: http.server.ThreadingHTTPServer) -> threading.Thread:
    """Run `server` in a daemon thread (for tests and embedding); `server.shutdown()` stops it."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread
