"""``kg viz``: the interactive graph as one offline HTML file."""

from __future__ import annotations

import click

from kg.cli.common import input_options, report_skips, show_progress
from kg.progress import step
from kg.project import is_project, open_project
from kg.viz import DEFAULT_MAX_ENTITIES, DEFAULT_RELATED, MAP_MIN_PAPERS, MapSource, write_viz


@click.command()
@input_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="exports/graph.html",
              show_default=True, help="The HTML file to write (directories are created).")
@click.option("--technique", metavar="NAME", default=None,
              help="Only papers using this technique (or a narrower one) and what they share.")
@click.option("--paper", "paper_id", metavar="PAPER", default=None,
              help="Only this paper and its related papers (sharing entities). PAPER: its "
                   "id, URL, OpenReview forum id or the start of its title.")
@click.option("--related", type=click.IntRange(1, 500), default=DEFAULT_RELATED,
              show_default=True, help="How many related papers --paper shows.")
@click.option("--max-entities", type=click.IntRange(1, None), default=DEFAULT_MAX_ENTITIES,
              show_default=True,
              help="Keep the N entities with the most papers; the page says what was left out.")
@click.option("--view", type=click.Choice(["auto", "map", "graph"]), default="auto",
              show_default=True,
              help="map: techniques, clusters and the papers using each; graph: papers and "
                   "entities; auto: the map above 300 papers.")
@click.option("--include-mentions", is_flag=True,
              help="With --technique: also the papers that only mention it (negated, "
                   "contrasted, prior work). The map lists those apart anyway.")
def viz(inputs, ingest, strict, workers, output, technique, paper_id, related, max_entities,
        view, include_mentions):
    """Write the interactive graph HTML (works offline: no CDN, no network request).

    GRAPH is an export directory (from ``kg build``) or an extraction JSONL; any other INPUT
    is read and extracted first. Above 300 papers the page is a technique map: techniques
    sized by the papers using them, coloured by cluster; choose one for its papers. Smaller
    corpora (or --view graph) get papers and entities, coloured by type; click one for the
    evidence sentences behind it.

    \b
    Examples:
      kg viz exports/ -o exports/graph.html
      kg viz exports/ --view graph -o exports/entities.html
      kg viz examples/iclr2025-seed.txt --technique quantization -o quantization.html
      kg viz exports/ --paper p-32f6716951bc -o lotos.html
    """
    corpus = _project_map(inputs, view) if technique is None and paper_id is None else None
    if corpus is None:
        from kg.pipeline import load_corpus  # spaCy behind it: not for `kg viz --help`

        notices: list[str] = []
        corpus = load_corpus(inputs, strict=strict, workers=workers, progress=show_progress(),
                             options=ingest, notices=notices)
        report_skips(corpus, notices)
    summary = write_viz(corpus, output, technique=technique, paper=paper_id,
                        max_entities=max_entities, related=related, view=view,
                        include_mentions=include_mentions)
    click.echo(f"wrote {summary.path}: {summary.papers:,} papers, {summary.entities:,} entities, "
               f"{summary.edges:,} links ({summary.bytes / 1e6:.1f} MB)", err=True)
    if summary.notice:
        click.echo(f"note: {summary.notice}", err=True)


def _project_map(inputs: tuple[str, ...], view: str) -> MapSource | None:
    """A project's stored map source when the page asked of it is its technique map: drawn
    from its index, as its build drew graph.html, without reading every paper's result (at
    100,000 papers those take gigabytes)."""
    if len(inputs) != 1 or view == "graph" or not is_project(inputs[0]):
        return None
    source = open_project(inputs[0]).map_source()
    if view != "map" and len(source) <= MAP_MIN_PAPERS:
        return None
    if show_progress():
        step(f"drawing the technique map of {len(source):,} papers from {inputs[0]}'s index")
    return source
