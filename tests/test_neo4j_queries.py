"""The saved Cypher queries in cypher/, on the demo corpus loaded into a real Neo4j.

Expected results come from reading the abstracts in examples/iclr2025-seed.txt.
"""

from __future__ import annotations

import csv
import io
import json

import pyoxigraph as ox
import pytest

pytest.register_assert_rewrite("neo4j_fixtures")

from conftest import ROOT, SEED, paper_with  # noqa: E402
from neo4j_fixtures import neo4j_env, run_kg, wipe  # noqa: E402

from kg import project as kg_project  # noqa: E402
from kg.derived import pair_counts  # noqa: E402
from kg.errors import QueryError  # noqa: E402
from kg.neo4j import (  # noqa: E402
    bind_params,
    derived_facts,
    load,
    load_project,
    project_id,
    query_params,
    run_query,
    write_derived,
)
from kg.pipeline import load_corpus, read_papers  # noqa: E402
from kg.sparql import saved_queries  # noqa: E402

pytest_plugins = ["neo4j_fixtures"]
pytestmark = pytest.mark.neo4j

CYPHER = ROOT / "cypher"
USES_LOTOS = ROOT / "tests" / "data" / "neo4j" / "uses-lotos.jsonl"


@pytest.fixture(scope="module")
def demo_project(tmp_path_factory):
    """The demo corpus as a `kg build` project."""
    out = tmp_path_factory.mktemp("demo") / "demo"
    kg_project.build(out, read_papers([SEED])[0], formats=["jsonl"])
    return out


@pytest.fixture(scope="module")
def demo_graph(neo4j_driver, neo4j_conn, demo_project):
    """The demo project loaded once for this module (with its derived facts); yields a query
    runner."""
    wipe(neo4j_driver, neo4j_conn)
    load_project(kg_project.open_project(demo_project), neo4j_conn)
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
    assert len(files) == 8
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


def test_related_papers_rank_by_weight(demo_graph, ids):
    rows = demo_graph("related-papers", paper=ids["rrs"], limit="20")
    weights = [r["weight"] for r in rows]
    assert weights == sorted(weights, reverse=True) and len(rows) == 10  # 10 are stored
    assert all(r["shared_entities"] == len(r["shared"]) for r in rows)
    shared = {r["paper"]: set(r["shared"]) for r in rows}
    # Both Rotated Runtime Smooth and model folding experiment on LLaMA.
    assert "LLaMA" in shared[ids["folding"]]
    assert ids["rrs"] not in shared
    # The limit applies, and keeps the best-ranked paper first.
    (best,) = demo_graph("related-papers", paper=ids["rrs"], limit="1")
    assert best["paper"] == rows[0]["paper"]


def test_techniques_used_together_by_two_papers_or_more_co_occur(demo_graph, demo_project):
    rows = demo_graph("technique-cooccurrence", limit="10000")
    pairs = {frozenset((r["technique"], r["with_technique"])): r["papers_together"]
             for r in rows}
    # Two of the 19 abstracts use attention mechanisms for in-context learning: the one pair
    # of 2 papers. Pairs of one paper only are not written (nor in RDF: kg.derived.pair_counts).
    assert pairs == {frozenset(("attention mechanism", "in-context learning")): 2}
    index = kg_project.open_project(demo_project).index()
    assert [(p.a, p.b, p.papers) for p in pair_counts(index)] == [
        ("technique/attention-mechanism", "technique/in-context-learning", 2)]
    assert demo_graph("technique-cooccurrence", min_papers="1", limit="10000") == rows
    assert len(demo_graph("technique-cooccurrence", min_papers="3")) == 0


def test_quantization_is_evaluated_on_wikitext2_with_llama_and_qwen(demo_graph, ids):
    rows = demo_graph("datasets-models-per-technique", technique="quantization")
    got = {(r["kind"], r["name"]): r["papers"] for r in rows}
    assert {("Dataset", "WikiText-2"), ("Model", "LLaMA"), ("Model", "Qwen")} <= set(got)
    assert all(papers == [ids["rrs"]] for papers in got.values())
    everything = demo_graph("datasets-models-per-technique", limit="1000")
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
        demo_graph, demo_project, neo4j_conn, neo4j_driver, seed_corpus, ids):
    # An extraction JSONL loaded into the project's part, as a second corpus, and the derived
    # facts rewritten (the users of a proposal are counted in the database).
    scope = project_id(demo_project)
    facts = derived_facts(kg_project.open_project(demo_project).index())
    load(load_corpus([USES_LOTOS]), neo4j_conn, project=scope)
    with neo4j_driver.session(database=neo4j_conn.database) as session:
        write_derived(session, scope, facts)
    try:
        (row,) = demo_graph("proposed-and-used", method="LOTOS")
        assert row["proposed_by"] == ids["lotos"]
        assert row["used_by"] == ["hand-written/uses-lotos"]
        assert row["how_used"] == ["hand-written/uses-lotos (MENTIONS, USES_TECHNIQUE)"]
    finally:
        with neo4j_driver.session(database=neo4j_conn.database) as session:
            session.run("MATCH (p:Paper {id: 'hand-written/uses-lotos'}) DETACH DELETE p"
                        ).consume()
            write_derived(session, scope, facts)


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
    done = run_kg("cypher", "technique-cooccurrence", "--param", "limit=10000", env=env)
    assert done.returncode == 0 and "in-context learning" in done.stdout


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


CORL = "openreview-2024/CoRL_2024_Conference.tsv"  # under the corpora_dir fixture


def _cli_json(*args: str) -> dict:
    done = run_kg(*args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _numbers(query, directory) -> dict:
    """What the saved Cypher and the CLI say of a project: technique users, the co-occurring
    pairs (those RDF keeps too: 2 papers or more, the first 1,000), and the related papers
    (with scores) of its first five papers."""
    cli = _cli_json("techniques", "--graph", str(directory), "-n", "100000")
    pairs = [p for p in cli["pairs"][:1000] if p["papers"] >= 2]
    papers = sorted(kg_project.open_project(directory).manifest.paper_digests)[:5]
    return {
        "users": ({t["id"]: t["papers"] for t in cli["techniques"]},
                  {r["id"]: r["papers"] for r in query("techniques", limit="100000")}),
        "pairs": ([(p["names"][0], p["names"][1], p["papers"]) for p in pairs],
                  [(r["technique"], r["with_technique"], r["papers_together"]) for r in query(
                      "technique-cooccurrence", min_papers="1", limit="100000")]),
        "related": ({pid: [(r["id"], r["score"]) for r in _cli_json(
                        "related", pid, "--graph", str(directory))["related"]]
                     for pid in papers},
                    {pid: [(r["paper"], r["weight"]) for r in query("related-papers", paper=pid)]
                     for pid in papers}),
    }


def test_saved_cypher_gives_the_cli_numbers_on_a_real_conference_after_a_delta(
        demo_graph, neo4j_conn, neo4j_driver, tmp_path, corpora_dir):
    """Technique users, co-occurrence, related papers (issue 25): Cypher reads the derived
    facts a load writes, equal to `kg techniques` / `kg related`, and a delta keeps them so —
    in the project's own part, beside the demo project's."""
    out = tmp_path / "corl"
    assert run_kg("build", str(corpora_dir / CORL), "-o", str(out)).returncode == 0
    load_project(kg_project.open_project(out), neo4j_conn)
    session = neo4j_driver.session(database=neo4j_conn.database)

    def query(name: str, **params: str) -> list[dict]:
        text = (CYPHER / f"{name}.cypher").read_text(encoding="utf-8")
        params["project"] = project_id(out)
        return run_query(session, text, bind_params(text, params, name))[1]

    numbers = _numbers(query, out)
    for what, (cli, cypher) in numbers.items():
        assert cli == cypher, what
    assert len(numbers["users"][0]) > 100 and len(numbers["pairs"][0]) > 100
    # The same pairs and counts as the saved SPARQL query (one number, one function), and
    # pages of the same order.
    store = kg_project.open_project(out).store()
    sparql = store.query(saved_queries()["technique-cooccurrence"],
                         substitutions={ox.Variable("limit"): ox.Literal("100000")})
    assert [(r["a_label"].value, r["b_label"].value, int(r["papers"].value)) for r in sparql
            ] == numbers["pairs"][1]
    assert query("technique-cooccurrence", skip="30", limit="7") == query(
        "technique-cooccurrence", limit="100000")[30:37]
    # Every technique `kg shared` lists papers for: the same papers through Cypher.
    for name in ("reinforcement learning", "imitation learning", "diffusion model"):
        cli = {p["id"] for p in _cli_json("shared", name, "--graph", str(out))["papers"]}
        assert cli == {r["paper"] for r in query("papers-sharing-technique", technique=name,
                                                 limit="100000")}, name
    # Remove the paper most related to the first one: every number follows the delta.
    first = sorted(kg_project.open_project(out).manifest.paper_digests)[0]
    gone = numbers["related"][0][first][0][0]
    assert run_kg("remove", str(out), gone).returncode == 0
    assert load_project(kg_project.open_project(out), neo4j_conn).mode == "delta"
    after = _numbers(query, out)
    for what, (cli, cypher) in after.items():
        assert cli == cypher, what
    assert gone not in [pid for pid, _ in after["related"][1][first]]
    assert after["users"] != numbers["users"]
    session.close()
