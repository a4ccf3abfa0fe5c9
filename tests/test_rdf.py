"""The RDF model (kg.rdf), the ontology, the SHACL shapes and the saved SPARQL queries, on the
real pipeline over the demo corpus."""

from __future__ import annotations

import doctest
from pathlib import Path

import pyoxigraph as ox
import pytest
import rdflib
from conftest import ROOT, paper_with
from rdflib.compare import isomorphic

from kg import rdf
from kg.analysis import technique_counts
from kg.derived import derived_facts, derived_triples
from kg.errors import InputError
from kg.io import read_jsonl, write_jsonl
from kg.model import Corpus, Entity, Paper, PaperResult, Relation, Span
from kg.pipeline import run
from kg.rdf import ONTOLOGY_NS, PREFIXES, entity_iri, paper_iri
from kg.shacl import validate_graph
from kg.sparql import execute_query, load_store, parse_binding, saved_queries

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:rdflib.*")

KG = rdflib.Namespace(ONTOLOGY_NS)
SKOS = rdflib.namespace.SKOS


@pytest.fixture(scope="module")
def exports(seed_rdf_dir) -> Path:
    return seed_rdf_dir


@pytest.fixture(scope="module")
def graph(exports) -> rdflib.Graph:
    return rdflib.Graph().parse(exports / "graph.ttl")


@pytest.fixture(scope="module")
def store(exports):
    return load_store(exports)


def select(store, query: str, **binds: str) -> list[dict[str, str]]:
    subs = {ox.Variable(k): parse_binding(v) for k, v in binds.items()} or None
    import json

    doc = json.loads(execute_query(store, query, substitutions=subs).body)
    return [{k: v["value"] for k, v in row.items()} for row in doc["results"]["bindings"]]


def test_module_doctests_pass():
    import kg.rdf
    import kg.server
    import kg.sparql

    for module in (kg.rdf, kg.server, kg.sparql):
        failed, _ = doctest.testmod(module)
        assert failed == 0, module.__name__


def test_the_ontology_declares_every_entity_type_and_predicate_of_the_data_model():
    from kg.model import ENTITY_TYPES, PREDICATES

    onto = rdflib.Graph().parse(ROOT / "ontology" / "kg.ttl")
    owl = rdflib.OWL
    for type_ in ENTITY_TYPES:
        assert (KG[type_], rdflib.RDFS.subClassOf, KG.Entity) in onto
    for predicate in PREDICATES:
        assert (KG[predicate], rdflib.RDF.type, owl.ObjectProperty) in onto
    for prop in ("text", "start", "end", "rule", "confidence"):
        assert (KG[prop], rdflib.RDF.type, owl.DatatypeProperty) in onto
    assert (KG.evidence, rdflib.RDF.type, owl.ObjectProperty) in onto
    assert (KG.evidence, rdflib.RDFS.range, KG.Sentence) in onto
    for cls in ("Assertion", "Sentence"):
        assert (KG[cls], rdflib.RDFS.label, None) in onto
        assert (KG[cls], rdflib.RDFS.comment, None) in onto
    assert (KG.Paper, rdflib.RDFS.subClassOf, rdflib.URIRef("https://schema.org/ScholarlyArticle")
            ) in onto


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # rdflib's JSON-LD parser internals
def test_turtle_ntriples_and_jsonld_exports_hold_the_same_graph(exports, graph):
    nt = rdflib.Graph().parse(exports / "graph.nt", format="nt")
    jsonld = rdflib.Graph().parse(exports / "graph.jsonld", format="json-ld")
    assert len(graph) > 1000
    assert isomorphic(graph, nt)
    assert isomorphic(graph, jsonld)


def test_ntriples_lines_are_sorted_and_unique(exports):
    lines = (exports / "graph.nt").read_text(encoding="utf-8").splitlines()
    assert lines == sorted(set(lines))


def test_the_graph_has_no_blank_nodes(graph):
    assert not any(isinstance(term, rdflib.BNode) for triple in graph for term in triple)


def test_every_paper_is_a_kg_paper_with_identifier_and_abstract(seed_corpus, graph):
    for result in seed_corpus.results:
        node = rdflib.URIRef(paper_iri(result.paper.id))
        assert (node, rdflib.RDF.type, KG.Paper) in graph
        assert str(graph.value(node, rdflib.DCTERMS.identifier)) == result.paper.id
        assert str(graph.value(node, rdflib.DCTERMS.abstract)) == result.paper.abstract


def test_entities_are_typed_linked_to_their_concept_and_carry_aliases(seed_corpus, graph):
    with_alias = [e for e in seed_corpus.entities.values() if e.aliases and e.concept]
    assert with_alias, "the demo corpus should have an entity with an alias"
    for entity in seed_corpus.entities.values():
        node = rdflib.URIRef(entity_iri(entity.id))
        assert (node, rdflib.RDF.type, KG[entity.type]) in graph
        assert (node, rdflib.RDF.type, KG.Entity) in graph
        assert str(graph.value(node, rdflib.RDFS.label)) == entity.name
        if entity.concept:
            concept = rdflib.URIRef(entity.concept)
            assert (node, KG.concept, concept) in graph
            assert (concept, rdflib.RDF.type, SKOS.Concept) in graph
        for alias in entity.aliases:
            if alias != entity.name:
                assert (node, SKOS.altLabel, rdflib.Literal(alias)) in graph


def test_the_broader_hierarchy_of_every_concept_used_is_included(seed_corpus, graph):
    from kg.vocab import load_vocabulary

    vocab = load_vocabulary()
    for entity in seed_corpus.entities.values():
        if not entity.concept:
            continue
        for ancestor in vocab.ancestors(entity.concept):
            assert (rdflib.URIRef(ancestor), SKOS.prefLabel, None) in graph


def test_every_extracted_fact_is_asserted_and_reified_with_its_evidence(seed_corpus, graph):
    for result in seed_corpus.results:
        paper = rdflib.URIRef(paper_iri(result.paper.id))
        for relation in result.relations:
            node = rdflib.URIRef(rdf.assertion_iri(result.paper.id, relation))
            subject = graph.value(node, rdflib.RDF.subject)
            predicate = graph.value(node, rdflib.RDF.predicate)
            obj = graph.value(node, rdflib.RDF.object)
            assert predicate == KG[relation.predicate]
            assert obj == rdflib.URIRef(entity_iri(relation.object))
            assert (subject, predicate, obj) in graph
            assert (node, rdflib.RDF.type, rdflib.RDF.Statement) in graph
            assert graph.value(node, rdflib.PROV.wasDerivedFrom) == paper
            sentence = graph.value(node, KG.evidence)
            assert (sentence, rdflib.RDF.type, KG.Sentence) in graph
            assert graph.value(sentence, rdflib.PROV.wasDerivedFrom) == paper
            assert str(graph.value(sentence, KG.text)) == relation.evidence.text
            assert graph.value(sentence, KG.start).toPython() == relation.evidence.start
            assert graph.value(sentence, KG.end).toPython() == relation.evidence.end
            assert str(graph.value(node, KG.rule)) == relation.rule
            assert float(graph.value(node, KG.confidence)) == pytest.approx(relation.confidence)


def test_entity_to_entity_relations_link_the_two_entities(tmp_path):
    from kg.pipeline import extract_all
    from kg.resolve import resolve

    corpus = resolve(extract_all([Paper(id="p", abstract=(
        "We propose FooQuant, a novel quantization method. FooQuant outperforms GPTQ and AWQ "
        "on LLaMA-2-7B."))]))
    between = [r for r in corpus.relations() if r.subject in corpus.entities]
    assert {(r.subject, r.predicate, r.object) for r in between} >= {
        ("method/fooquant", "outperforms", "method/gptq")}
    rdf.write_rdf(corpus, tmp_path)
    graph = rdflib.Graph().parse(tmp_path / "graph.ttl")
    for relation in between:
        assert (rdflib.URIRef(entity_iri(relation.subject)), KG[relation.predicate],
                rdflib.URIRef(entity_iri(relation.object))) in graph


def test_paper_ids_that_are_urls_become_percent_encoded_iris(tmp_path):
    text = "We propose FooNet, a model trained with quantization on CIFAR-10.\n"
    url_id = "https://openreview.net/forum?id=Ab 1"
    paper = Paper(id=url_id, abstract=text, title="Foo <bar> \"baz\"")
    entity = Entity("technique/quantization", "Technique", "quantization")
    start = paper.text.index(text)  # offsets are into title + "\n" + abstract
    relation = Relation(url_id, "usesTechnique", entity.id, Span(text[:20], start, start + 20),
                        "test", 0.5)
    corpus = Corpus((PaperResult(paper, ((entity.id, (Span("x", 0, 1),)),), (relation,)),),
                    {entity.id: entity})
    rdf.write_rdf(corpus, tmp_path)
    graph = rdflib.Graph().parse(tmp_path / "graph.ttl")
    node = rdflib.URIRef(paper_iri(url_id))
    assert "%3A%2F%2F" in str(node) and " " not in str(node)
    assert str(graph.value(node, rdflib.DCTERMS.identifier)) == url_id
    assert str(graph.value(node, rdflib.DCTERMS.title)) == 'Foo <bar> "baz"'


def test_a_relation_to_an_unknown_entity_is_reported_not_written(tmp_path):
    paper = Paper(id="p1", abstract="We use magic.")
    relation = Relation("p1", "usesTechnique", "technique/magic", Span("We", 0, 2), "r", 0.5)
    corpus = Corpus((PaperResult(paper, (), (relation,)),), {})
    with pytest.raises(InputError, match="technique/magic"):
        rdf.write_rdf(corpus, tmp_path)


def test_an_unknown_predicate_is_refused_never_pasted_into_an_iri(tmp_path):
    paper = Paper(id="p1", abstract="We use magic.")
    entity = Entity("technique/magic", "Technique", "magic")
    injected = 'usesTechnique> <https://evil.example/x> "y" .\n<a> <b'
    relation = Relation("p1", injected, entity.id, Span("We", 0, 2), "r", 0.5)
    corpus = Corpus((PaperResult(paper, ((entity.id, (Span("magic", 7, 12),)),), (relation,)),),
                    {entity.id: entity})
    with pytest.raises(InputError, match="unknown predicate"):
        rdf.write_rdf(corpus, tmp_path)
    assert not (tmp_path / "graph.nt").exists()


def test_the_built_graph_conforms_to_the_shapes(exports):
    assert validate_graph(exports / "graph.ttl") == []


def test_a_broken_graph_fails_validation_naming_each_problem(exports, tmp_path):
    lines = (exports / "graph.nt").read_text(encoding="utf-8").splitlines(keepends=True)
    evidence = next(line for line in lines if f"<{ONTOLOGY_NS}evidence>" in line)
    fact = next(line for line in lines
                if line.startswith(f"<{rdf.PAPER_NS}") and "#usesModel>" in line)
    model = next(line.split()[0] for line in lines if f"<{ONTOLOGY_NS}Model> ." in line)
    paper = fact.split()[0]
    broken = [line for line in lines if line not in (evidence, fact)]
    broken.append(f"{paper} <{ONTOLOGY_NS}evaluatedOn> {model} .\n")
    path = tmp_path / "broken.nt"
    path.write_text("".join(broken), encoding="utf-8")
    messages = " | ".join(v.message for v in validate_graph(path))
    assert "evidence sentence" in messages
    assert "not asserted" in messages
    assert "kg:Dataset" in messages


def test_a_paper_using_int4_quantization_is_found_under_quantization_and_model_compression(
        seed_corpus, store):
    result = paper_with(seed_corpus, "INT4")
    assert "technique/int4-quantization" in result.entity_ids
    query = saved_queries()["papers-sharing-technique"]
    for broader in ("INT4 quantization", "quantization", "Model Compression"):
        ids = {row["id"] for row in select(store, query, technique=broader)}
        assert result.paper.id in ids, broader
    default = {row["id"] for row in select(store, query)}  # documented default: quantization
    assert result.paper.id in default


def test_a_narrower_technique_does_not_find_papers_of_its_broader_one(seed_corpus, store):
    query = saved_queries()["papers-sharing-technique"]
    compressed = {row["id"] for row in select(store, query, technique="model compression")}
    int4 = {row["id"] for row in select(store, query, technique="INT4 quantization")}
    assert int4 < compressed


def test_related_papers_share_entities_with_the_given_paper(seed_corpus, store):
    result = paper_with(seed_corpus, "INT4")
    rows = select(store, saved_queries()["related-papers"], paper_id=result.paper.id)
    assert rows
    mine = set(result.entity_ids)
    by_id = {r.paper.id: r for r in seed_corpus.results}
    for row in rows:
        other = set(by_id[row["related_id"]].entity_ids)
        assert int(row["shared"]) == len(mine & other) > 0


def test_techniques_by_paper_count_matches_the_corpus(seed_corpus, store):
    rows = select(store, saved_queries()["techniques-by-paper-count"])
    counts = [int(r["papers"]) for r in rows]
    assert counts == sorted(counts, reverse=True)
    top = rows[0]
    eid = top["technique"].removeprefix(rdf.ENTITY_NS)
    # the number kg techniques gives: papers using it or a narrower concept
    expected = dict((e.id, n) for e, n in technique_counts(seed_corpus))[eid]
    assert int(top["papers"]) == expected


@pytest.mark.parametrize("name", sorted(saved_queries()))
def test_every_saved_query_parses_and_answers_on_the_demo_graph(store, name):
    rows = select(store, saved_queries()[name])
    # related-papers and evidence take a paper id; the demo's papers carry no year to trend
    if name not in ("related-papers", "evidence", "technique-trend"):
        assert rows, name


def test_the_evidence_query_returns_each_fact_of_a_paper(seed_corpus, store):
    result = paper_with(seed_corpus, "INT4")
    rows = select(store, saved_queries()["evidence"], paper_id=result.paper.id)
    assert len(rows) == len({(r.subject, r.predicate, r.object, r.evidence.start, r.rule)
                             for r in result.relations})
    text = result.paper.text
    for row in rows:
        assert text[int(row["start"]):int(row["end"])] == row["evidence"]


def test_a_bound_value_is_an_rdf_term_not_query_text(store):
    query = saved_queries()["papers-sharing-technique"]
    hostile = 'quantization")) } SELECT * WHERE { ?s ?p ?o } #'
    assert select(store, query, technique=hostile) == []
    assert parse_binding(hostile).value == hostile


def test_parse_binding_reads_iris_prefixed_names_and_typed_literals():
    assert parse_binding("<https://example.org/x>") == ox.NamedNode("https://example.org/x")
    assert parse_binding("model:llama") == ox.NamedNode(PREFIXES["model"] + "llama")
    typed = parse_binding('"5"^^xsd:integer')
    assert typed.datatype == ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
    assert parse_binding('"bonjour"@fr').language == "fr"
    with pytest.raises(InputError):
        parse_binding('"unterminated')
    with pytest.raises(InputError):
        parse_binding("<not an iri>")


def test_a_corpus_read_back_from_jsonl_gives_the_same_graph(seed_corpus, exports, tmp_path):
    path = tmp_path / "extraction.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        write_jsonl(seed_corpus, fh)
    corpus = read_jsonl(path)
    derived = derived_triples(derived_facts(corpus, k=0))  # a project writes them too
    again = rdf.triples_to_ntriples(rdf.corpus_triples(corpus, extra=derived))
    assert again == (exports / "graph.nt").read_text(encoding="utf-8")


def test_an_empty_corpus_gives_an_empty_graph(tmp_path):
    rdf.write_rdf(Corpus(()), tmp_path)
    assert (tmp_path / "graph.nt").read_text() == ""
    assert rdflib.Graph().parse(tmp_path / "graph.ttl").__len__() == 0


def test_paper_metadata_is_written_with_dcterms_and_the_graph_conforms(tmp_path):
    corpus = run([ROOT / "tests" / "data" / "inputs" / "papers.jsonl"])
    rdf.write_rdf(corpus, tmp_path)
    graph = rdflib.Graph().parse(tmp_path / "graph.ttl")
    p1 = rdflib.URIRef(paper_iri("p1"))
    dc = rdflib.DCTERMS
    assert str(graph.value(p1, dc.title)) == "Fast Caching for Diffusion"
    assert {str(o) for o in graph.objects(p1, dc.creator)} == {"A. Author", "B. Author"}
    assert {str(o) for o in graph.objects(p1, dc.subject)} == {"caching"}
    assert str(graph.value(p1, KG.venue)) == "ICLR 2025"
    issued = graph.value(p1, dc.issued)
    assert str(issued) == "2025" and issued.datatype == rdflib.XSD.gYear
    assert str(graph.value(p1, rdflib.URIRef("https://schema.org/url"))) == "https://example.org/p1"
    assert validate_graph(tmp_path / "graph.ttl") == []


def test_date_categories_venue_and_links_use_the_usual_vocabularies(tmp_path):
    schema = "https://schema.org/"
    base = dict(abstract="We propose KV caching for diffusion.", title="Fast caching",
                venue="ICLR 2024", year=2024)
    papers = [Paper("day", date="2024-05-01", categories=("cs.LG", "cs.AI"),
                    links=("https://arxiv.org/abs/2401.00001", "https://doi.org/10.1/x",
                           "not a link"), **base),
              Paper("month", date="2024-05", **base),
              Paper("year", **base),
              Paper("bad-day", date="2024-02-30", **base)]
    corpus = Corpus(tuple(PaperResult(p, (), ()) for p in papers))
    rdf.write_rdf(corpus, tmp_path)
    graph = rdflib.Graph().parse(tmp_path / "graph.ttl")
    node = {p.id: rdflib.URIRef(paper_iri(p.id)) for p in papers}
    dc, xsd = rdflib.DCTERMS, rdflib.XSD
    issued = {pid: list(graph.objects(n, dc.issued)) for pid, n in node.items()}
    assert {pid: [(str(v), v.datatype) for v in vs] for pid, vs in issued.items()} == {
        "day": [("2024-05-01", xsd.date)], "month": [("2024-05", xsd.gYearMonth)],
        "year": [("2024", xsd.gYear)], "bad-day": [("2024-02", xsd.gYearMonth)]}
    day = node["day"]
    assert {str(o) for o in graph.objects(day, KG.category)} == {"cs.LG", "cs.AI"}
    assert {"cs.LG", "cs.AI"} <= {str(o) for o in graph.objects(day, dc.subject)}
    assert str(graph.value(day, rdflib.URIRef(schema + "isPartOf"))) == "ICLR 2024"
    assert set(graph.objects(day, rdflib.URIRef(schema + "sameAs"))) == {
        rdflib.URIRef("https://arxiv.org/abs/2401.00001"), rdflib.URIRef("https://doi.org/10.1/x")}
    assert validate_graph(tmp_path / "graph.ttl") == []
