"""Options shared by every command that reads papers (extract, build, viz, neo4j load)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

import click

from kg.ingest import FORMATS, IngestOptions, PaperFilter

# Two or more cores: extract in parallel by default (the output is identical either way).
DEFAULT_WORKERS = max(1, min(4, os.cpu_count() or 1))


def input_options(func: Callable) -> Callable:
    """INPUT... plus format/field/filter/strict/workers options; passes
    ``ingest=IngestOptions``."""
    decorators = [
        click.argument("inputs", nargs=-1, required=True, metavar="INPUT..."),
        click.option("--input-format", type=click.Choice(FORMATS), default="auto",
                     show_default=True,
                     help="Format of the inputs (auto: sniffed from the first record; gzip, "
                          "bzip2 and zstd are read as they are). Not kg extract's --format, "
                          "which is the output format."),
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
        click.option("--where", "where", multiple=True, metavar="FIELD=VALUE|FIELD~TEXT",
                     help="Keep only papers whose FIELD equals VALUE (any item of a list such "
                          "as category, author, keyword) or contains TEXT (~, any case). "
                          "Repeat to require all, e.g. --where category=cs.LG "
                          "--where venue~ICLR."),
        click.option("--since", metavar="YYYY[-MM[-DD]]",
                     help="Keep only papers dated on or after this (a paper with no date or "
                          "year is left out, and counted)."),
        click.option("--until", metavar="YYYY[-MM[-DD]]",
                     help="Keep only papers dated on or before this (whole year/month "
                          "included)."),
        click.option("--limit", type=click.IntRange(1), default=None,
                     help="Stop reading after this many papers are kept."),
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
            encoding=kwargs.pop("encoding"), max_chars=kwargs.pop("max_chars"),
            where=PaperFilter.parse(kwargs.pop("where"), since=kwargs.pop("since"),
                                    until=kwargs.pop("until")),
            limit=kwargs.pop("limit"))
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
