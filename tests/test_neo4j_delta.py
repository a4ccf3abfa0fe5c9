"""`kg neo4j load DIR` follows a project: after adds, removes and edits, a delta load leaves the
database exactly as a clean load of the same papers into an empty one (real Neo4j)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

pytest.register_assert_rewrite("neo4j_fixtures")

from conftest import SEED  # noqa: E402
from neo4j_fixtures import neo4j_env, run_kg, wipe  # noqa: E402

from kg import project  # noqa: E402
from kg.errors import ServiceError  # noqa: E402
from kg.neo4j import (  # noqa: E402
    Connection,
    corpus_counts,
    graph_counts,
    load,
    load_project,
    read_loads,
)
from kg.neo4j.delta import LOADS_FILE, SET_ENTITY, delta_corpus  # noqa: E402
from kg.pipeline import read_papers  # noqa: E402

pytest_plugins = ["neo4j_fixtures"]
pytestmark = pytest.mark.neo4j

EDIT = " We compare with LLaMA and use quantization and LoRA fine-tuning."


@pytest.fixture(scope="module")
def seed_papers():
    """The 19 seed papers in id order (a project keeps them so)."""
    return sorted(read_papers([SEED])[0], key=lambda p: p.id)


def _rows(session, query: str) -> list[str]:
    rows = [r.data() for r in session.run(query)]
    for row in rows:
        if "l" in row:  # a node's labels come in no set order
            row["l"] = sorted(row["l"])
    return sorted(json.dumps(row, sort_keys=True, ensure_ascii=False) for row in rows)


def dump(session) -> dict[str, list[str]]:
    """Every node with its labels and properties and every relationship with its type, ends
    and properties, canonically sorted: two equal dumps are the same graph."""
    return {
        "papers": _rows(session, "MATCH (p:Paper) RETURN labels(p) AS l, properties(p) AS p"),
        "entities": _rows(session, "MATCH (e:Entity) RETURN labels(e) AS l, properties(e) AS p"),
        "concepts": _rows(session, "MATCH (c:Concept) RETURN labels(c) AS l, properties(c) AS p"),
        "other nodes": _rows(session, "MATCH (n) WHERE NOT n:Paper AND NOT n:Entity "
                                      "AND NOT n:Concept RETURN properties(n) AS p"),
        "relationships": _rows(
            session, "MATCH (s)-[r]->(o) RETURN coalesce(s.id, s.iri) AS s, type(r) AS t, "
                     "coalesce(o.id, o.iri) AS o, properties(r) AS p"),
    }


def clean_dump(session, driver, conn, directory) -> dict[str, list[str]]:
    """The dump of a clean load of the project's papers into an emptied database."""
    wipe(driver, conn)
    corpus = project.open_project(directory).corpus()
    load(corpus, conn, driver=driver)
    assert graph_counts(session) == corpus_counts(corpus)
    return dump(session)


# With extraction.jsonl a delta reads only its papers' lines; without, the whole corpus.
@pytest.mark.parametrize("formats", [["jsonl"], ["nt"]])
def test_deltas_after_adds_removes_and_an_edit_equal_a_clean_load(
        neo4j_db, neo4j_driver, seed_papers, tmp_path, formats):
    session, conn = neo4j_db
    out = tmp_path / "p"
    project.build(out, seed_papers[:15], formats=formats)
    first = load_project(project.open_project(out), conn, papers_per_batch=1)
    assert first.mode == "full" and "no load of" in first.reason
    assert first.load.batches == 15
    assert dump(session) == clean_dump(session, neo4j_driver, conn, out)
    loaded_entities = set(project.open_project(out).manifest.entity_digests)

    # Four papers added: some of their entities are already there and get new aliases.
    outcome = project.add(out, seed_papers[15:])
    done = load_project(project.open_project(out), conn, papers_per_batch=1)
    assert done.mode == "delta"
    assert (done.delta.added, done.delta.changed, done.delta.removed) == (
        outcome.added, (), ())
    assert len(outcome.added) == 4 and done.load.batches == 4
    assert set(done.delta.entities_set) & loaded_entities, "no loaded entity changed"
    assert dump(session) == clean_dump(session, neo4j_driver, conn, out)

    # Three papers removed: entities only they supported go, and the concepts only those had.
    gone = [seed_papers[i].id for i in (2, 11, 16)]  # 11 asserts "transformer extends …"
    project.remove(out, gone)
    done = load_project(project.open_project(out), conn, papers_per_batch=1)
    assert (done.mode, done.delta.removed, done.delta.added, done.delta.changed) == (
        "delta", tuple(sorted(gone)), (), ())
    assert done.delta.entities_removed and done.delta.concepts_removed
    assert done.delta.entities_set  # shared entities lose the removed papers' spellings
    assert dump(session) == clean_dump(session, neo4j_driver, conn, out)

    # One abstract edited (its second half replaced, so some of its relations go and others
    # come): that paper alone is rewritten, in one transaction of its own.
    kept = [p for p in seed_papers if p.id not in gone]
    edited = [replace(p, abstract=p.abstract[:len(p.abstract) // 2].rsplit(". ", 1)[0] + "."
                      + EDIT) if i == 5 else p for i, p in enumerate(kept)]
    project.build(out, edited)
    done = load_project(project.open_project(out), conn, papers_per_batch=1)
    assert (done.delta.changed, done.delta.added, done.delta.removed) == ((kept[5].id,), (), ())
    assert (done.load.papers, done.load.batches) == (1, 1)
    assert "method/lora" in done.delta.entities_set
    assert "1 changed" in done.summary()
    assert dump(session) == clean_dump(session, neo4j_driver, conn, out)

    # Nothing changed since: nothing is written.
    again = load_project(project.open_project(out), conn)
    assert again.mode == "up to date" and again.load.transactions == 0


def test_a_database_wiped_by_hand_gets_a_full_load(neo4j_db, neo4j_driver, seed_papers,
                                                    tmp_path):
    session, conn = neo4j_db
    out = tmp_path / "p"
    project.build(out, seed_papers, formats=["jsonl"])
    load_project(project.open_project(out), conn)
    wipe(neo4j_driver, conn)
    project.remove(out, [seed_papers[0].id])
    done = load_project(project.open_project(out), conn)
    assert done.mode == "full"
    assert "the database has no papers although 19 were loaded" in done.reason
    assert done.summary().startswith("full load (the database has no papers")
    assert "already held" not in done.reason  # it was empty: nothing left over
    assert graph_counts(session)["papers"] == 18
    assert dump(session) == clean_dump(session, neo4j_driver, conn, out)


def test_a_database_changed_by_someone_else_gets_a_full_load(neo4j_db, seed_papers, tmp_path):
    session, conn = neo4j_db
    out = tmp_path / "p"
    project.build(out, seed_papers, formats=["jsonl"])
    load_project(project.open_project(out), conn)
    session.run("MATCH (e:Entity {id: 'model/llama'}) DETACH DELETE e").consume()
    done = load_project(project.open_project(out), conn)
    assert done.mode == "full" and "the database changed since the last load" in done.reason
    assert "already held 19 papers and" in done.reason and "clear it first" in done.reason
    assert load_project(project.open_project(out), conn).mode == "up to date"
    # Another corpus's papers in the database: this project cannot vouch for them.
    load(project.open_project(out).corpus(), conn)  # harmless: the same papers
    session.run("CREATE (:Paper {id: 'someone-else'})").consume()
    done = load_project(project.open_project(out), conn)
    assert done.mode == "full" and "1 paper(s) this project did not load" in done.reason


def test_each_uri_and_database_has_its_own_record(neo4j_db, seed_papers, tmp_path):
    _, conn = neo4j_db
    out = tmp_path / "p"
    project.build(out, seed_papers[:5], formats=["jsonl"])
    assert load_project(project.open_project(out), conn).mode == "full"
    other = Connection(conn.uri.replace("127.0.0.1", "localhost"), conn.user, conn.password,
                       conn.database)
    done = load_project(project.open_project(out), other)
    assert done.mode == "full" and "no load of" in done.reason
    assert sorted(read_loads(out)) == sorted([(conn.uri, conn.database),
                                              (other.uri, other.database)])
    assert load_project(project.open_project(out), conn).mode == "up to date"


def hold_lock(driver, conn, query: str, key: str):
    """An open transaction holding the write lock ``query`` takes on ``key``."""
    session = driver.session(database=conn.database)
    tx = session.begin_transaction()
    tx.run(query, key=key).consume()
    return session, tx


# Cut short in a paper's transaction (the first paper added, the last not yet removed), or in
# the concepts' (nothing written; a new concept the entities point at is missing).
@pytest.mark.parametrize("blocked", ["paper", "concept"])
def test_a_delta_cut_short_is_finished_by_the_next_load(neo4j_db, neo4j_driver, seed_papers,
                                                        tmp_path, blocked):
    session, conn = neo4j_db
    out = tmp_path / "p"
    first, last = seed_papers[0], seed_papers[-1]
    project.build(out, seed_papers[1:], formats=["jsonl"])
    load_project(project.open_project(out), conn, papers_per_batch=1)
    before = set(project.open_project(out).manifest.concepts)
    project.build(out, seed_papers[:-1])
    if blocked == "paper":
        query, key = "MATCH (p:Paper {id: $key}) SET p.blocked = true", last.id
        failing = r"batch \d+ \(1 papers: .*\)"
    else:
        query = "MERGE (c:Concept {iri: $key})"
        key = min(set(project.open_project(out).manifest.concepts) - before)
        failing = "the concepts transaction"
    blocker, tx = hold_lock(neo4j_driver, conn, query, key)
    try:
        with pytest.raises(ServiceError, match=f"rejected {failing} twice.*"
                                               "re-run the load: it finishes the delta"):
            load_project(project.open_project(out), conn, papers_per_batch=1, tx_timeout=3)
    finally:
        tx.rollback()
        blocker.close()
    record = read_loads(out)[(conn.uri, conn.database)]
    assert record.counts is None and record.papers[first.id] is None
    ids = {r["id"] for r in session.run("MATCH (p:Paper) RETURN p.id AS id")}
    assert last.id in ids and (first.id in ids) == (blocked == "paper")
    done = load_project(project.open_project(out), conn, papers_per_batch=1)
    assert done.mode == "delta"
    assert (done.delta.changed, done.delta.removed) == ((first.id,), (last.id,))
    assert read_loads(out)[(conn.uri, conn.database)].counts is not None
    assert dump(session) == clean_dump(session, neo4j_driver, conn, out)


def test_an_entity_is_rewritten_exactly(neo4j_db):
    """A delta writes an entity as it is now — type label, name, aliases, concept — where a
    corpus load keeps the first name and unions the aliases."""
    session, _ = neo4j_db
    iris = ("https://w3id.org/mlkg/concept/technique/quantization",
            "https://w3id.org/mlkg/concept/technique/pruning")

    def write(**row) -> dict:
        row = {"id": "technique/x", "type": "Technique", "name": "X", "aliases": ["x1"],
               "concept": iris[0], **row}
        session.run(SET_ENTITY, rows=[row]).consume()
        return session.run(
            "MATCH (e:Entity {id: 'technique/x'}) OPTIONAL MATCH (e)-[:HAS_CONCEPT]->(c) "
            "RETURN labels(e) AS labels, e.name AS name, e.aliases AS aliases, "
            "e.concept AS concept, collect(c.iri) AS linked").single().data()

    first = write()
    assert (sorted(first["labels"]), first["linked"]) == (["Entity", "Technique"], [iris[0]])
    second = write(type="Method", name="Y", aliases=[], concept=iris[1])
    assert sorted(second["labels"]) == ["Entity", "Method"]
    assert (second["name"], second["aliases"], second["linked"]) == ("Y", [], [iris[1]])
    third = write(concept=None)
    assert (third["concept"], third["linked"]) == (None, [])


def test_the_cli_loads_a_project_then_its_deltas(neo4j_db, seed_papers, tmp_path):
    session, conn = neo4j_db
    out = tmp_path / "p"
    project.build(out, seed_papers, formats=["jsonl"])
    env = neo4j_env(conn)
    done = run_kg("neo4j", "load", str(out), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"full load (no load of {out} into {conn.uri} database")
    assert "loaded 19 papers" in done.stdout
    assert (out / ".kg" / LOADS_FILE).is_file()
    done = run_kg("neo4j", "load", str(out), env=env)
    assert done.stdout.startswith(f"up to date: {conn.uri} database {conn.database} holds "
                                  "generation 1"), done.stdout
    assert run_kg("remove", str(out), seed_papers[3].id).returncode == 0
    done = run_kg("neo4j", "load", str(out), env=env)
    assert done.returncode == 0, done.stderr
    assert "from generation 1 to 2" in done.stdout
    assert "0 paper(s) added, 0 changed, 1 removed" in done.stdout
    assert graph_counts(session)["papers"] == 18


def test_a_delta_reads_its_papers_lines_by_the_line_index_or_by_a_scan(tmp_path, seed_papers):
    """The changed papers' lines are read at the offsets lines.idx gives; where the index does
    not fit the file (a damaged one here) the file is scanned instead, to the same corpus."""
    out = tmp_path / "p"
    project.build(out, seed_papers[:8], formats=["jsonl"])
    project.add(out, seed_papers[8:])
    opened = project.open_project(out)
    wanted = [p.id for p in seed_papers[1::4]]
    by_index = delta_corpus(opened, wanted, [])
    assert [r.paper.id for r in by_index.results] == sorted(wanted)
    (opened.generation / "lines.idx").write_bytes(b"")
    assert delta_corpus(opened, wanted, []) == by_index
