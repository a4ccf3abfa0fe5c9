"""``kg related``, ``kg shared`` and ``kg techniques``: thin wrappers over ``kg.analysis``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kg.analysis import (
    clusters,
    cooccurrence,
    find_paper,
    paper_label,
    short_id,
    technique_counts,
)
from kg.analysis import related as related_papers
from kg.analysis import shared as shared_papers
from kg.project import is_project, open_project
from kg.text import shorten

GRAPH_HELP = ("An export directory from `kg build` (holds extraction.jsonl) or an extraction "
              "JSONL; repeatable. Default: ./exports when it exists.")
FORMAT = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
                      show_default=True, help="table: readable; json: every field, full evidence.")


def graph_options(func):
    func = click.argument("inputs", nargs=-1, metavar="[INPUT]...")(func)
    return click.option("--graph", "graphs", multiple=True, metavar="DIR|FILE",
                        help=GRAPH_HELP)(func)


def load_graph(graphs: tuple[str, ...], inputs: tuple[str, ...]):
    """The corpus from --graph and/or INPUT files (raw inputs are extracted on the fly)."""

    sources = [*graphs, *inputs]
    if not sources:
        if not Path("exports").is_dir():
            raise click.UsageError("no graph: pass --graph DIR (written by `kg build ... -o DIR`)"
                                   " or INPUT files with abstracts")
        sources = ["exports"]
    if len(sources) == 1 and is_project(sources[0]):
        return open_project(sources[0]).index()  # read on demand: milliseconds, not seconds
    # Only here: reading files imports every reader (40 ms) a query of a project never uses.
    from kg.cli.common import show_progress
    from kg.pipeline import load_corpus

    return load_corpus(sources, progress=show_progress())


EVIDENCE_WIDTH = 160  # characters of an evidence sentence in text output (JSON keeps it whole)


def _evidence(text: str, names: tuple[str, ...], aliases: dict[str, tuple[str, ...]]) -> str:
    """The evidence sentence, cut around the first of ``names`` (or their aliases) in it."""

    terms = [form for name in names for form in (name, *aliases.get(name, ()))]
    return shorten(text, EVIDENCE_WIDTH, around=terms)


def _aliases(corpus, wanted: set[str]) -> dict[str, tuple[str, ...]]:
    """Each ``wanted`` entity name → every alias of the entities with that name (in entity
    id order). A project's index is asked for those names only: reading every entity cost
    a cold `kg shared` a tenth of a second."""
    names = getattr(corpus, "names", None)
    if names is not None:
        ids = sorted({eid for name in wanted for eid in names.get(name.casefold(), ())})
    else:
        ids = sorted(eid for eid, e in corpus.entities.items() if e.name in wanted)
    found: dict[str, tuple[str, ...]] = {}
    for eid in ids:
        e = corpus.entities[eid]
        if e.name in wanted:
            found[e.name] = (*found.get(e.name, ()), *e.aliases)
    return found


def _dump(data: object) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


USE_OPTIONS = [
    click.option("--include-mentions", is_flag=True,
                 help="Also count papers that only mention it (negated, contrasted or "
                      "attributed to prior work); by default only papers that use it count."),
    click.option("--min-confidence", type=click.FloatRange(0, 1), default=0.0,
                 show_default=True,
                 help="Ignore relations less sure than this (each line shows its confidence)."),
]


def use_options(func):
    for option in reversed(USE_OPTIONS):
        func = option(func)
    return func


@click.command()
@click.argument("paper")
@graph_options
@click.option("-n", "--limit", "n", type=click.IntRange(1), default=10, show_default=True,
              help="How many related papers.")
@use_options
@FORMAT
def related(paper, graphs, inputs, n, include_mentions, min_confidence, fmt):
    """Papers related to PAPER by shared techniques, methods, models, datasets (and tasks).

    Shared entities weigh by rarity (IDF) — a rare dataset says more than "Transformer".
    Each result lists what is shared, the confidence of the weaker of the two relations, and
    the sentence saying so in both papers. What a paper only mentions (negated, contrasted,
    prior work) is not shared unless --include-mentions. PAPER is a paper id, its URL, its
    OpenReview forum id, the start of its title, or words of its label or title; papers are
    shown by short id (the forum id of an OpenReview URL).

    \b
    Examples:
      kg related "Rotated Runtime Smooth" --graph exports/
      kg related p-05c5 examples/iclr2025-seed.txt --format json
      kg related LOTOS --graph exports/ --min-confidence 0.8
    """

    corpus = load_graph(graphs, inputs)
    target = find_paper(corpus, paper)
    results = related_papers(corpus, target.id, n=n, include_mentions=include_mentions,
                             min_confidence=min_confidence)
    if fmt == "json":
        _dump({"paper": {"id": target.id, "label": paper_label(target)},
               "related": [r.as_dict() for r in results]})
        return
    click.echo(f"Related to {short_id(target.id)}  {paper_label(target)}")
    aliases = _aliases(corpus, {n for r in results for s in r.shared
                                for n in (*s.via, *s.other_via, s.name)})
    if not results:
        click.echo("  no other paper shares a technique, method, model, dataset or task with it")
        return
    for rank, r in enumerate(results, start=1):
        click.echo(f"\n{rank:>2}. {r.score:6.2f}  {short_id(r.paper.id)}  {paper_label(r.paper)}")
        for s in r.shared:
            click.echo(f"      {s.type} {s.name}  +{s.weight:.2f}  (confidence {s.confidence:.2f})")
            this = _evidence(s.evidence.text, (*s.via, s.name), aliases)
            other = _evidence(s.other_evidence.text, (*s.other_via, s.name), aliases)
            click.echo(f"        this{_via(s.via)}:  {this}")
            click.echo(f"        other{_via(s.other_via)}: {other}")


def _via(names: tuple[str, ...]) -> str:
    """" (via quantization, INT4 quantization)" for an inherited concept, else nothing."""
    if not names:
        return ""
    more = f" +{len(names) - 3}" if len(names) > 3 else ""
    return f" (via {', '.join(names[:3])}{more})"


@click.command()
@click.argument("technique")
@graph_options
@use_options
@FORMAT
def shared(technique, graphs, inputs, include_mentions, min_confidence, fmt):
    """Every paper using TECHNIQUE or a narrower concept, with the sentence saying so.

    TECHNIQUE is matched against entity names, aliases and vocabulary labels (any case);
    narrower concepts come from the vocabulary (e.g. "caching" includes "KV cache"). A paper
    that only mentions it — "requires neither caching", "unlike quantization", "prior work
    used caching" — is not listed unless --include-mentions (then marked "mentions only").
    Each line shows the relation's confidence; --min-confidence drops the less sure ones.

    \b
    Examples:
      kg shared caching --graph exports/
      kg shared "KV cache" examples/iclr2025-seed.txt --format json
      kg shared quantization --graph exports/ --include-mentions
    """

    corpus = load_graph(graphs, inputs)
    uses = shared_papers(corpus, technique, include_mentions=include_mentions,
                         min_confidence=min_confidence)
    if fmt == "json":
        _dump({"query": technique, "papers": [u.as_dict() for u in uses]})
        return
    if not uses:
        click.echo(f"{technique}: known, but no paper in this graph uses it")
        return
    click.echo(f"{technique}: {len(uses)} paper{'s' if len(uses) != 1 else ''}")
    aliases = _aliases(corpus, {u.entity.name for use in uses for u in use.uses})
    for use in uses:
        click.echo(f"\n{short_id(use.paper.id)}  {paper_label(use.paper)}")
        for u in use.uses:
            narrower = "" if u.direct else " (narrower)"
            mention = "" if u.used else " (mentions only)"
            evidence = _evidence(u.evidence.text, (u.entity.name,), aliases)
            click.echo(f"    {u.entity.type} {u.entity.name}{narrower}{mention} "
                       f"[{u.confidence:.2f}]: {evidence}")


@click.command()
@graph_options
@click.option("-n", "--limit", "n", type=click.IntRange(1), default=20, show_default=True,
              help="How many techniques, pairs and clusters to show.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the community detection (same seed, same clusters).")
@USE_OPTIONS[0]
@FORMAT
def techniques(graphs, inputs, n, seed, include_mentions, fmt):
    """Techniques by paper count, the most co-occurring pairs, and clusters of papers.

    Techniques include used methods. A technique's count is the number of papers `kg shared
    NAME` lists: those using it or a narrower concept (the map's menu and panels say the
    same). Clusters are Louvain communities of the paper–entity graph (IDF-weighted),
    labelled by their top concepts (tf-idf within the cluster); the map colours by them.

    \b
    Examples:
      kg techniques --graph exports/
      kg techniques examples/iclr2025-seed.txt -n 5 --format json
    """

    corpus = load_graph(graphs, inputs)
    counts = technique_counts(corpus, include_mentions=include_mentions)[:n]
    pairs = cooccurrence(corpus, limit=n)
    groups = clusters(corpus, seed=seed)
    if fmt == "json":
        _dump({
            "papers": len(corpus),
            "techniques": [{"id": e.id, "type": e.type, "name": e.name, "papers": c}
                           for e, c in counts],
            "pairs": [{"a": a.id, "b": b.id, "names": [a.name, b.name], "papers": c}
                      for a, b, c in pairs],
            "clusters": [c.as_dict() for c in groups[:n]],
        })
        return
    click.echo(f"Techniques by paper count ({len(corpus)} papers)")
    click.echo(f"  {'papers':>6}  {'type':<9}  name")
    for e, c in counts:
        click.echo(f"  {c:>6}  {e.type:<9}  {e.name}")
    click.echo("\nTop co-occurring pairs")
    if not pairs:
        click.echo("  (no paper uses two techniques)")
    for a, b, c in pairs:
        click.echo(f"  {c:>6}  {a.name} + {b.name}")
    click.echo(f"\nClusters of papers (Louvain, seed {seed}): {len(groups)}")
    for i, group in enumerate(groups[:n], start=1):
        terms = ", ".join(name for name, _ in group.terms) or "(no shared concept)"
        click.echo(f"\n{i:>3}. {len(group.papers)} papers — {terms}")
        for p in group.papers[:5]:
            click.echo(f"       {short_id(p.id)}  {paper_label(p)}")
        if len(group.papers) > 5:
            click.echo(f"       … and {len(group.papers) - 5} more")
