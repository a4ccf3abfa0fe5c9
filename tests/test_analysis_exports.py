"""GraphML and CSV exports of the corpus graph (kg.analysis) on the real pipeline."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from urllib.parse import quote

import networkx as nx
from conftest import ROOT, paper_with

from kg.analysis import corpus_graph, entity_iri, paper_iri
from kg.exports import EDGE_COLUMNS, NODE_COLUMNS, write_csv, write_graphml
from kg.io import write_jsonl
from kg.pipeline import run
from kg.vocab import load_vocabulary

WRITE_EXPORTS = """
import sys
from kg.exports import write_csv, write_graphml
from kg.pipeline import load_corpus
corpus = load_corpus([sys.argv[1]])
write_graphml(corpus, sys.argv[2] + "/graph.graphml")
write_csv(corpus, sys.argv[2] + "/nodes.csv", sys.argv[2] + "/edges.csv")
"""


def _expected_counts(corpus) -> tuple[int, int]:
    """Nodes and edges the graph must have, counted from the corpus and vocabulary directly."""
    vocab = load_vocabulary()
    concepts: set[str] = set()
    for e in corpus.entities.values():
        if e.concept:
            concepts |= {e.concept, *vocab.ancestors(e.concept)}
    nodes = len(corpus) + len(corpus.entities) + len(concepts)
    relations = sum(len(r.relations) for r in corpus.results)
    concept_links = sum(1 for e in corpus.entities.values() if e.concept)
    broader = sum(len(vocab.concepts[c].broader) for c in concepts)
    return nodes, relations + concept_links + broader


def test_graphml_round_trips_through_networkx_with_every_node_and_edge(seed_corpus, tmp_path):
    path = write_graphml(seed_corpus, tmp_path / "graph.graphml")
    graph = nx.read_graphml(path)
    assert isinstance(graph, nx.MultiDiGraph)
    nodes, edges = _expected_counts(seed_corpus)
    assert (graph.number_of_nodes(), graph.number_of_edges()) == (nodes, edges)
    kinds = {d["kind"] for _, d in graph.nodes(data=True)}
    assert kinds == {"paper", "entity", "concept"}
    rrs = paper_with(seed_corpus, "Rotated Runtime Smooth").paper
    llama = [d for _, _, d in graph.edges(paper_iri(rrs.id), data=True)
             if d["predicate"] == "usesModel" and _ == entity_iri("model/llama")]
    (edge,) = llama
    assert "LLaMA" in edge["evidence"]
    assert rrs.text[edge["start"]:edge["end"]] == edge["evidence"]
    assert isinstance(edge["confidence"], float) and edge["paper"] == rrs.id


def test_graph_attributes_are_graphml_scalars(seed_corpus):
    graph = corpus_graph(seed_corpus)
    values = [v for _, d in graph.nodes(data=True) for v in d.values()]
    values += [v for _, _, d in graph.edges(data=True) for v in d.values()]
    assert values and all(isinstance(v, str | int | float | bool) for v in values)


def test_concept_hierarchy_is_in_the_graph(seed_corpus):
    graph = corpus_graph(seed_corpus)
    vocab = load_vocabulary()
    resnet18 = vocab.by_label("Model", "ResNet-18")
    resnet = vocab.by_label("Model", "ResNet")
    assert graph.has_edge(entity_iri("model/resnet-18"), resnet18, key="concept")
    assert graph.has_edge(resnet18, resnet, key="broader")
    assert graph.nodes[resnet]["label"] == "ResNet"


def test_csv_columns_and_rows_match_the_graph(seed_corpus, tmp_path):
    write_csv(seed_corpus, tmp_path / "nodes.csv", tmp_path / "edges.csv")
    graph = corpus_graph(seed_corpus)
    with (tmp_path / "nodes.csv").open(encoding="utf-8", newline="") as fh:
        nodes = list(csv.DictReader(fh))
    with (tmp_path / "edges.csv").open(encoding="utf-8", newline="") as fh:
        edges = list(csv.DictReader(fh))
    assert tuple(nodes[0]) == NODE_COLUMNS and NODE_COLUMNS[:4] == ("id", "kind", "type", "label")
    assert tuple(edges[0])[:8] == ("source", "target", "predicate", "evidence", "start", "end",
                                   "rule", "confidence")
    assert tuple(edges[0]) == EDGE_COLUMNS
    assert len(nodes) == graph.number_of_nodes() and len(edges) == graph.number_of_edges()
    assert [n["id"] for n in nodes] == sorted(n["id"] for n in nodes)
    texts = {r.paper.id: r.paper.text for r in seed_corpus.results}
    relation_rows = [e for e in edges if e["evidence"]]
    assert len(relation_rows) == sum(len(r.relations) for r in seed_corpus.results)
    for row in relation_rows:
        assert texts[row["paper"]][int(row["start"]):int(row["end"])] == row["evidence"]


def test_exports_are_byte_identical_across_runs_and_hash_seeds(seed_corpus, tmp_path):
    jsonl = tmp_path / "extraction.jsonl"
    with jsonl.open("w", encoding="utf-8") as fh:
        write_jsonl(seed_corpus, fh)
    outputs = []
    for name in ("a", "b"):
        out = tmp_path / name
        out.mkdir()
        write_graphml(seed_corpus, out / "graph.graphml")
        write_csv(seed_corpus, out / "nodes.csv", out / "edges.csv")
        outputs.append(out)
    for seed in ("1", "2"):  # separate processes, different set/dict hash orders
        out = tmp_path / f"proc{seed}"
        out.mkdir()
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", WRITE_EXPORTS, str(jsonl), str(out)],
                       check=True, cwd=ROOT, env=env)
        outputs.append(out)
    # Same process twice, and two processes with different hash seeds. (In-process and
    # subprocess are not compared: the subprocess re-reads the vocabulary files.)
    for a, b in ((outputs[0], outputs[1]), (outputs[2], outputs[3])):
        for name in ("graph.graphml", "nodes.csv", "edges.csv"):
            assert (a / name).read_bytes(), f"{a / name} is empty"
            assert (a / name).read_bytes() == (b / name).read_bytes(), f"{b / name} differs"


def test_arbitrary_paper_ids_become_percent_encoded_iris(tmp_path):
    source = tmp_path / "papers.jsonl"
    records = [
        {"id": "https://openreview.net/forum?id=a b", "title": "Caching",
         "abstract": "We use a KV cache to speed up LLaMA inference."},
        {"id": "p/2", "abstract": "We apply prefix caching to LLaMA serving."},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    corpus = run([source])
    path = write_graphml(corpus, tmp_path / "graph.graphml")
    graph = nx.read_graphml(path)
    for record in records:
        iri = "https://w3id.org/mlkg/paper/" + quote(record["id"], safe="")
        assert graph.nodes[iri]["kg_id"] == record["id"]
        assert graph.nodes[iri]["kind"] == "paper"


def test_a_corpus_with_no_entities_still_exports(tmp_path):
    source = tmp_path / "plain.txt"
    source.write_text("We study a question about nothing in particular here.\n", encoding="utf-8")
    corpus = run([source])
    graph = nx.read_graphml(write_graphml(corpus, tmp_path / "g.graphml"))
    assert graph.number_of_nodes() == _expected_counts(corpus)[0] >= 1
    write_csv(corpus, tmp_path / "n.csv", tmp_path / "e.csv")
    rows = (tmp_path / "n.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == ",".join(NODE_COLUMNS) and len(rows) == 1 + _expected_counts(corpus)[0]


def _hostile_corpus(tmp_path):
    records = [
        {"id": "p\x0cf", "title": "=HYPERLINK(\"http://evil.example\",\"x\")\x00 with NUL",
         "abstract": "We apply knowledge distillation\x0c to ResNet-50 on ImageNet."},
        {"id": "p2", "title": "@SUM(A1:A9)",
         "abstract": "We use +quantization and -pruning with LoRA on LLaMA."},
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return run([path])


def test_control_characters_in_titles_and_evidence_still_give_valid_graphml(tmp_path):
    import xml.etree.ElementTree as ET

    corpus = _hostile_corpus(tmp_path)
    path = write_graphml(corpus, tmp_path / "graph.graphml")
    ET.parse(path)  # raises on a form feed or NUL
    graph = nx.read_graphml(path)
    titles = {d.get("title") for _, d in graph.nodes(data=True) if d["kind"] == "paper"}
    assert '=HYPERLINK("http://evil.example","x") with NUL' in titles
    assert any("distillation to ResNet-50" in d.get("evidence", "")
               for _, _, d in graph.edges(data=True))


def test_csv_cells_that_a_spreadsheet_would_run_as_formulas_start_with_a_quote(tmp_path):
    corpus = _hostile_corpus(tmp_path)
    write_csv(corpus, tmp_path / "nodes.csv", tmp_path / "edges.csv")
    cells = []
    for name in ("nodes.csv", "edges.csv"):
        with (tmp_path / name).open(encoding="utf-8", newline="") as fh:
            cells += [cell for row in csv.reader(fh) for cell in row]
    assert "'@SUM(A1:A9)" in cells
    assert any(c.startswith("'=HYPERLINK(") for c in cells)
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]


def test_an_entity_has_one_iri_in_graphml_csv_and_rdf(tmp_path):
    from kg import analysis, rdf
    from kg.model import Corpus, Entity, Paper, PaperResult, Relation, Span

    paper = Paper(id="p1", abstract="We propose a+b.")
    entity = Entity("method/a+b", "Method", "a+b")
    relation = Relation("p1", "proposes", entity.id, Span(paper.abstract, 0, 15), "test", 0.9)
    corpus = Corpus((PaperResult(paper, ((entity.id, (Span("a+b", 11, 14),)),), (relation,)),),
                    {entity.id: entity})
    assert analysis.entity_iri is rdf.entity_iri and analysis.paper_iri is rdf.paper_iri
    iri = rdf.entity_iri("method/a+b")
    assert iri.endswith("/method/a%2Bb")
    rdf.write_rdf(corpus, tmp_path)
    write_graphml(corpus, tmp_path / "graph.graphml")
    write_csv(corpus, tmp_path / "nodes.csv", tmp_path / "edges.csv")
    assert f"<{iri}>" in (tmp_path / "graph.nt").read_text(encoding="utf-8")
    assert iri in nx.read_graphml(tmp_path / "graph.graphml")
    with (tmp_path / "nodes.csv").open(encoding="utf-8", newline="") as fh:
        assert iri in {row["id"] for row in csv.DictReader(fh)}
