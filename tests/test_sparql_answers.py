"""The saved queries written for speed (sparql/*.rq) answer exactly what their plain
formulations answer, row for row and in order, on a real conference project (CoRL 2024).

The plain texts below are the queries as first written (one pattern, one GROUP BY, the final
ORDER BY); the saved ones reorder the work so a 100,000-paper store answers in under a second
(docs/derived-facts.md). A rewrite that changes a count, a tie or a row fails here.
"""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from kg import project
from kg.ingest import IngestOptions, read_inputs
from kg.rdf import SPARQL_PREFIXES
from kg.sparql import parse_binding, saved_queries

PLAIN = {
    "papers-per-model": """
SELECT ?model ?label (COUNT(?paper) AS ?papers) (COUNT(?user) AS ?used_by) WHERE {
  ?model a kg:Model .
  ?paper kg:mentions ?model .
  OPTIONAL { ?paper kg:usesModel ?model . BIND(?paper AS ?user) }
  ?model rdfs:label ?label .
} GROUP BY ?model ?label ORDER BY DESC(?papers) ?label""",
    "papers-per-dataset": """
SELECT ?dataset ?label (COUNT(?paper) AS ?papers) (COUNT(?evaluated) AS ?evaluated_on) WHERE {
  ?dataset a kg:Dataset .
  ?paper kg:mentions ?dataset .
  OPTIONAL { ?paper kg:evaluatedOn ?dataset . BIND(?paper AS ?evaluated) }
  ?dataset rdfs:label ?label .
} GROUP BY ?dataset ?label ORDER BY DESC(?papers) ?label""",
    "papers-sharing-technique": """
SELECT ?technique ?paper ?id ?title (COUNT(DISTINCT ?entity) AS ?matches)
       (GROUP_CONCAT(DISTINCT ?name; separator=", ") AS ?via) WHERE {
  { SELECT ?technique ?top WHERE {
      BIND(LCASE(STR(COALESCE(?technique, "quantization"))) AS ?wanted)
      ?top kg:labelKey ?wanted } }
  ?entity (kg:concept/skos:broader*)? ?top .
  ?paper kg:uses ?entity ; dcterms:identifier ?id .
  ?entity rdfs:label ?name .
  OPTIONAL { ?paper dcterms:title ?t }
  OPTIONAL { ?paper rdfs:label ?l }
  BIND(COALESCE(?t, ?l, ?id) AS ?title)
} GROUP BY ?technique ?paper ?id ?title ORDER BY DESC(?matches) ?id""",
    "technique-trend": """
SELECT ?technique ?year ?papers (COALESCE(?n, 0) AS ?using)
       (ROUND(COALESCE(?n, 0) / ?papers * 1000000) / 1000000 AS ?share) WHERE {
  { SELECT ?year (COUNT(DISTINCT ?any) AS ?papers) WHERE {
      ?any a kg:Paper ; dcterms:issued ?issued .
      BIND(SUBSTR(STR(?issued), 1, 4) AS ?year) } GROUP BY ?year }
  OPTIONAL {
    { SELECT ?technique ?year (COUNT(DISTINCT ?paper) AS ?n) WHERE {
        { SELECT ?technique ?top WHERE {
            BIND(LCASE(STR(COALESCE(?technique, "quantization"))) AS ?wanted)
            ?top kg:labelKey ?wanted } }
        ?entity (kg:concept/skos:broader*)? ?top .
        ?paper kg:uses ?entity ; dcterms:issued ?when .
        BIND(SUBSTR(STR(?when), 1, 4) AS ?year) } GROUP BY ?technique ?year } }
} ORDER BY ?year""",
    "related-papers": """
SELECT ?paper_id ?related ?related_id ?related_title ?score ?shared ?entities ?offset WHERE {
  { SELECT ?paper ?paper_id ?offset WHERE {
      BIND(COALESCE(?paper_id, "") AS ?want)
      BIND(COALESCE(xsd:integer(?offset), 0) + 1 AS ?pos)
      OPTIONAL { ?byid dcterms:identifier ?want }
      OPTIONAL { ?bypos kg:position ?pos }
      BIND(COALESCE(?byid, ?bypos) AS ?paper)
    } }
  ?paper dcterms:identifier ?paper_id .
  LATERAL { { SELECT ?paper ?related (SUM(?w) AS ?score) (COUNT(?e) AS ?shared)
                       (GROUP_CONCAT(?name; separator=", ") AS ?entities) WHERE {
      ?paper kg:uses ?e .
      ?e kg:sharedWeight ?w .
      ?related kg:uses ?e .
      FILTER(?related != ?paper)
      ?e rdfs:label ?name .
    } GROUP BY ?paper ?related ORDER BY DESC(?score) ?related LIMIT 50 } }
  ?related dcterms:identifier ?related_id .
  OPTIONAL { ?related dcterms:title ?rt }
  OPTIONAL { ?related rdfs:label ?rl }
  BIND(COALESCE(?rt, ?rl, ?related_id) AS ?related_title)
} ORDER BY DESC(?score) ?related_id""",
}


@pytest.fixture(scope="module")
def corl_store(corpora_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("corl-answers")
    papers = read_inputs([corpora_dir / "openreview-2024/CoRL_2024_Conference.tsv"],
                         IngestOptions()).papers
    project.build(out, list(papers), formats=["jsonl"])
    return project.open_project(out).store()


def rows(store, query: str, **binds: str) -> list[tuple]:
    """Every row, each term as N-Triples (so a datatype change shows), in the given order."""
    result = store.query(query if "PREFIX" in query else SPARQL_PREFIXES + query,
                         substitutions={ox.Variable(k): parse_binding(v)
                                        for k, v in binds.items()})
    names = [v.value for v in result.variables]
    return [tuple(str(r[n]) if r[n] is not None else None for n in names) for r in result]


def value(term: str) -> str:
    return term.split('"')[1]


def test_the_counting_queries_answer_as_their_plain_formulations(corl_store):
    for name in ("papers-per-model", "papers-per-dataset"):
        fast, plain = rows(corl_store, saved_queries()[name]), rows(corl_store, PLAIN[name])
        assert len(fast) > 20, name
        assert any(value(r[3]) == "0" for r in fast), name  # an OPTIONAL that found nothing
        assert fast == plain, name


def same_rows(rows: list[tuple]) -> list[tuple]:
    """papers-sharing-technique's rows as its plain formulation has them: its first five
    columns, and ?via as a set (the plain GROUP_CONCAT joins names in no set order)."""
    return [(*r[:5], sorted(value(r[5]).split(", "))) for r in rows]


@pytest.mark.parametrize("technique", [None, "large language model", "reinforcement learning",
                                       "model compression", "imitation learning"])
def test_papers_sharing_technique_answers_as_its_plain_formulation(corl_store, technique):
    binds = {"technique": technique} if technique else {}
    plain = rows(corl_store, PLAIN["papers-sharing-technique"], **binds)
    every = rows(corl_store, saved_queries()["papers-sharing-technique"], limit="10000", **binds)
    assert same_rows(every) == same_rows(plain)
    assert every, technique
    # Every row says how many papers there are in all; the rows come in the documented order
    # (most matches, then id) and each ?via lists names in order.
    assert {value(r[6]) for r in every} == {str(len(plain))}
    keys = [(-int(value(r[4])), value(r[2])) for r in every]
    assert keys == sorted(keys)
    assert all(value(r[5]).split(", ") == sorted(value(r[5]).split(", ")) for r in every)


def test_papers_sharing_technique_pages_with_limit_and_offset(corl_store):
    query = saved_queries()["papers-sharing-technique"]
    technique = "reinforcement learning"
    every = rows(corl_store, query, technique=technique, limit="10000")
    assert len(every) > 50
    assert [r[:7] for r in rows(corl_store, query, technique=technique)] == [
        r[:7] for r in every[:100]]  # the default page: the first 100
    for limit, offset in (("7", "40"), ("30", "0"), ("1", str(len(every) - 1))):
        page = rows(corl_store, query, technique=technique, limit=limit, offset=offset)
        start = int(offset)
        assert [r[:7] for r in page] == [r[:7] for r in every[start:start + int(limit)]]
    assert rows(corl_store, query, technique=technique, offset=str(len(every))) == []
    assert rows(corl_store, query, technique="no such technique at all") == []


@pytest.mark.parametrize("technique", [None, "reinforcement learning", "robot learning",
                                       "no such technique at all"])
def test_technique_trend_answers_as_its_plain_formulation(corl_store, technique):
    binds = {"technique": technique} if technique else {}
    fast = rows(corl_store, saved_queries()["technique-trend"], **binds)
    assert fast == rows(corl_store, PLAIN["technique-trend"], **binds)
    assert fast and all(int(value(r[2])) > 0 for r in fast)  # the papers of each year


def test_related_papers_answers_as_its_plain_formulation(corl_store):
    ids = [value(r[0]) for r in rows(corl_store, "SELECT ?id WHERE { ?p a kg:Paper ; "
                                                 "dcterms:identifier ?id } ORDER BY ?id")]
    # The busiest paper (most candidates, most ties at the 50th place) and a spread of others.
    busiest = rows(corl_store, "SELECT ?id (COUNT(?e) AS ?n) WHERE { ?p dcterms:identifier ?id ;"
                               " kg:uses ?e } GROUP BY ?id ORDER BY DESC(?n) ?id LIMIT 1")[0][0]
    busiest = value(busiest)
    for binds in ({}, {"offset": "7"}, {"paper_id": busiest},
                  *({"paper_id": pid} for pid in ids[::40])):
        fast = rows(corl_store, saved_queries()["related-papers"], **binds)
        assert fast == rows(corl_store, PLAIN["related-papers"], **binds), binds
    assert len(rows(corl_store, saved_queries()["related-papers"], paper_id=busiest)) == 50
