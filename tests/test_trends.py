"""`kg trends` on the real CoRL 2024 and 2025 papers (../shared/corpora/openreview-2024): the
counts equal counting extraction.jsonl by hand, `kg shared`, the saved SPARQL query on the
project's store and the saved Cypher query on a real Neo4j."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sqlite3
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from kg import project
from kg.analysis import analysis_index, shared, technique_counts
from kg.analysis.stored import stored_trend, technique_targets, trend_tables
from kg.cli import cli
from kg.ingest import IngestOptions, read_inputs
from kg.model import USE_PREDICATES, Corpus
from kg.neo4j import bind_params, load, run_query
from kg.pipeline import load_corpus
from kg.sparql import execute_query, load_store, substitutions
from kg.trends import Series, Trends, rising, trends, trends_html
from kg.vocab import load_vocabulary

pytest_plugins = ["neo4j_fixtures"]  # neo4j_db: a real Neo4j for the Cypher query

CORL = ("openreview-2024/CoRL_2024_Conference.tsv", "openreview-2024/CoRL_2025_Conference.tsv")
# Broad and narrow, used in both years or growing: "robot learning" counts many narrower
# concepts, "caching" one paper.
TECHNIQUES = ("reinforcement learning", "diffusion model", "planning", "robot learning",
              "imitation learning", "caching")


@pytest.fixture(scope="module")
def corl_papers(corpora_dir):
    return read_inputs([corpora_dir / name for name in CORL], IngestOptions()).papers


@pytest.fixture(scope="module")
def corl(corl_papers, tmp_path_factory) -> Path:
    """The CoRL 2024 + 2025 papers built into a project, as `kg build` does."""
    out = tmp_path_factory.mktemp("corl") / "project"
    project.build(out, corl_papers, formats=["jsonl"])
    return out


@pytest.fixture(scope="module")
def corl_corpus(corl) -> Corpus:
    return load_corpus([corl / "extraction.jsonl"])


def kg(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


def by_hand(jsonl: Path, technique: str, include_mentions: bool = False) -> Counter:
    """Papers per year using ``technique``, counted from extraction.jsonl and the vocabulary
    data alone: an entity counts when its name or an alias is the technique, or its concept
    is labelled so or lies below such a concept (skos:broader, followed here)."""
    vocab = load_vocabulary()
    wanted = technique.casefold()
    roots = {iri for iri, c in vocab.concepts.items()
             if wanted in {label.casefold() for label in (c.pref_label, *c.alt_labels)}}
    lines = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    entities = {e["id"]: e for line in lines for e in line["entities"]}
    roots |= {e["concept"] for e in entities.values() if e["concept"] and wanted in {
        n.casefold() for n in (e["name"], *e["aliases"])}}

    def below(iri: str, seen: frozenset = frozenset()) -> bool:
        if iri in roots:
            return True
        parents = vocab.concepts[iri].broader if iri in vocab.concepts else ()
        return any(below(p, seen | {iri}) for p in parents if p not in seen)

    matching = {eid for eid, e in entities.items()
                if wanted in {n.casefold() for n in (e["name"], *e["aliases"])}
                or (e["concept"] and below(e["concept"]))}
    years: Counter = Counter()
    for line in lines:
        paper = line["paper"]
        used = {r["object"] for r in line["relations"] if r["subject"] == paper["id"]
                and (include_mentions or r["predicate"] in USE_PREDICATES)}
        if used & matching:
            years[str(paper.get("year", "none"))] += 1
    return years


def test_counts_per_year_equal_counting_extraction_jsonl_by_hand(corl):
    found = trends(project.open_project(corl).index(), TECHNIQUES)
    assert found.periods == ("2024", "2025")
    assert found.papers == (265, 263) and found.undated == 0
    for series in found.series:
        expected = by_hand(corl / "extraction.jsonl", series.name)
        assert dict(zip(found.periods, series.counts, strict=True)) == {
            year: expected[year] for year in found.periods}, series.name
        assert series.undated == expected["none"] == 0
    counts = {s.name: s.counts for s in found.series}
    assert counts["caching"] == (0, 1)  # one paper in all: as rare as it gets
    # Narrower concepts count, as in kg techniques: one number for one question.
    listed = dict((e.name, n) for e, n in technique_counts(project.open_project(corl).index()))
    assert sum(counts["robot learning"]) == listed["robot learning"]


def test_mentions_counted_with_include_mentions_equal_the_hand_count_too(corl, corl_corpus):
    found = trends(corl_corpus, ["diffusion model"], include_mentions=True)
    expected = by_hand(corl / "extraction.jsonl", "diffusion model", include_mentions=True)
    assert found.series[0].counts == (expected["2024"], expected["2025"])
    assert found.series[0].counts > trends(corl_corpus, ["diffusion model"]).series[0].counts


def test_each_technique_counts_the_papers_kg_shared_lists(corl_corpus):
    found = trends(corl_corpus, TECHNIQUES)
    for series in found.series:
        listed = shared(corl_corpus, series.name)
        years = Counter(str(use.paper.year) for use in listed)
        assert series.counts == (years["2024"], years["2025"]), series.name


def test_a_project_index_and_its_extraction_jsonl_give_the_same_trends(corl, corl_corpus):
    index = project.open_project(corl).index()
    for by in ("year", "venue"):
        assert trends(index, TECHNIQUES, by=by) == trends(corl_corpus, TECHNIQUES, by=by)
    assert rising(index) == rising(corl_corpus)


def test_the_saved_sparql_query_gives_the_same_counts_on_the_project_store(corl):
    query = (ROOT / "sparql" / "technique-trend.rq").read_text(encoding="utf-8")
    store = load_store(corl)
    found = trends(project.open_project(corl).index(), TECHNIQUES)
    for series in found.series:
        out = execute_query(store, query, requested="json",
                            substitutions=substitutions({"technique": series.name}))
        rows = json.loads(out.body)["results"]["bindings"]
        assert [(r["year"]["value"], int(r["papers"]["value"]), int(r["using"]["value"]))
                for r in rows] == list(zip(found.periods, found.papers, series.counts,
                                           strict=True)), series.name


def test_papers_without_a_year_are_counted_apart_not_dropped(corl_corpus):
    results = list(corl_corpus.results)
    undated = {r.paper.id for r in results[::50]}
    results = [replace(r, paper=replace(r.paper, year=None)) if r.paper.id in undated else r
               for r in results]
    found = trends(Corpus(tuple(results), corl_corpus.entities), ["reinforcement learning"])
    assert found.undated == len(undated) and sum(found.papers) + found.undated == 528
    every = len(shared(corl_corpus, "reinforcement learning"))
    series = found.series[0]
    assert sum(series.counts) + series.undated == every and series.undated > 0
    assert found.as_dict()["papers_without_period"] == len(undated)


def test_months_fill_the_gaps_and_a_year_alone_has_no_month(corl_corpus):
    dates = {0: "2024-11-06", 1: "2025-02", 2: "2024-12-24"}
    results = [replace(r, paper=replace(r.paper, date=dates.get(i)))
               for i, r in enumerate(corl_corpus.results)]
    found = trends(Corpus(tuple(results), corl_corpus.entities), ["planning"], by="month")
    assert found.periods == ("2024-11", "2024-12", "2025-01", "2025-02")
    assert found.papers == (1, 1, 0, 1) and found.undated == 525
    assert found.shares(found.series[0])[2] is None  # a month without papers has no share
    by_year = trends(Corpus(tuple(results), corl_corpus.entities), ["planning"])
    assert by_year.periods == ("2024", "2025")  # the year still comes from Paper.year


def test_venues_are_grouped_without_how_a_paper_was_presented(corl):
    result = kg("trends", "diffusion model", "--graph", corl, "--by", "venue", "--format",
                "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [(p["period"], p["papers"]) for p in data["periods"]] == [
        ("CoRL 2024", 264), ("Submitted to CoRL 2024", 1), ("CoRL 2025", 263)]  # Oral + Poster


def test_rising_ranks_by_share_growth_with_the_counts_to_judge_noise(corl):
    found = rising(project.open_project(corl).index(), by="venue", top=10)
    assert [found.periods[i] for i in found.compared] == ["CoRL 2024", "CoRL 2025"]
    changes = [found.change(s) for s in found.series]
    assert len(changes) == 10 and changes == sorted(changes, reverse=True)
    vla = next(s for s in found.series if s.name == "vision-language-action model")
    assert (vla.counts[0], vla.counts[2]) == (4, 20)
    assert found.z(vla) > 2  # 4 of 264 → 20 of 263: not noise
    every = rising(project.open_project(corl).index(), top=10_000)
    assert len(every.series) > 10
    assert min(s.counts[0] + s.counts[1] for s in every.series) == 3  # MIN_USES


def test_rising_never_compares_a_period_with_few_papers(corl_corpus):
    results = [replace(r, paper=replace(r.paper, year=2026)) if i < 5 else r
               for i, r in enumerate(corl_corpus.results)]
    corpus = Corpus(tuple(results), corl_corpus.entities)
    found = rising(corpus)
    assert found.periods == ("2024", "2025", "2026") and found.papers[2] == 5
    assert [found.periods[i] for i in found.compared] == ["2024", "2025"]
    assert [found.periods[i] for i in rising(corpus, min_papers=5).compared] == ["2024", "2026"]


def test_rising_needs_two_periods_with_enough_papers(corl):
    result = kg("trends", "--rising", "--graph", corl, "--min-papers", "300")
    assert result.exit_code == 1
    assert "2024: 265, 2025: 263" in result.output and "--min-papers" in result.output


def test_an_unknown_technique_exits_like_kg_shared_with_close_matches(corl):
    result = kg("trends", "quantizashun", "--graph", corl)
    same = kg("shared", "quantizashun", "--graph", corl)
    assert result.exit_code == same.exit_code != 0
    assert "did you mean: quantization" in result.output
    assert kg("trends", "--graph", corl).exit_code == 2  # neither techniques nor --rising


def test_table_csv_and_json_say_the_same(corl):
    table = kg("trends", "planning", "caching", "--graph", corl)
    assert table.exit_code == 0, table.output
    assert "2024           265       30  11.3%" in table.output
    assert "no year          0" in table.output
    rows = list(csv.DictReader(io.StringIO(kg("trends", "planning", "caching", "--graph",
                                              corl, "--format", "csv").output)))
    data = json.loads(kg("trends", "planning", "caching", "--graph", corl, "--format",
                         "json").output)
    for technique in data["techniques"]:
        mine = [r for r in rows if r["technique"] == technique["name"]]
        assert [int(r["using"]) for r in mine] == [*technique["counts"],
                                                   technique["without_period"]]


def test_rising_table_shows_the_counts_of_both_periods(corl):
    result = kg("trends", "--rising", "--top", "5", "--graph", corl, "--by", "venue")
    assert result.exit_code == 0, result.output
    assert "CoRL 2024 (264 papers) → CoRL 2025 (263 papers)" in result.output
    assert "periods under 20 papers are not compared" in result.output
    assert len(result.output.splitlines()) == 2 + 5


def test_the_html_chart_is_one_offline_file(corl, tmp_path):
    out = tmp_path / "chart.html"
    result = kg("trends", "planning", "diffusion model", "--graph", corl, "--html", out)
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "<svg" in page and page.count("<polyline") == 2
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and "<script" not in page


def test_names_and_periods_are_escaped_in_the_html():
    found = Trends("category", ("<b>cs.LG</b>",), (4,),
                   0, (Series('<script>alert("x")</script>', (1,)),))
    page = trends_html(found, title="a & b")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<b>cs.LG" not in page and "a &amp; b" in page


@pytest.mark.neo4j
def test_the_saved_cypher_query_gives_the_same_counts_in_a_real_neo4j(corl, corl_corpus,
                                                                     neo4j_db):
    session, conn = neo4j_db
    load(corl_corpus, conn)
    query = (ROOT / "cypher" / "technique-trend.cypher").read_text(encoding="utf-8")
    for include_mentions in (False, True):
        found = trends(corl_corpus, TECHNIQUES, include_mentions=include_mentions)
        for series in found.series:
            params = {"technique": series.name, "include_mentions": str(include_mentions)}
            rows = run_query(session, query, bind_params(query, params, "technique-trend"))[1]
            assert [(str(r["year"]), r["papers"], r["using"]) for r in rows] == list(zip(
                found.periods, found.papers, series.counts, strict=True)), series.name


def test_a_project_index_written_before_facets_were_kept_reads_the_papers(corl, tmp_path):
    old = _copy_deleting(corl, tmp_path, "DELETE FROM meta WHERE k IN "
                         "('table:facets', 'table:facet_of')", at_least=2)
    # (an index kg did not write is refused by the project check: read it unchecked)
    assert not project.open_project(old, check=False).index().facet_of
    assert (trends(project.open_project(old, check=False).index(), TECHNIQUES, by="venue")
            == trends(project.open_project(corl).index(), TECHNIQUES, by="venue"))


def test_an_extraction_jsonl_answers_like_its_project(corl):
    args = ("trends", "planning", "diffusion model", "--by", "venue", "--format", "json")
    from_jsonl = kg(*args, "--graph", corl / "extraction.jsonl")
    assert from_jsonl.exit_code == 0, from_jsonl.output
    assert from_jsonl.output == kg(*args, "--graph", corl).output


def test_every_name_a_build_stored_counts_what_its_papers_give(corl, corl_corpus):
    # `kg trends NAME` on a project reads the counts its build stored for NAME (no paper
    # read): for every technique and method name, in any case, they are the counts of the
    # papers found through the corpus's postings, by year and by venue.
    index = project.open_project(corl).index()
    names = [name for name, _ in technique_targets(index)]
    assert len(names) > 100
    shouted = [name.upper() for name in names[::7]]
    assert all(stored_trend(index, name) is not None for name in (*names, *shouted))
    for by in ("year", "venue"):
        assert (trends(index, [*names, *shouted], by=by)
                == trends(corl_corpus, [*names, *shouted], by=by))


def test_an_index_without_stored_trend_counts_counts_the_postings(corl, tmp_path):
    old = _copy_deleting(corl, tmp_path, "DELETE FROM results WHERE k LIKE "
                         "'(''trend_count''%' OR k LIKE '(''facet_papers''%'", at_least=101)
    stale = project.open_project(old, check=False).index()
    assert stored_trend(stale, "planning") is None
    now = project.open_project(corl).index()
    assert trends(stale, TECHNIQUES, by="venue") == trends(now, TECHNIQUES, by="venue")
    assert rising(stale) == rising(now)


def test_an_entity_id_counts_that_entity_alone_not_what_its_name_stored(corl, corl_corpus):
    index = project.open_project(corl).index()
    pairs = [(name, eid) for name, targets in technique_targets(index) if len(targets) > 1
             for eid in index.names.get(name.casefold(), ())]
    ids = [eid for _, eid in pairs]
    assert trends(index, ids) == trends(corl_corpus, ids)
    # (a name counts the entities of its narrower concepts too: here more papers)
    fewer = [name for (name, _), alone, named in zip(
        pairs, trends(index, ids).series, trends(index, [n for n, _ in pairs]).series,
        strict=True) if sum(alone.counts) < sum(named.counts)]
    assert fewer


def _copy_deleting(directory, tmp_path, sql, at_least):
    """A copy of the project at ``directory`` whose index lost the rows ``sql`` deletes (at
    least ``at_least`` of them), as an index written by an older kg lacks them."""
    old = tmp_path / "old"
    shutil.copytree(directory, old)
    db = sqlite3.connect(project.open_project(old).generation / "index.sqlite")
    with db:
        assert db.execute(sql).rowcount >= at_least
    db.close()
    return old


def test_names_differing_in_case_only_are_listed_as_the_vocabulary_writes_them():
    """An unlisted name in capitals ("PRETRAINING", from a title in capitals) counts the
    same papers as the concept's label: `kg trends --rising` lists the label."""
    from kg.model import Entity, Paper, PaperResult, Relation, Span

    concept = "https://w3id.org/mlkg/concept/technique/pretraining"
    entities = {"technique/pretraining": Entity("technique/pretraining", "Technique",
                                                "pretraining", (), concept),
                "method/pretraining": Entity("method/pretraining", "Method", "PRETRAINING")}
    results = []
    for i, eid in enumerate(["technique/pretraining", "method/pretraining"] * 2):
        span = Span("PRETRAINING" if eid.startswith("method") else "pretraining", 0, 11)
        paper = Paper(f"p{i}", "", span.text, year=2020 + i)
        results.append(PaperResult(paper, ((eid, (span,)),), (
            Relation(paper.id, "usesTechnique", eid, span, "test", 0.9),)))
    ranked, _ = trend_tables(analysis_index(Corpus(tuple(results), entities)))
    assert [name for name, _ in ranked] == ["pretraining"]
