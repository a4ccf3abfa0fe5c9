"""``kg neo4j load``, ``kg cypher`` and ``kg export`` (Cypher script / neo4j-admin CSVs)."""

from __future__ import annotations

import contextlib
import csv
import functools
import io
import json
from collections.abc import Callable
from pathlib import Path

import click

from kg.cli.common import input_options, report_skips, show_progress
from kg.data import data_dir
from kg.errors import QueryError
from kg.exports import check_writable
from kg.neo4j import (
    Connection,
    bind_params,
    clear_all,
    clear_project_dir,
    connect,
    load,
    load_project,
    project_id,
    run_query,
    service_error,
    service_errors,
    write_admin_csvs,
    write_cypher_script,
    write_project_admin_csvs,
)
from kg.pipeline import load_corpus
from kg.progress import Progress, step
from kg.text import shorten

TABLE_CELL = 60  # characters of one cell in `kg cypher`'s table output


def connection_options(func: Callable) -> Callable:
    """--uri/--user/--password/--database, each defaulting to its NEO4J_* variable."""
    decorators = [
        click.option("--uri", envvar="NEO4J_URI", default="bolt://127.0.0.1:7687",
                     show_default=True, show_envvar=True, help="Neo4j Bolt URI."),
        click.option("--user", envvar="NEO4J_USER", default="neo4j", show_default=True,
                     show_envvar=True, help="Neo4j user."),
        click.option("--password", envvar="NEO4J_PASSWORD", default="", show_envvar=True,
                     help="Neo4j password (prefer the variable: options show up in `ps`)."),
        click.option("--database", envvar="NEO4J_DATABASE", default="neo4j", show_default=True,
                     show_envvar=True, help="Database name."),
    ]

    def wrapper(**kwargs):
        kwargs["conn"] = Connection(kwargs.pop("uri"), kwargs.pop("user"),
                                    kwargs.pop("password"), kwargs.pop("database"))
        return func(**kwargs)

    functools.update_wrapper(wrapper, func)
    for decorator in reversed(decorators):
        wrapper = decorator(wrapper)
    return wrapper


@click.group()
def neo4j() -> None:
    """Load the graph into Neo4j (see also `kg cypher` and `kg export`)."""


@neo4j.command("load")
@input_options
@connection_options
@click.option("--batch-size", type=click.IntRange(1, 100_000), default=250, show_default=True,
              help="Papers per transaction (each paper's facts always commit together).")
@click.option("--tx-timeout", type=click.FloatRange(0.1), default=300.0, show_default=True,
              help="Seconds before Neo4j aborts one batch's transaction.")
def load_cmd(inputs, ingest, strict, workers, conn, batch_size, tx_timeout):
    """MERGE papers, entities, concepts and relations into Neo4j.

    INPUT is raw papers (any format kg reads), an extraction JSONL, or a `kg build` project
    directory. Loading again adds nothing; loading another corpus merges shared entities.
    Constraints and indexes are created first.

    A project directory (one INPUT, built by `kg build -o DIR`) owns its part of the
    database: its nodes carry the project's id (printed; `--param project=ID` in saved
    queries), beside other projects' parts. It is loaded as a delta: only the papers added,
    changed or removed since the last load into the same URI and database (recorded in
    DIR/.kg/neo4j-loads.json) are written, and entities no paper supports any more are
    deleted. Without a record, or when its part no longer matches it, its part is cleared
    and loaded whole, and it says why. Then the derived facts the saved queries read
    (technique users, co-occurrence, related papers) are rewritten and the part's counts
    checked against the project: a difference is an error saying what to run.

    \b
    Examples:
      kg neo4j load examples/iclr2025-seed.txt --uri bolt://127.0.0.1:7687 --user neo4j
      NEO4J_PASSWORD=secret kg neo4j load exports/
    """
    # kg.project here, not at the top: its import (about 50 ms) is not for `kg cypher`.
    from kg.project import is_project, open_project

    tty = show_progress()
    if tty:
        step(f"connecting to Neo4j at {conn.uri}")
    # Server and password are checked before the (long) reading and extraction, not after.
    driver = connect(conn)
    try:
        def on_retry(batch, exc) -> None:
            click.echo(f"warning: {batch.describe()} failed ({exc}); retrying once", err=True)

        with contextlib.ExitStack() as stack:
            bar = None

            def on_plan(n_papers: int) -> None:
                nonlocal bar
                if tty and n_papers:
                    bar = stack.enter_context(Progress(n_papers, "loading into Neo4j"))

            def on_batch(batch) -> None:
                if bar is not None:
                    bar.update(len(batch.papers))

            if len(inputs) == 1 and is_project(inputs[0]):
                report = load_project(open_project(inputs[0]), conn,
                                      papers_per_batch=batch_size, tx_timeout=tx_timeout,
                                      on_retry=on_retry, on_batch=on_batch, on_plan=on_plan,
                                      driver=driver)
            else:
                notices: list[str] = []
                corpus = load_corpus(inputs, strict=strict, workers=workers, progress=tty,
                                     options=ingest, notices=notices)
                report_skips(corpus, notices)
                on_plan(len(corpus))
                report = load(corpus, conn, papers_per_batch=batch_size,
                              tx_timeout=tx_timeout, on_retry=on_retry, on_batch=on_batch,
                              driver=driver)
    finally:
        driver.close()
    click.echo(report.summary())


@neo4j.command("clear")
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@click.option("--all", "everything", is_flag=True,
              help="Delete everything in the database, every project's part and the rest.")
@click.option("--yes", is_flag=True, help="Do not ask before --all.")
@connection_options
def clear_cmd(directory, everything, yes, conn):
    """Delete a project's part of the database (DIR), or everything (--all).

    The project's papers and entities go with their relationships, then the concepts no
    other project uses; other projects' parts stay. Its load record is dropped, so the next
    `kg neo4j load DIR` is a full load.

    \b
    Examples:
      kg neo4j clear exports/
      kg neo4j clear --all --yes
    """
    if bool(directory) == everything:
        raise click.UsageError("give a project DIR, or --all (not both)")
    if everything and not yes:
        click.confirm(f"Delete everything in {conn.uri} database {conn.database}?",
                      abort=True)
    driver = connect(conn)
    try:
        with driver.session(database=conn.database) as session, service_errors(conn):
            if everything:
                click.echo(clear_all(session).summary(f"{conn.uri} database {conn.database}"))
            else:
                click.echo(clear_project_dir(Path(directory), conn, session).summary(
                    f"the part of {directory} in {conn.uri} database {conn.database}"))
    finally:
        driver.close()


def resolve_query_file(name: str) -> Path:
    """A path, or the name of a saved query in cypher/ (with or without ``.cypher``)."""
    path = Path(name)
    if path.is_file():
        return path
    folder = data_dir("cypher")
    for candidate in (folder / name, folder / f"{name}.cypher"):
        if candidate.is_file():
            return candidate
    saved = sorted(p.stem for p in folder.glob("*.cypher"))
    raise QueryError(f"{name}: no such file or saved query"
                     + (f"; saved queries: {', '.join(saved)}" if saved else ""))


def _parse_params(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{item!r}: use name=value", param_hint="--param")
        out[name.strip()] = value
    return out


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "; ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def format_rows(keys: list[str], rows: list[dict], fmt: str) -> str:
    """Rows as an aligned table, JSON (list of objects) or CSV."""
    if fmt == "json":
        return json.dumps(rows, ensure_ascii=False, indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(keys)
        writer.writerows([_cell(r[k]) for k in keys] for r in rows)
        return buf.getvalue()
    # Long cells are shortened with a visible "…" (the JSON and CSV formats keep them whole).
    cells = [[shorten(_cell(r[k]), TABLE_CELL) for k in keys] for r in rows]
    widths = [max([len(k)] + [len(c[i]) for c in cells]) for i, k in enumerate(keys)]

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(keys), line(["-" * w for w in widths])]
    out.extend(line(c) for c in cells)
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"


@click.command()
@click.argument("query_file", metavar="FILE")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="A query parameter (repeatable); types come from the file's @param lines.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table",
              show_default=True)
@click.option("--write", is_flag=True, help="Allow the query to write (default: read-only).")
@click.option("--project", "project_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Ask only project DIR's part of the database (sets --param project to "
                   "its id).")
@connection_options
def cypher(query_file, params, fmt, write, project_dir, conn):
    """Run a saved, parameterised Cypher query (a file, or a name from cypher/).

    Values are sent as query parameters, never pasted into the query text. The header
    lines `// @param name:type[=default] help` declare each file's parameters.

    \b
    Examples:
      kg cypher papers-sharing-technique --param technique=quantization
      kg cypher cypher/related-papers.cypher --param paper=p-05c5fc60b666 --format json
      kg cypher techniques --project exports/ --param limit=10 --param skip=10
    """
    # The driver itself only here, where a query runs: its import takes 0.2 s of CPU.
    import neo4j as driver_pkg
    import neo4j.exceptions as nx

    path = resolve_query_file(query_file)
    text = path.read_text(encoding="utf-8")
    given = _parse_params(params)
    if project_dir is not None:
        if not (Path(project_dir) / ".kg").is_dir():
            raise click.BadParameter(f"{project_dir} is not a kg project (no .kg folder)",
                                     param_hint="--project")
        given["project"] = project_id(Path(project_dir))
    bound = bind_params(text, given, str(path))
    driver = connect(conn)
    mode = driver_pkg.WRITE_ACCESS if write else driver_pkg.READ_ACCESS
    try:
        with driver.session(database=conn.database, default_access_mode=mode) as session:
            keys, rows = run_query(session, text, bound)
    except (nx.Neo4jError, nx.DriverError) as exc:
        err = service_error(exc, conn)
        if isinstance(err, QueryError):
            raise QueryError(f"{path}: {err}") from exc
        raise err from exc
    finally:
        driver.close()
    click.echo(format_rows(keys, rows, fmt), nl=False)


@click.command()
@input_options
@click.option("--format", "fmt", type=click.Choice(["cypher", "neo4j-admin"]), required=True,
              help="cypher: a cypher-shell script; neo4j-admin: CSVs for database import.")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path),
              default=Path("exports"), show_default=True, help="Output directory.")
@click.option("--shard-papers", type=click.IntRange(1), default=5000, show_default=True,
              help="neo4j-admin from a project DIR: papers per CSV shard (what is held in "
                   "memory at once).")
def export(inputs, ingest, strict, workers, fmt, output, shard_papers):
    """Write the graph as a Cypher script or as neo4j-admin import CSVs.

    \b
    cypher       OUTPUT/graph.cypher: `cypher-shell -u neo4j -p … -f graph.cypher`
                 (data in :param blocks, the same MERGE statements as `kg neo4j load`).
    neo4j-admin  OUTPUT/neo4j-admin/*.csv and import.sh for `neo4j-admin database import`.
                 From a project directory (one INPUT, built by `kg build -o DIR`) the papers
                 are read --shard-papers at a time and each growing table is written as a
                 header file plus numbered shards (papers.header.csv, papers-000001.csv, …),
                 so memory stays bounded at any corpus size; import.sh names every file.

    \b
    Examples:
      kg export examples/iclr2025-seed.txt --format cypher
      kg export exports/ --format neo4j-admin -o exports/
    """
    from kg.project import is_project  # (here: about 50 ms, not for `kg cypher`)

    check_writable(output)  # before the long part, not after it
    admin = output / "neo4j-admin"
    if fmt == "neo4j-admin" and len(inputs) == 1 and is_project(inputs[0]):
        _export_project_admin(inputs[0], admin, shard_papers)
        return
    notices: list[str] = []
    corpus = load_corpus(inputs, strict=strict, workers=workers, progress=show_progress(),
                         options=ingest, notices=notices)
    report_skips(corpus, notices)
    if fmt == "cypher":
        path = write_cypher_script(corpus, output / "graph.cypher")
        click.echo(f"wrote {path}")
    else:
        paths = write_admin_csvs(corpus, admin)
        click.echo(f"wrote {len(paths)} files to {admin} (run {admin / 'import.sh'})")


def _export_project_admin(directory: str, admin: Path, shard_papers: int) -> None:
    from kg.project import open_project  # (here: about 50 ms, not for `kg cypher`)

    project = open_project(directory)
    n_papers = len(project.manifest.papers) - len(project.manifest.failed)
    with contextlib.ExitStack() as stack:
        on_batch = None
        if show_progress():
            on_batch = stack.enter_context(Progress(n_papers, "writing neo4j-admin CSVs")).update
        paths = write_project_admin_csvs(project, admin, papers_per_shard=shard_papers,
                                         on_batch=on_batch)
    shards = sum(1 for p in paths if p.name.startswith("papers-"))
    click.echo(f"wrote {len(paths)} files to {admin}: {n_papers:,} papers in {shards} "
               f"shard(s) of up to {shard_papers:,} (run {admin / 'import.sh'})")
