"""Options shared by every command that reads papers (extract, build, viz, neo4j load)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

import click

from kg.ingest import FORMATS, IngestOptions

# Two or more cores: extract in parallel by default (the output is identical either way).
DEFAULT_WORKERS = max(1, min(4, os.cpu_count() or 1))


def input_options(func: Callable) -> Callable:
    """INPUT... plus format/field/strict/workers options; passes ``ingest=IngestOptions``."""
    decorators = [
        click.argument("inputs", nargs=-1, required=True, metavar="INPUT..."),
        click.option("--input-format", type=click.Choice(FORMATS), default="auto",
                     show_default=True, help="Input format (auto: by extension, then content)."),
        click.option("--id-field", default="id", show_default=True,
                     help="Column/key holding the paper id."),
        click.option("--title-field", default="title", show_default=True,
                     help="Column/key holding the title."),
        click.option("--abstract-field", default="abstract", show_default=True,
                     help="Column/key holding the abstract."),
        click.option("--encoding", default="utf-8-sig", show_default=True,
                     help="Text encoding of the inputs."),
        click.option("--max-chars", type=click.IntRange(1, 999_999), default=100_000,
                     show_default=True,
                     help="Skip (and report) a record whose title and abstract are longer; "
                          "extraction time grows faster than the length."),
        click.option("--strict", is_flag=True,
                     help="Fail (exit 3) when any record is skipped, instead of reporting it."),
        click.option("--workers", type=click.IntRange(1, 64), default=DEFAULT_WORKERS,
                     show_default=True,
                     help="Extraction worker processes (small inputs always use one)."),
    ]

    def wrapper(**kwargs):
        kwargs["ingest"] = IngestOptions(
            format=kwargs.pop("input_format"), id_field=kwargs.pop("id_field"),
            title_field=kwargs.pop("title_field"), abstract_field=kwargs.pop("abstract_field"),
            encoding=kwargs.pop("encoding"), max_chars=kwargs.pop("max_chars"))
        return func(**kwargs)

    functools.update_wrapper(wrapper, func)  # keeps options declared below this decorator
    for decorator in reversed(decorators):
        wrapper = decorator(wrapper)
    return wrapper


def report_skips(corpus, notices: list[str]) -> None:
    """Print notices and every skipped record to stderr, with a count."""
    for notice in notices:
        click.echo(f"note: {notice}", err=True)
    if corpus.skipped:
        click.echo(f"skipped {len(corpus.skipped)} record(s):", err=True)
        for skip in corpus.skipped:
            click.echo(f"  {skip.source}: {skip.reason}", err=True)


def show_progress() -> bool:
    return sys.stderr.isatty()
