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
    derived_facts,
    graph_counts,
    load,
    load_project,
    read_loads,
    write_derived,
)
from kg.neo4j.delta import LOADS_FILE, SET_ENTITY, delta_corpus  # noqa: E402
from kg.neo4j.scope import project_id  # noqa: E402
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
    opened = project.open_project(directory)
    corpus = opened.corpus()
    load(corpus, conn, driver=driver, project=project_id(directory))
    write_derived(session, project_id(directory), derived_facts(opened.index()))
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

    # A paper others rank among their related ones gets a new venue: its node is rewritten
    # (and their RELATED to it with it), while no count, pair or weight moves.
    facts = derived_facts(project.open_project(out).index())
    target = max(kept, key=lambda p: sum(p.id in row["others"] for row in facts.related))
    project.build(out, [replace(p, venue="Elsewhere") if p.id == target.id else p
                        for p in edited])
    done = load_project(project.open_project(out), conn)
    assert done.delta.changed == (target.id,) and not done.derived.full
    pointing = sum(target.id in row["others"] for row in facts.related)
    assert pointing >= 2 and done.derived.related == pointing + 1
    assert (done.derived.users, done.derived.pairs, done.derived.weights) == (0, 0, 0)
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
    assert "has none of the project's papers although 19 were loaded" in done.reason
    assert done.summary().startswith(f"full load of project {project_id(out)} (the database")
    assert "cleared the" not in done.reason  # it was empty: nothing left over
    assert graph_counts(session)["papers"] == 18
    assert dump(session) == clean_dump(session, neo4j_driver, conn, out)


def test_a_database_changed_by_someone_else_gets_a_full_load(neo4j_db, seed_papers, tmp_path):
    session, conn = neo4j_db
    out = tmp_path / "p"
    project.build(out, seed_papers, formats=["jsonl"])
    load_project(project.open_project(out), conn)
    session.run("MATCH (e:Entity {id: 'model/llama'}) DETACH DELETE e").consume()
    done = load_project(project.open_project(out), conn)
    assert done.mode == "full" and "the project's part changed since the last load" in done.reason
    assert "cleared the 19 papers and" in done.reason
    assert load_project(project.open_project(out), conn).mode == "up to date"
    # Another load's papers beside the project's: not the project's business.
    load(project.open_project(out).corpus(), conn)
    assert load_project(project.open_project(out), conn).mode == "up to date"
    # A paper put in the project's part by someone else: the project cannot vouch for it.
    session.run("CREATE (:Paper {id: 'someone-else', project: $p})", p=project_id(out)).consume()
    done = load_project(project.open_project(out), conn)
    assert done.mode == "full" and "1 paper(s) this project did not load" in done.reason
    held = {r["project"]: r["n"] for r in session.run(
        "MATCH (p:Paper) RETURN p.project AS project, count(p) AS n")}
    assert held == {project_id(out): 19, "default": 19}  # someone-else's paper is gone


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
        session.run(SET_ENTITY, rows=[row], project="t").consume()
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
    assert done.stdout.startswith(f"full load of project {project_id(out)} (no load of {out} "
                                  f"into {conn.uri} database")
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


def _papers_of(session, project_name: str) -> set[str]:
    return {r["id"] for r in session.run("MATCH (p:Paper {project: $p}) RETURN p.id AS id",
                                         p=project_name)}


def _sharing(conn, directory, technique: str) -> set[str]:
    done = run_kg("cypher", "papers-sharing-technique", "--param", f"technique={technique}",
                  "--project", str(directory), "--format", "json", env=neo4j_env(conn))
    assert done.returncode == 0, done.stderr
    return {row["paper"] for row in json.loads(done.stdout)}


def test_two_projects_in_one_database_each_keep_their_deltas(neo4j_db, neo4j_driver,
                                                             seed_papers, tmp_path):
    """Issue 25: after project A then project B were loaded into one database, every load of
    B was a full load that created nothing and deleted nothing, so a paper removed from B
    stayed in the answers. Each project now owns its part: B's deltas work, A's part stays."""
    session, conn = neo4j_db
    a, b = tmp_path / "a", tmp_path / "b"
    project.build(a, seed_papers[:12], formats=["jsonl"])
    project.build(b, seed_papers[:3] + seed_papers[10:], formats=["jsonl"])  # 5 in both
    assert load_project(project.open_project(a), conn).mode == "full"
    assert load_project(project.open_project(b), conn).mode == "full"
    assert load_project(project.open_project(b), conn).mode == "up to date"
    before_a = dump_part(session, project_id(a))
    rrs = seed_papers[0].id
    assert "Rotated Runtime Smooth" in seed_papers[0].abstract  # the one quantization paper
    assert _sharing(conn, b, "quantization") == {rrs}
    assert run_kg("remove", str(b), rrs).returncode == 0
    done = load_project(project.open_project(b), conn)
    assert done.mode == "delta" and done.delta.removed == (rrs,)
    assert _sharing(conn, b, "quantization") == set()
    assert _sharing(conn, a, "quantization") == {rrs}  # A still holds it
    assert dump_part(session, project_id(a)) == before_a
    assert load_project(project.open_project(a), conn).mode == "up to date"
    # B's part is exactly what a clean load of B alone gives.
    part_b = dump_part(session, project_id(b))
    wipe(neo4j_driver, conn)
    load_project(project.open_project(b), conn)
    assert dump_part(session, project_id(b)) == part_b


def dump_part(session, scope: str) -> dict[str, list[str]]:
    """``dump`` of one project's papers and entities and of the relationships leaving them
    (concepts are every project's)."""
    return {key: [row for row in rows if f'"project": "{scope}"' in row]
            for key, rows in dump(session).items() if key in ("papers", "entities")} | {
        "relationships": _rows(session, "MATCH (s)-[r]->(o) WHERE s.project = $p RETURN s.id "
                                        "AS s, type(r) AS t, coalesce(o.id, o.iri) AS o, "
                                        "properties(r) AS p".replace("$p", f"'{scope}'"))}


def test_a_full_load_removes_what_the_project_no_longer_holds(neo4j_db, seed_papers, tmp_path):
    session, conn = neo4j_db
    out = tmp_path / "p"
    project.build(out, seed_papers, formats=["jsonl"])
    load_project(project.open_project(out), conn)
    project.remove(out, [seed_papers[0].id])
    (out / ".kg" / LOADS_FILE).unlink()  # no record: the next load is a full one
    done = load_project(project.open_project(out), conn)
    assert done.mode == "full" and "cleared the 19 papers" in done.reason
    assert _papers_of(session, project_id(out)) == {p.id for p in seed_papers[1:]}


def test_a_delta_without_a_record_of_its_derived_facts_rewrites_them_all(
        neo4j_db, neo4j_driver, seed_papers, tmp_path):
    session, conn = neo4j_db
    out = tmp_path / "p"
    project.build(out, seed_papers[:15], formats=["jsonl"])
    assert load_project(project.open_project(out), conn).derived.full
    project.add(out, seed_papers[15:])
    (record,) = (out / ".kg").glob("neo4j-derived-*.json")
    record.unlink()  # as a load by an older kg, or one that failed writing them, leaves it
    done = load_project(project.open_project(out), conn)
    assert done.mode == "delta" and done.derived.full and record.is_file()
    assert "derived facts rewritten: " in done.summary()
    assert dump(session) == clean_dump(session, neo4j_driver, conn, out)


def test_kg_neo4j_clear_removes_one_project_or_asks_before_everything(neo4j_db, seed_papers,
                                                                      tmp_path):
    session, conn = neo4j_db
    env = neo4j_env(conn)
    a, b = tmp_path / "a", tmp_path / "b"
    project.build(a, seed_papers[:10], formats=["jsonl"])
    project.build(b, seed_papers[5:], formats=["jsonl"])
    load_project(project.open_project(a), conn)
    load_project(project.open_project(b), conn)
    concepts = session.run("MATCH (c:Concept) RETURN count(c) AS n").single()["n"]
    done = run_kg("neo4j", "clear", str(a), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"cleared the part of {a} in {conn.uri} database "
                                  f"{conn.database}: deleted 10 papers")
    assert _papers_of(session, project_id(a)) == set()
    assert len(_papers_of(session, project_id(b))) == 14
    assert (conn.uri, conn.database) not in read_loads(a)
    assert not list((a / ".kg").glob("neo4j-derived-*.json"))
    assert len(list((b / ".kg").glob("neo4j-derived-*.json"))) == 1
    # B's concepts stay (shared vocabulary), only those nothing reaches any more go.
    held = session.run("MATCH (c:Concept) RETURN count(c) AS n").single()["n"]
    assert 0 < held <= concepts
    assert not session.run("MATCH (c:Concept) WHERE NOT EXISTS { MATCH (:Entity)-[:HAS_CONCEPT]"
                           "->(:Concept)-[:BROADER*0..]->(c) } RETURN c LIMIT 1").peek()
    assert load_project(project.open_project(a), conn).mode == "full"
    # --all asks (and a "no" or no answer deletes nothing); --yes does not ask.
    done = run_kg("neo4j", "clear", "--all", env=env)
    assert done.returncode == 1 and "Aborted" in done.stderr
    assert len(_papers_of(session, project_id(a))) == 10
    done = run_kg("neo4j", "clear", "--all", "--yes", env=env)
    assert done.returncode == 0 and "deleted 24 papers" in done.stdout, done.stdout
    assert session.run("MATCH (n) RETURN count(n) AS n").single()["n"] == 0
    done = run_kg("neo4j", "clear", env=env)
    assert done.returncode == 2 and "give a project DIR, or --all" in done.stderr
    done = run_kg("neo4j", "clear", str(tmp_path), env=env)
    assert done.returncode == 2 and "is not a kg project" in done.stderr


def test_a_load_that_leaves_the_part_unlike_the_project_is_an_error(neo4j_db, seed_papers,
                                                                   tmp_path):
    """Never report success on a load that left the database different from the project:
    here the project says one relation more than its papers hold (as a lost write would)."""
    _, conn = neo4j_db
    out = tmp_path / "p"
    project.build(out, seed_papers, formats=["jsonl"])
    manifest_path = project.open_project(out).generation / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    relations = manifest["counts"]["relations"]
    manifest["counts"]["relations"] += 1
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    # (recorded as kg's own, or the project check refuses the changed file before any load)
    check = manifest_path.parent / project.CHECK
    record = json.loads(check.read_text(encoding="utf-8"))
    record["files"]["manifest.json"] = project.survey(manifest_path.parent)["manifest.json"]
    check.write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(ServiceError, match=rf"holds relations {relations} \(the project has "
                                           rf"{relations + 1}\) of project .*run `kg neo4j load"):
        load_project(project.open_project(out), conn)
    assert read_loads(out) == {}  # not trusted: the next load is a full one
    done = run_kg("neo4j", "load", str(out), env=neo4j_env(conn))
    assert done.returncode == ServiceError.exit_code and "Traceback" not in done.stderr
    assert "is not a copy of the project" in done.stderr
