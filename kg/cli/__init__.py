"""The ``kg`` command line: a thin click layer over the library.

Commands live in small modules imported only when their command runs, so ``kg --help``
stays fast (no spaCy, rdflib or neo4j import). Library errors (``KgError``) become a
one-line message on stderr and the error's exit code — never a traceback.
"""

from __future__ import annotations

import importlib
import sys

import click

from kg.errors import KgError

# command name -> "module:attribute"; help text is shown without importing the module.
COMMANDS: dict[str, tuple[str, str]] = {
    "build": ("kg.cli.graph_cmds:build", "Build or update the graph in a project dir (main job)."),
    "add": ("kg.cli.graph_cmds:add_cmd", "Add papers to a project dir (extracts only them)."),
    "remove": ("kg.cli.graph_cmds:remove_cmd", "Remove papers from a project dir."),
    "extract": ("kg.cli.extract_cmds:extract", "Extract entities and relations from abstracts."),
    "eval": ("kg.cli.extract_cmds:eval_cmd", "Score the extractor against an annotated gold set."),
    "validate": ("kg.cli.graph_cmds:validate", "Check a Turtle graph against the SHACL shapes."),
    "sparql": ("kg.cli.graph_cmds:sparql", "Run a SPARQL query (file or text) on a graph."),
    "serve": ("kg.cli.graph_cmds:serve", "Serve a graph as a read-only SPARQL endpoint."),
    "related": ("kg.cli.analysis_cmds:related", "Papers related to a paper, by shared entities."),
    "shared": ("kg.cli.analysis_cmds:shared", "Papers that use a technique (or a narrower one)."),
    "techniques": ("kg.cli.analysis_cmds:techniques", "Techniques by paper count; paper clusters."),
    "trends": ("kg.cli.trends_cmds:trends_cmd", "Papers using techniques per year; rising ones."),
    "neo4j": ("kg.cli.neo4j_cmds:neo4j", "Load the graph into Neo4j."),
    "cypher": ("kg.cli.neo4j_cmds:cypher", "Run a saved Cypher query with parameters."),
    "export": ("kg.cli.neo4j_cmds:export", "Write a Cypher script or neo4j-admin import CSVs."),
    "viz": ("kg.cli.viz_cmds:viz", "Write the interactive graph HTML (works offline)."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module_name, attr = COMMANDS[cmd_name][0].split(":")
        return getattr(importlib.import_module(module_name), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except KgError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kg")
def cli() -> None:
    """Build a knowledge graph of ML papers: methods, models, datasets, hardware, techniques.

    \b
    Quick start (the demo corpus ships with kg):
      kg build examples/iclr2025-seed.txt -o exports/
      kg shared quantization --graph exports/
      kg related LOTOS --graph exports/
      kg serve exports/                   # SPARQL endpoint on 127.0.0.1:7878

    Inputs are plain text (one abstract per blank-line paragraph), JSON Lines, JSON arrays,
    CSV or TSV with a header row, the arXiv, OpenAlex, Semantic Scholar and OpenReview dumps,
    BibTeX, CSL-JSON or RIS (gzip, bzip2, zstd read as they are), or - for stdin.
    """


def main() -> None:
    cli(prog_name="kg")


if __name__ == "__main__":
    sys.exit(main())
