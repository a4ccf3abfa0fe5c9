"""``kg extract`` and ``kg eval``. The commands import what they run inside themselves, so that
``kg --help`` does not import the pipeline (spaCy) or the evaluator."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import click

from kg.cli.common import input_options, report_skips, show_progress
from kg.errors import InputError
from kg.evaluate import evaluate
from kg.exports import check_writable, replacing
from kg.io import write_jsonl
from kg.pipeline import run

MODELS = ("none", "kg-span")
model_option = click.option(
    "--model", type=click.Choice(MODELS), default="none", show_default=True,
    help="none: kg's rules only; kg-span: the rules plus the trained span model's candidates "
         "(the vocabulary's type wins where it knows the name).")


def trained_model(model: str) -> str | None:
    """The model name the pipeline takes (None for the rules only), checked before any paper
    is read."""
    if model == "none":
        return None
    from kg.extract.components import check_model  # imports spaCy: only when a model is asked

    check_model(model)
    return model


@click.command()
@input_options
@click.option("--format", "fmt", type=click.Choice(["jsonl", "table"]), default="table",
              show_default=True, help="jsonl: the output contract; table: a readable summary.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              help="Write here instead of stdout.")
@model_option
def extract(inputs, ingest, strict, workers, fmt, output, model):
    """Extract entities and relations from abstracts.

    Offsets index into the paper's ``title + "\\n" + abstract`` when it has a title, else into
    the abstract. Skipped records are listed on stderr (``--strict`` makes them fatal).

    \b
    Examples:
      kg extract examples/iclr2025-seed.txt
      kg extract papers.jsonl --format jsonl -o extraction.jsonl
      cat papers.csv | kg extract - --input-format csv --abstract-field summary
    """

    if output != "-":
        _refuse_own_input(Path(output), inputs)
        check_writable(Path(output).parent)  # before the long part, not after it
    notices: list[str] = []
    corpus = run(inputs, strict=strict, workers=workers, progress=show_progress(),
                 options=ingest, notices=notices, trained_model=trained_model(model))
    report_skips(corpus, notices)
    write = write_jsonl if fmt == "jsonl" else _table
    if output == "-":
        write(corpus, sys.stdout)
        return
    with replacing(output) as tmp, tmp.open("w", encoding="utf-8", newline="") as out:
        write(corpus, out)


def _refuse_own_input(output: Path, inputs: tuple[str, ...]) -> None:
    for item in inputs:
        if item != "-" and Path(item).exists() and output.exists() and output.samefile(item):
            raise InputError(f"-o {output}: is also an input; writing it would destroy what is "
                             "being read; choose another output file")


def _side_by_side(rules, both) -> None:
    """Rules-only and rules+model figures, one row per type, overall, pairs and relations."""
    click.echo(f"{'':<10} {'rules only':^20}   {'rules + model':^20}")
    click.echo(f"{'type':<10}" + f" {'P':>6} {'R':>6} {'F1':>6}  " * 2)
    rows = [(name, c, both.per_type[name]) for name, c in rules.per_type.items()]
    rows += [("overall", rules.overall, both.overall), ("pairs", rules.pairs, both.pairs)]
    if rules.per_predicate:
        rows.append(("relations", rules.relations, both.relations))
    for name, a, b in rows:
        click.echo(f"{name:<10}" + "".join(f" {c.precision:6.3f} {c.recall:6.3f} {c.f1:6.3f}  "
                                           for c in (a, b)))


def _table(corpus, out) -> None:
    for result in corpus.results:
        out.write(f"{result.paper.id}  {result.paper.label}\n")
        proposed = {r.object for r in result.relations if r.predicate == "proposes"}
        for eid, spans in result.mentions:
            e = corpus.entities[eid]
            mark = " (proposed)" if eid in proposed else ""
            out.write(f"  {e.type:<9} {e.name}{mark}  ×{len(spans)}\n")
        out.write("\n")
    types = Counter(e.type for e in corpus.entities.values())
    predicates = Counter(r.predicate for r in corpus.relations())
    out.write(f"{len(corpus)} papers, {len(corpus.entities)} entities ("
              + ", ".join(f"{t} {n}" for t, n in sorted(types.items())) + "), "
              + f"{sum(predicates.values())} relations\n")


@click.command("eval")
@click.argument("gold", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--corpora", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory with the corpora that gold records refer to "
                   "(default: $KG_CORPORA, else a shared/corpora dir above the gold file).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@click.option("-v", "--verbose", is_flag=True,
              help="List missed and spurious entities (and relations) per paper.")
@click.option("--fail-under", type=float, default=None,
              help="Exit 1 when overall F1 is below this value (for CI).")
@click.option("--context", "context", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Also extract these inputs in the same run (e.g. the whole conference file), "
                   "so corpus-level steps see a real corpus; only gold papers are scored.")
@model_option
@click.option("--compare", is_flag=True,
              help="Score rules-only and rules+kg-span side by side (as --model kg-span does).")
def eval_cmd(gold, corpora, fmt, verbose, fail_under, context, model, compare):
    """Score the extractor against an annotated gold set (precision, recall, F1).

    Matching is lenient (any surface form, per paper, same type); borderline gold entities are
    neither misses nor false positives. Also scores "these two papers share a technique", and,
    when gold records carry "relations", each relation predicate (subject/object matched the
    same lenient way; "paper" is the paper itself).

    \b
    Examples:
      kg eval tests/data/dev-gold.jsonl -v
      kg eval tests/data/corl-gold.jsonl --context CoRL_2024_Conference.tsv
      kg eval tests/data/dev-gold.jsonl --model kg-span    # rules-only | rules+model
    """

    name = trained_model("kg-span" if compare and model == "none" else model)
    report = evaluate(gold, corpora, context)
    if name is not None:
        with_model = evaluate(gold, corpora, context, name)
        if fmt == "json":
            click.echo(json.dumps({"rules": report.as_dict(), "rules+model": with_model.as_dict()},
                                  indent=2))
        else:
            _side_by_side(report, with_model)
        report = with_model
    elif fmt == "json":
        click.echo(json.dumps(report.as_dict(), indent=2))
    else:
        _report_table(report)
    if verbose and fmt == "table":
        _errors(report)
    if fail_under is not None and report.overall.f1 < fail_under:
        raise click.ClickException(f"overall F1 {report.overall.f1:.3f} < {fail_under}")


def _report_table(report) -> None:
    click.echo(f"{'type':<10} {'P':>6} {'R':>6} {'F1':>6} {'TP':>5} {'FN':>5} {'FP':>5}")
    rows = [*report.per_type.items(), ("overall", report.overall), ("pairs", report.pairs)]
    for name, c in rows:
        click.echo(f"{name:<10} {c.precision:6.3f} {c.recall:6.3f} {c.f1:6.3f} "
                   f"{c.tp:5d} {c.fn:5d} {c.fp:5d}")
    click.echo("(pairs = paper pairs sharing a technique)")
    if report.per_predicate:
        click.echo(f"\n{'relation':<14} {'P':>6} {'R':>6} {'F1':>6} {'TP':>5} {'FN':>5} "
                   f"{'FP':>5}")
        for name, c in [*report.per_predicate.items(), ("overall", report.relations)]:
            click.echo(f"{name:<14} {c.precision:6.3f} {c.recall:6.3f} {c.f1:6.3f} "
                       f"{c.tp:5d} {c.fn:5d} {c.fp:5d}")
        click.echo("(relation overall = micro average over every predicate but mentions)")


def _errors(report) -> None:
    keys = ("missed", "spurious", "missed_relations", "spurious_relations")
    for paper in report.errors:
        if any(paper.get(k) for k in keys):
            click.echo(f"\n{paper['paper']}")
            for k in keys:
                if k in paper:
                    click.echo(f"  {k.replace('_', ' ') + ':':<20}" + "; ".join(paper[k]))
