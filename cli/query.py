"""`mapc query DATASET "SQL" [--format table|csv|jsonl|json]`: SQL over runs, steps and tool_calls through DuckDB."""

from __future__ import annotations

from pathlib import Path

import click

from mapc.cli.files import write_bytes
from mapc.cli.output import dump_json, fail_on

FORMATS = ("table", "csv", "jsonl", "json")


@click.command("query")
@click.argument("dataset_dir", metavar="DATASET", type=click.Path(exists=True, file_okay=False))
@click.argument("sql", metavar='"SQL"')
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="table (default): aligned text, long cells cut; csv; jsonl: one object a line; json: an array.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
def query_command(dataset_dir: str, sql: str, fmt: str | None, as_json: bool) -> None:
    """Run SQL over runs, steps and tool_calls.

    DuckDB reads the dataset's three Lance tables under those names, each with its
    stored columns followed by typed convenience columns (is_error, exit_code, status,
    tokens, score, reward, …); docs/store.md lists every column.

    The table format cuts cells longer than 80 characters; the others print them whole.

    \b
    Examples:
      mapc query /tmp/corpus "select function_name, count(*) n from tool_calls group by 1 order by 2 desc"
      mapc query /tmp/corpus "select * from steps where session_id = 'support-001'" --json
      mapc query /tmp/corpus "select distinct session_id from tool_calls where is_error" --format csv
    """
    from mapc.store import query

    if as_json and fmt not in (None, "json"):
        raise click.UsageError(f"--json and --format {fmt} exclude each other")
    fmt = "json" if as_json else fmt or "table"
    with fail_on(dataset_dir):
        try:
            result = query.run(Path(dataset_dir), sql)
        except query.QueryError as exc:  # bad SQL is a usage mistake (exit 2), not bad data
            raise click.BadParameter(exc.problems[0].message, param_hint="SQL") from None
    if fmt == "json":
        write_bytes(None, dump_json(query.records(result)))
    elif fmt == "jsonl":
        write_bytes(None, query.jsonl_bytes(result))
    elif fmt == "csv":
        write_bytes(None, query.csv_text(result).encode("utf-8"))
    else:
        click.echo(query.text_table(result))


@click.command("stats")
@click.argument("dataset_dir", metavar="DATASET", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as one JSON object.")
def stats_command(dataset_dir: str, as_json: bool) -> None:
    """Overview of a dataset: counts, tokens, tool errors, latency; per agent, model and tool.

    Tokens are the sums of the turns' integer prompt/completion/cached token metrics; the
    error rate is over the tool calls whose is_error is known; percentiles are nearest
    rank; a turn's model is its own, else its agent's (agent turns only).

    \b
    Examples:
      mapc stats /tmp/corpus
      mapc stats /tmp/corpus --json
    """
    from mapc.store import stats

    with fail_on(dataset_dir):
        result = stats.overview(Path(dataset_dir))
    if as_json:
        write_bytes(None, dump_json(result))
    else:
        click.echo(stats.text(result), nl=False)


@click.command("find")
@click.argument("dataset_dir", metavar="DATASET", type=click.Path(exists=True, file_okay=False))
@click.argument("text", metavar="TEXT")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many hits.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as a JSON array of objects.")
def find_command(dataset_dir: str, text: str, limit: int, as_json: bool) -> None:
    """Full-text search over messages and tool results.

    Searches steps.message_json, steps.observation_json and tool_calls.result_json with
    the full-text indexes `mapc index` creates (BM25; words, lower-cased), best first.
    Each hit names its document, session, step (and call) and shows a snippet.

    \b
    Examples:
      mapc index /tmp/corpus
      mapc find /tmp/corpus "refund policy"
      mapc find /tmp/corpus error --json --limit 5
    """
    from mapc.store import find, query

    with fail_on(dataset_dir):
        hits = find.search(Path(dataset_dir), text, limit=limit)
    if as_json:
        write_bytes(None, dump_json([h.as_dict() for h in hits]))
        return
    names = ["score", "document_id", "step_id", "where", "snippet"]
    body = [
        (
            round(h.score, 3),
            h.document_id,
            h.step_id,
            f"{h.table}.{h.column}" + ("" if h.call_index is None else f"[{h.call_index}]"),
            h.snippet,
        )
        for h in hits
    ]
    click.echo(query.text_table(query.Result(names, body), width=100))
