"""``kg trends``: a thin wrapper over ``kg.trends``."""

from __future__ import annotations

import csv
import json
import sys

import click

from kg.cli.analysis_cmds import GRAPH_HELP, load_graph, use_options
from kg.trends import BY, MIN_PAPERS, Trends, rising, sparkline, trends, write_html


@click.command()
@click.argument("techniques", nargs=-1, metavar="[TECHNIQUE]...")
@click.option("--graph", "graphs", multiple=True, metavar="DIR|FILE", help=GRAPH_HELP)
@click.option("--by", type=click.Choice(BY), default="year", show_default=True,
              help="The periods: year (or the date's year), month (needs a date), venue "
                   "(without poster/oral/spotlight), category (a paper counts in each of its).")
@click.option("--rising", "ranked", is_flag=True,
              help="List the techniques whose share grew most from the first to the last "
                   "period (instead of naming techniques).")
@click.option("--top", type=click.IntRange(1), default=20, show_default=True,
              help="How many techniques --rising lists.")
@click.option("--min-papers", type=click.IntRange(1), default=MIN_PAPERS, show_default=True,
              help="--rising compares the first and last periods with at least this many "
                   "papers (smaller ones are shown, not compared).")
@use_options
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table",
              show_default=True, help="table: readable; csv: one row per technique and "
                                      "period; json: everything.")
@click.option("--html", "html_path", metavar="FILE", default=None,
              help="Also write the chart as one self-contained HTML file (works offline).")
def trends_cmd(techniques, graphs, by, ranked, top, min_papers, include_mentions,
               min_confidence, fmt, html_path):
    """How many papers use each TECHNIQUE per year (or month, venue, category), and what share.

    A paper counts as in `kg shared`: it uses the technique or a narrower one ("caching"
    includes "KV cache"); --include-mentions counts mere mentions too. The share is over every
    paper of the period. Papers without a year (month, venue, category) are counted apart and
    reported, in no period. --rising ranks techniques by how much their share grew between the
    first and the last period holding --min-papers papers, with the counts of both and a z
    score (|z| under 2: the change could well be noise).

    \b
    Examples:
      kg trends quantization caching --graph exports/
      kg trends "diffusion policy" --graph corl/ --by venue --format csv
      kg trends --rising --top 10 --graph corl/ --html rising.html
    """
    if ranked == bool(techniques):
        raise click.UsageError("name one or more techniques, or pass --rising (not both)")
    corpus = load_graph(graphs, ())
    options = {"by": by, "include_mentions": include_mentions,
               "min_confidence": min_confidence}
    found = (rising(corpus, top=top, min_papers=min_papers, **options) if ranked
             else trends(corpus, techniques, **options))
    if html_path:
        title = "Rising techniques" if ranked else "kg trends: " + ", ".join(techniques)
        write_html(found, html_path, title)
    if fmt == "json":
        click.echo(json.dumps(found.as_dict(), ensure_ascii=False, indent=2))
    elif fmt == "csv":
        _csv(found)
    elif ranked:
        _rising_table(found, min_papers)
    else:
        _table(found)


def _csv(found: Trends) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    extra = ["change", "z"] if found.compared else []
    writer.writerow(["technique", found.by, "papers", "using", "share", *extra])
    for series in found.series:
        more = [f"{found.change(series):.6f}", f"{found.z(series):.3f}"] if extra else []
        for period, n, count, share in zip(found.periods, found.papers, series.counts,
                                           found.shares(series), strict=True):
            writer.writerow([series.name, period, n, count,
                             "" if share is None else f"{share:.6f}", *more])
        writer.writerow([series.name, "", found.undated, series.undated, "", *more])


def _table(found: Trends) -> None:
    counting = "uses and mentions" if found.include_mentions else "uses"
    click.echo(f"Papers using each technique per {found.by} ({counting}; share of the "
               f"{found.by}'s papers)")
    width = max(14, *(len(s.name) for s in found.series))
    left = max(10, len(found.by) + 3, *(len(p) for p in found.periods))
    click.echo(f"{found.by:<{left}} {'papers':>7}  " + "  ".join(
        f"{s.name:>{width}}" for s in found.series))
    shares = [found.shares(s) for s in found.series]
    for i, (period, n) in enumerate(zip(found.periods, found.papers, strict=True)):
        cells = ("–" if line[i] is None else f"{s.counts[i]} {line[i]:6.1%}"
                 for s, line in zip(found.series, shares, strict=True))
        click.echo(f"{period:<{left}} {n:>7}  " + "  ".join(f"{c:>{width}}" for c in cells))
    click.echo(f"{'trend':<{left}} {'':>7}  " + "  ".join(
        f"{sparkline(line):>{width}}" for line in shares))
    click.echo(f"{'no ' + found.by:<{left}} {found.undated:>7}  " + "  ".join(
        f"{s.undated:>{width}}" for s in found.series))
    if not found.periods:
        click.echo(f"(no paper in this graph has a {found.by}: every paper is counted under "
                   f"'no {found.by}')")


def _rising_table(found: Trends, min_papers: int) -> None:
    first, last = found.compared
    a, b = found.periods[first], found.periods[last]
    click.echo(f"Share of papers using each technique, {a} ({found.papers[first]} papers) → "
               f"{b} ({found.papers[last]} papers); periods under {min_papers} papers are not "
               f"compared; {found.undated} papers have no {found.by}")
    click.echo(f"  {'change':>8}  {a:>16}  {b:>16}  {'z':>5}  {'trend':<{len(found.periods)}}"
               "  technique")
    for s in found.series:
        shares = found.shares(s)
        click.echo(f"  {found.change(s) * 100:+7.1f}pt  "
                   f"{f'{s.counts[first]} ({shares[first]:.1%})':>16}  "
                   f"{f'{s.counts[last]} ({shares[last]:.1%})':>16}  {found.z(s):5.1f}  "
                   f"{sparkline(shares):<{len(found.periods)}}  {s.name}")
    if not found.series:
        click.echo("  (no technique is used by enough papers in the two periods)")
