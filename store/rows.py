"""Storyline ⇄ the three Arrow tables of docs/store.md: ``runs``, ``steps``, ``tool_calls``.

`split` turns validated Storylines into one Arrow table per Lance table; `rebuild` turns rows
back into Storylines, checking the §4 invariants first and failing closed (`MapcError`) when
the rows cannot be trusted.

JSON cells are plain UTF-8 strings, compact, and **canonical**: each cell is the orjson text of
its part of `canonical_storyline(doc)`, so owned objects (``origin``, ``parent``, ``task``,
``prompt``, ``env``, ``response``) keep the reference's declaration order with null optionals
left out, and free JSON (``msg``, ``args``, ``extra``, ``metrics``, …) has its object keys sorted,
which is what ``serde_json::to_string`` of the reference's typed value writes.  A JSON null in an
Option field means "absent" (R-ORDER aside, serde reads it so) and is stored as SQL NULL; the
required JSON-valued fields (``msg``, ``args``) keep a JSON ``null`` as the text ``null``.
Reading parses each cell with orjson, which keeps key order, and assembles the turn and call
objects in declaration order, so ``dumps(rebuild(split(doc))) == dumps(doc)`` byte for byte.

Order lives only in ``storage_ordinal``, ``turn_ordinal`` and ``call_index``; presence in
``had_tool_calls`` (``tool_calls: []`` versus absent), ``had_observation`` and
``trajectory_id_explicit``.  Readers always sort.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from mapc.engine import storyline
from mapc.engine.problems import MapcError, Problem
from mapc.engine.run import paused_gc
from mapc.engine.serialize import canonical_storyline, canonical_turn_part
from mapc.engine.timestamp import TimestampError, timestamp_ns
from mapc.engine.values import json_equal
from mapc.engine.views import document_id, effective_kind
from mapc.store.identity import is_session_id

SCHEMA_VERSION: Final = "storyline/v1"

_S = pa.string()
_I = pa.int64()
_B = pa.bool_()
_TS = pa.timestamp("ns", tz="UTC")


def _schema(*fields: tuple[str, pa.DataType, bool]) -> pa.Schema:
    return pa.schema([pa.field(name, kind, nullable=nullable) for name, kind, nullable in fields])


RUNS_SCHEMA: Final = _schema(
    ("schema_version", _S, False),
    ("origin_json", _S, True),
    ("document_id", _S, False),
    ("storage_ordinal", _I, False),
    ("trajectory_id_explicit", _B, False),
    ("run_id", _S, True),
    ("attempt_id", _S, True),
    ("session_id", _S, False),
    ("agent_id", _S, False),
    ("agent_name", _S, True),
    ("agent_version", _S, True),
    ("agent_model_name", _S, True),
    ("agent_tool_definitions_json", _S, True),
    ("agent_extra_json", _S, True),
    ("parent_json", _S, True),
    ("child_session_ids_json", _S, True),
    ("notes", _S, True),
    ("final_metrics_json", _S, True),
    ("continued_trajectory_ref", _S, True),
    ("extra_json", _S, True),
    ("meta_json", _S, True),
    ("unknown_fields_json", _S, True),
    ("unknown_key_counts_json", _S, True),
    ("task_json", _S, True),
    ("started_at_json", _S, True),
    ("finished_at_json", _S, True),
    ("prompt_json", _S, True),
)

STEPS_SCHEMA: Final = _schema(
    ("document_id", _S, False),
    ("run_id", _S, True),
    ("session_id", _S, False),
    ("step_id", _I, False),
    ("turn_ordinal", _I, False),
    ("kind", _S, True),
    ("effective_kind", _S, False),
    ("timestamp", _TS, True),
    ("timestamp_source_json", _S, True),
    ("source", _S, False),
    ("message_json", _S, False),
    ("reasoning_content", _S, True),
    ("reasoning_effort_json", _S, True),
    ("metrics_json", _S, True),
    ("model_name", _S, True),
    ("llm_call_count", _I, True),
    ("is_copied_context", _B, True),
    ("latency_ms", _I, True),
    ("ttft_ms", _I, True),
    ("had_tool_calls", _B, False),
    ("had_observation", _B, False),
    ("observation_json", _S, True),
    ("extra_json", _S, True),
    ("env_json", _S, True),
    ("finished_at_json", _S, True),
    ("prompt_json", _S, True),
)

TOOL_CALLS_SCHEMA: Final = _schema(
    ("document_id", _S, False),
    ("run_id", _S, True),
    ("session_id", _S, False),
    ("step_id", _I, False),
    ("call_index", _I, False),
    ("tool_call_id", _S, False),
    ("function_name", _S, False),
    ("arguments_json", _S, False),
    ("result_json", _S, True),
    ("results_json", _S, False),
    ("duration_ms", _I, True),
    ("extra_json", _S, True),
    ("kind", _S, True),
    ("response_json", _S, True),
)

SCHEMAS: Final = {"runs": RUNS_SCHEMA, "steps": STEPS_SCHEMA, "tool_calls": TOOL_CALLS_SCHEMA}
"""The three tables in write order, with their exact Arrow schemas."""


def _json(value: Any) -> bytes | None:
    """A JSON cell: compact text (its UTF-8 bytes, `_table` makes them a string column), or SQL NULL for
    an absent field."""
    return None if value is None else orjson.dumps(value)


def results_by_call(observation: Any) -> dict[str, list[Any]]:
    """``observation.results[]`` items grouped by ``source_call_id`` (else ``tool_call_id``).

    Items that are not objects, or name no string id, belong to no call.  Order and duplicates
    are kept: two results for one call are both that call's results.
    """
    out: dict[str, list[Any]] = {}
    if type(observation) is not dict:
        return out
    results = observation.get("results")
    if type(results) is not list:
        return out
    for item in results:
        if type(item) is not dict:
            continue
        key = item.get("source_call_id")
        if key is None:
            key = item.get("tool_call_id")
        if type(key) is str:
            out.setdefault(key, []).append(item)
    return out


@dataclass(frozen=True, slots=True)
class Tables:
    """The rows of some Storylines: one Arrow table per Lance table."""

    runs: pa.Table
    steps: pa.Table
    tool_calls: pa.Table

    def by_name(self) -> dict[str, pa.Table]:
        return {"runs": self.runs, "steps": self.steps, "tool_calls": self.tool_calls}


def _table(schema: pa.Schema, rows: list[tuple[Any, ...]]) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    arrays = [_array(col, field) for col, field in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def _array(values: Sequence[Any], field: pa.Field) -> pa.Array:
    if field.name.endswith("_json"):
        # orjson's bytes, never decoded into str objects: copied once into Arrow, checked as UTF-8 there.
        return pa.array(values, type=pa.binary()).cast(field.type)
    return pa.array(values, type=field.type)


def split(docs: Iterable[dict[str, Any]], *, first_ordinal: int = 0) -> Tables:
    """The rows of validated Storylines; ``storage_ordinal`` counts from `first_ordinal`.

    Documents must have passed `storyline.check`; `split` does not validate again.
    """
    builder = Builder(first_ordinal)
    with paused_gc():
        for doc in docs:
            builder.add(doc)
        return builder.tables()


class Builder:
    """Rows gathered document by document (`split` in steps): a store worker adds each file's
    documents and can take a file back out (`mark`, `truncate`) when one of them fails."""

    __slots__ = ("calls", "next_ordinal", "runs", "steps")

    def __init__(self, first_ordinal: int = 0) -> None:
        self.next_ordinal = first_ordinal
        self.runs: list[tuple[Any, ...]] = []
        self.steps: list[tuple[Any, ...]] = []
        self.calls: list[tuple[Any, ...]] = []

    def add(self, doc: dict[str, Any], doc_id: str | None = None) -> None:
        """The rows of one validated Storyline, with the next ``storage_ordinal`` (and `doc_id` as its
        ``document_id``: store/identity.py; default `document_id` of the Storyline)."""
        _split_one(doc, self.next_ordinal, self.runs, self.steps, self.calls, doc_id)
        self.next_ordinal += 1

    def mark(self) -> tuple[int, int, int, int]:
        return (self.next_ordinal, len(self.runs), len(self.steps), len(self.calls))

    def truncate(self, mark: tuple[int, int, int, int]) -> None:
        """Drop every row added since `mark` was taken."""
        self.next_ordinal = mark[0]
        del self.runs[mark[1] :], self.steps[mark[2] :], self.calls[mark[3] :]

    def tables(self) -> Tables:
        return Tables(
            _table(RUNS_SCHEMA, self.runs), _table(STEPS_SCHEMA, self.steps), _table(TOOL_CALLS_SCHEMA, self.calls)
        )


def _free(value: Any) -> bytes | None:
    """A free JSON cell: compact, object keys sorted by orjson (what `canonical_storyline` gives free
    values, without building a sorted copy first); SQL NULL for an absent field."""
    return None if value is None else orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _split_one(
    raw: dict[str, Any],
    ordinal: int,
    runs: list[tuple[Any, ...]],
    steps: list[tuple[Any, ...]],
    calls: list[tuple[Any, ...]],
    given_id: str | None = None,
) -> None:
    # The document's own fields in canonical form (small); the turns, most of the bytes, are read as
    # they are: their free JSON cells get sorted keys from orjson, their owned objects from the engine.
    doc = canonical_storyline({**raw, "turns": []})
    doc_id = given_id or document_id(doc)
    run_id = doc.get("run")
    session = doc["session"]
    agent = doc["agent"]
    get = doc.get
    runs.append(
        (
            SCHEMA_VERSION,
            _json(get("origin")),
            doc_id,
            ordinal,
            "trajectory" in doc,
            run_id,
            get("attempt_id"),
            session,
            agent["id"],
            agent.get("name"),
            agent.get("ver"),
            agent.get("model"),
            _json(agent.get("tools")),
            _json(agent.get("extra")),
            _json(get("parent")),
            _json(get("children")),
            get("notes"),
            _json(get("final_metrics")),
            get("continued_trajectory_ref"),
            _json(get("extra")),
            _json(get("meta")),
            _json(get("unknown_fields")),
            _json(get("unknown_key_counts")),
            _json(get("task")),
            _json(get("started_at")),
            _json(get("finished_at")),
            _json(get("prompt")),
        )
    )
    dumps = orjson.dumps
    sort = orjson.OPT_SORT_KEYS
    turns = raw["turns"]
    part = canonical_turn_part  # the owned objects (env, prompt, a call's response): the engine's canonical form
    for turn_ordinal, turn in enumerate(turns):
        t = turn.get
        step_id = turn["id"]
        ts = t("ts")
        observation = t("observation")
        tool_calls = t("tool_calls")
        steps.append(
            (
                doc_id,
                run_id,
                session,
                step_id,
                turn_ordinal,
                t("kind"),
                effective_kind(turn),
                None if ts is None else timestamp_ns(ts),
                _json(ts),
                turn["src"],
                dumps(turn["msg"], option=sort),
                t("reason"),
                _free(t("effort")),
                _free(t("metrics")),
                t("model"),
                t("nllm"),
                t("copied"),
                t("latency_ms"),
                t("ttft_ms"),
                tool_calls is not None,
                observation is not None,
                _free(observation),
                _free(t("extra")),
                _json(part("env", t("env"))),
                _json(t("finished_at")),
                _json(part("prompt", t("prompt"))),
            )
        )
        if not tool_calls:
            continue
        results = results_by_call(observation)
        for call_index, call in enumerate(tool_calls):
            c = call.get
            tcid = call["tcid"]
            calls.append(
                (
                    doc_id,
                    run_id,
                    session,
                    step_id,
                    call_index,
                    tcid,
                    call["fn"],
                    dumps(call["args"], option=sort),
                    _free(c("result")),
                    dumps(results.get(tcid, []), option=sort),
                    c("duration_ms"),
                    _free(c("extra")),
                    c("kind"),
                    _json(part("response", c("response"), call=True)),
                )
            )


# --- reading ----------------------------------------------------------------------------------------


def schema_problems(table: str, schema: pa.Schema) -> list[Problem]:
    """How a stored table's schema differs from §4 (names, order, Arrow types, nullability)."""
    expected = SCHEMAS[table]
    if schema.equals(expected):
        return []
    problems = []
    have = {f.name: f for f in schema}
    for field in expected:
        got = have.get(field.name)
        if got is None:
            problems.append(_p("store.schema_mismatch", table, f"{field.name}", "the column is missing"))
        elif not got.type.equals(field.type) or got.nullable != field.nullable:
            problems.append(
                _p(
                    "store.schema_mismatch",
                    table,
                    field.name,
                    f"expected {_describe(field)}, found {_describe(got)}",
                )
            )
    for name in have.keys() - set(expected.names):
        problems.append(_p("store.schema_mismatch", table, name, "the column is not part of the layout"))
    if not problems:
        problems.append(_p("store.schema_mismatch", table, "", "the columns are not in the layout's order"))
    return problems


def _describe(field: pa.Field) -> str:
    return f"{field.type}{'' if field.nullable else ' not null'}"


def _where(table: str, doc_id: str | None = None, **key: Any) -> str:
    """A pointer-ish location: ``steps[document_id="d", step_id=3]``."""
    parts = [] if doc_id is None else [f"document_id={orjson.dumps(doc_id).decode()}"]
    parts.extend(f"{name}={value}" for name, value in key.items())
    return f"{table}[{', '.join(parts)}]" if parts else table


def _p(code: str, table: str, column: str, message: str, doc_id: str | None = None, **key: Any) -> Problem:
    where = _where(table, doc_id, **key)
    return Problem(code, f"{where}.{column}" if column else where, message)


def _columns(table: pa.Table) -> dict[str, list[Any]]:
    """Each column as Python values; a JSON cell as its UTF-8 bytes (what orjson parses without a copy:
    a `str` would be decoded here and encoded again by the parser)."""
    out = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64())
        elif name.endswith("_json") and pa.types.is_string(column.type):
            column = column.cast(pa.binary())  # the same buffers, read as bytes
        out[name] = column.to_pylist()
    return out


def _sorted(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    if table.num_rows < 2:
        return table
    return table.take(pc.sort_indices(table, [(k, "ascending") for k in keys]))


def _grouped(table: pa.Table, groups: Sequence[str], order: str) -> pa.Table:
    """`table` with the rows of each `groups` key together, `order` ascending within each: as it is when it
    is already so (what mapc writes: a document's rows in turn order), checked with Arrow compute; else
    sorted by `groups` then `order` (copying every cell, the expensive way)."""
    n = table.num_rows
    if n < 2:
        return table
    head, tail = table.slice(0, n - 1), table.slice(1)
    changes = None
    for key in groups:
        differs = pc.not_equal(head.column(key), tail.column(key))
        changes = differs if changes is None else pc.or_(changes, differs)
    assert changes is not None
    rising = pc.greater(tail.column(order), head.column(order))
    in_order = pc.all(pc.or_(changes, rising)).as_py()
    if in_order and pc.sum(changes).as_py() + 1 == table.group_by(list(groups)).aggregate([]).num_rows:
        return table
    return _sorted(table, [*groups, order])


class _Cells:
    """Parses JSON cells of one table, reporting unparsable ones as problems (fail closed)."""

    __slots__ = ("problems", "table")

    def __init__(self, table: str, problems: list[Problem]) -> None:
        self.table = table
        self.problems = problems

    def parse(self, text: bytes | None, column: str, doc_id: str, **key: Any) -> Any:
        if text is None:
            return None
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            self.problems.append(
                _p("store.bad_json", self.table, column, f"the cell is not JSON: {exc}", doc_id, **key)
            )
            return None


def rebuild(runs: pa.Table, steps: pa.Table, tool_calls: pa.Table, *, validate: bool = True) -> list[dict[str, Any]]:
    """The Storylines of the rows, in ``storage_ordinal`` order, each checked and re-validated.

    Raises `MapcError` holding every broken invariant: unique ``document_id``; steps and calls
    whose document has no run (foreign keys) or whose denormalized ``session_id`` / ``run_id``
    differ from the run's; ``turn_ordinal`` 0..n-1 per document and unique ``step_id``;
    ``had_observation == (observation_json is not null)``; derived ``effective_kind`` and
    ``timestamp``; no call on a step with ``had_tool_calls = false``; ``call_index`` 0..n-1 per
    step; ``results_json`` equal to its derivation from the observation; JSON cells that parse;
    and finally `storyline.check` on each rebuilt document (`validated`), unless not `validate`: for
    a caller that validates the Storylines itself next (an export), and calls `validated` when that fails.
    """
    problems: list[Problem] = []
    for name, table in (("runs", runs), ("steps", steps), ("tool_calls", tool_calls)):
        problems.extend(schema_problems(name, table.schema))
    if problems:
        raise MapcError(problems)
    with paused_gc():
        docs = _rebuild_runs(_sorted(runs, ["storage_ordinal"]), problems)
        _attach_steps(docs, _grouped(steps, ["document_id"], "turn_ordinal"), problems)
        _attach_calls(docs, _grouped(tool_calls, ["document_id", "step_id"], "call_index"), problems)
        if problems:
            raise MapcError(problems)
        out = [state.finish() for state in docs.values()]
        return validated(out) if validate else out


def validated(stories: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`stories` (rebuilt from rows) when each passes `storyline.check`; else `MapcError` naming each
    problem by its document: ``runs[document_id="d"]/turns/0/src``."""
    problems = [
        Problem(
            "store.invalid_document",
            _where("runs", document_id(story)) + problem.pointer,
            f"the rebuilt Storyline is invalid: {problem.message} [{problem.code}]",
        )
        for story in stories
        for problem in storyline.check(story)
    ]
    if problems:
        raise MapcError(problems)
    return stories


class _Doc:
    """One document being rebuilt: its run row, its turns by step id, and its flags."""

    __slots__ = ("doc", "run_id", "session", "steps", "turns")

    def __init__(self, doc: dict[str, Any], session: str, run_id: str | None) -> None:
        self.doc = doc
        self.session = session
        self.run_id = run_id
        self.turns: list[dict[str, Any]] = []
        # step id -> (turn, had_tool_calls, observation, stored effective_kind)
        self.steps: dict[int, tuple[dict[str, Any], bool, Any, str]] = {}

    def finish(self) -> dict[str, Any]:
        """The document, with ``turns`` last as in the declaration order."""
        self.doc["turns"] = self.turns
        return self.doc


_RUN_JSON: Final = (
    "parent_json",
    "child_session_ids_json",
    "final_metrics_json",
    "extra_json",
    "meta_json",
    "unknown_fields_json",
    "unknown_key_counts_json",
    "task_json",
    "started_at_json",
    "finished_at_json",
    "prompt_json",
)


def _rebuild_runs(runs: pa.Table, problems: list[Problem]) -> dict[str, _Doc]:
    cells = _Cells("runs", problems)
    cols = _columns(runs)
    docs: dict[str, _Doc] = {}
    for i in range(runs.num_rows):
        doc_id = cols["document_id"][i]
        if doc_id in docs:
            problems.append(_p("store.duplicate_document_id", "runs", "document_id", "two runs rows share it", doc_id))
            continue
        if cols["schema_version"][i] != SCHEMA_VERSION:
            problems.append(
                _p(
                    "store.unsupported_version",
                    "runs",
                    "schema_version",
                    f"expected {SCHEMA_VERSION!r}, found {cols['schema_version'][i]!r}",
                    doc_id,
                )
            )
        v = {name: cells.parse(cols[name][i], name, doc_id) for name in _RUN_JSON}
        agent: dict[str, Any] = {"id": cols["agent_id"][i]}
        for key, column in (("name", "agent_name"), ("ver", "agent_version"), ("model", "agent_model_name")):
            if cols[column][i] is not None:
                agent[key] = cols[column][i]
        for key, column in (("tools", "agent_tool_definitions_json"), ("extra", "agent_extra_json")):
            value = cells.parse(cols[column][i], column, doc_id)
            if value is not None:
                agent[key] = value
        doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
        origin = cells.parse(cols["origin_json"][i], "origin_json", doc_id)
        _put(doc, "origin", origin)
        _put(doc, "run", cols["run_id"][i])
        if cols["trajectory_id_explicit"][i]:
            doc["trajectory"] = doc_id
        _put(doc, "attempt_id", cols["attempt_id"][i])
        doc["session"] = cols["session_id"][i]
        doc["agent"] = agent
        _put(doc, "parent", v["parent_json"])
        _put(doc, "children", v["child_session_ids_json"])
        _put(doc, "notes", cols["notes"][i])
        _put(doc, "task", v["task_json"])
        _put(doc, "prompt", v["prompt_json"])
        _put(doc, "started_at", v["started_at_json"])
        _put(doc, "finished_at", v["finished_at_json"])
        _put(doc, "final_metrics", v["final_metrics_json"])
        _put(doc, "continued_trajectory_ref", cols["continued_trajectory_ref"][i])
        _put(doc, "extra", v["extra_json"])
        _put(doc, "meta", v["meta_json"])
        _put(doc, "unknown_fields", v["unknown_fields_json"])
        _put(doc, "unknown_key_counts", v["unknown_key_counts_json"])
        explicit = cols["trajectory_id_explicit"][i]
        if not explicit and not is_session_id(doc_id, cols["session_id"][i]):
            derived = cols["session_id"][i]
            problems.append(
                _p(
                    "store.document_id_mismatch",
                    "runs",
                    "document_id",
                    f"without an explicit trajectory the document id is the session {derived!r}",
                    doc_id,
                )
            )
        docs[doc_id] = _Doc(doc, cols["session_id"][i], cols["run_id"][i])
    return docs


def _put(doc: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        doc[key] = value


def _denormalized(
    problems: list[Problem],
    table: str,
    state: _Doc,
    session: str,
    run_id: str | None,
    doc_id: str,
    **key: Any,
) -> None:
    if session != state.session:
        problems.append(
            _p(
                "store.denormalized_mismatch",
                table,
                "session_id",
                f"{session!r} differs from the run's {state.session!r}",
                doc_id,
                **key,
            )
        )
    if run_id != state.run_id:
        problems.append(
            _p(
                "store.denormalized_mismatch",
                table,
                "run_id",
                f"{run_id!r} differs from the run's {state.run_id!r}",
                doc_id,
                **key,
            )
        )


def _iter_groups(keys: list[Any]) -> Iterator[tuple[Any, int, int]]:
    """(key, start, end) of each run of equal `keys` (the table is sorted by them)."""
    start = 0
    n = len(keys)
    while start < n:
        key = keys[start]
        end = start + 1
        while end < n and keys[end] == key:
            end += 1
        yield key, start, end
        start = end


def _attach_steps(docs: dict[str, _Doc], steps: pa.Table, problems: list[Problem]) -> None:
    cells = _Cells("steps", problems)
    c = _columns(steps)
    step_ids, sessions, run_ids, kinds = c["step_id"], c["session_id"], c["run_id"], c["kind"]
    stamps, sources, reasons, effective = c["timestamp"], c["source"], c["reasoning_content"], c["effective_kind"]
    had_tool_calls, had_observation, observation_texts = (
        c["had_tool_calls"],
        c["had_observation"],
        c["observation_json"],
    )
    p_ts = _parsed(c, "timestamp_source_json", cells)
    p_msg = _parsed(c, "message_json", cells)
    p_effort = _parsed(c, "reasoning_effort_json", cells)
    p_obs = _parsed(c, "observation_json", cells)
    # The turn's fields after `observation`, in declaration order: (key, its values).
    plain_tail = (
        ("observation", p_obs),
        ("metrics", _parsed(c, "metrics_json", cells)),
        ("model", c["model_name"]),
        ("nllm", c["llm_call_count"]),
        ("copied", c["is_copied_context"]),
        ("latency_ms", c["latency_ms"]),
        ("ttft_ms", c["ttft_ms"]),
        ("extra", _parsed(c, "extra_json", cells)),
        ("env", _parsed(c, "env_json", cells)),
        ("prompt", _parsed(c, "prompt_json", cells)),
        ("finished_at", _parsed(c, "finished_at_json", cells)),
    )
    # had_observation == (observation_json is not null), for every row at once; row by row only to report.
    flags_hold = (
        steps.num_rows == 0
        or pc.all(pc.equal(steps.column("had_observation"), pc.is_valid(steps.column("observation_json")))).as_py()
    )
    for doc_id, start, end in _iter_groups(c["document_id"]):
        state = docs.get(doc_id)
        if state is None:
            problems.append(
                _p(
                    "store.foreign_key",
                    "steps",
                    "document_id",
                    f"{end - start} step row(s) belong to no run",
                    doc_id,
                )
            )
            continue
        ordinals = c["turn_ordinal"][start:end]
        if ordinals != list(range(end - start)):
            problems.append(
                _p(
                    "store.turn_ordinal",
                    "steps",
                    "turn_ordinal",
                    f"expected 0..{end - start - 1} each once, found {_show_ints(ordinals)}",
                    doc_id,
                )
            )
            continue
        for i in range(start, end):
            step_id = step_ids[i]
            if step_id in state.steps:
                key = {"step_id": step_id}
                problems.append(_p("store.duplicate_step_id", "steps", "step_id", "two steps share it", doc_id, **key))
                continue
            if sessions[i] != state.session or run_ids[i] != state.run_id:
                _denormalized(problems, "steps", state, sessions[i], run_ids[i], doc_id, step_id=step_id)
            turn: dict[str, Any] = {"id": step_id}
            if kinds[i] is not None:
                turn["kind"] = kinds[i]
            ts = p_ts[i]
            if ts is not None or stamps[i] is not None:
                _check_timestamp(problems, ts, stamps[i], doc_id, {"step_id": step_id})
            if ts is not None:
                turn["ts"] = ts
            turn["src"] = sources[i]
            turn["msg"] = p_msg[i]
            if reasons[i] is not None:
                turn["reason"] = reasons[i]
            if p_effort[i] is not None:
                turn["effort"] = p_effort[i]
            had_calls = had_tool_calls[i]
            if had_calls:
                turn["tool_calls"] = []
            observation = p_obs[i]
            if not flags_hold and had_observation[i] != (observation_texts[i] is not None):
                problems.append(
                    _p(
                        "store.observation_flag",
                        "steps",
                        "had_observation",
                        f"is {had_observation[i]} but observation_json is "
                        f"{'null' if observation_texts[i] is None else 'set'}",
                        doc_id,
                        step_id=step_id,
                    )
                )
            for name, values in plain_tail:
                value = values[i]
                if value is not None:
                    turn[name] = value
            # effective_kind depends on the calls: checked once they are attached.
            state.steps[step_id] = (turn, had_calls, observation, effective[i])
            state.turns.append(turn)


def _parsed(c: dict[str, list[Any]], column: str, cells: _Cells, keys: Sequence[str] = ("step_id",)) -> list[Any]:
    """Every cell of a JSON column parsed, in one pass; a cell that is not JSON is reported (with its row's
    document and `keys`) and read as NULL."""
    texts = c[column]
    loads = orjson.loads
    try:
        return [None if text is None else loads(text) for text in texts]
    except orjson.JSONDecodeError:
        doc_ids = c["document_id"]
        return [cells.parse(text, column, doc_ids[i], **{k: c[k][i] for k in keys}) for i, text in enumerate(texts)]


def _check_timestamp(problems: list[Problem], ts: Any, stored: int | None, doc_id: str, key: dict[str, Any]) -> None:
    try:
        expected = None if ts is None else timestamp_ns(ts)
    except TimestampError as exc:
        problems.append(_p("store.derived_column", "steps", "timestamp_source_json", str(exc), doc_id, **key))
        return
    if expected != stored:
        problems.append(
            _p(
                "store.derived_column",
                "steps",
                "timestamp",
                f"holds {stored} ns but the source timestamp gives {expected}",
                doc_id,
                **key,
            )
        )


def _attach_calls(docs: dict[str, _Doc], calls: pa.Table, problems: list[Problem]) -> None:
    cells = _Cells("tool_calls", problems)
    c = _columns(calls)
    keys = ("step_id", "call_index")
    sessions, run_ids, tcids, names = c["session_id"], c["run_id"], c["tool_call_id"], c["function_name"]
    indexes_all, results_texts = c["call_index"], c["results_json"]
    p_args = _parsed(c, "arguments_json", cells, keys)
    # The call's fields after `args`, in declaration order: (key, its values).
    tail = (
        ("result", _parsed(c, "result_json", cells, keys)),
        ("duration_ms", c["duration_ms"]),
        ("extra", _parsed(c, "extra_json", cells, keys)),
        ("kind", c["kind"]),
        ("response", _parsed(c, "response_json", cells, keys)),
    )
    dumps = orjson.dumps
    keys = list(zip(c["document_id"], c["step_id"], strict=True))
    for (doc_id, step_id), start, end in _iter_groups(keys):
        key = {"step_id": step_id}
        state = docs.get(doc_id)
        entry = None if state is None else state.steps.get(step_id)
        if state is None or entry is None:
            problems.append(
                _p(
                    "store.foreign_key",
                    "tool_calls",
                    "step_id",
                    f"{end - start} call row(s) belong to no {'run' if state is None else 'step'}",
                    doc_id,
                    **key,
                )
            )
            continue
        turn, had_calls, observation, _ = entry
        if not had_calls:
            problems.append(
                _p(
                    "store.calls_without_flag",
                    "tool_calls",
                    "step_id",
                    f"{end - start} call row(s) on a step with had_tool_calls = false",
                    doc_id,
                    **key,
                )
            )
            continue
        indexes = c["call_index"][start:end]
        if indexes != list(range(end - start)):
            problems.append(
                _p(
                    "store.call_index",
                    "tool_calls",
                    "call_index",
                    f"expected 0..{end - start - 1} each once, found {_show_ints(indexes)}",
                    doc_id,
                    **key,
                )
            )
            continue
        results = results_by_call(observation)
        out = turn["tool_calls"]
        for i in range(start, end):
            if sessions[i] != state.session or run_ids[i] != state.run_id:
                ckey = {"step_id": step_id, "call_index": indexes_all[i]}
                _denormalized(problems, "tool_calls", state, sessions[i], run_ids[i], doc_id, **ckey)
            tcid = tcids[i]
            call: dict[str, Any] = {"tcid": tcid, "fn": names[i], "args": p_args[i]}
            for name, values in tail:
                value = values[i]
                if value is not None:
                    call[name] = value
            derived = results.get(tcid, [])
            if results_texts[i] != dumps(derived):  # the same canonical text: the common case
                ckey = {"step_id": step_id, "call_index": indexes_all[i]}
                _check_results(problems, results_texts[i], derived, doc_id, ckey)
            out.append(call)
    if problems:
        return  # a turn missing its calls would report a misleading effective_kind
    for doc_id, state in docs.items():
        for step_id, (turn, _, _, stored) in state.steps.items():
            expected = effective_kind(turn)
            if stored != expected:
                problems.append(
                    _p(
                        "store.derived_column",
                        "steps",
                        "effective_kind",
                        f"holds {stored!r} but the turn gives {expected!r}",
                        doc_id,
                        step_id=step_id,
                    )
                )


def _check_results(
    problems: list[Problem], stored: bytes, derived: list[Any], doc_id: str, key: dict[str, Any]
) -> None:
    if stored == orjson.dumps(derived):
        return
    try:
        same = json_equal(orjson.loads(stored), derived)
    except orjson.JSONDecodeError:
        same = False
    if not same:
        problems.append(
            _p(
                "store.results_mismatch",
                "tool_calls",
                "results_json",
                "differs from the observation.results[] items of this call",
                doc_id,
                **key,
            )
        )


def _show_ints(values: list[int]) -> str:
    shown = ", ".join(map(str, values[:8]))
    return shown + (", …" if len(values) > 8 else "")
