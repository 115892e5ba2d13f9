"""``events.lance``: the append-only EventRecord log (docs/formats.md, "Events").

Three jobs live here:

- **Records and rows.** `record_problems` checks one EventRecord (E-1 required keys, identity
  strings, timestamp agreement, item 9); `append` writes records as EventRows, one Lance commit per
  call; `read_records` reads them back in physical append order, failing closed when a row's
  columns disagree with its ``payload_json``, and lets the physical ``session_id`` / ``agent_id``
  columns override the producer's claim (item 8).
- **Projection** events → Storyline (`project`, `project_records`), by the §1.2 rules; the bodies of
  a wire protocol that ``mappings/wire/`` has a table for are re-parsed by `mapc.store.wire`
  (tool calls, results, usage, history once), other bodies by the summary fields, marked degraded.
- **Synthesis** Storyline → events (`synthesize`): the degraded direction.

Why this is code and not a mapping spec in ``mappings/``: a spec maps one document's pointers to
another's, node by node.  The projection is not such a map: it groups records by ``call_id`` in
order of first appearance, picks "the last non-empty value in append order" across records,
folds request and response into one or two turns, computes latency from two timestamps, numbers
the turns 1..n and puts orphan events after the calls.  Synthesis pairs consecutive turns and
allocates sequence numbers.  None of that is a pointer-to-pointer rule, and events are Lance-only
(E-7): there is no events *file* format for the engine to read.
"""

from __future__ import annotations

import copy
import fcntl
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from mapc.engine import duplicates, pointer, storyline
from mapc.engine.options import DEFAULT, Options
from mapc.engine.problems import MapcError, Problem
from mapc.engine.rules import SCHEMA_VERSION
from mapc.engine.timestamp import TimestampError, format_rfc3339, parse_rfc3339, timestamp_ns
from mapc.engine.views import effective_kind
from mapc.store import wire

I64_MAX: Final = 2**63 - 1
NS_PER_MS: Final = 1_000_000
MAX_MS: Final = I64_MAX // NS_PER_MS  # the last millisecond whose nanoseconds fit the i64 timestamps we format
# Levels of nesting a record may have: its payload_json is written by orjson (254 levels at most), and a
# projected turn wraps the payload a few levels deeper still.
MAX_DEPTH: Final = 200

REQUEST_KINDS: Final = frozenset({"llm.request", "http.request"})
FRAME_KIND: Final = "http.stream.frame"  # one raw SSE frame of a streamed response (kept, not yet projected)
# Other transports' records (a WebSocket session: transport.websocket.open / message / close) are
# not HTTP calls: projected as they are, in order, as internal turns (no protocol re-parses them yet).
TRANSPORT_PREFIX: Final = "transport."
RESPONSE_KINDS: Final = frozenset({"llm.response", "llm.response.stream", "http.response", "http.response.stream"})

# Optional top-level strings of an EventRecord: the identity keys, then the correlation envelope.
_STRING_KEYS: Final = (
    "event_id",
    "run_id",
    "attempt_id",
    "storyline_id",
    "turn_id",
    "producer",
    "timestamp",
    "session_id",
    "agent_id",
    "parent_uuid",
    "trace_id",
    "call_id",
    "subagent_id",
    "parent_agent_id",
    "branch",
    "parent_call_id",
)


def _event_schema() -> Any:
    import pyarrow as pa

    s, i = pa.string(), pa.int64()
    return pa.schema(
        [
            pa.field("seq", i, nullable=False),
            pa.field("event_id", s),
            pa.field("timestamp", pa.timestamp("ms", tz="UTC"), nullable=False),
            pa.field("kind", s, nullable=False),
            pa.field("source", s, nullable=False),
            pa.field("agent_id", s),
            pa.field("session_id", s),
            pa.field("call_id", s),
            pa.field("trace_id", s),
            pa.field("parent_call_id", s),
            pa.field("model", s),
            pa.field("payload_json", s, nullable=False),
        ]
    )


# --- records ----------------------------------------------------------------------------------------


def _q(value: Any) -> str:
    """`value` quoted as JSON for a message; what JSON cannot hold (an int past 64 bits) as Python writes it."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def record_problems(record: Any) -> list[Problem]:
    """Every problem of one EventRecord; empty when it may be appended.

    ``seq``, ``source``, ``kind`` and ``payload`` are required (E-1); ``seq`` is an unsigned
    integer that fits the Int64 column; ``source`` and ``kind`` are non-blank strings; the identity
    and envelope keys are strings when present (null is absent); ``timestamp`` is RFC 3339 and
    ``timestamp_unix_ms`` an unsigned integer, equal to the millisecond when both are present; a
    stored row needs one of the two.
    """
    if type(record) is not dict:
        return [Problem("events.not_object", "", "an EventRecord is a JSON object")]
    too_deep = _too_deep(record)
    if too_deep is not None:  # before anything else: the other checks quote values with orjson
        return [Problem("events.too_deep", too_deep, f"the record is nested more than {MAX_DEPTH} levels deep")]
    problems = []
    for key in ("seq", "source", "kind", "payload"):
        if key not in record:
            problems.append(Problem("events.missing_field", f"/{key}", f"{key} is required"))
    seq = record.get("seq")
    if "seq" in record and (type(seq) is not int or seq < 0):
        problems.append(Problem("events.bad_type", "/seq", f"expected an unsigned integer, found {_q(seq)}"))
    elif type(seq) is int and seq > I64_MAX:
        problems.append(Problem("events.seq_range", "/seq", f"{seq} does not fit the Int64 seq column"))
    for key in ("source", "kind"):
        if key not in record:
            continue
        value = record[key]
        if type(value) is not str:
            problems.append(Problem("events.bad_type", f"/{key}", f"expected a string, found {_q(value)}"))
        elif not value.strip():
            problems.append(Problem("events.blank", f"/{key}", f"{key} must not be blank"))
    for key in _STRING_KEYS:
        value = record.get(key)
        if value is not None and type(value) is not str:
            problems.append(Problem("events.bad_type", f"/{key}", f"expected a string, found {_q(value)}"))
    unix_ms = record.get("timestamp_unix_ms")
    has_time = unix_ms is not None or record.get("timestamp") is not None
    if unix_ms is not None and (type(unix_ms) is not int or not 0 <= unix_ms <= I64_MAX):
        problems.append(
            Problem(
                "events.bad_type",
                "/timestamp_unix_ms",
                f"expected milliseconds as an unsigned integer, found {_q(unix_ms)}",
            )
        )
        unix_ms = None
    elif unix_ms is not None and unix_ms > MAX_MS:
        problems.append(
            Problem(
                "events.timestamp_range",
                "/timestamp_unix_ms",
                f"{unix_ms} ms is after the last instant a timestamp holds ({MAX_MS} ms, in the year 2262)",
            )
        )
        unix_ms = None
    text = record.get("timestamp")
    text_ms = None
    if type(text) is str:
        try:
            text_ms = parse_rfc3339(text) // NS_PER_MS
        except TimestampError as exc:
            problems.append(Problem("events.bad_timestamp", "/timestamp", str(exc)))
    if unix_ms is not None and text_ms is not None and unix_ms != text_ms:
        problems.append(
            Problem(
                "events.timestamp_conflict",
                "/timestamp_unix_ms",
                f"timestamp_unix_ms {unix_ms} disagrees with timestamp {_q(text)} ({text_ms} ms)",
            )
        )
    if not has_time:
        problems.append(Problem("events.missing_timestamp", "", "a stored event needs timestamp_unix_ms or timestamp"))
    return problems


def _too_deep(value: Any) -> str | None:
    """The pointer of the first value nested more than `MAX_DEPTH` levels deep in `value`, else None.

    Iterative, so a value nested past Python's recursion limit is measured too.
    """
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(value, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        if type(node) is dict:
            children: Iterable[tuple[str, Any]] = node.items()
        elif type(node) is list:
            children = ((str(i), v) for i, v in enumerate(node))
        else:
            continue
        for key, child in children:
            if type(child) in (dict, list):
                if depth >= MAX_DEPTH:
                    return "".join(f"/{_escape(k)}" for k in (*path, key))
                stack.append((child, depth + 1, (*path, key)))
    return None


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def event_ms(record: dict[str, Any]) -> int | None:
    """The event's time in Unix milliseconds: ``timestamp_unix_ms``, else the parsed ``timestamp``."""
    unix_ms = record.get("timestamp_unix_ms")
    if type(unix_ms) is int:
        return unix_ms
    text = record.get("timestamp")
    if type(text) is str:
        return parse_rfc3339(text) // NS_PER_MS
    return None


def parse_jsonl(data: bytes) -> list[dict[str, Any]]:
    """EventRecords of a JSONL file (debug/test input only, E-7), each checked; line-located errors."""
    return parse_jsonl_lines(data)[0]


def parse_jsonl_lines(data: bytes, *, allow_duplicate_keys: bool = False) -> tuple[list[dict[str, Any]], list[int]]:
    """`parse_jsonl`, with the line number of each record (for `admit`'s conflict reports).  A line
    that repeats a key in one object is refused unless `allow_duplicate_keys` (the last value wins)."""
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    problems: list[Problem] = []
    for n, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            problems.append(Problem("json.invalid", "", f"not valid JSON: {exc}", line=n))
            continue
        repeated = [] if allow_duplicate_keys else duplicates.problems_of(line, record)
        if repeated:  # the record would be stored with one of the two values lost (mapc refuses by default)
            problems.extend(p.on_line(n) for p in repeated)
            continue
        found = record_problems(record)
        problems.extend(p.on_line(n) for p in found)
        if not found:
            records.append(record)
            numbers.append(n)
    if problems:
        raise MapcError(problems)
    if not records:
        raise MapcError.single("input.empty", "", "the file holds no records; it cannot be empty")
    return records, numbers


# --- rows -------------------------------------------------------------------------------------------


def _string(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    return value if type(value) is str else None


def _model(record: dict[str, Any]) -> str | None:
    payload = record.get("payload")
    model = payload.get("model") if type(payload) is dict else None
    return model if type(model) is str else None


def _row(record: dict[str, Any]) -> tuple[Any, ...]:
    return (
        record["seq"],
        _string(record, "event_id"),
        event_ms(record),
        record["kind"],
        record["source"],
        _string(record, "agent_id"),
        _string(record, "session_id"),
        _string(record, "call_id"),
        _string(record, "trace_id"),
        _string(record, "parent_call_id"),
        _model(record),
        _q(record),
    )


def to_table(records: Iterable[dict[str, Any]]) -> Any:
    """EventRows (§4) of checked records, as an Arrow table."""
    import pyarrow as pa

    schema = _event_schema()
    rows = [_row(r) for r in records]
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    arrays = [pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    with open(path / ".lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@dataclass(frozen=True)
class Appended:
    """What one `admit` did: the table version after it, and how many records it wrote or skipped."""

    version: int
    appended: int
    skipped: int


def _canonical(record: Any) -> bytes:
    """A record's bytes with keys sorted: two records are "the same" when these are equal."""
    return orjson.dumps(record, option=orjson.OPT_SORT_KEYS)


def _stored_ids(path: Path) -> dict[str, bytes]:
    """``event_id`` → canonical record of every stored row that has an ``event_id``."""
    import lance

    if not (path / "_versions").is_dir():
        return {}
    table = lance.dataset(str(path)).to_table(columns=["event_id", "payload_json"], filter="event_id IS NOT NULL")
    out: dict[str, bytes] = {}
    ids, texts = table.column("event_id").to_pylist(), table.column("payload_json").to_pylist()
    for event_id, text in zip(ids, texts, strict=True):
        try:
            out.setdefault(event_id, _canonical(orjson.loads(text)))
        except orjson.JSONDecodeError:
            out.setdefault(event_id, b"")  # an unreadable row still owns its id: a new record conflicts
    return out


def admit(path: Path, records: list[dict[str, Any]], *, lines: list[int] | None = None) -> Appended:
    """Append `records` to ``events.lance`` at `path`, idempotently: delivery is at least once (docs/formats.md).

    Each record is checked first.  A record whose ``event_id`` is already stored (or earlier in
    this batch) with the same content is skipped and counted; the same ``event_id`` with other
    content is an ``events.event_id_conflict`` at ``/event_id`` and nothing is written.  Records
    without ``event_id`` (legacy writers) are appended as they are.  `lines` (one per record)
    locates problems on a JSONL input's lines; without it they are located by ``/index``.
    Rows are never rewritten and ``seq`` is kept as given (E-2).  One Lance commit, or none when
    every record was skipped.
    """
    import lance

    def locate(i: int, problem: Problem) -> Problem:
        return problem.on_line(lines[i]) if lines is not None else problem.within(f"/{i}")

    problems = [locate(i, p) for i, r in enumerate(records) for p in record_problems(r)]
    if problems:
        raise MapcError(problems)
    with _locked(path):
        seen = _stored_ids(path)
        fresh: list[dict[str, Any]] = []
        skipped = 0
        for i, record in enumerate(records):
            event_id = record.get("event_id")
            if type(event_id) is not str:
                fresh.append(record)
                continue
            mine = _canonical(record)
            stored = seen.get(event_id)
            if stored is None:
                seen[event_id] = mine
                fresh.append(record)
            elif stored == mine:
                skipped += 1
            else:
                problems.append(
                    locate(
                        i,
                        Problem(
                            "events.event_id_conflict",
                            "/event_id",
                            f"event_id {_q(event_id)} is already stored with a different record; "
                            "a retry must repeat the record exactly",
                        ),
                    )
                )
        if problems:
            raise MapcError(problems)
        exists = (path / "_versions").is_dir()
        if not fresh:
            return Appended(lance.dataset(str(path)).version, 0, skipped)
        table = to_table(fresh)
        ds = lance.write_dataset(table, str(path), schema=table.schema, mode="append" if exists else "create")
    return Appended(ds.version, len(fresh), skipped)


def append(path: Path, records: list[dict[str, Any]]) -> int:
    """`admit` `records` to ``events.lance`` at `path`; returns the table version after it."""
    return admit(path, records).version


def read_records(path: Path, *, skipped: list[Problem] | None = None) -> list[dict[str, Any]]:
    """The EventRecords of ``events.lance`` in physical append order, checked against their columns.

    Each row's ``payload_json`` must be a record `append` would accept (else ``events.bad_json`` or
    ``events.bad_record``), and its ``seq``, ``event_id``, ``timestamp``, ``kind``, ``source``,
    ``call_id``, ``trace_id``, ``parent_call_id`` and ``model`` must agree with it (else
    ``events.row_mismatch``); the ``session_id`` and ``agent_id`` columns then replace the
    record's own values (a null column removes the key).

    A row that fails is a `MapcError` (fail closed); with `skipped`, its problems go there instead
    and the row is left out, so one unreadable row never hides the others (the rows stay as stored).
    """
    import lance
    import pyarrow as pa

    if not (path / "_versions").is_dir():
        raise MapcError.single("events.not_a_table", "", f"{path} is not a Lance table")
    ds = lance.dataset(str(path))
    schema = _event_schema()
    if not ds.schema.equals(schema):
        raise MapcError.single(
            "events.schema_mismatch",
            "events",
            f"expected the EventRow columns {schema.names}, found {ds.schema}",
        )
    table = ds.to_table()
    cols = {}
    for name in table.column_names:
        column = table.column(name)
        cols[name] = (column.cast(pa.int64()) if name == "timestamp" else column).to_pylist()
    out = []
    problems: list[Problem] = []
    for i in range(table.num_rows):
        where = f"events[row={i}, seq={cols['seq'][i]}]"
        before = len(problems)
        try:
            record = orjson.loads(cols["payload_json"][i])
        except orjson.JSONDecodeError as exc:
            problems.append(Problem("events.bad_json", f"{where}.payload_json", f"not JSON: {exc}"))
            continue
        found = record_problems(record)
        if found:
            problems.extend(
                Problem("events.bad_record", f"{where}.payload_json{p.pointer}", f"{p.message} [{p.code}]")
                for p in found
            )
            continue
        expected = _row(record)
        for index, name in enumerate(schema.names):
            if name in ("session_id", "agent_id", "payload_json"):
                continue
            if cols[name][i] != expected[index]:
                problems.append(
                    Problem(
                        "events.row_mismatch",
                        f"{where}.{name}",
                        f"the column holds {_q(cols[name][i])} but payload_json gives {_q(expected[index])}",
                    )
                )
        if len(problems) > before:
            continue
        for name in ("session_id", "agent_id"):
            if cols[name][i] is None:
                record.pop(name, None)
            else:
                record[name] = cols[name][i]
        out.append(record)
    if problems and skipped is None:
        raise MapcError(problems)
    if skipped is not None:
        skipped.extend(problems)
    return out


# --- projection: events → Storyline -----------------------------------------------------------------


def distinct(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`records` without exact repeats (the first copy kept): at-least-once delivery by a legacy
    writer, which gives no ``event_id`` to skip them by at append, stores a retry twice."""
    seen: set[bytes] = set()
    out = []
    for record in records:
        try:
            key = _canonical(record)
        except TypeError:  # not JSON (a caller's own record): nothing to compare it by, so kept
            out.append(record)
            continue
        if key not in seen:
            seen.add(key)
            out.append(record)
    return out


def storyline_key(record: dict[str, Any]) -> str | None:
    """The Storyline a record belongs to: its non-empty ``session_id``, ``storyline_id`` or ``run_id``."""
    for key in ("session_id", "storyline_id", "run_id"):
        value = record.get(key)
        if type(value) is str and value:
            return value
    return None


def _last_non_empty(records: list[dict[str, Any]], key: str) -> str | None:
    for record in reversed(records):
        value = record.get(key)
        if type(value) is str and value:
            return value
    return None


def _rfc3339_ms(ms: int) -> str:
    """chrono's ``to_rfc3339_opts(SecondsFormat::Millis, true)``: always three fraction digits."""
    text = format_rfc3339(ms * NS_PER_MS)
    return text if "." in text else text[:-1] + ".000Z"


def _event_time(record: dict[str, Any]) -> tuple[str | None, int | None]:
    """(RFC 3339 millisecond text, Unix ms) of a record, or (None, None); conflicts are errors."""
    problems = _time_problems(record)
    if problems:
        raise MapcError(problems)
    ms = event_ms(record)
    return (None, None) if ms is None else (_rfc3339_ms(ms), ms)


def _time_problems(record: dict[str, Any]) -> list[Problem]:
    """`record_problems`' timestamp checks alone (``events.bad_timestamp``, ``events.timestamp_conflict``):
    what projection needs of every record, without walking the whole record again when it is fine."""
    text = record.get("timestamp")
    if type(text) is not str:
        return []
    try:
        text_ms = parse_rfc3339(text) // NS_PER_MS
    except TimestampError:
        text_ms = None
    unix_ms = record.get("timestamp_unix_ms")
    if text_ms is not None and (type(unix_ms) is not int or unix_ms == text_ms):
        return []
    return [p for p in record_problems(record) if p.code in ("events.timestamp_conflict", "events.bad_timestamp")]


def message_text(message: Any) -> str | None:
    """A message's text: a string, or the ``text`` of its content parts joined; None otherwise."""
    if type(message) is str:
        return message
    if type(message) is list:
        texts = [p["text"] for p in message if type(p) is dict and type(p.get("text")) is str]
        return "".join(texts) if texts else None
    return None


def _json_body(body: Any) -> Any:
    """A wire body as JSON: an object as is, a string holding JSON parsed; else None."""
    if type(body) is dict:
        return body
    if type(body) is str and body.lstrip().startswith("{"):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
    return None


def _http(payload: dict[str, Any]) -> dict[str, Any]:
    http = payload.get("http")
    return http if type(http) is dict else {}


def _request_body(payload: dict[str, Any]) -> Any:
    """The request's wire body: ``payload.http.request_body``, else the flat legacy ``body`` (E-5)."""
    body = _json_body(_http(payload).get("request_body"))
    return body if body is not None else _json_body(payload.get("body"))


def _response_body(payload: dict[str, Any]) -> Any:
    """The raw response body (object, JSON text or SSE text), nested first, then the flat ``body``."""
    http = _http(payload)
    if http.get("response_body") is not None:
        return http["response_body"]
    return payload.get("body")


def _request_messages(payload: dict[str, Any]) -> Any:
    body = _request_body(payload)
    if type(body) is dict and type(body.get("messages")) is list:
        return body["messages"]
    messages = payload.get("messages")
    return messages if type(messages) is list else None


def extract_user(payload: Any) -> str | None:
    """User text: the last user message of the request wire body (or the parsed ``messages``),
    else the ``user_content`` summary (the RFC: summaries are only a fast path)."""
    if type(payload) is not dict:
        return None
    messages = _request_messages(payload)
    if messages is not None:
        for message in reversed(messages):
            if type(message) is dict and message.get("role") == "user":
                text = message_text(message.get("content"))
                if text is not None:
                    return text
    summary = payload.get("user_content")
    return summary if type(summary) is str else None


def _choice_text(body: Any) -> str | None:
    if type(body) is not dict:
        return None
    choices = body.get("choices")
    if type(choices) is list and choices and type(choices[0]) is dict:
        message = choices[0].get("message")
        if type(message) is dict:
            text = message_text(message.get("content"))
            if text is not None:
                return text
    if body.get("type") == "message" and type(body.get("content")) is list:  # Anthropic Messages
        return message_text(body["content"])
    return None


def _sse_text(body: str) -> str | None:
    """Assistant text of an SSE stream of chat-completion chunks (``data:`` lines), or None."""
    parts: list[str] = []
    found = False
    for chunk in wire.sse_events(body):
        choices = chunk.get("choices") if type(chunk) is dict else None
        if type(choices) is list and choices and type(choices[0]) is dict:
            delta = choices[0].get("delta")
            if type(delta) is dict and type(delta.get("content")) is str:
                parts.append(delta["content"])
                found = True
    return "".join(parts) if found else None


def extract_assistant(payload: Any) -> str | None:
    """Assistant text: the response wire body (``/choices/0/message/content``, Anthropic text
    blocks, or an SSE chunk stream), then ``payload.choices``, then the ``assistant_content``
    summary, then a bare ``content`` string (what `synthesize` writes)."""
    if type(payload) is not dict:
        return None
    body = _response_body(payload)
    text = _choice_text(_json_body(body))
    if text is None and type(body) is str and "data:" in body:
        text = _sse_text(body)
    if text is None:
        text = _choice_text(payload)
    if text is None and type(payload.get("assistant_content")) is str:
        text = payload["assistant_content"]
    if text is None and type(payload.get("content")) is str:
        text = payload["content"]
    return text


def _usage(payload: dict[str, Any]) -> Any:
    body = _json_body(_response_body(payload))
    if type(body) is dict and "usage" in body:
        return body["usage"]
    return payload.get("usage")


def _int_at(obj: Any, *keys: str) -> int | None:
    for key in keys:
        if type(obj) is not dict:
            return None
        obj = obj.get(key)
    return obj if type(obj) is int else None


def _model_of(payload: dict[str, Any]) -> str | None:
    body = _request_body(payload)
    for source in (body, payload):
        if type(source) is dict and type(source.get("model")) is str:
            return source["model"]
    return None


def project_records(
    records: list[dict[str, Any]], *, notes: list[Problem] | None = None, options: Options = DEFAULT
) -> dict[str, Any]:
    """One Storyline from append-ordered records (§1.2 projection), validated.

    - ``session`` = the last non-empty of (``session_id`` → ``storyline_id`` → ``run_id``) in
      append order; none is an error.  ``run`` = the last non-empty ``run_id`` if it differs from
      the session, and then ``parent = {psid: run}`` (``rel`` ``spawn``).  ``agent.id`` (and
      ``name``) = the last non-empty ``agent_id``, else ``unknown``.
    - Records with a non-empty ``call_id`` are grouped by it, groups in order of first
      appearance.  Per group: a user turn (``kind: llm.request``, ``extra: {call_id, seq}``) when
      both user and assistant text exist, then one turn for the call (``agent`` with the
      assistant text, else ``user`` with the user text, else ``agent`` with ``""``), ``kind:
      llm.response`` (``llm.request`` for the user case), ``extra: {call_id, request_messages,
      seq}``, ``metrics`` = usage, ``latency_ms`` = the payload's, else response − request time,
      ``ttft_ms``, ``model``, ``nllm: 1`` for an agent turn.
    - Records without ``call_id`` whose kind is ``session.*`` or ``note``, and ``transport.*``
      records (a WebSocket session's, with their ``call_id`` in extra), become ``system`` turns
      (``kind: internal``, ``msg: {kind, payload}``, ``extra: {seq, event_seq}``) after the calls;
      other orphans are dropped.
    - Turn ids are 1..n; ``origin.format`` is ``canonical-event``; timestamps are RFC 3339 with
      milliseconds, from ``timestamp_unix_ms`` (else ``timestamp``).
    - A recorded body (request, response, SSE data, stream frame) whose JSON text repeats a key is
      refused, ``json.duplicate_key`` at ``events[call_id=…, seq=…]/payload/http/…`` and the key's
      pointer, unless `options` allow duplicate keys (the last value is then read), as for every input.
    """
    if not records:
        raise MapcError.single("events.empty", "", "no event to project")
    records = distinct(records)
    for record in records:
        _event_time(record)  # timestamp agreement (item 9) before anything else
    session = None
    for record in reversed(records):
        session = storyline_key(record)
        if session is not None:
            break
    if session is None:
        raise MapcError.single(
            "events.no_session", "", "a projection needs a session_id, storyline_id or run_id on some event"
        )
    run = _last_non_empty(records, "run_id")
    agent_id = _last_non_empty(records, "agent_id") or "unknown"

    groups: dict[str, list[dict[str, Any]]] = {}
    orphans: list[dict[str, Any]] = []
    for record in records:
        call_id = record.get("call_id")
        if type(call_id) is str and call_id and not record["kind"].startswith(TRANSPORT_PREFIX):
            groups.setdefault(call_id, []).append(record)
        else:
            orphans.append(record)

    turns: list[dict[str, Any]] = []
    conversation: wire.Conversation | None = None
    for call_id, group in groups.items():
        table = wire.recognise([record["payload"] for record in group])
        if table is None:  # no protocol table reads these bodies: the summary fields, marked degraded
            for record in group:
                _check_bodies(record, options)
            for turn in _call_turns(call_id, group):
                turn["extra"]["degraded"] = True
                turns.append(turn)
            continue
        if conversation is None or conversation.table is not table:
            conversation = wire.Conversation(table)
        before = len(conversation.problems)
        call = _wire_call(call_id, group, table, options)
        call.where = f"events[session={_q(session)}, call_id={_q(call_id)}]"
        turns.extend(conversation.add_call(call))
        if notes is not None:
            notes.extend(conversation.problems[before:])
    for record in orphans:
        kind = record["kind"]
        if kind.startswith(("session.", TRANSPORT_PREFIX)) or kind == "note":
            ts, _ = _event_time(record)
            turn: dict[str, Any] = {"id": 0, "kind": "internal"}
            if ts is not None:
                turn["ts"] = ts
            extra = {"seq": record["seq"], "event_seq": record["seq"]}
            if kind.startswith(TRANSPORT_PREFIX) and type(record.get("call_id")) is str:
                extra["call_id"] = record["call_id"]  # the WebSocket session the message belongs to
            turn.update(src="system", msg={"kind": kind, "payload": record["payload"]}, extra=extra)
            turns.append(turn)
    for n, turn in enumerate(turns, start=1):
        turn["id"] = n

    story: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "origin": {"format": "canonical-event"}}
    if run is not None and run != session:
        story["run"] = run
    story["session"] = session
    story["agent"] = {"id": agent_id, "name": agent_id}
    if run is not None and run != session:
        story["parent"] = {"psid": run, "rel": "spawn"}
    story["turns"] = turns
    problems = storyline.check(story)
    if problems:
        raise MapcError(
            Problem("events.invalid_projection", p.pointer, f"the projected Storyline is invalid: {p.message}")
            for p in problems
        )
    return story


def _call_turns(call_id: str, group: list[dict[str, Any]]) -> list[dict[str, Any]]:
    first_ts, _ = _event_time(group[0])
    model = user_text = asst_text = request_messages = metrics = None
    ttft = latency = None
    req_ts = resp_ts = None
    req_ms = resp_ms = None
    req_seq = resp_seq = None
    for record in group:
        kind = record["kind"]
        payload = record["payload"] if type(record["payload"]) is dict else {}
        ts, ms = _event_time(record)
        if kind in REQUEST_KINDS:
            req_ts, req_ms = ts, ms
            model = _model_of(payload)
            user_text = extract_user(payload)
            request_messages = _request_messages(payload)
            if req_seq is None:
                req_seq = record["seq"]
        elif kind in RESPONSE_KINDS:
            resp_ts, resp_ms = ts, ms
            asst_text = extract_assistant(payload)
            usage = _usage(payload)
            if usage is not None:
                metrics = usage
            ttft = _int_at(payload, "ttft_ms")
            if ttft is None:
                ttft = _int_at(payload, "timing", "ttft_ms")
            if ttft is None:
                ttft = _int_at(metrics, "ttft_ms")
            if latency is None:
                latency = _int_at(payload, "latency_ms")
                if latency is None:
                    latency = _int_at(payload, "timing", "duration_ms")
            if resp_seq is None:
                resp_seq = record["seq"]
    if latency is None and req_ms is not None and resp_ms is not None:
        latency = resp_ms - req_ms

    turns = []
    if user_text is not None and asst_text is not None:
        turn: dict[str, Any] = {"id": 0, "kind": "llm.request"}
        _put(turn, "ts", req_ts or first_ts)
        turn.update(src="user", msg=user_text, extra=_extra(call_id, req_seq))
        turns.append(turn)
    if asst_text is not None:
        source, message, kind, seq = "agent", asst_text, "llm.response", resp_seq
    elif user_text is not None:
        source, message, kind, seq = "user", user_text, "llm.request", req_seq
    else:
        source, message, kind, seq = (
            "agent",
            "",
            "llm.response",
            resp_seq if resp_seq is not None else req_seq,
        )
    turn = {"id": 0, "kind": kind}
    _put(turn, "ts", resp_ts or req_ts or first_ts)
    turn.update(src=source, msg=message)
    _put(turn, "metrics", metrics)
    _put(turn, "model", model)
    if source == "agent":
        turn["nllm"] = 1
        _put(turn, "latency_ms", latency)
        _put(turn, "ttft_ms", ttft)
    extra = {"call_id": call_id, "request_messages": request_messages}
    if seq is not None:
        extra["seq"] = seq
    turn["extra"] = extra
    turns.append(turn)
    return turns


def _wire_call(call_id: str, group: list[dict[str, Any]], table: wire.Table, options: Options = DEFAULT) -> wire.Call:
    """The last request and last response of one call, with their seq, time and timing.

    ``http.stream.frame`` events are the raw frames of a streamed response: in ``seq`` order (not
    append order) their texts are the SSE body, which then replaces the response record's own
    (the aggregated text is only a projection of the frames); a call whose frames came without a
    response record takes its time from the last frame.  TTFT, when the response gives none, is
    the first frame's ``timing.offset_ms`` (relative to the request), else its time − the request's.
    """
    call = wire.Call(call_id, None, None)
    req_ms = resp_ms = None
    frames: list[tuple[int, str, dict[str, Any]]] = []
    for record in group:
        kind = record["kind"]
        payload = record["payload"] if type(record["payload"]) is dict else {}
        made_in_body: list[str] = []
        if "synthesized" in payload:  # values synthesis made up for the protocol (`synthesize_wire`): not data
            made = payload["synthesized"] if type(payload["synthesized"]) is list else []
            body_prefix = "/http/response_body/"
            made_in_body = [p[len(body_prefix) - 1 :] for p in made if type(p) is str and p.startswith(body_prefix)]
            payload = wire.without(payload, [p for p in made if not (type(p) is str and p.startswith(body_prefix))])
        ts, ms = _event_time(record)
        where = _record_where(call_id, record)
        if kind in REQUEST_KINDS:
            request = _located(where, wire.request_body, payload, options)
            call.request_body, call.request_seq, call.request_ts = request, record["seq"], ts
            req_ms = ms
        elif kind in RESPONSE_KINDS:
            # a streamed body is assembled first: the made-up pointers are into what it assembles to
            response = _located(where, wire.response_body, payload, table, options)
            call.response_body = wire.without(response, made_in_body)
            call.response_seq, call.response_ts, resp_ms = record["seq"], ts, ms
            call.status = wire.status(payload)
            call.ttft_ms = _first_int(_int_at(payload, "ttft_ms"), _int_at(payload, "timing", "ttft_ms"))
            call.latency_ms = _first_int(_int_at(payload, "latency_ms"), _int_at(payload, "timing", "duration_ms"))
        elif kind == FRAME_KIND:
            text = wire.frame_text(payload)
            if text is not None:
                frames.append((record["seq"], text, record))
            else:  # reported, not silently left out of the stream
                call.problems.append(
                    Problem(
                        "events.bad_frame",
                        f"events[call_id={_q(call_id)}, seq={record['seq']}]/payload/http/frame",
                        "an http.stream.frame event needs its frame as text (or base64 with body_encoding: base64); "
                        "the stream is assembled without it",
                    )
                )
    if frames:
        frames.sort(key=lambda frame: frame[0])
        body = "".join(text for _, text, _ in frames)
        seqs = f"{frames[0][0]}..{frames[-1][0]}" if len(frames) > 1 else str(frames[0][0])
        where = f"events[call_id={_q(call_id)}, {FRAME_KIND} seq={seqs}]"  # the data payloads of the frames joined
        joined = {"http": {"response_body": body, "body_encoding": "sse"}}
        call.response_body = _located(where, wire.response_body, joined, table, options)
        first, last = frames[0][2], frames[-1][2]
        if call.response_seq is None:
            call.response_ts, resp_ms = _event_time(last)
            call.response_seq = last["seq"]
        last_ms = _event_time(last)[1]
        if last_ms is not None and (resp_ms is None or last_ms > resp_ms):
            resp_ms = last_ms  # the call lasted until its last frame, not until the response's headers
        if call.ttft_ms is None:
            offset = _int_at(first["payload"], "timing", "offset_ms")
            first_ms = _event_time(first)[1]
            call.ttft_ms = (
                offset
                if offset is not None
                else (first_ms - req_ms if first_ms is not None and req_ms is not None else None)
            )
    if call.latency_ms is None and req_ms is not None and resp_ms is not None:
        call.latency_ms = resp_ms - req_ms
    return call


def _record_where(call_id: str, record: dict[str, Any]) -> str:
    """How a problem names one record of a call: its call_id and seq."""
    return f"events[call_id={_q(call_id)}, seq={record['seq']}]"


def _located(where: str, read: Callable[..., Any], *args: Any) -> Any:
    """`read(*args)`, its problems (pointers into the record) placed under `where` (the record)."""
    try:
        return read(*args)
    except MapcError as exc:
        raise MapcError(p.within(where) for p in exc.problems) from None


def _check_bodies(record: dict[str, Any], options: Options) -> None:
    """Refuse a record whose body texts repeat a key (the summary-field projection reads them too)."""
    payload = record["payload"]
    if type(payload) is not dict:
        return
    where = _record_where(str(record.get("call_id")), record)
    http = _http(payload)
    bodies = (("/request_body", http.get("request_body")), ("/response_body", http.get("response_body")))
    for at, body in (*((f"/payload/http{a}", b) for a, b in bodies), ("/payload/body", payload.get("body"))):
        if type(body) is not str:
            continue
        if body.lstrip().startswith(("event:", "data:")):
            _located(where, wire.sse_events, body, at, options)
        else:
            _located(where, wire.json_body, body, at, options)


def _first_int(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)


def _extra(call_id: str, seq: int | None) -> dict[str, Any]:
    extra: dict[str, Any] = {"call_id": call_id}
    if seq is not None:
        extra["seq"] = seq
    return extra


def _put(obj: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        obj[key] = value


def project(
    records: list[dict[str, Any]],
    *,
    session: str | None = None,
    skipped: list[Problem] | None = None,
    notes: list[Problem] | None = None,
    options: Options = DEFAULT,
) -> list[dict[str, Any]]:
    """One Storyline per ``storyline_key`` (in order of first appearance), or only `session`'s.

    A record with no ``session_id``, ``storyline_id`` or ``run_id`` cannot be placed: error.
    With `skipped` the projection is total: a record that `record_problems` refuses or that
    belongs to no Storyline, and a session whose projection fails, are reported there and left
    out; only "nothing left to project" is still an error.  `notes` receives what was projected
    but should be looked at: ``events.history_fork``, a request whose history contradicts earlier ones,
    and ``events.history_changed``, a resent message carrying unread values its first reading did not.
    `options` is the job's settings: a body repeating a key is refused unless they allow it.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for i, record in enumerate(records):
        where = f"events[row={i}, seq={_seq_text(record)}]"
        if skipped is not None:
            found = record_problems(record)
            if found:
                skipped.extend(
                    Problem("events.bad_record", f"{where}{p.pointer}", f"{p.message} [{p.code}]") for p in found
                )
                continue
        key = storyline_key(record)
        if key is None:
            problem = Problem(
                "events.no_session",
                where,
                "the event has no session_id, storyline_id or run_id, so it belongs to no Storyline",
            )
            if skipped is None:
                raise MapcError([problem])
            skipped.append(problem)
            continue
        if session is None or key == session:
            groups.setdefault(key, []).append(record)
    if not groups:
        what = "no event" if session is None else f"no event of session {_q(session)}"
        raise MapcError.single("events.not_found", "", f"{what} to project")
    if skipped is None:
        return [project_records(group, notes=notes, options=options) for group in groups.values()]
    out = []
    for key, group in groups.items():
        try:
            out.append(project_records(group, notes=notes, options=options))
        except MapcError as exc:
            skipped.extend(p.within(f"events[session={_q(key)}]") for p in exc.problems)
        except RecursionError:  # record_problems bounds the depth; this guards a caller's own records
            skipped.append(Problem("events.too_deep", f"events[session={_q(key)}]", "nested too deeply to project"))
    if not out:
        raise MapcError.single("events.not_found", "", "no session could be projected")
    return out


def _seq_text(record: Any) -> str:
    seq = record.get("seq") if type(record) is dict else None
    return str(seq) if type(seq) is int else "?"


# --- synthesis: Storyline → events (degraded) -------------------------------------------------------


class _Seq:
    """``extra.seq`` when a turn has one (an unsigned integer), else the next free number."""

    __slots__ = ("next",)

    def __init__(self) -> None:
        self.next = 0

    def take(self, turn: dict[str, Any] | None) -> int:
        extra = turn.get("extra") if turn is not None else None
        seq = extra.get("seq") if type(extra) is dict else None
        if type(seq) is int and seq >= 0:
            self.next = max(self.next, seq + 1)
            return seq
        seq = self.next
        self.next += 1
        return seq


def _call_id_of(turn: dict[str, Any]) -> str | None:
    extra = turn.get("extra")
    call_id = extra.get("call_id") if type(extra) is dict else None
    return call_id if type(call_id) is str and call_id else None


def synthesize(story: dict[str, Any]) -> list[dict[str, Any]]:
    """The degraded EventRecords of a validated Storyline (§1.2 "Storyline → events").

    ``source: "pchronicle"``; ``internal`` turns become ``note`` events whose payload is the
    turn's ``msg``; a ``user`` turn becomes an ``llm.request`` (paired with the next agent turn's
    ``llm.response`` under one ``call_id``); other turns an ``llm.response``, preceded by an
    ``llm.request`` when ``extra.request_messages`` exists.  A turn ``kind`` starting with
    ``llm.`` or ``http.`` is kept as the event kind.  ``call_id`` = ``extra.call_id``, else the
    paired turn's, else ``turn-{id}``; ``seq`` = ``extra.seq`` or the next free number.  Every
    request/response payload carries ``degraded: true``: it is a projection of the conversation,
    not the HTTP wire (E-4), so it never claims to be replayable.  A note is not an HTTP record
    and keeps the message as it is.

    Time: a turn's ``ts`` gives ``timestamp`` (a number is written as RFC 3339) and
    ``timestamp_unix_ms`` (when not before 1970); a turn without one takes the previous event's
    time, else the document's ``started_at``, else the Unix epoch, because an EventRow needs one.
    """
    turns = story["turns"]
    session = story["session"]
    agent_id = story["agent"]["id"]
    seqs = _Seq()
    events: list[dict[str, Any]] = []
    clock = _Clock(story.get("started_at"))

    def event(turn: dict[str, Any], kind: str, call_id: str | None, payload: Any, seq: int) -> None:
        record: dict[str, Any] = {"seq": seq, "source": "pchronicle", "kind": kind}
        record.update(clock.fields(turn.get("ts")))
        record["session_id"] = session
        record["agent_id"] = agent_id
        if call_id is not None:
            record["call_id"] = call_id
        record["payload"] = payload
        events.append(record)

    def exchange_kind(turn: dict[str, Any], default: str) -> str:
        kind = turn.get("kind")
        return kind if type(kind) is str and kind.startswith(("llm.", "http.")) else default

    i = 0
    while i < len(turns):
        turn = turns[i]
        if effective_kind(turn) == "internal":
            event(turn, "note", None, turn["msg"], seqs.take(turn))
            i += 1
            continue
        paired = None
        if turn["src"] == "user" and i + 1 < len(turns):
            following = turns[i + 1]
            if following["src"] == "agent" and effective_kind(following) != "internal":
                paired = following
        call_id = _call_id_of(turn) or (paired and _call_id_of(paired)) or f"turn-{turn['id']}"
        text = message_text(turn["msg"]) or ""
        if turn["src"] == "user":
            request = {
                "model": turn.get("model"),
                "messages": [{"role": "user", "content": text}],
                "degraded": True,
            }
            event(turn, exchange_kind(turn, "llm.request"), call_id, request, seqs.take(turn))
            if paired is not None:
                event(
                    paired,
                    exchange_kind(paired, "llm.response"),
                    call_id,
                    _response(paired),
                    seqs.take(paired),
                )
                i += 2
                continue
            i += 1
            continue
        extra = turn.get("extra")
        messages = extra.get("request_messages") if type(extra) is dict else None
        if messages is not None:
            request = {"model": turn.get("model"), "messages": messages, "degraded": True}
            event(turn, "llm.request", call_id, request, seqs.take(None))
        event(turn, exchange_kind(turn, "llm.response"), call_id, _response(turn), seqs.take(turn))
        i += 1
    return events


def _response(turn: dict[str, Any]) -> dict[str, Any]:
    text = message_text(turn["msg"]) or ""
    return {
        "content": text,
        "choices": [{"message": {"role": "assistant", "content": text}}],
        "usage": turn.get("metrics"),
        "latency_ms": turn.get("latency_ms"),
        "ttft_ms": turn.get("ttft_ms"),
        "degraded": True,
    }


class _Clock:
    """Event times for synthesized records: the turn's own, else the last one used."""

    __slots__ = ("last",)

    def __init__(self, started_at: Any) -> None:
        self.last: dict[str, Any] = {"timestamp_unix_ms": 0}
        if started_at is not None:
            self.last = self._from(started_at)

    @staticmethod
    def _from(ts: Any) -> dict[str, Any]:
        ns = timestamp_ns(ts)
        text = ts if type(ts) is str else format_rfc3339(ns)
        out: dict[str, Any] = {}
        if ns >= 0:
            out["timestamp_unix_ms"] = ns // NS_PER_MS
        out["timestamp"] = text
        return out

    def fields(self, ts: Any) -> dict[str, Any]:
        if ts is not None:
            self.last = self._from(ts)
        return dict(self.last)


# --- synthesis of wire bodies: Storyline → events of one protocol -------------------------------------

# What the projection writes in a wire turn's extra, and synthesis therefore reads back.
_CALL_EXTRA: Final = frozenset(
    {"call_id", "protocol", "seq", "message_index", "system", "tools", "params", "role", "unmapped", "blocks"}
)
_RESPONSE_EXTRA: Final = frozenset({"status", "error", "response_unmapped"})


def wire_protocol(story: dict[str, Any]) -> str | None:
    """The wire protocol a Storyline was projected from: the first turn's ``extra.protocol``, if any."""
    for turn in story["turns"]:
        extra = turn.get("extra")
        protocol = extra.get("protocol") if type(extra) is dict else None
        if type(protocol) is str:
            return protocol
    return None


def synthesize_wire(
    story: dict[str, Any], protocol: str, *, notes: list[Problem] | None = None
) -> list[dict[str, Any]]:
    """EventRecords whose bodies are requests and responses of `protocol` (a table in ``mappings/wire/``).

    Each agent turn that is not ``kind: history`` is one call: its request carries the whole
    conversation so far (the turns before it written as the protocol's messages, the previous
    agent turn's observation results as its tool results) and its response is the turn.  The
    system prompt, tools and other request parameters come from the turns' ``extra.system``,
    ``extra.tools`` and ``extra.params`` (as the projection puts them), the model, stop reason,
    usage and status from the turn; ``latency_ms`` and ``ttft_ms`` go to ``payload.timing``.
    Values the protocol requires and the Storyline lacks (a response id, ``created``, a thinking
    signature) are written and listed in ``payload.synthesized`` (pointers into the payload), which
    the projection ignores.  Every payload carries ``degraded: true`` (E-4: a projection of the
    conversation, not the recorded wire).  A turn the protocol cannot carry (a system turn for
    Anthropic, a non-text message) is an ``events.unrepresentable`` error at its pointer; extra
    keys nothing reads back (``history_fork``) and ``unmapped`` places the writer does not write are
    reported in `notes`; ``extra.unmapped`` (the keys no rule read, by the pointer of where they
    stood) and a result's ``unmapped`` are written back there, a recorded value over a made-up one.
    """
    from mapc.mappings.wire.writers import WRITERS, Unrepresentable

    table = wire.table_named(protocol)
    writer = WRITERS.get(table.protocol) if table is not None else None
    if table is None or writer is None:
        known = sorted(WRITERS)
        raise MapcError.single("events.unknown_protocol", "", f"no writer for protocol {_q(protocol)}; known: {known}")
    try:
        return _Synthesis(story, table, writer(), notes).run()
    except Unrepresentable as exc:
        raise MapcError.single("events.unrepresentable", exc.where, f"{table.protocol}: {exc.message}") from None


class _Synthesis:
    """One Storyline written as calls of one protocol (see `synthesize_wire`)."""

    def __init__(self, story: dict[str, Any], table: wire.Table, writer: Any, notes: list[Problem] | None) -> None:
        self.story, self.table, self.writer, self.notes = story, table, writer, notes
        self.spec = table.spec
        self.seqs = _Seq()
        self.clock = _Clock(story.get("started_at"))
        self.events: list[dict[str, Any]] = []
        self.history: list[Any] = []
        self.declared: dict[str, Any] = {"params": {}}
        self.results: list[dict[str, Any]] = []  # the last response's results, for the next request
        self.calls = 0

    def run(self) -> list[dict[str, Any]]:
        pending: list[tuple[int, dict[str, Any]]] = []
        for i, turn in enumerate(self.story["turns"]):
            # only an explicit internal kind is a note: a system turn is the protocol's system message
            if turn.get("kind") == "internal" or (effective_kind(turn) == "internal" and turn["src"] != "system"):
                self._event(turn, "note", None, turn["msg"], self.seqs.take(turn))
                continue
            if turn["src"] == "agent" and turn.get("kind") != "history":
                self._call(pending, (i, turn))
                pending = []
            else:
                pending.append((i, turn))
        if pending or self.results:
            self._call(pending, None)
        return self.events

    def _event(self, turn: dict[str, Any] | None, kind: str, call_id: str | None, payload: Any, seq: int) -> None:
        record: dict[str, Any] = {"event_id": f"synthesized:{self.story['session']}:{len(self.events) + 1}"}
        record.update(seq=seq, source="pchronicle", kind=kind, producer="mapc events synthesize")
        record.update(self.clock.fields(turn.get("ts") if turn is not None else None))
        record["session_id"] = self.story["session"]
        record["agent_id"] = self.story["agent"]["id"]
        if call_id is not None:
            record["call_id"] = call_id
        record["payload"] = payload
        self.events.append(record)

    def _note(self, where: str, message: str) -> None:
        if self.notes is not None:
            self.notes.append(Problem("events.not_carried", where, message))

    def _messages(self, pending: list[tuple[int, dict[str, Any]]]) -> list[Any]:
        out: list[Any] = []
        results, self.results = self.results, []
        for i, turn in pending:
            where = f"/turns/{i}"
            if turn.get("observation") is not None:
                raise wire_unrepresentable(f"{where}/observation", "only an agent turn's observation can be written")
            if turn["src"] == "user":
                written = self.writer.user(turn, results, where)
                results = []
            elif turn["src"] == "system":
                written = self.writer.system(turn, where)
            elif turn["src"] == "agent":
                written = self.writer.history(turn, where)
            else:
                raise wire_unrepresentable(f"{where}/src", f"a {_q(turn['src'])} turn has no message in this protocol")
            # the turn's own message (after the tool results a user message may open with), or for a
            # list of items the turn's own run of them: where its unmapped pointers point
            if "items" in self.spec:
                own: Any = written if turn["src"] == "agent" else written[-1:]
            else:
                own = written[-1] if written else {}
            self._put_back(turn, own, where)
            out += written
        if results:
            out[:0] = self.writer.results(results, "/turns")
        return out

    def _call(self, pending: list[tuple[int, dict[str, Any]]], response: tuple[int, dict[str, Any]] | None) -> None:
        self.calls += 1
        turns = [t for _, t in pending] + ([response[1]] if response is not None else [])
        first = turns[0] if turns else None  # None: a last request carrying only the tool results
        call_id = next((c for c in map(_call_id_of, turns) if c), f"call-{self.calls}")
        for i, turn in [*pending, *([response] if response is not None else [])]:
            self._check_extra(i, turn, response is not None and turn is response[1])
        new = self._messages(pending)
        request: dict[str, Any] = {}
        made: list[str] = []
        spec = self.spec["request"]
        model = response[1].get("model") if response is not None else None
        if spec.get("model"):
            wire.set_at(request, spec["model"], model if type(model) is str else "unknown")
            if type(model) is not str:
                made.append(f"/http/request_body{spec['model']}")
        wire.set_at(request, spec["messages"], [*self.history, *new])
        self.history += new
        for turn in turns:
            extra = turn.get("extra") if type(turn.get("extra")) is dict else {}
            for name in ("system", "tools", "params"):
                if name in extra:
                    self.declared[name] = extra[name]
        for name in ("system", "tools"):
            if name in self.declared and spec.get(name):
                wire.set_at(request, spec[name], self.declared[name])
        params = self.declared["params"] if type(self.declared["params"]) is dict else {}
        request.update({k: v for k, v in params.items() if k not in request})
        for where, value in self.writer.request_defaults().items():
            if wire.at(request, where) is wire.MISSING:
                wire.set_at(request, where, value)
                made.append(f"/http/request_body{where}")
        path = self.writer.path(model) if hasattr(self.writer, "path") else self.table.paths[0]
        payload: dict[str, Any] = {
            "protocol": self.table.protocol,
            "degraded": True,
            "http": {"method": "POST", "path": path, "request_body": request},
        }
        if made:
            payload["synthesized"] = made
        self._event(first, "http.request", call_id, payload, self.seqs.take(first if pending else None))
        if response is not None:
            i, turn = response
            self._response(i, turn, call_id, streamed=request.get("stream") is True)

    def _put_back(self, turn: dict[str, Any], unit: Any, where: str) -> tuple[list[str], list[tuple[str, int]]]:
        """Write what the projection kept of the turn's message back into `unit`, what was written
        for the turn: first ``extra.blocks`` (blocks no rule reads, kept whole, by the pointer of
        where each stood in the message or run of items the turn was read from: inserted there,
        outer places first), then ``extra.unmapped`` (keys no rule read, by the same pointers).
        Returns the pointers written and the (list, index) of each insertion.  A place that is not
        there (or holds another ``type`` of block: the recorded message had its blocks in another
        order than the writer's) is a note."""
        from mapc.mappings.wire.writers import put_back

        extra = turn.get("extra") if type(turn.get("extra")) is dict else {}
        inserted: list[tuple[str, int]] = []
        blocks = extra.get("blocks")
        places = [(at, b) for at, b in blocks.items() if pointer.is_valid(at)] if type(blocks) is dict else []
        for at, block in sorted(places, key=lambda place: _place_order(place[0])):
            tokens = pointer.parse(at)
            parent = wire.at(unit, pointer.format(tokens[:-1])) if tokens else wire.MISSING
            last = tokens[-1] if tokens else ""
            if type(parent) is list and last.isdigit() and int(last) <= len(parent):
                parent.insert(int(last), copy.deepcopy(block))
                inserted.append((pointer.format(tokens[:-1]), int(last)))
            elif type(parent) is dict and not last.isdigit():  # a value that was no list of blocks: as it was
                parent[last] = copy.deepcopy(block)
            else:
                self._note(f"{where}/extra/blocks/{_escape(at)}", "no such place in what this protocol writes")
        kept = extra.get("unmapped")
        out: list[str] = []
        for at, residue in kept.items() if type(kept) is dict else ():
            node = wire.at(unit, at) if type(at) is str and pointer.is_valid(at) else wire.MISSING
            fits = type(node) is dict and type(residue) is dict
            if not fits or ("type" in residue and node.get("type", wire.MISSING) != residue["type"]):
                self._note(
                    f"{where}/extra/unmapped/{_escape(at) if type(at) is str else '?'}",
                    "no such place (of that block type) in what this protocol writes for the turn: not written back",
                )
                continue
            out += put_back(node, residue, at)
        return out, inserted

    def _check_extra(self, i: int, turn: dict[str, Any], is_response: bool) -> None:
        extra = turn.get("extra") if type(turn.get("extra")) is dict else {}
        known = _CALL_EXTRA | (
            _RESPONSE_EXTRA | self.writer.EXTRA | set(self.spec["response"]) if is_response else set()
        )
        for key in extra:
            if key not in known:
                self._note(f"/turns/{i}/extra/{_escape(key)}", "not written to the wire bodies, so not projected back")

    def _response(self, i: int, turn: dict[str, Any], call_id: str, *, streamed: bool = False) -> None:
        where = f"/turns/{i}"
        spec = self.spec["response"]
        extra = turn.get("extra") if type(turn.get("extra")) is dict else {}
        status = extra.get("status")
        failed = (type(status) is int and status >= 400) or "error" in extra
        said = turn["msg"] not in ("", None) or turn.get("tool_calls") or turn.get("reason")
        error_only = failed and not said and "error" in extra
        if error_only:  # the API's error object, not a message (the model is the request's)
            body, made_in_body = self.writer.error_body(extra["error"]), []
        else:
            body, made_in_body = self.writer.response(turn, where)
        made = set(made_in_body)

        def put(at: str, value: Any) -> None:
            wire.set_at(body, at, value)
            made.discard(at)

        if type(turn.get("model")) is str and spec.get("model") and not error_only:
            put(spec["model"], turn["model"])
        for name, at in spec.items():
            if name not in ("message", "model") and name in extra:
                put(at, extra[name])
        metrics = turn.get("metrics")
        if metrics is not None:
            if type(metrics) is not dict:
                raise wire_unrepresentable(f"{where}/metrics", "metrics that are not an object have no usage place")
            usage = self.spec.get("usage", {})
            for key, value in metrics.items():
                if key == "extra" and type(value) is dict and usage:
                    parent = next(iter(usage.values())).rsplit("/", 1)[0]
                    if wire.at(body, parent) is wire.MISSING:
                        put(parent, {})
                    wire.merge_into(wire.at(body, parent), value)
                elif key in usage:
                    put(usage[key], value)
                else:
                    raise wire_unrepresentable(
                        f"{where}/metrics/{_escape(key)}", "no usage field of the protocol holds it"
                    )
            for at, value in self.writer.USAGE.items():  # what the protocol's usage object requires
                if wire.at(body, at) is wire.MISSING:
                    wire.set_at(body, at, value)
                    made.add(at)
        if "error" in extra:
            body["error"] = extra["error"]
        if type(extra.get("response_unmapped")) is dict:  # the recorded values win over made-up ones
            for at, value in _leaves(extra["response_unmapped"], "", body):
                put(at, value)
        inside = spec["message"]  # the message's keys no rule read, back where they stood (recorded over made up)
        written, inserted = self._put_back(turn, wire.at(body, inside), where)
        for parent, index in inserted:  # a made-up value after an inserted block moved one place on
            made = {_shifted(p, inside + parent, index) for p in made}
        made.difference_update(inside + p for p in written)
        http: dict[str, Any] = {"status": extra.get("status", 200), "response_body": body}
        kind = "http.response"
        if streamed and hasattr(self.writer, "stream") and "error" not in extra:  # as the request asked: SSE
            http.update(response_body=self.writer.stream(body), body_encoding="sse")
            kind = "http.response.stream"
        synthesized = [f"/http/response_body{p}" for p in sorted(made)]
        if "status" not in extra:
            synthesized.append("/http/status")
        payload: dict[str, Any] = {"protocol": self.table.protocol, "degraded": True, "http": http}
        timing = {
            k: v
            for k, v in (("duration_ms", turn.get("latency_ms")), ("ttft_ms", turn.get("ttft_ms")))
            if v is not None
        }
        if timing:
            payload["timing"] = timing
        if synthesized:
            payload["synthesized"] = synthesized
        self._event(turn, kind, call_id, payload, self.seqs.take(turn))
        if not failed or said:  # as the projection reads it: a failed call the client got nothing from
            self.history += self.writer.history(turn, where)
        observation = turn.get("observation")
        if observation is not None:
            results = observation.get("results") if type(observation) is dict else None
            if type(results) is not list or set(observation) != {"results"}:
                raise wire_unrepresentable(
                    f"{where}/observation", "only {results: [...]} can be written as tool results"
                )
            keys = self.writer.RESULT_KEYS
            for n, result in enumerate(results):
                if type(result) is not dict or type(result.get("source_call_id")) is not str or not set(result) <= keys:
                    raise wire_unrepresentable(
                        f"{where}/observation/results/{n}", f"a tool result with source_call_id and only {sorted(keys)}"
                    )
            self.results = list(results)


def _place_order(at: str) -> tuple[int, list[int]]:
    """Places outer first (fewer tokens), then by position: an inserted item before its blocks."""
    tokens = pointer.parse(at)
    return len(tokens), [int(t) if t.isdigit() else -1 for t in tokens]


def _shifted(made: str, parent: str, index: int) -> str:
    """`made` (a pointer) with its position in the list at `parent` one on, when it is at or after `index`."""
    prefix = f"{parent}/"
    if not made.startswith(prefix):
        return made
    head, _, rest = made[len(prefix) :].partition("/")
    if not head.isdigit() or int(head) < index:
        return made
    return f"{prefix}{int(head) + 1}" + (f"/{rest}" if rest else "")


def wire_unrepresentable(where: str, message: str) -> Exception:
    """The writers' `Unrepresentable` (imported late: the writers live with the tables)."""
    from mapc.mappings.wire.writers import Unrepresentable

    return Unrepresentable(where, message)


def _leaves(value: Any, where: str, into: Any) -> Iterator[tuple[str, Any]]:
    """(pointer, value) of each leaf of `value` below `where`: objects are walked, and so is a list
    of objects where `into` already holds a list (a residue of its elements, such as one choice's
    ``logprobs``); any other value, an empty object or list included, is a leaf."""
    if type(value) is dict and value:
        for key, child in value.items():
            yield from _leaves(child, f"{where}/{_escape(key)}", into)
    elif type(value) is list and value and type(wire.at(into, where)) is list and all(type(v) is dict for v in value):
        for n, child in enumerate(value):
            yield from _leaves(child, f"{where}/{n}", into)
    else:
        yield where, value
