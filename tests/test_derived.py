"""Derived facts (kg.derived) on a real conference file (CoRL 2024): the numbers equal the
CLI's, the saved queries that read them page correctly, and `kg add` / `kg remove` keep them
equal to a fresh build's."""

from __future__ import annotations

import json

import pyoxigraph as ox
import pytest
from click.testing import CliRunner

from kg import project
from kg.cli import cli
from kg.derived import derived_facts, derived_triples
from kg.ingest import IngestOptions, read_inputs
from kg.project.store import derived_held, keep_derived_held, update_derived
from kg.rdf import ENTITY_NS, SPARQL_PREFIXES
from kg.sparql import execute_query, parse_binding, saved_queries

CORL = "openreview-2024/CoRL_2024_Conference.tsv"


def corl_papers(corpora_dir):
    return list(read_inputs([corpora_dir / CORL], IngestOptions()).papers)


@pytest.fixture(scope="module")
def corl(corpora_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("corl")
    project.build(out, corl_papers(corpora_dir), formats=["jsonl"])
    return out


def invoke(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def select(store, name: str, **binds: str) -> list[dict[str, str]]:
    subs = {ox.Variable(k): parse_binding(v) for k, v in binds.items()} or None
    doc = json.loads(execute_query(store, saved_queries()[name], substitutions=subs).body)
    return [{k: v["value"] for k, v in row.items()} for row in doc["results"]["bindings"]]


def entity(iri: str) -> str:
    return iri.removeprefix(ENTITY_NS)


def test_user_counts_and_pairs_in_the_store_are_what_kg_techniques_prints(corl):
    cli_out = invoke("techniques", "--graph", str(corl), "-n", "100000")
    store = project.open_project(corl).store()
    rows = select(store, "techniques-by-paper-count", limit="100000")
    assert [(entity(r["technique"]), int(r["papers"])) for r in rows] == [
        (t["id"], t["papers"]) for t in cli_out["techniques"]]
    assert [int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1))
    pairs = select(store, "technique-cooccurrence", limit="100000")
    expected = [(sorted([p["a"], p["b"]]), p["papers"]) for p in cli_out["pairs"][:1000]
                if p["papers"] >= 2]
    assert [(sorted([entity(r["a"]), entity(r["b"])]), int(r["papers"])) for r in pairs
            ] == expected
    assert len(expected) > 20  # a real conference: the comparison is not vacuous


def test_a_user_count_is_the_number_of_papers_kg_shared_lists(corl):
    store = project.open_project(corl).store()
    rows = select(store, "techniques-by-paper-count", limit="5")
    for row in rows:
        # every paper kg shared lists: those naming it and those using a narrower concept
        listed = invoke("shared", entity(row["technique"]), "--graph", str(corl))["papers"]
        assert int(row["papers"]) == len(listed), row["label"]


def test_concept_counts_equal_walking_the_hierarchy_in_the_graph(corl):
    store = project.open_project(corl).store()
    walked = {r["concept"].value: int(r["n"].value) for r in store.query(
        SPARQL_PREFIXES + "SELECT ?concept (COUNT(DISTINCT ?paper) AS ?n) WHERE { "
        "?concept a skos:Concept . ?entity kg:concept/skos:broader* ?concept . "
        "?paper kg:uses ?entity } GROUP BY ?concept")}
    rows = select(store, "concepts-by-paper-count", limit="100000")
    assert {r["concept"]: int(r["papers"]) for r in rows} == walked
    assert len(rows) > 50


def test_related_facts_are_what_kg_related_ranks(corl):
    facts = derived_facts(project.open_project(corl).index(), k=5)
    by_paper: dict[str, list] = {}
    for fact in facts.related:
        by_paper.setdefault(fact.paper, []).append(fact)
    assert len(by_paper) > 200
    for pid in sorted(by_paper)[::40]:
        shown = invoke("related", pid, "--graph", str(corl), "-n", "5")["related"]
        assert [(f.other, f.rank, f.weight) for f in by_paper[pid]] == [
            (r["id"], rank, pytest.approx(r["score"], abs=1e-4))
            for rank, r in enumerate(shown, 1)]
        assert [[s.key for s in f.shared] for f in by_paper[pid]] == [
            [s["key"] for s in r["shared"]] for r in shown]


def test_listings_page_with_limit_and_offset(corl):
    store = project.open_project(corl).store()
    for name in ("techniques-by-paper-count", "technique-cooccurrence",
                 "concepts-by-paper-count"):
        everything = select(store, name, limit="100000")
        assert len(select(store, name)) == min(50, len(everything)), name  # the default page
        page = select(store, name, limit="7", offset="10")
        assert [r["rank"] for r in page] == [r["rank"] for r in everything[10:17]], name


def test_paper_listings_page_by_position_and_answer_for_a_bound_paper(corl):
    store = project.open_project(corl).store()
    ids = sorted(project.open_project(corl).index().papers)
    for name in ("evidence", "related-papers"):
        first, third = select(store, name), select(store, name, offset="2")
        assert {r["paper_id"] for r in first} == {ids[0]}, name
        assert {r["paper_id"] for r in third} == {ids[2]}, name
        bound = select(store, name, paper_id=ids[5])
        assert bound and {r["paper_id"] for r in bound} == {ids[5]}, name


def derived_of(directory) -> set[str]:
    store = project.open_project(directory).store()
    return set(store.query(SPARQL_PREFIXES + """CONSTRUCT { ?s ?p ?o } WHERE {
        { VALUES ?p { kg:position kg:userCount kg:userRank kg:paperCount kg:paperRank
                      kg:sharedWeight } ?s ?p ?o }
        UNION { ?s a kg:Cooccurrence ; ?p ?o } }""").serialize(
        format=ox.RdfFormat.N_TRIPLES).decode().splitlines())


def test_add_and_remove_keep_the_derived_facts_equal_to_a_fresh_build(corpora_dir, tmp_path):
    papers = corl_papers(corpora_dir)[:160]
    grown = tmp_path / "grown"
    project.build(grown, papers[:100], formats=["jsonl"])
    project.add(grown, papers[100:])
    project.remove(grown, [p.id for p in papers[40:60]])
    fresh = tmp_path / "fresh"
    project.build(fresh, papers[:40] + papers[60:], formats=["jsonl"])
    facts = derived_of(fresh)
    assert len(facts) > 1000
    assert derived_of(grown) == facts


def test_update_derived_writes_only_what_changed(tmp_path, seed_corpus):
    path = tmp_path / "store"
    facts = derived_facts(seed_corpus, k=2)
    triples = sorted(set(derived_triples(facts)))
    assert update_derived(path, triples) == len(triples)
    assert derived_held(path) == {f"{s} {p} {o} .\n" for s, p, o in triples}
    assert update_derived(path, triples) == 0  # nothing changed, nothing written
    keep_derived_held(path)  # (as the build's worker does once its delta is done)
    assert update_derived(path, triples[1:]) == -1
    assert len(ox.Store(str(path))) == len(triples) - 1
