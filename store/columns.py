"""Every column of the dataset, documented: the stored columns of the three Lance tables, and the typed
convenience columns `mapc query` adds in front of them.

The stored columns are `rows.SCHEMAS`; `STORED` holds one sentence per column and `describe` fails on a
column it lacks, so a column added to the layout without a word here fails the docs test.  The
convenience columns (`DERIVED`) are not stored: `mapc query`, `mapc stats` and `mapc export --where`
see each table as a DuckDB view, ``SELECT *, <derived> FROM <the Lance table>``, so they are computed
from the JSON cells when a query names them and cost nothing otherwise, and every dataset, old or new,
has them.  A derived value is read only from a JSON value of the right type (an integer for
``exit_code``, a number for ``score``, …): ``"12"`` or ``1.5`` for a token count gives NULL, never a
converted number.

`markdown` renders docs/store.md from these tables and the Arrow schemas (tests/store/test_columns.py
compares the file, so it cannot drift): ``python -m mapc.store.columns > docs/store.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import pyarrow as pa

from mapc.store import rows

STORED: Final[dict[str, dict[str, str]]] = {
    "runs": {
        "schema_version": 'Always `"storyline/v1"`; another value fails the read closed.',
        "origin_json": "`/origin`: the source format, its schema and the source document identity.",
        "document_id": "The document's identity: `/trajectory` when present, else `/session`; unique in the dataset.",
        "storage_ordinal": "The document's place in the dataset, increasing in import order (a document "
        "stored again with `--replace` takes a new, last place); exports sort by it.",
        "trajectory_id_explicit": "Whether the document had a `/trajectory` (then it is `document_id`).",
        "run_id": "`/run`: the run-scoped identity.",
        "attempt_id": "`/attempt_id`: the source format's attempt identity.",
        "session_id": "`/session`.",
        "agent_id": "`/agent/id`.",
        "agent_name": "`/agent/name`.",
        "agent_version": "`/agent/ver`.",
        "agent_model_name": "`/agent/model`: the agent's default model.",
        "agent_tool_definitions_json": "`/agent/tools`: the tool definitions the agent was given.",
        "agent_extra_json": "`/agent/extra`.",
        "parent_json": "`/parent`: the link to a parent Storyline (a subagent's spawning session).",
        "child_session_ids_json": "`/children`: the sessions of child Storylines.",
        "notes": "`/notes`.",
        "final_metrics_json": "`/final_metrics`: the document's totals (tokens, cost, steps, reward, …), any JSON.",
        "continued_trajectory_ref": "`/continued_trajectory_ref`: the trajectory this one continues.",
        "extra_json": "`/extra`.",
        "meta_json": "`/meta`.",
        "unknown_fields_json": "`/unknown_fields`: source fields no rule read, kept by pointer (lossless round trips).",
        "unknown_key_counts_json": "`/unknown_key_counts`: how many unknown fields each source pointer had.",
        "task_json": "`/task`: the evaluation (`result`: correct, score, status, …), its environment and budget.",
        "started_at_json": "`/started_at` as written (RFC 3339 text or epoch seconds).",
        "finished_at_json": "`/finished_at` as written.",
        "prompt_json": "`/prompt`: the document's system and user prompt.",
    },
    "steps": {
        "document_id": "The document the turn belongs to (`runs.document_id`).",
        "run_id": "Copied from the document's `runs.run_id` (checked on read).",
        "session_id": "Copied from the document's `runs.session_id` (checked on read).",
        "step_id": "`/turns/N/id`: unique within the document.",
        "turn_ordinal": "The turn's place in `/turns` (0, 1, …); exports sort by it.",
        "kind": "`/turns/N/kind` as written (free text).",
        "effective_kind": "The kind, else derived: `user` → dialogue, `system` → internal, "
        "an agent turn with tool calls → autonomous, else dialogue.",
        "timestamp": "`/turns/N/ts` as a UTC timestamp (ns), for filtering and sorting.",
        "timestamp_source_json": "`/turns/N/ts` as written (the exact source of `timestamp`).",
        "source": "`/turns/N/src`: who spoke (`user`, `agent`, `system`, …).",
        "message_json": "`/turns/N/msg`: the message, any JSON (text, or parts with images).",
        "reasoning_content": "`/turns/N/reason`.",
        "reasoning_effort_json": "`/turns/N/effort`.",
        "metrics_json": "`/turns/N/metrics`: token counts, cost, … of the turn, any JSON.",
        "model_name": "`/turns/N/model`: the model of this turn.",
        "llm_call_count": "`/turns/N/nllm`.",
        "is_copied_context": "`/turns/N/copied`: a turn copied in as context.",
        "latency_ms": "`/turns/N/latency_ms`.",
        "ttft_ms": "`/turns/N/ttft_ms`: time to first token.",
        "had_tool_calls": "Whether the turn had `tool_calls` (an empty list counts; its calls are in `tool_calls`).",
        "had_observation": "Whether the turn had an `observation`.",
        "observation_json": "`/turns/N/observation`: the tool results the turn saw, verbatim.",
        "extra_json": "`/turns/N/extra`.",
        "env_json": "`/turns/N/env`: the environment, as a change to `/task/env`.",
        "finished_at_json": "`/turns/N/finished_at` as written.",
        "prompt_json": "`/turns/N/prompt`.",
    },
    "tool_calls": {
        "document_id": "The document the call belongs to (`runs.document_id`).",
        "run_id": "Copied from the document's `runs.run_id` (checked on read).",
        "session_id": "Copied from the document's `runs.session_id` (checked on read).",
        "step_id": "The turn that made the call (`steps.step_id`).",
        "call_index": "The call's place in the turn's `tool_calls` (0, 1, …).",
        "tool_call_id": "`tcid`: unique within the document.",
        "function_name": "`fn`: the tool called.",
        "arguments_json": "`args`: the arguments, any JSON.",
        "result_json": "`result`: the tool output carried on the call, any JSON.",
        "results_json": "The items of the turn's `observation.results` naming this call (`source_call_id`, "
        "else `tool_call_id`), a JSON array; derived, checked on read.",
        "duration_ms": "`duration_ms`.",
        "extra_json": "`extra`.",
        "kind": "`kind`: the tool event type.",
        "response_json": "`response`: the execution status (`status`, `exit_code`).",
    },
}


@dataclass(frozen=True, slots=True)
class Derived:
    """A convenience column: its name, DuckDB type, SQL over the stored columns, and what it means."""

    name: str
    type: str
    sql: str
    description: str


def _typed(column: str, path: str, kinds: tuple[str, ...], cast: str) -> str:
    """The JSON value at `path` of `column` as `cast`, only when its JSON type is one of `kinds`."""
    types = ", ".join(f"'{k}'" for k in kinds)
    extract = "json_extract_string" if cast == "VARCHAR" else "json_extract"
    return f"CASE WHEN json_type({column}, '{path}') IN ({types}) THEN {extract}({column}, '{path}')::{cast} END"


def _int(column: str, path: str) -> str:
    return _typed(column, path, ("BIGINT", "UBIGINT"), "BIGINT")


def _num(column: str, path: str) -> str:
    return _typed(column, path, ("BIGINT", "UBIGINT", "DOUBLE"), "DOUBLE")


def _bool(column: str, path: str) -> str:
    return _typed(column, path, ("BOOLEAN",), "BOOLEAN")


def _text(column: str, path: str) -> str:
    return _typed(column, path, ("VARCHAR",), "VARCHAR")


_FLAGS = "json_extract(results_json, '$[*].is_error')::VARCHAR[]"
_EXIT = _int("response_json", "$.exit_code")

DERIVED: Final[dict[str, tuple[Derived, ...]]] = {
    "runs": (
        Derived("correct", "BOOLEAN", _bool("task_json", "$.result.correct"), "`/task/result/correct`."),
        Derived("score", "DOUBLE", _num("task_json", "$.result.score"), "`/task/result/score`, when a number."),
        Derived(
            "result_status", "VARCHAR", _text("task_json", "$.result.status"), "`/task/result/status` (evaluation)."
        ),
        Derived(
            "reward",
            "DOUBLE",
            _num("final_metrics_json", "$.reward"),
            "`/final_metrics/reward`, when a number (OpenAI Messages rows' reward).",
        ),
        Derived(
            "total_prompt_tokens",
            "BIGINT",
            _int("final_metrics_json", "$.total_prompt_tokens"),
            "`/final_metrics/total_prompt_tokens` (ATIF), when an integer.",
        ),
        Derived(
            "total_completion_tokens",
            "BIGINT",
            _int("final_metrics_json", "$.total_completion_tokens"),
            "`/final_metrics/total_completion_tokens`, when an integer.",
        ),
        Derived(
            "total_cost_usd",
            "DOUBLE",
            _num("final_metrics_json", "$.total_cost_usd"),
            "`/final_metrics/total_cost_usd`, when a number.",
        ),
    ),
    "steps": (
        Derived(
            "prompt_tokens",
            "BIGINT",
            _int("metrics_json", "$.prompt_tokens"),
            "`/turns/N/metrics/prompt_tokens`, when an integer.",
        ),
        Derived(
            "completion_tokens",
            "BIGINT",
            _int("metrics_json", "$.completion_tokens"),
            "`/turns/N/metrics/completion_tokens`, when an integer.",
        ),
        Derived(
            "cached_tokens",
            "BIGINT",
            _int("metrics_json", "$.cached_tokens"),
            "`/turns/N/metrics/cached_tokens`, when an integer.",
        ),
        Derived(
            "cost_usd", "DOUBLE", _num("metrics_json", "$.cost_usd"), "`/turns/N/metrics/cost_usd`, when a number."
        ),
    ),
    "tool_calls": (
        Derived("status", "VARCHAR", _text("response_json", "$.status"), "`response.status`."),
        Derived("exit_code", "BIGINT", _EXIT, "`response.exit_code`."),
        Derived(
            "is_error",
            "BOOLEAN",
            f"CASE WHEN list_contains({_FLAGS}, 'true') OR {_EXIT} <> 0 THEN true"
            f" WHEN list_contains({_FLAGS}, 'false') OR {_EXIT} = 0 THEN false END",
            "true when one of the call's results says `is_error: true` or its `exit_code` is not 0; "
            "false when a result says `is_error: false` or the exit code is 0 (and nothing says error); "
            "else NULL (unknown).",
        ),
    ),
}


def view_sql(table: str, stored: str) -> str:
    """The DuckDB view of `table`: every stored column of `stored`, then the convenience columns."""
    derived = "".join(f", ({d.sql})::{d.type} AS {d.name}" for d in DERIVED[table])
    return f"SELECT *{derived} FROM {stored}"


TITLE: Final = "# The dataset's tables and columns"


def describe(table: str, column: str) -> str:
    """The sentence documenting a stored column (KeyError for one left undocumented)."""
    return STORED[table][column]


def _type(field: pa.Field) -> str:
    return f"{field.type}{'' if field.nullable else ', not null'}"


def markdown() -> str:
    """docs/store.md: every table, every stored column (Arrow type from the schema) and convenience column."""
    lines = [
        TITLE,
        "",
        "Generated from `store/rows.py` (the Arrow schemas) and `store/columns.py` (the descriptions) by",
        "`python -m mapc.store.columns > docs/store.md`; a test compares, so this file cannot drift.",
        "",
        "A dataset directory holds one Lance table per table below, plus `CURRENT` (the version of each",
        "table that readers see). `mapc query`, `mapc stats` and `mapc export --where` see each table with",
        "its stored columns followed by the convenience columns, computed from the JSON cells when named.",
        "JSON cells (`*_json`) are compact JSON text; NULL means the field was absent.",
        "",
        "For example, the sessions with a failed tool call: "
        '`mapc query DATASET "select distinct session_id from tool_calls where is_error"`.',
    ]
    for table, schema in rows.SCHEMAS.items():
        lines += ["", f"## `{table}`", "", "| column | type | meaning |", "|---|---|---|"]
        for field in schema:
            lines.append(f"| `{field.name}` | {_type(field)} | {describe(table, field.name)} |")
        for d in DERIVED[table]:
            lines.append(f"| `{d.name}` | {d.type.lower()}, convenience | {d.description} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
