"""`mapc query DATASET "SQL" [--json]`: SQL over runs, steps and tool_calls through DuckDB."""

from __future__ import annotations

from pathlib import Path

import click

from mapc.cli.files import write_bytes
from mapc.cli.output import dump_json, fail_on


@click.command("query")
@click.argument("dataset_dir", metavar="DATASET", type=click.Path(exists=True, file_okay=False))
@click.argument("sql", metavar='"SQL"')
@click.option("--json", "as_json", is_flag=True, help="Print the rows as a JSON array of objects.")
def query_command(dataset_dir: str, sql: str, as_json: bool) -> None:
    """Run SQL over runs, steps and tool_calls.

    DuckDB reads the dataset's three Lance tables under those names.

    Text output cuts cells longer than 80 characters; --json prints them whole.

    \b
    Examples:
      mapc query /tmp/corpus "select function_name, count(*) n from tool_calls group by 1 order by 2 desc"
      mapc query /tmp/corpus "select * from steps where session_id = 'support-001'" --json
    """
    from mapc.store import query

    with fail_on(dataset_dir):
        try:
            result = query.run(Path(dataset_dir), sql)
        except query.QueryError as exc:  # bad SQL is a usage mistake (exit 2), not bad data
            raise click.BadParameter(exc.problems[0].message, param_hint="SQL") from None
    if as_json:
        write_bytes(None, dump_json(query.records(result)))
    else:
        click.echo(query.text_table(result))
