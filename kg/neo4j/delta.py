"""A project loaded into Neo4j delta by delta.

`kg neo4j load DIR` records in DIR/.kg/neo4j-loads.json the project's id (``kg.neo4j.scope``:
the ``project`` property of its nodes) and, per Bolt URI and database, the digests of the
papers and entities it loaded there (those of DIR's manifest) and the counts of its part it
left. The next load compares them with the manifest and writes only the difference; anything
it cannot vouch for (no record, counts or papers of its part that differ) gets a full load,
which first clears the project's part. Other projects' parts are never read or touched. A
delta leaves the database as a clean load of the project would; see ``plan_delta``.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kg.errors import InputError, KgError, ServiceError
from kg.exports import replacing
from kg.io import read_jsonl
from kg.model import ENTITY_TYPES, Corpus
from kg.neo4j.connection import Connection, driver_for, service_errors
from kg.neo4j.derived import DerivedWrite, derived_facts, write_derived
from kg.neo4j.loader import LoadReport, commit_batches, ensure_schema, load
from kg.neo4j.rows import (
    DEFAULT_BATCH_PAPERS,
    MERGE_BROADER,
    MERGE_CONCEPTS,
    MERGE_PAPERS,
    Batch,
    chunks,
    closed_concept_rows,
    entity_row,
    group_rows,
    paper_props,
)
from kg.neo4j.scope import (
    LOADS_FILE,
    Cleared,
    check_counts,
    clear_project,
    project_counts,
    project_id,
    unscoped_papers,
)

LOADS_FORMAT = "kg-neo4j-loads"
DERIVED_FORMAT = "kg-neo4j-derived"
LOADS_VERSION = 2  # 2: the project id; nodes scoped by it (a version 1 record is not trusted)

DELETE_PAPERS = """\
UNWIND $rows AS id
MATCH (p:Paper {project: $project, id: id})
DETACH DELETE p"""

# Entity → entity relations ("A outperforms B") carry the paper that asserts them.
DELETE_ENTITY_RELATIONS = """\
MATCH (s:Entity {project: $project})-[r]->(:Entity)
WHERE r.paper IN $rows
DELETE r"""

DELETE_ENTITIES = """\
UNWIND $rows AS id
MATCH (e:Entity {project: $project, id: id})
DETACH DELETE e"""

# Concepts are shared by every project: one goes only when no entity at all reaches it.
DELETE_CONCEPTS = """\
UNWIND $rows AS iri
MATCH (c:Concept {iri: iri})
WHERE NOT EXISTS { MATCH (:Entity)-[:HAS_CONCEPT]->(:Concept)-[:BROADER*0..]->(c) }
DETACH DELETE c"""

DELETE_BROADER = """\
UNWIND $rows AS iri
MATCH (:Concept {iri: iri})-[b:BROADER]->()
DELETE b"""


# Unlike MERGE_ENTITIES (which keeps a name and unions aliases, so corpora merge), this writes
# exactly what the project's entity is now: what a clean load would have written. One
# statement for every type (the label set by FOREACH) is planned once, not once per type:
# planning, not writing, is most of a small delta's time in Neo4j.
SET_ENTITY = f"""\
UNWIND $rows AS row
MERGE (e:Entity {{project: $project, id: row.id}})
REMOVE e:{':'.join(ENTITY_TYPES)}
SET e.type = row.type, e.name = row.name, e.aliases = row.aliases, e.concept = row.concept
{chr(10).join(f"FOREACH (_ IN CASE WHEN row.type = '{t}' THEN [1] ELSE [] END | SET e:{t})"
              for t in ENTITY_TYPES)}
WITH e, row
OPTIONAL MATCH (e)-[h:HAS_CONCEPT]->(old:Concept)
WHERE row.concept IS NULL OR old.iri <> row.concept
DELETE h
WITH DISTINCT e, row WHERE row.concept IS NOT NULL
MERGE (c:Concept {{iri: row.concept}})
MERGE (e)-[:HAS_CONCEPT]->(c)"""


@dataclass(frozen=True)
class LoadRecord:
    """What a project's last load left in one database.

    A digest is None when an interrupted delta may or may not have written that paper or
    entity; ``counts`` is None then too (the next delta rewrites every such one).
    """

    generation: int
    pipeline: str
    papers: dict[str, str | None]  # paper id → digest (kg.project's Manifest.paper_digests)
    entities: dict[str, str | None]  # entity id → digest
    concepts: tuple[str, ...]  # concept IRIs
    counts: dict[str, int] | None  # project_counts() after the load

    @property
    def complete(self) -> bool:
        return self.counts is not None

    def as_dict(self) -> dict[str, Any]:
        return {"generation": self.generation, "pipeline": self.pipeline,
                "counts": self.counts, "concepts": list(self.concepts),
                "papers": self.papers, "entities": self.entities}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoadRecord:
        counts = data["counts"]
        return cls(int(data["generation"]), str(data["pipeline"]), dict(data["papers"]),
                   dict(data["entities"]), tuple(data["concepts"]),
                   None if counts is None else {str(k): int(v) for k, v in counts.items()})


def read_loads(root: Path) -> dict[tuple[str, str], LoadRecord]:
    """The loads recorded in project ``root``, by (Bolt URI, database); {} when none (or the
    record is unreadable: every database then gets a full load, which rewrites it)."""
    path = Path(root) / ".kg" / LOADS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["format"] != LOADS_FORMAT or data["version"] != LOADS_VERSION:
            return {}
        return {(uri, database): LoadRecord.from_dict(record)
                for uri, by_db in data["loads"].items() for database, record in by_db.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def write_loads(root: Path, loads: dict[tuple[str, str], LoadRecord]) -> None:
    """Replace the record atomically (sorted keys: the same loads give the same bytes)."""
    by_uri: dict[str, dict[str, Any]] = {}
    for (uri, database), record in sorted(loads.items()):
        by_uri.setdefault(uri, {})[database] = record.as_dict()
    # Compact: json's C encoder does not indent, and this file has two digests per paper.
    text = json.dumps({"format": LOADS_FORMAT, "version": LOADS_VERSION,
                       "project": project_id(root), "loads": by_uri},
                      ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    with replacing(Path(root) / ".kg" / LOADS_FILE) as tmp:
        tmp.write_text(text + "\n", encoding="utf-8")


def _derived_path(root: Path, key: tuple[str, str]) -> Path:
    digest = hashlib.sha256("\n".join(key).encode("utf-8")).hexdigest()[:12]
    return Path(root) / ".kg" / f"neo4j-derived-{digest}.json"


def read_derived_state(root: Path, key: tuple[str, str], project: str, generation: int
                       ) -> dict | None:
    """The derived facts (``kg.neo4j.derived.written_state``) the last load of ``project``
    wrote into (Bolt URI, database) ``key`` at ``generation``; None when none is recorded
    (or it is unreadable, or of another load: the derived facts are then rewritten whole)."""
    try:
        data = json.loads(_derived_path(root, key).read_text(encoding="utf-8"))
        if (data["format"], data["version"], data["project"], data["generation"]) != (
                DERIVED_FORMAT, 1, project, generation):
            return None
        state = data["state"]
        return state if {"users", "pairs", "related"} <= state.keys() else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write_derived_state(root: Path, key: tuple[str, str], project: str, generation: int,
                        state: dict | None) -> None:
    """Record what the derived facts in ``key`` are now; None forgets them (while they are
    being written, and after: until then the next load cannot trust them)."""
    path = _derived_path(root, key)
    if state is None:
        path.unlink(missing_ok=True)
        return
    text = json.dumps({"format": DERIVED_FORMAT, "version": 1, "project": project,
                       "generation": generation, "uri": key[0], "database": key[1],
                       "state": state}, ensure_ascii=False, separators=(",", ":"))
    with replacing(path) as tmp:
        tmp.write_text(text + "\n", encoding="utf-8")


@dataclass(frozen=True)
class ProjectDelta:
    """What separates a recorded load from a project's manifest.

    >>> old = LoadRecord(1, "v", {"a": "1", "b": "2"}, {"x": "1", "y": "1"}, ("c1",), {})
    >>> d = project_delta(old, {"b": "3", "c": "4"}, {"x": "2"}, ("c2",), "v")
    >>> d.added, d.changed, d.removed, d.entities_set, d.entities_removed
    (('c',), ('b',), ('a',), ('x',), ('y',))
    >>> d.concepts_added, d.concepts_removed, d.all_concepts, bool(d)
    (('c2',), ('c1',), False, True)
    """

    added: tuple[str, ...]
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    entities_set: tuple[str, ...]  # new or changed: written exactly
    entities_removed: tuple[str, ...]  # no paper of the project supports them any more
    concepts_added: tuple[str, ...]
    concepts_removed: tuple[str, ...]
    all_concepts: bool  # rewrite every concept and BROADER edge (new vocabulary, or unknown)

    def __bool__(self) -> bool:
        return any((self.added, self.changed, self.removed, self.entities_set,
                    self.entities_removed, self.concepts_added, self.concepts_removed,
                    self.all_concepts))


def project_delta(record: LoadRecord, papers: dict[str, str], entities: dict[str, str],
                  concepts: Iterable[str], pipeline: str) -> ProjectDelta:
    """The delta from ``record`` to the digests of a manifest (unknown digests count as
    changed, so an interrupted delta is finished by the next)."""
    concepts = set(concepts)
    return ProjectDelta(
        added=tuple(sorted(set(papers) - set(record.papers))),
        changed=tuple(sorted(p for p in set(papers) & set(record.papers)
                             if record.papers[p] != papers[p])),
        removed=tuple(sorted(set(record.papers) - set(papers))),
        entities_set=tuple(sorted(e for e, d in entities.items()
                                  if record.entities.get(e) != d)),
        entities_removed=tuple(sorted(set(record.entities) - set(entities))),
        concepts_added=tuple(sorted(concepts - set(record.concepts))),
        concepts_removed=tuple(sorted(set(record.concepts) - concepts)),
        all_concepts=not record.complete or record.pipeline != pipeline)


def plan_delta(corpus: Corpus, delta: ProjectDelta, concepts: Iterable[str], vocabulary,
               papers_per_batch: int = DEFAULT_BATCH_PAPERS) -> list[Batch]:
    """The transactions that turn the recorded state into ``corpus``'s, in order.

    Concepts first (entities point at them), then every new or changed entity written
    exactly, then the touched papers in id order — each paper's old node, relationships and
    entity → entity relations deleted and its new ones merged in the same transaction, so a
    paper is never half written — and last the entities and concepts nothing uses any more.
    """
    if papers_per_batch < 1:
        raise KgError("the batch size must be at least 1 paper")
    batches: list[Batch] = []
    if delta.all_concepts or delta.concepts_added:
        concept_list, broader = closed_concept_rows(concepts, vocabulary)
        statements = [(MERGE_CONCEPTS, concept_list), (MERGE_BROADER, broader)]
        if delta.all_concepts:  # a new vocabulary may have moved edges between kept concepts
            statements.insert(0, (DELETE_BROADER, [c["iri"] for c in concept_list]))
        else:
            fresh = set(delta.concepts_added)
            statements = [(MERGE_CONCEPTS, [c for c in concept_list if c["iri"] in fresh]),
                          (MERGE_BROADER, [b for b in broader
                                           if b["child"] in fresh or b["parent"] in fresh])]
        batches.append(Batch(len(batches), [], statements, "concepts"))
    if delta.entities_set:
        batches.append(Batch(len(batches), [], [(SET_ENTITY, [
            entity_row(corpus.entities[e]) for e in delta.entities_set])], "entities"))
    by_id = {r.paper.id: r for r in corpus.results}
    were_loaded = set(delta.changed) | set(delta.removed)
    touched = sorted({*delta.added, *delta.changed, *delta.removed})
    for group in chunks(touched, papers_per_batch):
        old = [p for p in group if p in were_loaded]
        batch = Batch(len(batches), list(group))
        if old:
            batch.statements += [(DELETE_PAPERS, old), (DELETE_ENTITY_RELATIONS, old)]
        results = [by_id[p] for p in group if p in by_id]
        if results:
            # Every entity these papers use is new or changed (written above) or unchanged
            # since the recorded load (so in the database): no entity statements here.
            batch.statements.append((MERGE_PAPERS, [
                {"id": r.paper.id, "props": paper_props(r.paper)} for r in results]))
            batch.statements += group_rows(results, corpus.entities)[1]
        batches.append(batch)
    orphans = [(DELETE_ENTITIES, list(delta.entities_removed)),
               (DELETE_CONCEPTS, list(delta.concepts_removed))]
    if delta.entities_removed or delta.concepts_removed:
        batches.append(Batch(len(batches), [], orphans, "orphans"))
    return batches


def delta_corpus(project, papers: Iterable[str], entities: Iterable[str]) -> Corpus:
    """The results of ``papers`` with the entities they mention, plus ``entities``: what a
    delta writes, read from the lines of the project's extraction.jsonl for those papers and
    from its query index — not the whole corpus, whose reading alone (a second for 4,870
    papers) would take longer than a 50-paper delta.

    A project without extraction.jsonl gives its whole corpus (resolved from the cache).
    """
    wanted, entities = set(papers), list(entities)
    if not wanted and not entities:
        return Corpus(())
    if "extraction.jsonl" not in project.manifest.written:
        return project.corpus()
    found = project.lines(wanted)
    lines = [found[pid] for pid in sorted(found)]
    with tempfile.TemporaryDirectory(prefix="kg-delta-") as tmp:
        part = Path(tmp) / "delta.jsonl"
        part.write_text("".join(lines), encoding="utf-8")
        corpus = read_jsonl(part)  # checked as every extraction file is
    missing = set(wanted) - {r.paper.id for r in corpus.results}
    if missing:
        raise KgError(f"{project.generation / 'extraction.jsonl'} lacks paper(s) its manifest "
                      f"lists (e.g. {min(missing)}); rebuild the project with `kg build`")
    others = [e for e in entities if e not in corpus.entities]
    if not others:
        return corpus
    index = project.index()
    return Corpus(corpus.results, {**corpus.entities, **{e: index.entities[e] for e in others}})


def _mismatch(session, record: LoadRecord, project: str) -> str | None:
    """Why the project's part of the database is not (or may not be) in the recorded state;
    None when it is."""
    ids = set(session.run("MATCH (p:Paper {project: $project}) RETURN collect(p.id) AS ids",
                          project=project).single()["ids"])
    if not ids and record.papers:
        return (f"the database has none of the project's papers although "
                f"{len(record.papers):,} were loaded (it was cleared or replaced)")
    foreign = sorted(ids - set(record.papers))
    if foreign:
        return (f"the project's part holds {len(foreign):,} paper(s) this project did not "
                f"load there (e.g. {foreign[0]})")
    missing = sorted(p for p, d in record.papers.items() if d is not None and p not in ids)
    if missing:
        return (f"{len(missing):,} paper(s) the record says were loaded are missing "
                f"(e.g. {missing[0]})")
    if record.counts is not None:
        now = project_counts(session, project)
        if now != record.counts:
            differ = ", ".join(f"{k} {record.counts.get(k, 0):,} → {now[k]:,}"
                               for k in now if now[k] != record.counts.get(k, 0))
            return f"the project's part changed since the last load ({differ})"
    return None


@dataclass
class ProjectLoad:
    """What ``load_project`` did: a full load (and why), a delta, or nothing."""

    root: Path
    where: str  # "bolt://… database neo4j"
    mode: str  # "full" | "delta" | "up to date"
    reason: str = ""  # why a full load
    delta: ProjectDelta | None = None
    load: LoadReport = field(default_factory=LoadReport)
    generation: int = 0
    previous: int = 0  # the generation the delta started from
    derived_seconds: float = 0.0  # of ``seconds``: the derived facts, after the papers (they
    # are computed while the papers are written: this is what was left to wait for, and writing)
    derived: DerivedWrite | None = None  # what of them was written
    counts: dict[str, int] | None = None  # the project's part after the load (checked)

    def _checked(self) -> str:
        if self.counts is None:
            return ""
        c = self.counts
        derived = self.derived.summary() if self.derived else "derived facts unchanged"
        return (f"\n{derived} in {self.derived_seconds:.1f}s; checked: the database holds the "
                f"project's "
                f"{c['papers']:,} papers, {c['entities']:,} entities and {c['relations']:,} "
                "relations")

    def summary(self) -> str:
        if self.mode == "up to date":
            return (f"up to date: {self.where} holds generation {self.generation} of "
                    f"{self.root} (project {self.load.project}, {self.load.papers:,} "
                    "papers); nothing to load")
        if self.mode == "full":
            return (f"full load of project {self.load.project} ({self.reason})\n"
                    f"{self.load.summary()}{self._checked()}")
        d, r = self.delta, self.load
        text = (f"project {self.load.project}: delta from generation {self.previous} to "
                f"{self.generation} ({self.where}): "
                f"{len(d.added)} paper(s) added, {len(d.changed)} changed, {len(d.removed)} "
                f"removed; {len(d.entities_set)} entities written, {len(d.entities_removed)} "
                f"removed; {len(d.concepts_added)} concepts added, {len(d.concepts_removed)} "
                f"removed; {r.relations} relations merged in {r.batches} batch(es), "
                f"{r.transactions} transaction(s), {r.seconds:.1f}s; created "
                f"{r.nodes_created} nodes and {r.relationships_created} relationships")
        if r.retried:
            text += f"; retried once: {', '.join(r.retried)}"
        return text + self._checked()


def load_project(project, conn: Connection, *, papers_per_batch: int = DEFAULT_BATCH_PAPERS,
                 tx_timeout: float | None = 300.0, vocabulary=None,
                 on_retry: Callable[[Batch, BaseException], None] | None = None,
                 on_batch: Callable[[Batch], None] | None = None,
                 on_plan: Callable[[int], None] | None = None, driver=None) -> ProjectLoad:
    """Bring the project's part of the database up to ``project`` (a ``kg.project.Project``):
    only the delta since the load recorded for ``conn``'s URI and database, else a full load
    (saying why) that first clears the part. Then its derived facts (``kg.neo4j.derived``) are
    brought up to date (after a delta, only those that changed: ``write_derived``), and the
    part's counts checked against the project:
    a difference raises ServiceError (and the next load is a full one).

    ``on_plan`` gets the number of papers about to be written. The record is rewritten only
    once the database holds the project's state; before a delta it is marked uncertain for
    the papers and entities the delta touches, so a delta that fails half way is finished
    by the next load.

    Example (needs a server)::

        print(load_project(kg.project.open_project("out"), Connection.from_env()).summary())
    """
    started = time.perf_counter()
    root, manifest = Path(project.root), project.manifest
    key, scope = (conn.uri, conn.database), project_id(project.root)
    where = f"{conn.uri} database {conn.database}"
    loads = read_loads(root)
    record = loads.get(key)
    target = LoadRecord(manifest.generation, manifest.pipeline, dict(manifest.paper_digests),
                        dict(manifest.entity_digests), tuple(manifest.concepts), None)
    options = {"papers_per_batch": papers_per_batch, "tx_timeout": tx_timeout,
               "on_retry": on_retry, "on_batch": on_batch}
    with driver_for(conn, driver) as driver, driver.session(database=conn.database) as session:
        with service_errors(conn):
            reason = (f"no load of {root} into {where} is recorded" if record is None
                      else _mismatch(session, record, scope))
        delta = None if reason else project_delta(record, target.papers, target.entities,
                                                   target.concepts, target.pipeline)
        facts = _facts_meanwhile(project) if reason or delta else None
        if reason:
            result = _full_load(session, project, conn, where, reason, scope, driver=driver,
                                vocabulary=vocabulary, on_plan=on_plan, **options)
        else:
            result = ProjectLoad(root, where, "delta" if delta else "up to date",
                                 delta=delta, generation=manifest.generation,
                                 previous=record.generation)
            result.load.project = scope
            if delta:
                _apply_delta(session, project, conn, delta, record, target, loads,
                             result.load, vocabulary=vocabulary, on_plan=on_plan, **options)
            else:
                result.load.papers = len(target.papers)
        if facts is not None:
            _derive(session, project, conn, result, record, scope, facts)
        with service_errors(conn):
            counts = _checked_counts(session, project, scope, loads, key)
    result.counts = counts
    done = replace(target, counts=counts)
    if loads.get(key) != done:
        write_loads(root, {**loads, key: done})
    result.load.seconds = time.perf_counter() - started
    return result


def _facts_meanwhile(project) -> Future:
    """The project's derived facts, computed in a thread while the load writes its papers
    (numpy and the Neo4j server do the work, so each mostly waits on neither)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="kg-derived-facts")
    try:
        return pool.submit(lambda: derived_facts(project.index(), project.related()))
    finally:
        pool.shutdown(wait=False)  # the thread ends with its one task


def _derive(session, project, conn: Connection, result: ProjectLoad, record: LoadRecord | None,
            scope: str, computing: Future) -> None:
    """Write the derived facts after a full load or a delta: a delta writes only what differs
    from what the last load wrote (when that is recorded for its generation)."""
    started = time.perf_counter()
    key = (conn.uri, conn.database)
    facts = computing.result()
    previous = touched = None
    if result.mode == "delta" and record is not None:
        previous = read_derived_state(project.root, key, scope, record.generation)
        touched = (*result.delta.changed, *result.delta.removed)
    write_derived_state(project.root, key, scope, result.generation, None)
    with service_errors(conn):
        result.derived = write_derived(session, scope, facts, previous, touched or ())
    write_derived_state(project.root, key, scope, result.generation, facts.state)
    result.derived_seconds = time.perf_counter() - started


def _checked_counts(session, project, scope: str, loads: dict, key: tuple[str, str]
                    ) -> dict[str, int]:
    """The project's counts in the database after a load, checked against its manifest; on a
    difference the record is dropped (the next load is a full one) and ServiceError says so."""
    counts = project_counts(session, scope)
    manifest = project.manifest
    expected = {"papers": len(manifest.paper_digests),
                "entities": len(manifest.entity_digests),
                "relations": manifest.counts.get("relations", counts["relations"])}
    try:
        check_counts(session, scope, expected,
                     f"run `kg neo4j load {project.root}` again: with no trusted record it "
                     f"clears the project's part and loads it whole")
    except ServiceError:
        write_loads(project.root, {k: v for k, v in loads.items() if k != key})
        raise
    return counts


def _full_load(session, project, conn: Connection, where: str, reason: str, scope: str, *,
               driver, vocabulary, on_plan: Callable[[int], None] | None,
               **options: Any) -> ProjectLoad:
    """The project's part cleared, then ``load`` of the whole project (``reason`` says why)."""
    with service_errors(conn):
        cleared = clear_project(session, scope)
        old = unscoped_papers(session)
    if cleared.papers or cleared.entities:
        reason += (f"; cleared the {cleared.papers:,} papers and {cleared.entities:,} "
                   "entities of the project's part first")
    if old:
        reason += (f"; the database also holds {old:,} papers loaded by an older kg (no "
                   "project): `kg neo4j clear --all --yes` removes everything")
    corpus = project.corpus()
    if on_plan:
        on_plan(len(corpus))
    result = ProjectLoad(Path(project.root), where, "full", reason,
                         generation=project.manifest.generation)
    result.load = load(corpus, conn, vocabulary=vocabulary or project.vocabulary(),
                       driver=driver, project=scope, **options)
    return result


def _apply_delta(session, project, conn: Connection, delta: ProjectDelta, record: LoadRecord,
                 target: LoadRecord, loads: dict, report: LoadReport, *, papers_per_batch: int,
                 tx_timeout: float | None, vocabulary, on_retry, on_batch, on_plan) -> None:
    if vocabulary is None and (delta.concepts_added or delta.all_concepts):
        vocabulary = project.vocabulary()  # (the project's, pickled: 3 ms, not 50 to parse)
    corpus = delta_corpus(project, (*delta.added, *delta.changed), delta.entities_set)
    batches = plan_delta(corpus, delta, target.concepts, vocabulary, papers_per_batch)
    written = {r.paper.id: r for r in corpus.results}
    merged = [written[p] for p in (*delta.added, *delta.changed)]
    report.papers, report.entities = len(merged), len(delta.entities_set)
    report.relations = sum(len(r.relations) for r in merged)
    report.concepts = sum(len(rows) for b in batches if b.what == "concepts"
                          for q, rows in b.statements if q == MERGE_CONCEPTS)
    if on_plan:
        on_plan(len(delta.added) + len(delta.changed) + len(delta.removed))
    # Until the delta is done, what it touches is in an unknown state: say so first.
    unknown = dict.fromkeys((*delta.added, *delta.changed, *delta.removed))
    uncertain = LoadRecord(
        record.generation, record.pipeline, {**record.papers, **unknown},
        {**record.entities, **dict.fromkeys((*delta.entities_set, *delta.entities_removed))},
        tuple(sorted({*record.concepts, *target.concepts})), None)
    write_loads(project.root, {**loads, (conn.uri, conn.database): uncertain})
    with service_errors(conn):
        ensure_schema(session)
    commit_batches(session, batches, conn, tx_timeout, report, on_retry, on_batch,
                   "re-run the load: it finishes the delta")


def clear_project_dir(root: Path, conn: Connection, session) -> Cleared:
    """Delete project ``root``'s part of ``conn``'s database and drop its load record there
    (the next load is a full one) with the record of its derived facts."""
    root = Path(root)
    if not (root / ".kg").is_dir():
        raise InputError(f"{root} is not a kg project (it has no .kg folder): give the "
                         "directory `kg build -o DIR` wrote, or --all")
    cleared = clear_project(session, project_id(root))
    write_derived_state(root, (conn.uri, conn.database), "", 0, None)
    loads = read_loads(root)
    if (conn.uri, conn.database) in loads:
        write_loads(root, {k: v for k, v in loads.items() if k != (conn.uri, conn.database)})
    return cleared
