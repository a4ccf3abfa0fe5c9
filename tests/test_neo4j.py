"""Loading into a real Neo4j: counts, idempotence, merging, failures, safe parameters, export."""

from __future__ import annotations

import csv
import re
from dataclasses import replace
from pathlib import Path

import pytest

pytest.register_assert_rewrite("neo4j_fixtures")

from conftest import DATA, SEED, paper_with  # noqa: E402
from neo4j_fixtures import ROOT, free_port, neo4j_env, run_kg, wipe  # noqa: E402

from kg.errors import ServiceError  # noqa: E402
from kg.model import Corpus, Entity, Paper, PaperResult, Relation, Span  # noqa: E402
from kg.neo4j import (  # noqa: E402
    ADMIN_FILES,
    DEFAULT_PROJECT,
    REL_TYPES,
    Connection,
    concept_rows,
    connect,
    corpus_counts,
    graph_counts,
    load,
    run_cypher_script,
    write_admin_csvs,
    write_cypher_script,
)
from kg.pipeline import load_corpus  # noqa: E402
from kg.rdf import corpus_to_graph  # noqa: E402

SECOND = DATA / "neo4j" / "second-corpus.txt"
pytest_plugins = ["neo4j_fixtures"]  # neo4j_conn, neo4j_driver, neo4j_db


def concept_count(session) -> int:
    return session.run("MATCH (c:Concept) RETURN count(c) AS n").single()["n"]


def total_relationships(session) -> int:
    return session.run("MATCH ()-[r]->() RETURN count(r) AS n").single()["n"]


@pytest.mark.neo4j
def test_loaded_counts_equal_the_corpus_and_the_rdf_graph(neo4j_db, seed_corpus):
    session, conn = neo4j_db
    report = load(seed_corpus, conn)
    counts = graph_counts(session)
    assert counts == corpus_counts(seed_corpus)
    assert counts["papers"] == 19
    assert report.relations == sum(counts["relations"].values())
    # Every relationship of the model is a corpus relation, HAS_CONCEPT or BROADER: no strays.
    has_concept = sum(1 for e in seed_corpus.entities.values() if e.concept)
    broader = session.run("MATCH (:Concept)-[b:BROADER]->(:Concept) RETURN count(b) AS n"
                          ).single()["n"]
    assert total_relationships(session) == report.relations + has_concept + broader

    # The RDF graph is built from the same Corpus by kg.rdf: its counts must agree too.
    graph = corpus_to_graph(seed_corpus)
    kg_ns = "https://w3id.org/mlkg/ontology#"

    def rdf_count(where: str) -> int:
        query = (f"PREFIX kg: <{kg_ns}> PREFIX skos: <http://www.w3.org/2004/02/skos/core#> "
                 "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> "
                 f"SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE {{ {where} }}")
        return int(next(iter(graph.query(query)))[0])

    assert rdf_count("?x a kg:Paper") == counts["papers"]
    for type_, n in counts["entities"].items():
        assert rdf_count(f"?x a kg:Entity, kg:{type_}") == n, type_
    for predicate, n in counts["relations"].items():
        assert rdf_count(f"?x a kg:Assertion; rdf:predicate kg:{predicate}") == n, predicate
    assert rdf_count("?x a skos:Concept") == concept_count(session) == report.concepts


@pytest.mark.neo4j
def test_reloading_the_same_corpus_creates_no_duplicates(neo4j_db, seed_corpus):
    session, conn = neo4j_db
    first = load(seed_corpus, conn, papers_per_batch=4)
    before = (graph_counts(session), concept_count(session), total_relationships(session))
    second = load(seed_corpus, conn)
    assert first.nodes_created > 0 and first.relationships_created > 0
    assert (second.nodes_created, second.relationships_created) == (0, 0)
    assert (graph_counts(session), concept_count(session), total_relationships(session)) == before


@pytest.mark.neo4j
def test_a_second_corpus_adds_its_papers_and_merges_shared_entities(neo4j_db, seed_corpus):
    session, conn = neo4j_db
    second = load_corpus([SECOND])
    load(seed_corpus, conn)
    load(second, conn)
    counts = graph_counts(session)
    assert counts["papers"] == len(seed_corpus) + len(second) == 21
    entity_ids = set(seed_corpus.entities) | set(second.entities)
    n_entities = session.run("MATCH (e:Entity) RETURN count(e) AS n").single()["n"]
    assert n_entities == len(entity_ids) < len(seed_corpus.entities) + len(second.entities)
    # LLaMA is one node, used by Rotated Runtime Smooth, model folding and the new paper.
    rrs = paper_with(seed_corpus, "Rotated Runtime Smooth").paper.id
    folding = paper_with(seed_corpus, "We introduce model folding").paper.id
    low_bit = paper_with(second, "post-training quantization").paper.id
    rows = session.run("MATCH (p:Paper)-[:USES_MODEL]->(m:Entity {id: 'model/llama'}) "
                       "RETURN m.id AS m, collect(DISTINCT p.id) AS papers").data()
    assert len(rows) == 1
    assert sorted(rows[0]["papers"]) == sorted([rrs, folding, low_bit])


@pytest.mark.neo4j
def test_loading_through_the_cli_reports_what_it_did(neo4j_db):
    session, conn = neo4j_db
    done = run_kg("neo4j", "load", str(SECOND), "--uri", conn.uri, "--user", conn.user,
                  env={"NEO4J_PASSWORD": conn.password})
    assert done.returncode == 0, done.stderr
    assert re.search(r"loaded 2 papers, \d+ entities", done.stdout)
    assert graph_counts(session)["papers"] == 2


@pytest.mark.neo4j
def test_a_wrong_password_is_a_clear_error_with_the_service_exit_code(neo4j_conn):
    with pytest.raises(ServiceError, match="rejected user 'neo4j': wrong user name or password"):
        connect(Connection(neo4j_conn.uri, neo4j_conn.user, "not-the-password"))
    done = run_kg("neo4j", "load", str(SECOND), "--uri", neo4j_conn.uri,
                  env={"NEO4J_PASSWORD": "not-the-password"})
    assert done.returncode == ServiceError.exit_code == 6
    assert "wrong user name or password" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unreachable_server_is_a_clear_error_with_the_service_exit_code():
    uri = f"bolt://127.0.0.1:{free_port()}"
    with pytest.raises(ServiceError, match=f"cannot reach Neo4j at {uri}"):
        connect(Connection(uri, "neo4j", "whatever1"), timeout=3)
    done = run_kg("neo4j", "load", str(SECOND), "--uri", uri,
                  env={"NEO4J_PASSWORD": "whatever1"})
    assert done.returncode == 6
    assert f"cannot reach Neo4j at {uri}" in done.stderr and "is the server running?" in done.stderr
    assert "Traceback" not in done.stderr


def tricky_corpus() -> Corpus:
    """Names built to break spliced Cypher: quotes, backslashes, braces, comments, newlines."""
    name = "O'Brien \"quoted\" })-[:X]->(n) DETACH DELETE n // \\ end"
    title = "A paper about " + name
    abstract = f"We use {name} here.\nSecond line; with a semicolon."
    paper = Paper(id="weird'id\"}) //", abstract=abstract, title=title, label=name)
    text = paper.text
    start = text.index("We use ") + len("We use ")
    span = Span(name, start, start + len(name))
    entity = Entity("technique/obrien-quoted", "Technique", name, aliases=("it's {a}",))
    evidence = Span(text[len(title) + 1:], len(title) + 1, len(text))
    relations = (Relation(paper.id, "usesTechnique", entity.id, evidence, "rule'}", 0.5),
                 Relation(paper.id, "mentions", entity.id, evidence, "mention", 0.9))
    return Corpus((PaperResult(paper, ((entity.id, (span,)),), relations),),
                  {entity.id: entity})


@pytest.mark.neo4j
def test_names_with_quotes_and_braces_are_stored_verbatim_and_queried_safely(neo4j_db):
    session, conn = neo4j_db
    corpus = tricky_corpus()
    load(corpus, conn)
    entity = corpus.entities["technique/obrien-quoted"]
    paper = corpus.results[0].paper
    row = session.run("MATCH (p:Paper)-[r:USES_TECHNIQUE]->(e:Technique) "
                      "RETURN p.id AS id, p.abstract AS abstract, e.name AS name, "
                      "e.aliases AS aliases, r.rule AS rule").single()
    assert (row["id"], row["abstract"], row["name"], row["aliases"], row["rule"]) == (
        paper.id, paper.abstract, entity.name, ["it's {a}"], "rule'}")
    # The saved query receives the name as a parameter.
    done = run_kg("cypher", "papers-sharing-technique", "--param", f"technique={entity.name}",
                  "--format", "json", env=neo4j_env(conn))
    assert done.returncode == 0, done.stderr
    assert '"paper": "weird\'id\\"}) //"' in done.stdout
    assert graph_counts(session) == corpus_counts(corpus)


def hold_paper_lock(driver, conn, paper_id: str):
    """An open transaction holding the write lock of ``paper_id``'s unique key."""
    session = driver.session(database=conn.database)
    tx = session.begin_transaction()
    tx.run("MERGE (p:Paper {project: $project, id: $id}) SET p.blocked = true", id=paper_id,
           project=DEFAULT_PROJECT).consume()
    return session, tx


@pytest.mark.neo4j
def test_a_batch_rejected_twice_fails_clearly_and_leaves_no_half_written_paper(
        neo4j_db, neo4j_driver, seed_corpus):
    session, conn = neo4j_db
    load(seed_corpus, conn)  # warm the query caches so only the lock makes a batch time out
    wipe(neo4j_driver, conn)
    victim = seed_corpus.results[7].paper.id  # in the second batch of 5
    blocker, tx = hold_paper_lock(neo4j_driver, conn, victim)
    retried = []
    try:
        with pytest.raises(ServiceError, match=r"rejected batch 2 \(5 papers: .*\) twice.*"
                                               r"5 earlier paper\(s\) stay committed"):
            load(seed_corpus, conn, papers_per_batch=5, tx_timeout=3,
                 on_retry=lambda batch, exc: retried.append(batch.index))
    finally:
        tx.rollback()
        blocker.close()
    assert retried == [1]
    # Exactly the first batch's papers are there, each with all of its relations.
    first = seed_corpus.results[:5]
    stored = session.run("MATCH (p:Paper) OPTIONAL MATCH (p)-[r]->() "
                         "RETURN p.id AS id, count(r) AS n").data()
    expected = {r.paper.id: sum(1 for rel in r.relations if rel.subject == r.paper.id)
                for r in first}
    assert {row["id"]: row["n"] for row in stored} == expected


@pytest.mark.neo4j
def test_a_batch_that_fails_once_is_retried_reported_and_committed(
        neo4j_db, neo4j_driver, seed_corpus):
    session, conn = neo4j_db
    load(seed_corpus, conn)
    wipe(neo4j_driver, conn)
    blocker, tx = hold_paper_lock(neo4j_driver, conn, seed_corpus.results[7].paper.id)

    def release(batch, exc) -> None:  # the lock goes away before the retry
        tx.rollback()
        blocker.close()

    report = load(seed_corpus, conn, papers_per_batch=5, tx_timeout=3, on_retry=release)
    assert len(report.retried) == 1 and report.retried[0].startswith("batch 2 (5 papers")
    assert "retried once: batch 2" in report.summary()
    assert graph_counts(session) == corpus_counts(seed_corpus)
    assert session.run("MATCH (p:Paper) WHERE p.blocked RETURN count(p) AS n").single()["n"] == 0


@pytest.mark.neo4j
def test_the_exported_cypher_script_rebuilds_the_same_graph(neo4j_db, seed_corpus, tmp_path):
    session, conn = neo4j_db
    done = run_kg("export", str(SEED), "--format", "cypher", "-o", str(tmp_path))
    assert done.returncode == 0, done.stderr
    script = (tmp_path / "graph.cypher").read_text(encoding="utf-8")
    assert ":param rows => [" in script
    run_cypher_script(session, script)
    counts = graph_counts(session)
    assert counts == corpus_counts(seed_corpus)
    relationships = total_relationships(session)
    run_cypher_script(session, script)  # MERGE all the way: running it again changes nothing
    assert graph_counts(session) == counts and total_relationships(session) == relationships
    # Same graph as the live loader: re-loading the corpus on top creates nothing.
    report = load(seed_corpus, conn)
    assert (report.nodes_created, report.relationships_created) == (0, 0)


@pytest.mark.neo4j
def test_the_cypher_script_keeps_tricky_strings_intact(neo4j_db, tmp_path):
    session, _ = neo4j_db
    corpus = tricky_corpus()
    run_cypher_script(session, write_cypher_script(corpus, tmp_path / "g.cypher").read_text())
    row = session.run("MATCH (p:Paper)-[r:USES_TECHNIQUE]->(e) "
                      "RETURN p.id AS id, p.abstract AS a, e.name AS name, r.rule AS rule").single()
    paper = corpus.results[0].paper
    assert (row["id"], row["a"], row["name"], row["rule"]) == (
        paper.id, paper.abstract, corpus.entities["technique/obrien-quoted"].name, "rule'}")


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


ID_HEADER = re.compile(r"^(?P<prop>\w*):(?P<kind>ID|START_ID|END_ID)\((?P<space>\w+)\)$")
TYPED = re.compile(r"^\w+(:(int|double|float|long|boolean|string|string\[\]))?$")


def test_neo4j_admin_csvs_have_well_formed_headers_and_consistent_ids(seed_corpus, tmp_path):
    written = write_admin_csvs(seed_corpus, tmp_path)
    assert [p.name for p in written] == [*ADMIN_FILES, "import.sh"]
    ids: dict[str, set[str]] = {}
    node_labels: dict[str, list[str]] = {}
    for name in ADMIN_FILES[:3]:
        header, rows = read_csv(tmp_path / name)
        id_cols = [h for h in header if ID_HEADER.match(h)]
        assert len(id_cols) == 1 and ":LABEL" in header, header
        assert all(TYPED.match(h) for h in header if h not in (*id_cols, ":LABEL")), header
        assert all(len(r) == len(header) for r in rows), name
        space = ID_HEADER.match(id_cols[0])["space"]
        col = header.index(id_cols[0])
        ids[space] = {r[col] for r in rows}
        assert len(ids[space]) == len(rows), f"{name}: duplicate ids"
        node_labels[space] = [r[header.index(":LABEL")] for r in rows]
    assert len(ids["Paper"]) == 19 and len(ids["Entity"]) == len(seed_corpus.entities)
    assert all(label.startswith("Entity;") for label in node_labels["Entity"])
    types: dict[str, int] = {}
    for name in ADMIN_FILES[3:]:
        header, rows = read_csv(tmp_path / name)
        start, end = (ID_HEADER.match(header[i]) for i in (0, 1))
        assert (start["kind"], end["kind"], header[2]) == ("START_ID", "END_ID", ":TYPE")
        assert all(TYPED.match(h) for h in header[3:]), header
        for row in rows:
            assert len(row) == len(header), name
            assert row[0] in ids[start["space"]] and row[1] in ids[end["space"]], row[:3]
            types[row[2]] = types.get(row[2], 0) + 1
    expected = corpus_counts(seed_corpus)["relations"]
    assert {t: n for t, n in types.items() if t not in ("HAS_CONCEPT", "BROADER")} == {
        REL_TYPES[p]: n for p, n in expected.items()}
    assert types["HAS_CONCEPT"] == sum(1 for e in seed_corpus.entities.values() if e.concept)
    command = (tmp_path / "import.sh").read_text()
    assert "neo4j-admin database import full" in command
    assert all(f"--nodes={n}" in command for n in ADMIN_FILES[:3])
    assert all(f"--relationships={n}" in command for n in ADMIN_FILES[3:])


def test_exports_are_byte_identical_across_runs(seed_corpus, tmp_path):
    one = write_cypher_script(seed_corpus, tmp_path / "a" / "graph.cypher").read_bytes()
    two = write_cypher_script(seed_corpus, tmp_path / "b" / "graph.cypher").read_bytes()
    assert one == two
    write_admin_csvs(seed_corpus, tmp_path / "c")
    write_admin_csvs(seed_corpus, tmp_path / "d")
    for name in ADMIN_FILES:
        assert (tmp_path / "c" / name).read_bytes() == (tmp_path / "d" / name).read_bytes()


@pytest.mark.neo4j
def test_the_real_neo4j_admin_import_accepts_the_csvs(seed_corpus, tmp_path):
    import os
    import subprocess

    if not (ROOT / "scripts" / "neo4j-harness" / "target" / "classpath.txt").is_file():
        reason = "the Neo4j tools are not fetched (scripts/neo4j-test-server fetch)"
        if os.environ.get("KG_REQUIRE_SERVICES") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    write_admin_csvs(seed_corpus, tmp_path / "neo4j-admin")
    done = subprocess.run(
        [str(ROOT / "scripts" / "neo4j-test-server"), "admin-import",
         str(tmp_path / "neo4j-admin")], capture_output=True, text=True, timeout=600,
        env={**os.environ, "KG_NEO4J_STATE": str(tmp_path / "state")}, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    match = re.search(r"Imported:\s+(\d+) nodes\s+(\d+) relationships", done.stdout)
    assert match, done.stdout[-2000:]
    concepts, broader = concept_rows(seed_corpus)
    has_concept = sum(1 for e in seed_corpus.entities.values() if e.concept)
    relations = sum(len(r.relations) for r in seed_corpus.results)
    assert int(match[1]) == len(seed_corpus) + len(seed_corpus.entities) + len(concepts)
    assert int(match[2]) == relations + has_concept + len(broader)


def _with_metadata(corpus):
    """The corpus with its first paper given a date, categories and links (issue 26)."""
    first = corpus.results[0]
    paper = replace(first.paper, venue="ICLR 2025", year=2025, url="https://openreview.net/x",
                    date="2025-01-22", categories=("cs.LG", "cs.CL"),
                    links=("https://arxiv.org/abs/2501.00001", "https://doi.org/10.1/x"))
    return replace(corpus, results=(replace(first, paper=paper), *corpus.results[1:])), paper


@pytest.mark.neo4j
def test_paper_metadata_becomes_node_properties(neo4j_db, seed_corpus):
    session, conn = neo4j_db
    corpus, paper = _with_metadata(seed_corpus)
    load(corpus, conn)
    got = session.run("MATCH (p:Paper {id: $id}) RETURN p.venue AS venue, p.year AS year, "
                      "p.url AS url, p.date AS date, p.categories AS categories, "
                      "p.links AS links", id=paper.id).single().data()
    assert got == {"venue": "ICLR 2025", "year": 2025, "url": "https://openreview.net/x",
                   "date": "2025-01-22", "categories": ["cs.LG", "cs.CL"],
                   "links": ["https://arxiv.org/abs/2501.00001", "https://doi.org/10.1/x"]}
    # A paper without them has no such properties (Neo4j has no nulls), not empty values.
    other = session.run("MATCH (p:Paper {id: $id}) RETURN keys(p) AS k",
                        id=seed_corpus.results[1].paper.id).single()["k"]
    assert not {"date", "categories", "links"} & set(other)


def test_paper_metadata_is_in_the_admin_csvs(seed_corpus, tmp_path):
    corpus, paper = _with_metadata(seed_corpus)
    write_admin_csvs(corpus, tmp_path)
    header, rows = read_csv(tmp_path / "papers.csv")
    row = dict(zip(header, next(r for r in rows if r[0] == paper.id), strict=True))
    assert (row["project"], row["venue"], row["year:int"], row["url"], row["date"]) == (
        DEFAULT_PROJECT, "ICLR 2025", "2025", "https://openreview.net/x", "2025-01-22")
    assert row["categories:string[]"] == "cs.LG;cs.CL"
    assert row["links:string[]"] == "https://arxiv.org/abs/2501.00001;https://doi.org/10.1/x"
