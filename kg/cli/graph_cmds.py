"""``kg build``, ``kg validate``, ``kg sparql`` and ``kg serve``: the RDF side of kg."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kg import project
from kg.analysis import resolve_papers
from kg.cli.common import input_options, report_skips, show_progress
from kg.cli.extract_cmds import MODELS, trained_model
from kg.errors import InputError, KgError, NotFoundError
from kg.exports import FORMATS, check_writable
from kg.model import Corpus
from kg.pipeline import PaperStream
from kg.progress import Progress, step
from kg.rdf import PREFIXES
from kg.server import ServerConfig
from kg.server import serve as run_server
from kg.sparql import execute_query, load_store, saved_queries, substitutions
from kg.text import shorten

RESULT_FORMATS = ("table", "json", "csv", "tsv", "xml", "turtle", "ntriples", "jsonld")


# Named from kg.exports.FORMATS, so a new format needs no edit here.
FORMATS_HELP = ("Export files to keep current, comma-separated: "
                f"{', '.join(f.name for f in FORMATS if f.project)}, or all. auto (the default "
                "for a new DIR): all of them up to 2,000 papers, above only extraction.jsonl "
                "(queries read the store either way). DIR remembers the choice.")


def _formats(formats: str | None, html: bool | None) -> tuple[str, ...] | None:
    asked = [f.strip() for f in formats.split(",") if f.strip()] if formats else []
    if html is not None:
        asked = (asked or ["@current"]) + (["html"] if html else ["-html"])
    return tuple(asked) or None


def _project_options(func):
    func = click.option("--html/--no-html", default=None,
                        help="Also write (or stop writing) graph.html, the offline "
                             "interactive view (as `kg viz`).")(func)
    func = click.option("--formats", default=None, metavar="LIST", help=FORMATS_HELP)(func)
    return click.option("--top", type=click.IntRange(0), default=10, show_default=True,
                        help="How many of the most shared techniques the summary lists.")(func)


def _engine_options(func):
    func = click.option(
        "--model", type=click.Choice(MODELS), default=None,
        help="none: kg's rules only; kg-span: the rules plus the trained span model's "
             "candidates. DIR remembers it: without --model, the model DIR was built with "
             "(none for a new DIR); another one extracts every paper again.")(func)
    func = click.option("--scheduler", default=None, metavar="ADDRESS",
                        help="With --engine dask: the Dask scheduler to run on, e.g. "
                             "tcp://HOST:8786 (its workers need this kg installed; start them "
                             "with `dask worker ADDRESS --nthreads 1`; --workers is then "
                             "ignored). Without it: a local cluster of --workers processes "
                             "for the run.")(func)
    return click.option("--engine", type=click.Choice(["local", "dask"]), default="local",
                        show_default=True,
                        help="What extracts the papers: local worker processes, or a Dask "
                             "cluster (pip install 'kg[dask]'). The exports are identical.")(func)


def _engine(engine: str, scheduler: str | None, model: str | None, directory: Path) -> dict:
    """The engine options for project.build/add, checked before any paper is read: the
    model asked, else the one ``directory`` was built with (a change is said at once)."""
    if scheduler is not None and engine != "dask":
        raise click.UsageError("--scheduler needs --engine dask")
    if engine == "dask":
        from kg.distributed import check_installed

        check_installed()
    before = project.built_with(directory)
    if model is not None and before is not None and model != before:
        click.echo(f"note: {directory} was built with --model {before}; --model {model} "
                   f"extracts every paper again ({_model_words(model)})", err=True)
    model = model or before or "none"
    trained_model(model)  # (checked: a model not shipped fails before any paper is read)
    return {"engine": engine, "scheduler": scheduler, "trained_model": model}


def _model_line(directory: Path) -> str:
    model = project.built_with(directory) or "none"
    return f"model: {model} ({_model_words(model)})"


def _model_words(model: str) -> str:
    return "kg's rules only" if model == "none" else f"kg's rules plus the {model} span model"


def _run_project(action, out_dir: Path, what, *, notices: list[str], skipped=(), workers=1,
                 formats=None, top=10, inputs=(), engine=None) -> None:
    """Run a project build/add/remove with progress on a terminal, then print the summary."""
    import contextlib


    on_step = on_progress = None
    with contextlib.ExitStack() as stack:
        if show_progress():

            bars: list = []

            def on_step(name: str) -> None:
                step(name if name.startswith("resolving") else
                     f"writing {name}" if "." in name else f"making {name}")

            def on_progress(done: int, total: int) -> None:
                if not bars:
                    bars.append([Progress(total, "extracting").__enter__(), 0])
                    stack.callback(lambda: bars[0][1] < total and bars[0][0].__exit__())
                bars[0][0].total = total  # (grows while a stream is read)
                bars[0][0].update(done - bars[0][1])
                bars[0][1] = done
                if done >= total:  # the bar's last line, before the steps that follow
                    bars[0][0].__exit__()

        outcome = action(out_dir, what, formats=formats, workers=workers,
                         on_progress=on_progress, on_step=on_step, inputs=inputs,
                         **(engine or {}))
    report_skips(Corpus((), skipped=(*skipped, *outcome.skipped)), notices)
    _summary(outcome, out_dir, top, len(skipped) + len(outcome.skipped))


def _summary(outcome, out_dir: Path, top: int, skipped: int) -> None:
    echo = click.echo
    counts = outcome.counts
    if outcome.noop:
        echo(f"{out_dir}: up to date — {counts['papers']} papers, {counts['entities']} "
             f"entities, {counts['relations']} relations; nothing changed, nothing written")
        echo(_model_line(out_dir))
        for notice in outcome.notices:
            echo(f"note: {notice}")
        return
    types, predicates = outcome.entity_types, outcome.predicates
    echo(f"papers: {counts['papers']}")
    echo(_model_line(out_dir))
    echo(f"changes: {len(outcome.added)} added, {len(outcome.changed)} changed, "
         f"{len(outcome.removed)} removed; {outcome.extracted} extracted")
    echo(f"entities: {counts['entities']}"
         + (" (" + ", ".join(f"{t} {n}" for t, n in sorted(types.items())) + ")" if types else ""))
    echo(f"relations: {sum(predicates.values())}"
         + (" (" + ", ".join(f"{p} {n}" for p, n in sorted(predicates.items())) + ")"
            if predicates else ""))
    if top:
        shared = outcome.shared[:top]
        echo("most shared techniques: " + (", ".join(f"{e.name} ({n} papers)" for e, n in shared)
                                           or "none used by two or more papers"))
    echo(f"skipped records: {skipped}")
    echo(f"wrote {out_dir}/: query store ({counts['triples']} triples), "
         + ", ".join(outcome.written) + ", build.json")
    for notice in outcome.notices:
        echo(notice if notice.startswith("graph.html") else f"note: {notice}")


@click.command()
@input_options
@click.option("-o", "--output", "out_dir", default="exports", show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="The project directory: exports, query store and extraction cache.")
@_project_options
@_engine_options
def build(inputs, ingest, strict, workers, out_dir, top, html, formats, engine, scheduler,
          model):
    """Build the graph of INPUT... in DIR (-o), extracting only what is new (the main job).

    DIR becomes a project: the first build extracts every paper; later builds on DIR extract
    only papers that are new or changed, drop papers no longer given (with every fact and
    every entity no other paper supports), and re-extract everything when kg or its
    vocabulary changed. Nothing changed: nothing is written. Exports are byte-identical to a
    fresh build of the same papers: graph.ttl, graph.nt (sorted N-Triples), graph.jsonld,
    graph.graphml, nodes.csv, edges.csv, extraction.jsonl, graph.html (see --formats), and
    an on-disk query store that `kg shared/related/techniques/sparql/serve/viz --graph DIR`
    open in milliseconds. A build killed at any moment leaves DIR answering from its previous
    state; two builds on one DIR at once are refused.
    A summary goes to stdout; skipped records to stderr.

    \b
    Examples:
      kg build examples/iclr2025-seed.txt -o exports/
      kg build papers.csv --abstract-field summary --strict --workers 1
      kg build ICLR.tsv ICML.tsv -o ml24/ --formats all
      kg add ml24/ new-papers.jsonl        # or: kg build ICLR.tsv ICML.tsv new.jsonl -o ml24/
      kg build field.jsonl -o field/ --engine dask --scheduler tcp://HOST:8786
    """

    on = _engine(engine, scheduler, model, out_dir)
    check_writable(out_dir)  # before the long part, not after it
    notices: list[str] = []
    papers = PaperStream(inputs, ingest, strict=strict, notices=notices)  # read as it builds
    _run_project(project.build, out_dir, papers, notices=notices, skipped=papers.skipped,
                 workers=workers, formats=_formats(formats, html), top=top, inputs=inputs,
                 engine=on)


@click.command("add")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@input_options
@_project_options
@_engine_options
def add_cmd(directory, inputs, ingest, strict, workers, top, html, formats, engine, scheduler,
            model):
    """Add the papers of INPUT... to the project DIRECTORY (a paper whose id is there already
    replaces it); only they are extracted.

    \b
    Examples:
      kg add exports/ new-papers.jsonl
      kg add ml24/ CoRL_2024_Conference.tsv --workers 2
      kg add ml24/ more.jsonl --engine dask --scheduler tcp://HOST:8786
    """

    project.open_project(directory)
    on = _engine(engine, scheduler, model, directory)
    notices: list[str] = []
    papers = PaperStream(inputs, ingest, strict=strict, notices=notices)  # read as it adds
    _run_project(project.add, directory, papers, notices=notices, skipped=papers.skipped,
                 workers=workers, formats=_formats(formats, html), top=top, inputs=inputs,
                 engine=on)


@click.command("remove")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.argument("ids", nargs=-1, required=True, metavar="PAPER...")
@_project_options
def remove_cmd(directory, ids, top, html, formats):
    """Remove the papers PAPER... from the project DIRECTORY, with every fact and every entity
    no other paper supports (an entity other papers use stays, its aliases recomputed).

    A PAPER is its id, its URL, its OpenReview forum id or an unambiguous title start; one
    that names no paper, or several, stops the command before anything is removed.

    \b
    Examples:
      kg remove exports/ p-05c5a1b2
      kg remove ml24/ "FasterCache" https://openreview.net/forum?id=XYZ
      kg remove ml24/ $(cat withdrawn.txt)
    """
    try:
        ids = resolve_papers(project.open_project(directory).index(), ids)
    except NotFoundError as exc:  # a name that matches nothing is bad input to remove
        raise InputError(str(exc)) from exc
    _run_project(project.remove, directory, ids, notices=[], formats=_formats(formats, html),
                 top=top)


@click.command()
@click.argument("graph", type=click.Path(path_type=Path))
@click.option("--shapes", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="SHACL shapes file (default: kg's ontology/shapes.ttl).")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True,
              help="How many violations to list.")
def validate(graph, shapes, limit):
    """Check a graph (Turtle, N-Triples, JSON-LD, or an export dir) against the SHACL shapes.

    Prints each violation (focus node, property, message) and exits 1 if there are any.

    \b
    Examples:
      kg validate exports/graph.ttl
      kg validate exports/ --shapes my-shapes.ttl
    """
    import contextlib

    from kg.shacl import validate_graph

    with contextlib.ExitStack() as stack:
        on_step = on_check = None
        if show_progress():

            bars: list = []

            def on_step(name: str) -> None:
                step(name)

            def on_check(done: int, total: int) -> None:
                if not bars:
                    bars.append(stack.enter_context(Progress(total, "checking shapes",
                                                             unit="checks")))
                bars[0].update(1)

        violations = validate_graph(graph, shapes, on_step=on_step, on_check=on_check)
    if not violations:
        click.echo(f"{graph}: conforms to the shapes (0 violations)")
        return
    for v in violations[:limit]:
        click.echo(f"{v.severity}: {v.focus}" + (f" {v.path}" if v.path else "")
                   + f": {v.message}" + (f" (value {v.value})" if v.value else ""))
    if len(violations) > limit:
        click.echo(f"… and {len(violations) - limit} more (--limit)")
    raise KgError(f"{graph}: {len(violations)} SHACL violation(s)")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a query longer than a file name can be: text, not a file
        return False


def _read_query(query: str) -> str:
    """QUERY as given: a file, else a saved query's name (sparql/NAME.rq), else SPARQL text."""

    path = Path(query)
    if "\n" not in query and _is_file(path):
        return path.read_text(encoding="utf-8")
    if "\n" not in query and len(query) < 256:
        saved = saved_queries()
        stem = path.stem if query.endswith(".rq") else query.strip()
        if stem in saved:
            return saved[stem]
        if query.endswith(".rq") or not any(ch.isspace() or ch == "{" for ch in query.strip()):
            raise InputError(f"{query}: no such query file or saved query; saved queries: "
                             + ", ".join(sorted(saved)))
    return query


@click.command()
@click.argument("query")
@click.option("--graph", default="exports", show_default=True, type=click.Path(path_type=Path),
              help="Graph file (.ttl/.nt/.jsonld) or a `kg build` output directory.")
@click.option("--format", "fmt", type=click.Choice(RESULT_FORMATS), default="table",
              show_default=True, help="table/json/csv/tsv/xml for SELECT and ASK; "
                                      "turtle/ntriples/jsonld for CONSTRUCT and DESCRIBE.")
@click.option("--bind", "binds", multiple=True, metavar="NAME=VALUE",
              help="Give ?NAME a value (repeatable). VALUE is a string, <iri>, prefix:name "
                   "(kg's prefixes), or an N-Triples literal like '\"5\"^^xsd:integer'.")
@click.option("--max-results", type=click.IntRange(1), default=None,
              help="Stop after this many rows (default: all).")
def sparql(query, graph, fmt, binds, max_results):
    """Run a SPARQL query (a .rq file, a saved query name, or the text) on a graph.

    \b
    Examples:
      kg sparql sparql/techniques-by-paper-count.rq --graph exports/
      kg sparql papers-sharing-technique --bind technique=quantization
      kg sparql 'SELECT (COUNT(*) AS ?n) WHERE { ?p a kg:Paper }' --format json
    """

    text = _read_query(query)
    bindings = {}
    for bind in binds:
        name, sep, value = bind.partition("=")
        name = name.strip().lstrip("?$")
        if not sep or not name:
            raise InputError(f"--bind {bind!r}: write it as NAME=VALUE")
        bindings[name] = value
    try:  # a malformed value is bad input (exit 2), found before the graph is loaded
        subs = substitutions(bindings)
    except InputError as exc:
        raise InputError(f"--bind: {exc}") from exc
    store = load_store(graph)
    requested = "json" if fmt == "table" else fmt
    # SERVICE is refused here too: `kg sparql` never sends a request anywhere.
    out = execute_query(store, text, requested=requested, max_results=max_results or 2**62,
                        substitutions=subs)
    if fmt == "table" and out.kind == "results":
        _print_table(json.loads(out.body))
    else:
        sys.stdout.buffer.write(out.body)
        if out.body and not out.body.endswith(b"\n"):
            sys.stdout.buffer.write(b"\n")
        sys.stdout.flush()
    if out.truncated:
        click.echo(f"(cut at --max-results {max_results})", err=True)


def _short(binding: dict | None, width: int = 70) -> str:

    if not binding:
        return ""
    value = binding["value"]
    if binding["type"] == "uri":
        best = max((ns for ns in PREFIXES.values() if value.startswith(ns)), key=len, default="")
        if best:
            prefix = next(k for k, v in PREFIXES.items() if v == best)
            value = f"{prefix}:{value[len(best):]}"
        else:
            value = f"<{value}>"
    return shorten(value, width)


def _print_table(doc: dict) -> None:
    if "boolean" in doc:
        click.echo("true" if doc["boolean"] else "false")
        return
    names = doc["head"]["vars"]
    rows = [[_short(b.get(n)) for n in names] for b in doc["results"]["bindings"]]
    # Columns never bound in any row (e.g. an unbound parameter) are left out.
    keep = [i for i, _ in enumerate(names) if any(r[i] for r in rows)] or list(range(len(names)))
    names = [names[i] for i in keep]
    rows = [[r[i] for i in keep] for r in rows]
    widths = [max([len(n), *(len(r[i]) for r in rows)]) for i, n in enumerate(names)]
    click.echo("  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for row in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    click.echo(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")


@click.command()
@click.argument("graph", default="exports", type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind (loopback by default; anything else exposes the graph).")
@click.option("--port", type=click.IntRange(0, 65535), default=7878, show_default=True)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
              help="Seconds a query may run before it is stopped (answered 503).")
@click.option("--max-results", type=click.IntRange(1), default=10_000, show_default=True,
              help="Rows (or triples) returned at most per query.")
@click.option("--allow-update", is_flag=True,
              help="Accept SPARQL UPDATE (in memory only; the graph file is not changed).")
@click.option("--workers", type=click.IntRange(1, 32), default=2, show_default=True,
              help="Query worker processes (each holds the graph in memory).")
@click.option("--cache-entries", type=click.IntRange(0), default=256, show_default=True,
              help="Answers to identical queries kept in memory (cleared by any update); 0: off.")
@click.option("--cache-bytes", type=click.IntRange(0), default=64 << 20, show_default=True,
              help="Bytes of answers (and their query text) the cache may hold at most.")
@click.option("--max-per-client", type=click.IntRange(0), default=16, show_default=True,
              help="Queries one client address may have waiting or running (429 beyond); 0: "
                   "no bound.")
@click.option("--allow-service", "allow_service", multiple=True, metavar="HOST[:PORT]",
              help="Let SERVICE (and, with --allow-update, LOAD) reach this host (repeatable); "
                   "by default the endpoint never sends a request anywhere.")
@click.option("--cors", multiple=True, metavar="ORIGIN",
              help="Let web pages from ORIGIN (e.g. http://localhost:3000) read answers "
                   "(repeatable); by default no cross-origin page can.")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also accept requests whose Host header is NAME (repeatable; e.g. behind a "
                   "reverse proxy). By default only the bound address and loopback names.")
def serve(graph, host, port, timeout, max_results, allow_update, workers, cache_entries,
          cache_bytes, max_per_client, allow_service, cors, allow_hosts):
    """Serve a graph as a read-only SPARQL 1.1 endpoint at http://HOST:PORT/sparql.

    GET/POST query=…, application/sparql-query bodies; SELECT/ASK as SPARQL JSON, XML, CSV or
    TSV, CONSTRUCT/DESCRIBE as Turtle, N-Triples or JSON-LD (Accept header or ?format=).
    A query page is at /. UPDATE is refused (403) unless --allow-update; SERVICE is refused
    (403) unless --allow-service names the host; requests for another Host name are refused
    (421); no cross-origin page may read answers unless --cors names its origin.

    \b
    Examples:
      kg serve exports/
      kg serve exports/graph.ttl --port 8000 --timeout 5 --max-results 1000
      kg serve exports/ --cors http://localhost:3000 --allow-service query.wikidata.org
    """

    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"warning: binding {host}: the endpoint will be reachable from other "
                   "machines", err=True)
    run_server(ServerConfig(graph=graph, host=host, port=port, timeout=timeout,
                            max_results=max_results, allow_update=allow_update, workers=workers,
                            cache_entries=cache_entries, cache_bytes=cache_bytes,
                            max_per_client=max_per_client, allow_service=tuple(allow_service),
                            cors=tuple(cors), allow_hosts=tuple(allow_hosts)))
