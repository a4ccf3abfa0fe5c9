"""The saved Cypher queries in cypher/, on the demo corpus loaded into a real Neo4j.

Expected results come from reading the abstracts in examples/iclr2025-seed.txt.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

pytest.register_assert_rewrite("neo4j_fixtures")

from conftest import ROOT, paper_with  # noqa: E402
from neo4j_fixtures import neo4j_env, run_kg, wipe  # noqa: E402

from kg.errors import QueryError  # noqa: E402
from kg.neo4j import bind_params, load, query_params, run_query  # noqa: E402
from kg.pipeline import load_corpus  # noqa: E402

pytest_plugins = ["neo4j_fixtures"]
pytestmark = pytest.mark.neo4j

CYPHER = ROOT / "cypher"
USES_LOTOS = ROOT / "tests" / "data" / "neo4j" / "uses-lotos.jsonl"


@pytest.fixture(scope="module")
def demo_graph(neo4j_driver, neo4j_conn, seed_corpus):
    """The demo corpus loaded once for this module; yields a query runner."""
    wipe(neo4j_driver, neo4j_conn)
    load(seed_corpus, neo4j_conn)
    with neo4j_driver.session(database=neo4j_conn.database) as session:

        def query(name: str, **params: str) -> list[dict]:
            text = (CYPHER / f"{name}.cypher").read_text(encoding="utf-8")
            return run_query(session, text, bind_params(text, params, name))[1]

        yield query


@pytest.fixture(scope="module")
def ids(seed_corpus):
    def pid(needle: str) -> str:
        return paper_with(seed_corpus, needle).paper.id

    return {
        "rrs": pid("Rotated Runtime Smooth"),
        "folding": pid("We introduce model folding"),
        "cav2vec": pid("we propose CAV2vec"),
        "spp": pid("we propose pruning of pretrained transformers"),
        "lotos": pid("we introduce LOTOS"),
        "space": pid("We present SPACE"),
        "fai": pid("Few-shot Attention Intervention"),
        "icl": pid("Large language models have been successful at tasks involving basic"),
        "atp": pid("Adaptive Transformer Programs"),
    }


def test_every_saved_query_declares_its_parameters():
    files = sorted(CYPHER.glob("*.cypher"))
    assert len(files) == 7
    for path in files:
        text = path.read_text(encoding="utf-8")
        used = set(__import__("re").findall(r"\$(\w+)", text))
        assert used == set(query_params(text)), path.name


def test_the_quantization_paper_shares_quantization_through_narrower_concepts(demo_graph, ids):
    rows = demo_graph("papers-sharing-technique", technique="quantization")
    # Only Rotated Runtime Smooth is about quantization; it names INT4 and activation
    # quantization too, which are narrower concepts of quantization.
    assert [r["paper"] for r in rows] == [ids["rrs"]]
    assert set(rows[0]["via"]) == {"quantization", "INT4 quantization", "activation quantization"}
    assert "USES_TECHNIQUE" in rows[0]["relations"]


def test_model_compression_gathers_quantization_pruning_and_distillation_papers(demo_graph, ids):
    rows = demo_graph("papers-sharing-technique", technique="model compression")
    by_paper = {r["paper"]: set(r["via"]) for r in rows}
    # quantization (RRS), pruning (SPP), self-distillation (CAV2vec) are all model compression;
    # model folding names model compression itself.
    assert set(by_paper) == {ids["rrs"], ids["spp"], ids["cav2vec"], ids["folding"]}
    assert "pruning" in by_paper[ids["spp"]]
    assert "self-distillation" in by_paper[ids["cav2vec"]]
    assert by_paper[ids["folding"]] == {"model compression"}


def test_attention_papers_include_one_that_only_names_a_narrower_attention_concept(
        demo_graph, ids):
    rows = demo_graph("papers-sharing-technique", technique="technique/attention-mechanism")
    by_paper = {r["paper"]: set(r["via"]) for r in rows}
    # The in-context-reasoning paper ("attention layers") and Adaptive Transformer Programs
    # ("attention modules") name attention; Few-shot Attention Intervention speaks of
    # attention patterns/weights — the narrower "attention map".
    assert {ids["icl"], ids["atp"], ids["fai"]} <= set(by_paper)
    assert "attention map" in by_paper[ids["fai"]]


def test_related_papers_rank_by_shared_entities(demo_graph, ids):
    rows = demo_graph("related-papers", paper=ids["rrs"], limit="20")
    counts = [r["shared_entities"] for r in rows]
    assert counts == sorted(counts, reverse=True)
    assert all(r["shared_entities"] == len(r["shared"]) for r in rows)
    shared = {r["paper"]: set(r["shared"]) for r in rows}
    # Both Rotated Runtime Smooth and model folding experiment on LLaMA.
    assert "LLaMA" in shared[ids["folding"]]
    assert ids["rrs"] not in shared
    # The limit applies, and keeps the best-ranked paper first.
    (best,) = demo_graph("related-papers", paper=ids["rrs"], limit="1")
    assert best["paper"] == rows[0]["paper"]


def test_techniques_a_paper_uses_together_co_occur(demo_graph, ids):
    rows = demo_graph("technique-cooccurrence", min_papers="1", limit="10000")
    pairs = {frozenset((r["technique"], r["with_technique"])): set(r["papers"]) for r in rows}
    # Adaptive Transformer Programs: attention mechanisms, for mechanistic interpretability.
    assert ids["atp"] in pairs[frozenset(("attention mechanism", "mechanistic interpretability"))]
    assert all(r["papers_together"] >= 1 for r in rows)
    counts = [r["papers_together"] for r in rows]
    assert counts == sorted(counts, reverse=True)
    assert len(demo_graph("technique-cooccurrence", min_papers="50")) == 0


def test_quantization_is_evaluated_on_wikitext2_with_llama_and_qwen(demo_graph, ids):
    rows = demo_graph("datasets-models-per-technique", technique="quantization")
    got = {(r["kind"], r["name"]): r["papers"] for r in rows}
    assert {("Dataset", "WikiText-2"), ("Model", "LLaMA"), ("Model", "Qwen")} <= set(got)
    assert all(papers == [ids["rrs"]] for papers in got.values())
    everything = demo_graph("datasets-models-per-technique")
    # LOTOS trains ensembles of ResNet-18 and reports CIFAR-10.
    assert {(r["technique"], r["name"]) for r in everything} >= {
        ("ensemble learning", "CIFAR-10"), ("ensemble learning", "ResNet-18")}


def test_datasets_and_models_per_technique_count_uses_not_mentions(demo_graph, ids):
    # The model-folding paper names fine-tuning only as what it does without ("data-free");
    # its models and datasets are not fine-tuning's unless mentions are asked for (issue 25).
    used = demo_graph("datasets-models-per-technique", technique="fine-tuning")
    assert all(ids["folding"] not in r["papers"] for r in used)
    mentioned = demo_graph("datasets-models-per-technique", technique="fine-tuning",
                           include_mentions="true")
    assert any(ids["folding"] in r["papers"] for r in mentioned)


def test_the_quantization_and_folding_papers_are_linked_through_llama(demo_graph, ids):
    rows = demo_graph("why-linked", a=ids["rrs"], b=ids["folding"])
    assert rows[0]["steps"] == [ids["rrs"], "LLaMA", ids["folding"]]
    assert rows[0]["relations"] == ["USES_MODEL", "USES_MODEL"]
    assert rows[0]["hops"] == 2
    assert any("LLaMA" in e for e in rows[0]["evidence"])


def test_proposed_methods_are_listed_with_their_proposers(demo_graph, ids):
    rows = demo_graph("proposed-and-used")
    proposed = {r["proposed"]: r["proposed_by"] for r in rows}
    assert proposed["LOTOS"] == ids["lotos"]
    assert proposed["CAV2vec"] == ids["cav2vec"]
    assert proposed["SPACE"] == ids["space"]
    assert next(r for r in rows if r["proposed"] == "SPACE")["type"] == "Dataset"
    # Nobody else in the 19 abstracts uses LOTOS.
    assert demo_graph("proposed-and-used", method="lotos")[0]["used_by"] == []


def test_a_later_paper_that_uses_lotos_shows_up_as_its_user(
        demo_graph, neo4j_conn, neo4j_driver, seed_corpus, ids):
    load(load_corpus([USES_LOTOS]), neo4j_conn)  # an extraction JSONL as the second corpus
    try:
        (row,) = demo_graph("proposed-and-used", method="LOTOS")
        assert row["proposed_by"] == ids["lotos"]
        assert row["used_by"] == ["hand-written/uses-lotos"]
        assert row["how_used"] == ["hand-written/uses-lotos (MENTIONS, USES_TECHNIQUE)"]
    finally:
        with neo4j_driver.session(database=neo4j_conn.database) as session:
            session.run("MATCH (p:Paper {id: 'hand-written/uses-lotos'}) DETACH DELETE p"
                        ).consume()


def test_kg_cypher_prints_json_and_csv(demo_graph, neo4j_conn, ids):
    env = neo4j_env(neo4j_conn)
    done = run_kg("cypher", "cypher/why-linked.cypher", "--param", f"a={ids['rrs']}",
                  "--param", f"b={ids['folding']}", "--format", "json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["steps"][1] == "LLaMA"
    done = run_kg("cypher", "papers-sharing-technique", "--param", "technique=quantization",
                  "--format", "csv", env=env)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert [r["paper"] for r in rows] == [ids["rrs"]]
    done = run_kg("cypher", "technique-cooccurrence", "--param", "min_papers=1",
                  "--param", "limit=10000", env=env)
    assert done.returncode == 0 and "mechanistic interpretability" in done.stdout


def test_kg_cypher_reports_missing_and_unknown_parameters(neo4j_conn):
    env = neo4j_env(neo4j_conn)
    done = run_kg("cypher", "related-papers", env=env)
    assert done.returncode == QueryError.exit_code
    assert "missing parameter 'paper'; pass --param paper=" in done.stderr
    done = run_kg("cypher", "related-papers", "--param", "paper=x", "--param", "colour=red",
                  env=env)
    assert done.returncode == 5 and "unknown parameter 'colour'" in done.stderr


def test_kg_cypher_is_read_only_unless_asked(demo_graph, neo4j_conn, tmp_path):
    query = tmp_path / "write.cypher"
    query.write_text("// @param name:str\nCREATE (:Scratch {name: $name})\n")
    env = neo4j_env(neo4j_conn)
    done = run_kg("cypher", str(query), "--param", "name=x", env=env)
    assert done.returncode == 5 and "Traceback" not in done.stderr
    check = tmp_path / "count.cypher"
    check.write_text("MATCH (s:Scratch) RETURN count(s) AS n\n")
    assert json.loads(run_kg("cypher", str(check), "--format", "json", env=env).stdout) == [
        {"n": 0}]
