"""`mapc stats`: the overview people compute first on a trajectory corpus, in DuckDB over the dataset's views.

Counts (documents, turns, tool calls), tokens, tool-call error rates and latency percentiles, over the whole
dataset and per agent, per model and per tool.  Definitions (docs/store.md names the columns):

- tokens: the sums of the convenience columns ``steps.prompt_tokens``, ``completion_tokens`` and
  ``cached_tokens`` (integers in each turn's metrics; anything else counts as absent).
- errors: tool calls whose ``is_error`` is true; the error rate is over the calls whose ``is_error`` is known
  (true or false), and is null when none is.
- percentiles: nearest rank (the smallest value with at least p % of the values at or below it), of
  ``steps.latency_ms`` and ``tool_calls.duration_ms`` where present; null when no value is.
- a turn's model: its ``model_name``, else its document's ``agent_model_name``; only agent turns
  (``source = 'agent'``) are counted per model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from mapc.store import query

PERCENTILES: Final = (0.5, 0.9, 0.99)


def _rate(errors: int, known: int) -> float | None:
    return None if known == 0 else errors / known


def _percentiles(values: list[Any] | None, count: int) -> dict[str, Any]:
    shown = dict(zip(("p50", "p90", "p99"), values or (None, None, None), strict=True))
    return {"n": count, **shown}


def _rows(con: Any, sql: str) -> list[tuple[Any, ...]]:
    return con.execute(sql).fetchall()


_Q = "[" + ", ".join(map(str, PERCENTILES)) + "]"


def overview(root: Path) -> dict[str, Any]:
    """The statistics of the dataset at `root`, as JSON-ready values (see the module docstring)."""
    con = query.connect(root)
    try:
        return _overview(con)
    finally:
        con.close()


def _overview(con: Any) -> dict[str, Any]:
    (documents,) = _rows(con, "select count(*) from runs")[0]
    turns, prompt, completion, cached, latency_n, latency = _rows(
        con,
        f"""select count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
                   coalesce(sum(cached_tokens), 0), count(latency_ms), quantile_disc(latency_ms, {_Q})
            from steps""",
    )[0]
    calls, errors, known, duration_n, duration = _rows(
        con,
        f"""select count(*), count(*) filter (where is_error), count(is_error), count(duration_ms),
                   quantile_disc(duration_ms, {_Q})
            from tool_calls""",
    )[0]
    agents = _rows(
        con,
        """with t as (select document_id, count(*) n from steps group by 1),
                c as (select document_id, count(*) n, count(*) filter (where is_error) e, count(is_error) k
                      from tool_calls group by 1)
           select r.agent_id, count(*), coalesce(sum(t.n), 0), coalesce(sum(c.n), 0),
                  coalesce(sum(c.e), 0), coalesce(sum(c.k), 0)
           from runs r left join t using (document_id) left join c using (document_id)
           group by 1 order by 2 desc, 1""",
    )
    models = _rows(
        con,
        f"""select coalesce(s.model_name, r.agent_model_name) m, count(*), coalesce(sum(s.prompt_tokens), 0),
                   coalesce(sum(s.completion_tokens), 0), count(s.latency_ms), quantile_disc(s.latency_ms, {_Q})
            from steps s join runs r using (document_id)
            where s.source = 'agent'
            group by 1 order by 2 desc, 1 nulls last""",
    )
    tools = _rows(
        con,
        f"""select function_name, count(*), count(*) filter (where is_error), count(is_error),
                   count(duration_ms), quantile_disc(duration_ms, {_Q})
            from tool_calls group by 1 order by 2 desc, 1""",
    )
    return {
        "documents": documents,
        "turns": turns,
        "tool_calls": calls,
        "tokens": {"prompt": prompt, "completion": completion, "cached": cached},
        "tool_errors": {"errors": errors, "known": known, "rate": _rate(errors, known)},
        "latency_ms": _percentiles(latency, latency_n),
        "tool_duration_ms": _percentiles(duration, duration_n),
        "agents": [
            {
                "agent": a,
                "documents": d,
                "turns": t,
                "tool_calls": c,
                "tool_errors": e,
                "error_rate": _rate(e, k),
            }
            for a, d, t, c, e, k in agents
        ],
        "models": [
            {
                "model": m,
                "agent_turns": n,
                "prompt_tokens": p,
                "completion_tokens": c,
                "latency_ms": _percentiles(q, ln),
            }
            for m, n, p, c, ln, q in models
        ],
        "tools": [
            {
                "tool": f,
                "calls": n,
                "errors": e,
                "error_rate": _rate(e, k),
                "duration_ms": _percentiles(q, dn),
            }
            for f, n, e, k, dn, q in tools
        ],
    }


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if type(value) is float:
        return f"{value:.1%}" if 0 <= value <= 1 else f"{value:g}"
    if type(value) is int:
        return f"{value:,}"
    return str(value)


def _table(title: str, header: list[str], body: list[list[Any]]) -> list[str]:
    cells = [[_show(v) for v in row] for row in body]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(header)]

    def line(row: list[str]) -> str:
        first = row[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))]).rstrip()

    return [title, line(header), "  ".join("-" * w for w in widths), *(line(r) for r in cells), ""]


def _p(stats: dict[str, Any]) -> list[Any]:
    return [stats["p50"], stats["p90"], stats["p99"]]


def text(stats: dict[str, Any]) -> str:
    """The statistics as aligned text tables, for a terminal."""
    tokens = stats["tokens"]
    errors = stats["tool_errors"]
    out = _table(
        "overview",
        ["", "value"],
        [
            ["documents", stats["documents"]],
            ["turns", stats["turns"]],
            ["tool calls", stats["tool_calls"]],
            ["prompt tokens", tokens["prompt"]],
            ["completion tokens", tokens["completion"]],
            ["cached tokens", tokens["cached"]],
            ["tool errors", f"{_show(errors['errors'])} of {_show(errors['known'])} known"],
            ["tool error rate", errors["rate"]],
        ],
    )
    out += _table(
        "latency (ms)",
        ["", "n", "p50", "p90", "p99"],
        [
            ["turn latency", stats["latency_ms"]["n"], *_p(stats["latency_ms"])],
            ["tool duration", stats["tool_duration_ms"]["n"], *_p(stats["tool_duration_ms"])],
        ],
    )
    out += _table(
        "per agent",
        ["agent", "documents", "turns", "tool calls", "errors", "error rate"],
        [
            [a["agent"], a["documents"], a["turns"], a["tool_calls"], a["tool_errors"], a["error_rate"]]
            for a in stats["agents"]
        ],
    )
    out += _table(
        "per model (agent turns)",
        ["model", "turns", "prompt tokens", "completion tokens", "latency p50", "p90"],
        [
            [
                m["model"] if m["model"] is not None else "(none)",
                m["agent_turns"],
                m["prompt_tokens"],
                m["completion_tokens"],
                m["latency_ms"]["p50"],
                m["latency_ms"]["p90"],
            ]
            for m in stats["models"]
        ],
    )
    out += _table(
        "per tool",
        ["tool", "calls", "errors", "error rate", "duration p50", "p90"],
        [
            [t["tool"], t["calls"], t["errors"], t["error_rate"], t["duration_ms"]["p50"], t["duration_ms"]["p90"]]
            for t in stats["tools"]
        ],
    )
    return "\n".join(out).rstrip() + "\n"
