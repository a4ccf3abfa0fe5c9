"""Load a Corpus into Neo4j, export it as a Cypher script or neo4j-admin CSVs, run saved queries.

Graph model (the same stable ids as the RDF graph):

* ``(:Paper {id, title, label, abstract, authors, keywords, venue, year, url})``
* ``(:Entity:<Type> {id, type, name, aliases, concept})`` — ``<Type>`` is one of ENTITY_TYPES
  (Technique, Method, Model, Dataset, Hardware, Task, Metric); ``id`` is ``Entity.id``.
* ``(:Concept {iri, label, type, alt_labels})`` for every vocabulary concept an entity has, plus
  all its ancestors; ``(:Entity)-[:HAS_CONCEPT]->(:Concept)`` and
  ``(:Concept)-[:BROADER]->(:Concept)`` (``skos:broader``). "Technique X or anything narrower"
  is ``(e)-[:HAS_CONCEPT]->()-[:BROADER*0..]->(x)``.
* One relationship per ``Relation``: PROPOSES, USES_TECHNIQUE, … (``kg.model.PREDICATES`` in
  UPPER_SNAKE) from the paper (or, for OUTPERFORMS/EXTENDS, from an entity) to an entity, with
  properties ``paper, evidence, start, end, rule, confidence``. It is MERGEd on
  ``(subject, type, object, paper, start, end, rule)``, so re-loading adds nothing.

Every value travels as a query parameter; labels and relationship types (which Cypher cannot
take as parameters) come from fixed whitelists built from ENTITY_TYPES and PREDICATES.

``load_project`` loads a ``kg build`` project directory as a delta: DIR/.kg/neo4j-loads.json
records, per Bolt URI and database, the paper and entity digests of the last load there, and
the next load writes only what changed since (removed papers and orphaned entities deleted),
leaving the database as a clean load of the project would; see ``plan_delta``.

>>> rel_type("usesTechnique")
'USES_TECHNIQUE'
>>> cypher_literal({"name": "it's {x})"})
"{name: 'it\\\\'s {x})'}"
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kg.errors import InputError, KgError, QueryError, ServiceError
from kg.model import ENTITY_TYPES, PREDICATES, Corpus, Entity, Paper, PaperResult, Relation
from kg.text import shorten

DEFAULT_URI = "bolt://127.0.0.1:7687"
DEFAULT_BATCH_PAPERS = 250
BOLT_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def rel_type(predicate: str) -> str:
    """``usesTechnique`` → ``USES_TECHNIQUE`` (only for predicates in kg.model.PREDICATES)."""
    if predicate not in PREDICATES:
        raise KgError(f"unknown predicate {predicate!r}; expected one of {', '.join(PREDICATES)}")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", predicate).upper()


REL_TYPES: dict[str, str] = {p: rel_type(p) for p in PREDICATES}

# ---------------------------------------------------------------------------------------------
# Cypher statements. Labels/types are interpolated only from the whitelists above.

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT kg_paper_id IF NOT EXISTS FOR (p:Paper) REQUIRE p.id IS UNIQUE",
    "CREATE CONSTRAINT kg_entity_id IF NOT EXISTS FOR (e:Entity) REQUIRE e.id IS UNIQUE",
    "CREATE CONSTRAINT kg_concept_iri IF NOT EXISTS FOR (c:Concept) REQUIRE c.iri IS UNIQUE",
    "CREATE INDEX kg_entity_name IF NOT EXISTS FOR (e:Entity) ON (e.name)",
    "CREATE INDEX kg_entity_type IF NOT EXISTS FOR (e:Entity) ON (e.type)",
    "CREATE INDEX kg_concept_label IF NOT EXISTS FOR (c:Concept) ON (c.label)",
)

MERGE_CONCEPTS = """\
UNWIND $rows AS row
MERGE (c:Concept {iri: row.iri})
SET c.label = row.label, c.type = row.type, c.alt_labels = row.alt_labels"""

MERGE_BROADER = """\
UNWIND $rows AS row
MATCH (child:Concept {iri: row.child})
MATCH (parent:Concept {iri: row.parent})
MERGE (child)-[:BROADER]->(parent)"""

MERGE_PAPERS = """\
UNWIND $rows AS row
MERGE (p:Paper {id: row.id})
SET p += row.props"""


def _merge_entities(type_: str) -> str:
    # MERGE on the base label (the uniqueness constraint), then add the type label.
    # Aliases are unioned so a second corpus adds its spellings instead of replacing them.
    return f"""\
UNWIND $rows AS row
MERGE (e:Entity {{id: row.id}})
SET e:{type_}, e.type = row.type, e.name = coalesce(e.name, row.name),
    e.concept = coalesce(e.concept, row.concept),
    e.aliases = reduce(acc = coalesce(e.aliases, []), a IN row.aliases |
                       CASE WHEN a IN acc THEN acc ELSE acc + a END)
WITH e, row WHERE row.concept IS NOT NULL
MERGE (c:Concept {{iri: row.concept}})
MERGE (e)-[:HAS_CONCEPT]->(c)"""


def _merge_relations(rtype: str, subject_label: str) -> str:
    return f"""\
UNWIND $rows AS row
MATCH (s:{subject_label} {{id: row.subject}})
MATCH (o:Entity {{id: row.object}})
MERGE (s)-[r:{rtype} {{paper: row.paper, start: row.start, end: row.end, rule: row.rule}}]->(o)
SET r.evidence = row.evidence, r.confidence = row.confidence"""


MERGE_ENTITIES: dict[str, str] = {t: _merge_entities(t) for t in ENTITY_TYPES}
MERGE_RELATIONS: dict[tuple[str, str], str] = {
    (p, label): _merge_relations(REL_TYPES[p], label)
    for p in PREDICATES for label in ("Paper", "Entity")
}

# ---------------------------------------------------------------------------------------------
# Connection


@dataclass(frozen=True)
class Connection:
    """Where Neo4j is: from options, else NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE.

    >>> Connection.from_env(uri="bolt://127.0.0.1:17687", user="neo4j", password="x").database
    'neo4j'
    """

    uri: str = DEFAULT_URI
    user: str = "neo4j"
    password: str = ""
    database: str = "neo4j"

    @classmethod
    def from_env(cls, uri: str | None = None, user: str | None = None,
                 password: str | None = None, database: str | None = None) -> Connection:
        env = os.environ
        return cls(uri=uri or env.get("NEO4J_URI") or DEFAULT_URI,
                   user=user or env.get("NEO4J_USER") or "neo4j",
                   password=password if password is not None else env.get("NEO4J_PASSWORD", ""),
                   database=database or env.get("NEO4J_DATABASE") or "neo4j")


def connect(conn: Connection, *, timeout: float = 10.0):
    """An open, verified ``neo4j.Driver``; unreachable server or bad credentials → ServiceError."""
    import neo4j

    scheme = conn.uri.partition("://")[0].lower()
    if scheme not in BOLT_SCHEMES:
        raise ServiceError(f"unsupported Neo4j URI {conn.uri!r}: use one of "
                           f"{', '.join(s + '://' for s in BOLT_SCHEMES)} "
                           "(e.g. bolt://127.0.0.1:7687; --uri or NEO4J_URI)")
    try:
        driver = neo4j.GraphDatabase.driver(
            conn.uri, auth=(conn.user, conn.password), connection_timeout=timeout,
            max_transaction_retry_time=0, notifications_min_severity="OFF")
    except ValueError as exc:  # malformed URI
        raise ServiceError(f"bad Neo4j URI {conn.uri!r}: {exc}; use e.g. "
                           "bolt://127.0.0.1:7687 (--uri or NEO4J_URI)") from exc
    try:
        driver.execute_query("RETURN 1", database_=conn.database)
    except BaseException as exc:
        driver.close()
        raise service_error(exc, conn) from exc
    return driver


def service_error(exc: BaseException, conn: Connection) -> KgError:
    """A one-line, actionable KgError for a driver exception."""
    import neo4j.exceptions as nx

    if isinstance(exc, KgError):
        return exc
    if isinstance(exc, nx.AuthError):
        return ServiceError(
            f"Neo4j at {conn.uri} rejected user {conn.user!r}: wrong user name or password "
            "(check --user/--password or NEO4J_USER/NEO4J_PASSWORD)")
    if isinstance(exc, nx.ServiceUnavailable | OSError):
        return ServiceError(
            f"cannot reach Neo4j at {conn.uri} ({_first_line(exc)}); is the server running? "
            "(start one, e.g. scripts/neo4j-test-server start, or pass --uri / NEO4J_URI)")
    if isinstance(exc, nx.ClientError) and "database" in str(exc.code or "").lower():
        return ServiceError(f"Neo4j at {conn.uri}: {exc.message}; check --database / "
                            "NEO4J_DATABASE (Community edition has only 'neo4j')")
    if isinstance(exc, nx.ClientError):
        return QueryError(f"Neo4j rejected the query: {exc.message} ({exc.code})")
    if isinstance(exc, nx.Neo4jError | nx.DriverError):
        return ServiceError(f"Neo4j at {conn.uri} failed: {_first_line(exc)}")
    raise exc


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """The server's code and the first sentence of its message, for one-line errors."""
    text = (getattr(exc, "message", None) or str(exc) or "").strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    sentence = line.split(". ")[0].rstrip(".")
    sentence = shorten(sentence, limit)
    code = getattr(exc, "code", None)
    return f"{code}: {sentence}" if code else sentence


# ---------------------------------------------------------------------------------------------
# Rows: the Corpus flattened into parameter rows (shared by the loader and the exporters).


def paper_props(paper: Paper) -> dict[str, Any]:
    """Node properties of a paper; empty optional fields are left out (Neo4j has no nulls)."""
    props: dict[str, Any] = {"title": paper.title, "label": paper.label or None,
                             "abstract": paper.abstract, "authors": list(paper.authors) or None,
                             "keywords": list(paper.keywords) or None, "venue": paper.venue,
                             "year": paper.year, "url": paper.url}
    return {k: v for k, v in props.items() if v is not None}


def entity_row(entity: Entity) -> dict[str, Any]:
    if entity.type not in ENTITY_TYPES:
        raise InputError(f"entity {entity.id} has type {entity.type!r}; expected one of "
                         f"{', '.join(ENTITY_TYPES)} (re-run `kg build` on the inputs)")
    return {"id": entity.id, "type": entity.type, "name": entity.name,
            "aliases": list(entity.aliases), "concept": entity.concept}


def relation_row(paper: Paper, relation: Relation) -> dict[str, Any]:
    return {"subject": relation.subject, "object": relation.object, "paper": paper.id,
            "start": relation.evidence.start, "end": relation.evidence.end,
            "rule": relation.rule, "evidence": relation.evidence.text,
            "confidence": float(relation.confidence)}


def subject_label(result: PaperResult, relation: Relation, entities: dict[str, Entity]) -> str:
    """``Paper`` or ``Entity``: what a relation's subject is (checking predicate and object)."""
    where = f"paper {result.paper.id} ({result.paper.source or 'input'})"
    if relation.predicate not in PREDICATES:
        raise InputError(f"{where}: unknown predicate {relation.predicate!r}; expected one of "
                         f"{', '.join(PREDICATES)}")
    if relation.object not in entities:
        raise InputError(f"{where}: relation object {relation.object!r} is not a known entity; "
                         "the extraction file is inconsistent — rebuild it with `kg build`")
    if relation.subject == result.paper.id:
        return "Paper"
    if relation.subject in entities:
        return "Entity"
    raise InputError(f"{where}: relation subject {relation.subject!r} is neither the paper nor "
                     "a known entity; the extraction file is inconsistent — rebuild it")


def concept_rows(corpus: Corpus, vocabulary=None) -> tuple[list[dict], list[dict]]:
    """Concept rows (entities' concepts and all their ancestors) and BROADER rows, sorted."""
    if vocabulary is None:
        from kg.vocab import load_vocabulary

        vocabulary = load_vocabulary()
    used: set[str] = set()
    for entity in corpus.entities.values():
        if entity.concept:
            used.add(entity.concept)
            used.update(vocabulary.ancestors(entity.concept))
    return _concept_rows(used, vocabulary)


def _concept_rows(used: Iterable[str], vocabulary) -> tuple[list[dict], list[dict]]:
    """Rows for the concepts ``used`` (a closed set: every ancestor included) and BROADER
    rows between them."""
    used = set(used)
    concepts, broader = [], []
    for iri in sorted(used):
        concept = vocabulary.concepts.get(iri)
        if concept is None:  # an extraction file names a concept this vocabulary lacks
            concepts.append({"iri": iri, "label": None, "type": None, "alt_labels": []})
            continue
        concepts.append({"iri": iri, "label": concept.pref_label, "type": concept.type,
                         "alt_labels": list(concept.alt_labels)})
        broader.extend({"child": iri, "parent": parent} for parent in sorted(concept.broader)
                       if parent in used)
    return concepts, broader


@dataclass
class Batch:
    """The statements of a group of whole papers, committed in one transaction."""

    index: int
    papers: list[str]
    statements: list[tuple[str, list[dict]]] = field(default_factory=list)
    what: str = ""  # what a batch without papers writes ("concepts", "orphans")

    def describe(self) -> str:
        if not self.papers:
            return f"the {self.what or 'schema'} transaction"
        first, last = self.papers[0], self.papers[-1]
        span = first if first == last else f"{first} … {last}"
        return f"batch {self.index + 1} ({len(self.papers)} papers: {span})"


def _chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def plan_batches(corpus: Corpus, papers_per_batch: int = DEFAULT_BATCH_PAPERS) -> list[Batch]:
    """Group whole papers into batches; each holds its papers, their entities and relations.

    An entity is MERGEd in the first batch that uses it (later batches find it committed);
    entities no paper uses go with the last batch.
    """
    if papers_per_batch < 1:
        raise KgError("the batch size must be at least 1 paper")
    batches: list[Batch] = []
    placed: set[str] = set()
    results = list(corpus.results)
    last = (len(results) - 1) // papers_per_batch
    for index, group in enumerate(_chunks(results, papers_per_batch)):
        batch = Batch(index, [r.paper.id for r in group])
        entity_ids, relation_statements = _group_rows(group, corpus.entities)
        entity_ids -= placed
        if index == last:
            entity_ids.update(set(corpus.entities) - placed - entity_ids)
        placed.update(entity_ids)
        batch.statements.append((MERGE_PAPERS, [{"id": r.paper.id, "props": paper_props(r.paper)}
                                                for r in group]))
        by_type: dict[str, list[dict]] = {}
        for eid in sorted(entity_ids):
            if eid not in corpus.entities:
                raise InputError(f"entity {eid!r} is used by a paper but missing from the "
                                 "corpus; rebuild the extraction with `kg build`")
            row = entity_row(corpus.entities[eid])
            by_type.setdefault(row["type"], []).append(row)
        for type_ in ENTITY_TYPES:
            if type_ in by_type:
                batch.statements.append((MERGE_ENTITIES[type_], by_type[type_]))
        batch.statements.extend(relation_statements)
        batches.append(batch)
    return batches


def _group_rows(group: Iterable[PaperResult], entities: dict[str, Entity]
                ) -> tuple[set[str], list[tuple[str, list[dict]]]]:
    """The entities a group of papers uses and the statements MERGEing its relations."""
    entity_ids: set[str] = set()
    rel_rows: dict[tuple[str, str], list[dict]] = {}
    for result in group:
        entity_ids.update(result.entity_ids)
        for relation in result.relations:
            label = subject_label(result, relation, entities)
            if label == "Entity":
                entity_ids.add(relation.subject)
            entity_ids.add(relation.object)
            rel_rows.setdefault((relation.predicate, label), []).append(
                relation_row(result.paper, relation))
    return entity_ids, [(MERGE_RELATIONS[key], rel_rows[key]) for key in sorted(rel_rows)]


# ---------------------------------------------------------------------------------------------
# Loading


@dataclass
class LoadReport:
    """What a load did: input sizes, what Neo4j created, retries, time."""

    papers: int = 0
    entities: int = 0
    concepts: int = 0
    relations: int = 0
    batches: int = 0
    transactions: int = 0  # committed, the concepts' included
    nodes_created: int = 0
    relationships_created: int = 0
    retried: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        text = (f"loaded {self.papers} papers, {self.entities} entities, {self.concepts} "
                f"concepts and {self.relations} relations in {self.batches} batch(es), "
                f"{self.seconds:.1f}s; created {self.nodes_created} nodes and "
                f"{self.relationships_created} relationships")
        if self.retried:
            text += f"; retried once: {', '.join(self.retried)}"
        return text


def ensure_schema(session) -> None:
    """Create kg's uniqueness constraints and indexes (idempotent)."""
    for statement in SCHEMA:
        session.run(statement).consume()


def _run_batch(session, statements: Iterable[tuple[str, list[dict]]], timeout: float | None,
               report: LoadReport, chunk: int = 5000) -> None:
    tx = session.begin_transaction(timeout=timeout)
    try:
        created_nodes = created_rels = 0
        for query, rows in statements:
            for part in _chunks(rows, chunk):
                counters = tx.run(query, rows=list(part)).consume().counters
                created_nodes += counters.nodes_created
                created_rels += counters.relationships_created
        tx.commit()
        report.transactions += 1
    except BaseException:
        if not tx.closed():
            tx.close()  # rolls back: nothing of this batch stays
        raise
    report.nodes_created += created_nodes
    report.relationships_created += created_rels


def _commit_batches(session, batches: Iterable[Batch], conn: Connection,
                    tx_timeout: float | None, report: LoadReport,
                    on_retry: Callable[[Batch, BaseException], None] | None,
                    on_batch: Callable[[Batch], None] | None, rerun: str) -> None:
    """Commit each batch in its own transaction; a failed one is rolled back and retried once,
    a second failure raises ServiceError naming it (``rerun`` says what to do then)."""
    import neo4j.exceptions as nx

    committed = 0
    for batch in batches:
        try:
            _run_batch(session, batch.statements, tx_timeout, report)
        except (nx.Neo4jError, nx.DriverError, OSError) as first:
            if isinstance(first, nx.AuthError):
                raise service_error(first, conn) from first
            report.retried.append(batch.describe())
            if on_retry:
                on_retry(batch, first)
            time.sleep(0.5)
            try:
                _run_batch(session, batch.statements, tx_timeout, report)
            except (nx.Neo4jError, nx.DriverError, OSError) as second:
                raise ServiceError(
                    f"Neo4j at {conn.uri} rejected {batch.describe()} twice "
                    f"({_first_line(second)}); it was rolled back, {committed} "
                    f"earlier paper(s) stay committed; {rerun}") from second
        committed += len(batch.papers)
        if batch.papers:
            report.batches += 1
        if on_batch:
            on_batch(batch)


def load(corpus: Corpus, conn: Connection, *, papers_per_batch: int = DEFAULT_BATCH_PAPERS,
         tx_timeout: float | None = 300.0, vocabulary=None,
         on_retry: Callable[[Batch, BaseException], None] | None = None,
         on_batch: Callable[[Batch], None] | None = None, driver=None) -> LoadReport:
    """MERGE ``corpus`` into Neo4j: schema, concepts, then whole-paper batches.

    Each batch is one transaction; a failed batch is rolled back, retried once (reported in
    ``LoadReport.retried`` and to ``on_retry``), and a second failure raises ServiceError naming
    the batch — every earlier batch stays committed, no paper is ever half written.

    Example (needs a server)::

        report = load(run(["examples/iclr2025-seed.txt"]), Connection.from_env())
    """
    import neo4j.exceptions as nx

    started = time.perf_counter()
    report = LoadReport(papers=len(corpus), entities=len(corpus.entities),
                        relations=sum(len(r.relations) for r in corpus.results))
    batches = plan_batches(corpus, papers_per_batch)
    concepts, broader = concept_rows(corpus, vocabulary)
    report.concepts = len(concepts)
    own_driver = driver is None
    if own_driver:
        driver = connect(conn)
    try:
        with driver.session(database=conn.database) as session:
            try:
                ensure_schema(session)
                _run_batch(session, [(MERGE_CONCEPTS, concepts), (MERGE_BROADER, broader)],
                           tx_timeout, report)
            except (nx.Neo4jError, nx.DriverError, OSError) as exc:
                raise service_error(exc, conn) from exc
            _commit_batches(session, batches, conn, tx_timeout, report, on_retry, on_batch,
                            "re-run the load (it MERGEs, so nothing is duplicated)")
    finally:
        if own_driver:
            driver.close()
    report.seconds = time.perf_counter() - started
    return report


# ---------------------------------------------------------------------------------------------
# A project, loaded delta by delta
#
# `kg neo4j load DIR` records in DIR/.kg/neo4j-loads.json, per Bolt URI and database, the
# digests of the papers and entities it loaded there (those of DIR's manifest) and the counts
# it left. The next load compares them with the manifest and writes only the difference;
# anything it cannot vouch for (no record, counts or papers that differ) gets a full load.

LOADS_FILE = "neo4j-loads.json"
LOADS_FORMAT = "kg-neo4j-loads"
LOADS_VERSION = 1

DELETE_PAPERS = """\
UNWIND $rows AS id
MATCH (p:Paper {id: id})
DETACH DELETE p"""

# Entity → entity relations ("A outperforms B") carry the paper that asserts them.
DELETE_ENTITY_RELATIONS = """\
MATCH (:Entity)-[r]->(:Entity)
WHERE r.paper IN $rows
DELETE r"""

DELETE_ENTITIES = """\
UNWIND $rows AS id
MATCH (e:Entity {id: id})
DETACH DELETE e"""

DELETE_CONCEPTS = """\
UNWIND $rows AS iri
MATCH (c:Concept {iri: iri})
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
MERGE (e:Entity {{id: row.id}})
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
    counts: dict[str, int] | None  # db_counts() after the load

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
    from kg.exports import replacing

    by_uri: dict[str, dict[str, Any]] = {}
    for (uri, database), record in sorted(loads.items()):
        by_uri.setdefault(uri, {})[database] = record.as_dict()
    # Compact: json's C encoder does not indent, and this file has two digests per paper.
    text = json.dumps({"format": LOADS_FORMAT, "version": LOADS_VERSION, "loads": by_uri},
                      ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    with replacing(Path(root) / ".kg" / LOADS_FILE) as tmp:
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
        concept_list, broader = _concept_rows(concepts, vocabulary)
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
    for group in _chunks(touched, papers_per_batch):
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
            batch.statements += _group_rows(results, corpus.entities)[1]
        batches.append(batch)
    orphans = [(DELETE_ENTITIES, list(delta.entities_removed)),
               (DELETE_CONCEPTS, list(delta.concepts_removed))]
    if delta.entities_removed or delta.concepts_removed:
        batches.append(Batch(len(batches), [], orphans, "orphans"))
    return batches


_LINE_START = '{"paper": {"id": '


def delta_corpus(project, papers: Iterable[str], entities: Iterable[str]) -> Corpus:
    """The results of ``papers`` with the entities they mention, plus ``entities``: what a
    delta writes, read from the lines of the project's extraction.jsonl for those papers and
    from its query index — not the whole corpus, whose reading alone (a second for 4,870
    papers) would take longer than a 50-paper delta.

    A project without extraction.jsonl gives its whole corpus (resolved from the cache).
    """
    import tempfile

    from kg.io import read_jsonl

    wanted, entities = set(papers), list(entities)
    if not wanted and not entities:
        return Corpus(())
    if "extraction.jsonl" not in project.manifest.written:
        return project.corpus()
    lines = list(project.lines(wanted).values())
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


def db_counts(session) -> dict[str, int]:
    """Papers, entities, concepts and relationships in the database (Neo4j's count store:
    constant time)."""
    counts = {}
    for key, pattern in (("papers", "(n:Paper)"), ("entities", "(n:Entity)"),
                         ("concepts", "(n:Concept)"), ("relationships", "()-[n]->()")):
        counts[key] = session.run(f"MATCH {pattern} RETURN count(n) AS n").single()["n"]
    return counts


def _mismatch(session, record: LoadRecord) -> str | None:
    """Why the database is not (or may not be) in the recorded state; None when it is."""
    ids = set(session.run("MATCH (p:Paper) RETURN collect(p.id) AS ids").single()["ids"])
    if not ids and record.papers:
        return (f"the database has no papers although {len(record.papers):,} were loaded "
                "(it was cleared or replaced)")
    foreign = sorted(ids - set(record.papers))
    if foreign:
        return (f"the database holds {len(foreign):,} paper(s) this project did not load "
                f"there (e.g. {foreign[0]})")
    missing = sorted(p for p, d in record.papers.items() if d is not None and p not in ids)
    if missing:
        return (f"{len(missing):,} paper(s) the record says were loaded are missing "
                f"(e.g. {missing[0]})")
    if record.counts is not None:
        now = db_counts(session)
        if now != record.counts:
            differ = ", ".join(f"{k} {record.counts.get(k, 0):,} → {now[k]:,}"
                               for k in now if now[k] != record.counts.get(k, 0))
            return f"the database changed since the last load ({differ})"
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

    def summary(self) -> str:
        if self.mode == "up to date":
            return (f"up to date: {self.where} holds generation {self.generation} of "
                    f"{self.root} ({self.load.papers:,} papers); nothing to load")
        if self.mode == "full":
            return f"full load ({self.reason})\n{self.load.summary()}"
        d, r = self.delta, self.load
        text = (f"delta from generation {self.previous} to {self.generation} ({self.where}): "
                f"{len(d.added)} paper(s) added, {len(d.changed)} changed, {len(d.removed)} "
                f"removed; {len(d.entities_set)} entities written, {len(d.entities_removed)} "
                f"removed; {len(d.concepts_added)} concepts added, {len(d.concepts_removed)} "
                f"removed; {r.relations} relations merged in {r.batches} batch(es), "
                f"{r.transactions} transaction(s), {r.seconds:.1f}s; created "
                f"{r.nodes_created} nodes and {r.relationships_created} relationships")
        if r.retried:
            text += f"; retried once: {', '.join(r.retried)}"
        return text


def load_project(project, conn: Connection, *, papers_per_batch: int = DEFAULT_BATCH_PAPERS,
                 tx_timeout: float | None = 300.0, vocabulary=None,
                 on_retry: Callable[[Batch, BaseException], None] | None = None,
                 on_batch: Callable[[Batch], None] | None = None,
                 on_plan: Callable[[int], None] | None = None, driver=None) -> ProjectLoad:
    """Bring the database up to ``project`` (a ``kg.project.Project``): only the delta since
    the load recorded for ``conn``'s URI and database, else a full load (saying why).

    ``on_plan`` gets the number of papers about to be written. The record is rewritten only
    once the database holds the project's state; before a delta it is marked uncertain for
    the papers and entities the delta touches, so a delta that fails half way is finished
    by the next load.

    Example (needs a server)::

        print(load_project(kg.project.open_project("out"), Connection.from_env()).summary())
    """
    import neo4j.exceptions as nx

    started = time.perf_counter()
    root, manifest = Path(project.root), project.manifest
    key = (conn.uri, conn.database)
    where = f"{conn.uri} database {conn.database}"
    loads = read_loads(root)
    record = loads.get(key)
    target = LoadRecord(manifest.generation, manifest.pipeline, dict(manifest.paper_digests),
                        dict(manifest.entity_digests), tuple(manifest.concepts), None)
    own_driver = driver is None
    if own_driver:
        driver = connect(conn)
    try:
        with driver.session(database=conn.database) as session:
            try:
                reason = (f"no load of {root} into {where} is recorded" if record is None
                          else _mismatch(session, record))
            except (nx.Neo4jError, nx.DriverError, OSError) as exc:
                raise service_error(exc, conn) from exc
            if reason:
                try:
                    held = db_counts(session)
                except (nx.Neo4jError, nx.DriverError, OSError) as exc:
                    raise service_error(exc, conn) from exc
                if held["papers"] or held["entities"]:
                    # MERGE adds and updates, never deletes: say what may be left over.
                    reason += (f"; the database already held {held['papers']:,} papers and "
                               f"{held['entities']:,} entities, which stay (clear it first for "
                               "an exact copy of the project)")
                corpus = project.corpus()
                if on_plan:
                    on_plan(len(corpus))
                result = ProjectLoad(root, where, "full", reason, generation=manifest.generation)
                result.load = load(corpus, conn, papers_per_batch=papers_per_batch,
                                   tx_timeout=tx_timeout,
                                   vocabulary=vocabulary or project.vocabulary(),
                                   on_retry=on_retry, on_batch=on_batch, driver=driver)
            else:
                delta = project_delta(record, target.papers, target.entities,
                                      target.concepts, target.pipeline)
                result = ProjectLoad(root, where, "delta" if delta else "up to date",
                                     delta=delta, generation=manifest.generation,
                                     previous=record.generation)
                if delta:
                    _apply_delta(session, project, conn, delta, record, target, loads,
                                 result.load, papers_per_batch, tx_timeout, vocabulary,
                                 on_retry, on_batch, on_plan)
                else:
                    result.load.papers = len(target.papers)
            try:
                counts = db_counts(session)
            except (nx.Neo4jError, nx.DriverError, OSError) as exc:
                raise service_error(exc, conn) from exc
    finally:
        if own_driver:
            driver.close()
    done = replace(target, counts=counts)
    if loads.get(key) != done:
        write_loads(root, {**loads, key: done})
    result.load.seconds = time.perf_counter() - started
    return result


def _apply_delta(session, project, conn: Connection, delta: ProjectDelta, record: LoadRecord,
                 target: LoadRecord, loads: dict, report: LoadReport, papers_per_batch: int,
                 tx_timeout: float | None, vocabulary, on_retry, on_batch, on_plan) -> None:
    import neo4j.exceptions as nx

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
    try:
        ensure_schema(session)
    except (nx.Neo4jError, nx.DriverError, OSError) as exc:
        raise service_error(exc, conn) from exc
    _commit_batches(session, batches, conn, tx_timeout, report, on_retry, on_batch,
                    "re-run the load: it finishes the delta")


# ---------------------------------------------------------------------------------------------
# Counting (for the consistency checks and `kg neo4j load` output)


def corpus_counts(corpus: Corpus) -> dict[str, Any]:
    """Papers, entities per type and relations per predicate of a Corpus."""
    return {
        "papers": len(corpus),
        "entities": dict(sorted(Counter(e.type for e in corpus.entities.values()).items())),
        "relations": dict(sorted(Counter(r.predicate for r in corpus.relations()).items())),
    }


def graph_counts(session) -> dict[str, Any]:
    """The same counts read back from Neo4j (relationship types mapped back to predicates)."""
    papers = session.run("MATCH (p:Paper) RETURN count(p) AS n").single()["n"]
    entities = {}
    for type_ in ENTITY_TYPES:
        n = session.run(f"MATCH (e:Entity:{type_}) RETURN count(e) AS n").single()["n"]
        if n:
            entities[type_] = n
    by_type = {REL_TYPES[p]: p for p in PREDICATES}
    relations = {}
    for record in session.run("MATCH ()-[r]->() RETURN type(r) AS t, count(r) AS n"):
        if record["t"] in by_type:
            relations[by_type[record["t"]]] = record["n"]
    return {"papers": papers, "entities": dict(sorted(entities.items())),
            "relations": dict(sorted(relations.items()))}


# ---------------------------------------------------------------------------------------------
# Cypher literals and the script export


def cypher_string(value: str) -> str:
    """A single-quoted Cypher string literal; quotes, backslashes and controls escaped."""
    out = []
    for ch in value:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "'":
            out.append("\\'")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 or ch in "\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def cypher_literal(value: Any) -> str:
    """A Cypher literal for JSON-like data (maps, lists, strings, numbers, booleans, null)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise KgError(f"cannot write the non-finite number {value!r} as Cypher")
        return repr(value)
    if isinstance(value, str):
        return cypher_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(cypher_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        items = []
        for key in value:
            name = key if _PLAIN_KEY.match(key) else "`" + key.replace("`", "``") + "`"
            items.append(f"{name}: {cypher_literal(value[key])}")
        return "{" + ", ".join(items) + "}"
    raise KgError(f"cannot write a {type(value).__name__} as a Cypher literal")


def _one_line(query: str) -> str:
    return " ".join(line.strip() for line in query.splitlines())


def write_cypher_script(corpus: Corpus, path: Path, *, vocabulary=None,
                        rows_per_param: int = 200) -> Path:
    """Write a cypher-shell script that MERGEs the corpus (re-runnable, like ``load``).

    Data goes in ``:param rows => [...]`` lines followed by the same parameterised UNWIND/MERGE
    statements the loader uses. Run it with ``cypher-shell -u neo4j -p … -f graph.cypher``.
    """
    concepts, broader = concept_rows(corpus, vocabulary)
    lines = [
        "// kg graph as Cypher (generated by `kg export --format cypher`; deterministic).",
        f"// {len(corpus)} papers, {len(corpus.entities)} entities, {len(concepts)} concepts, "
        f"{sum(len(r.relations) for r in corpus.results)} relations.",
        "// Run: cypher-shell -a bolt://127.0.0.1:7687 -u neo4j -p PASSWORD -f graph.cypher",
        "// Every statement MERGEs, so running it twice changes nothing.",
        "",
    ]
    lines.extend(f"{s};" for s in SCHEMA)
    statements: list[tuple[str, list[dict]]] = [(MERGE_CONCEPTS, concepts),
                                                 (MERGE_BROADER, broader)]
    for batch in plan_batches(corpus, max(1, len(corpus))):
        statements.extend(batch.statements)
    for query, rows in statements:
        for part in _chunks(rows, rows_per_param):
            lines.append("")
            lines.append(":param rows => " + cypher_literal(list(part)))
            lines.append(_one_line(query) + ";")
    from kg.exports import replacing  # written atomically, like every export

    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def script_statements(text: str) -> Iterator[tuple[str, str]]:
    """Split a cypher-shell script into ``("param", "name => expr")`` / ``("cypher", stmt)``.

    Handles what ``write_cypher_script`` writes: ``//`` comment lines, one-line ``:param``
    commands and ``;``-terminated statements (a ``;`` inside a string literal is fine because
    statements end only at a line ending in ``;``).
    """
    pending: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("//")):
            continue
        if not pending and stripped.startswith(":param"):
            yield "param", stripped[len(":param"):].strip()
            continue
        pending.append(line)
        if stripped.endswith(";"):
            yield "cypher", "\n".join(pending).rstrip().removesuffix(";")
            pending = []
    if pending and "".join(pending).strip():
        yield "cypher", "\n".join(pending)


def run_cypher_script(session, text: str) -> int:
    """Run a cypher-shell style script through the driver; returns the statements run.

    ``:param name => expr`` is evaluated by the server (``RETURN expr``), as cypher-shell does.
    """
    params: dict[str, Any] = {}
    count = 0
    for kind, body in script_statements(text):
        if kind == "param":
            name, sep, expr = body.partition("=>")
            if not sep:
                raise QueryError(f"unsupported :param form {body[:60]!r}; use :param x => expr")
            params[name.strip()] = session.run(f"RETURN {expr.strip()} AS v").single()["v"]
        else:
            session.run(body, params).consume()
            count += 1
    return count


# ---------------------------------------------------------------------------------------------
# neo4j-admin CSVs
#
# Two layouts of the same rows. A Corpus in memory gives one file per table (ADMIN_FILES). A
# project is read a batch of papers at a time (memory bounded by the batch, not the corpus):
# each table that grows with the papers gets a header file and numbered shards — shard N holds
# batch N's papers, their relationships, and the entities (with HAS_CONCEPT) no earlier batch
# used, so every entity is written once — while concepts.csv and broader.csv, bounded by the
# vocabulary, stay whole. import.sh names every file; it is written last, and removed first, so
# a directory with an import.sh holds one complete export.

ADMIN_FILES = ("papers.csv", "entities.csv", "concepts.csv", "rel_paper_entity.csv",
               "rel_entity_entity.csv", "has_concept.csv", "broader.csv")
ARRAY_DELIMITER = ";"
DEFAULT_SHARD_PAPERS = 5000
_REL_PROPS = ["paper", "evidence", "start:int", "end:int", "rule", "confidence:double"]
ADMIN_HEADERS: dict[str, list[str]] = {
    "papers.csv": ["id:ID(Paper)", ":LABEL", "title", "label", "abstract", "authors:string[]",
                   "keywords:string[]", "venue", "year:int", "url"],
    "entities.csv": ["id:ID(Entity)", ":LABEL", "type", "name", "aliases:string[]", "concept"],
    "concepts.csv": ["iri:ID(Concept)", ":LABEL", "label", "type", "alt_labels:string[]"],
    "rel_paper_entity.csv": [":START_ID(Paper)", ":END_ID(Entity)", ":TYPE", *_REL_PROPS],
    "rel_entity_entity.csv": [":START_ID(Entity)", ":END_ID(Entity)", ":TYPE", *_REL_PROPS],
    "has_concept.csv": [":START_ID(Entity)", ":END_ID(Concept)", ":TYPE"],
    "broader.csv": [":START_ID(Concept)", ":END_ID(Concept)", ":TYPE"],
}
# The tables that grow with the papers: sharded in a project's export.
SHARDED = ("papers.csv", "entities.csv", "rel_paper_entity.csv", "rel_entity_entity.csv",
           "has_concept.csv")
# Any file either layout writes (a re-export removes those it did not write this time).
ADMIN_NAME = re.compile(r"(?P<table>papers|entities|concepts|rel_paper_entity|"
                        r"rel_entity_entity|has_concept|broader)(\.header|-\d{6})?\.csv\Z")


def _array(values: Iterable[str]) -> str:
    # neo4j-admin has no escape for the array delimiter inside an item: replace it.
    return ARRAY_DELIMITER.join(v.replace(ARRAY_DELIMITER, ",") for v in values)


def _paper_rows(results: Iterable[PaperResult]) -> list[list[Any]]:
    return [[r.paper.id, "Paper", r.paper.title or "", r.paper.label, r.paper.abstract,
             _array(r.paper.authors), _array(r.paper.keywords), r.paper.venue or "",
             "" if r.paper.year is None else r.paper.year, r.paper.url or ""]
            for r in sorted(results, key=lambda r: r.paper.id)]


def _entity_rows(entities: Iterable[Entity]) -> tuple[list[list[Any]], list[list[Any]]]:
    """Rows of entities.csv and has_concept.csv, by entity id."""
    rows = [entity_row(e) for e in sorted(entities, key=lambda e: e.id)]
    return ([[e["id"], f"Entity;{e['type']}", e["type"], e["name"], _array(e["aliases"]),
              e["concept"] or ""] for e in rows],
            [[e["id"], e["concept"], "HAS_CONCEPT"] for e in rows if e["concept"]])


def _relation_rows(results: Iterable[PaperResult], entities: dict[str, Entity]
                   ) -> tuple[list[list[Any]], list[list[Any]]]:
    """Rows of rel_paper_entity.csv and rel_entity_entity.csv, sorted."""
    paper_rels, entity_rels = [], []
    for result in results:
        for rel in result.relations:
            label = subject_label(result, rel, entities)
            row = [rel.subject, rel.object, REL_TYPES[rel.predicate], result.paper.id,
                   rel.evidence.text, rel.evidence.start, rel.evidence.end, rel.rule,
                   repr(float(rel.confidence))]
            (paper_rels if label == "Paper" else entity_rels).append(row)
    return sorted(paper_rels), sorted(entity_rels)


def _concept_tables(concepts: list[dict], broader: list[dict]) -> dict[str, list[list[Any]]]:
    return {"concepts.csv": [[c["iri"], "Concept", c["label"] or "", c["type"] or "",
                              _array(c["alt_labels"])] for c in concepts],
            "broader.csv": [[b["child"], b["parent"], "BROADER"] for b in broader]}


def _write_csv(path: Path, header: Sequence[str] | None, rows: Iterable[Sequence[Any]]) -> Path:
    from kg.exports import replacing  # written atomically, like every export

    with replacing(path) as tmp, tmp.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        if header is not None:
            writer.writerow(header)
        writer.writerows(rows)
    return path


def _finish_admin_dir(out_dir: Path, written: list[Path], nodes: Sequence[str],
                      relationships: Sequence[str]) -> list[Path]:
    """Write import.sh (last), then remove what an earlier export of the other layout, or
    with more shards, left (import.sh would not name it, but it would mislead a reader)."""
    from kg.exports import replacing

    script = out_dir / "import.sh"
    with replacing(script) as tmp:
        tmp.write_text(admin_import_script(nodes, relationships), encoding="utf-8")
        tmp.chmod(0o755)
    keep = {p.name for p in written}
    for path in sorted(out_dir.iterdir()):
        if ADMIN_NAME.match(path.name) and path.name not in keep and (
                path.is_file() or path.is_symlink()):
            path.unlink()
    return [*written, script]


def write_admin_csvs(corpus: Corpus, out_dir: Path, *, vocabulary=None) -> list[Path]:
    """Write nodes/relationships CSVs and ``import.sh`` for ``neo4j-admin database import``.

    ID spaces keep paper ids, entity ids and concept IRIs apart (``:ID(Paper)`` etc.). For a
    project of any size, ``write_project_admin_csvs`` writes the same rows in shards.
    """
    entities, has_concept = _entity_rows(corpus.entities.values())
    paper_rels, entity_rels = _relation_rows(
        sorted(corpus.results, key=lambda r: r.paper.id), corpus.entities)
    tables = {"papers.csv": _paper_rows(corpus.results), "entities.csv": entities,
              "rel_paper_entity.csv": paper_rels, "rel_entity_entity.csv": entity_rels,
              "has_concept.csv": has_concept, **_concept_tables(*concept_rows(corpus, vocabulary))}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "import.sh").unlink(missing_ok=True)  # until every file is new
    written = [_write_csv(out_dir / name, ADMIN_HEADERS[name], tables[name])
               for name in ADMIN_FILES]
    return _finish_admin_dir(out_dir, written, ADMIN_FILES[:3], ADMIN_FILES[3:])


def shard_name(table: str, number: int | None = None) -> str:
    """A shard's file name (``None``: the table's header file).

    >>> shard_name("papers.csv", 3), shard_name("papers.csv")
    ('papers-000003.csv', 'papers.header.csv')
    """
    stem = table.removesuffix(".csv")
    return f"{stem}.header.csv" if number is None else f"{stem}-{number:06d}.csv"


def write_admin_shards(batches: Iterable[Corpus], out_dir: Path, *, vocabulary=None,
                       on_batch: Callable[[int], None] | None = None) -> list[Path]:
    """Write the neo4j-admin CSVs of a corpus given a batch of papers at a time.

    Each batch is a Corpus holding some papers' results and (at least) the entities they
    use; a batch may also carry entities no paper uses. Batch N becomes shard N of each
    sharded table (none where it has no rows); an entity goes in the shard of the first batch
    that holds it. The rows, taken together, are those ``write_admin_csvs`` writes for the
    whole corpus. ``on_batch`` gets each batch's number of papers once its shards are written.

    >>> import tempfile
    >>> from kg.pipeline import run
    >>> corpus = run(["examples/iclr2025-seed.txt"])
    >>> halves = [Corpus(corpus.results[:10], corpus.entities), Corpus(corpus.results[10:],
    ...           corpus.entities)]
    >>> names = [p.name for p in write_admin_shards(halves, Path(tempfile.mkdtemp()))]
    >>> [name for name in names if name.startswith("papers")]
    ['papers-000001.csv', 'papers-000002.csv', 'papers.header.csv']
    >>> [name for name in names if name.startswith("entities")]  # all with the first batch
    ['entities-000001.csv', 'entities.header.csv']
    """
    if vocabulary is None:
        from kg.vocab import load_vocabulary

        vocabulary = load_vocabulary()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "import.sh").unlink(missing_ok=True)  # until every file is new
    placed: set[str] = set()  # entity ids written so far: ids, not entities, stay in memory
    used: set[str] = set()  # concept IRIs (and their ancestors) of the entities written
    shards: dict[str, list[Path]] = {table: [] for table in SHARDED}
    for number, batch in enumerate(batches, start=1):
        fresh = [e for eid, e in batch.entities.items() if eid not in placed]
        placed.update(e.id for e in fresh)
        for entity in fresh:
            if entity.concept:
                used.add(entity.concept)
                used.update(vocabulary.ancestors(entity.concept))
        entities, has_concept = _entity_rows(fresh)
        paper_rels, entity_rels = _relation_rows(batch.results, batch.entities)
        tables = {"papers.csv": _paper_rows(batch.results), "entities.csv": entities,
                  "rel_paper_entity.csv": paper_rels, "rel_entity_entity.csv": entity_rels,
                  "has_concept.csv": has_concept}
        for table in SHARDED:
            if tables[table]:
                shards[table].append(
                    _write_csv(out_dir / shard_name(table, number), None, tables[table]))
        if on_batch:
            on_batch(len(batch))
        # Let go of this batch before the next is read: two at once would double the peak.
        del batch, fresh, entities, has_concept, paper_rels, entity_rels, tables
    written = [path for table in SHARDED for path in shards[table]]
    for table in SHARDED:
        written.append(_write_csv(out_dir / shard_name(table), ADMIN_HEADERS[table], ()))
    for table, rows in _concept_tables(*_concept_rows(used, vocabulary)).items():
        written.append(_write_csv(out_dir / table, ADMIN_HEADERS[table], rows))

    def group(table: str) -> str:
        if table not in SHARDED:
            return table
        return ",".join([shard_name(table), *(p.name for p in shards[table])])

    return _finish_admin_dir(out_dir, written, [group(t) for t in ADMIN_FILES[:3]],
                             [group(t) for t in ADMIN_FILES[3:]])


def project_batches(project, papers_per_batch: int = DEFAULT_SHARD_PAPERS) -> Iterator[Corpus]:
    """A project's corpus (``kg.project.Project``) a batch of papers at a time, in id order.

    From the generation's extraction.jsonl, read once, line by line, when it was written
    (each batch checked as every extraction file is, errors naming the file and line); else
    from the project's cache, a batch of extractions at a time (``--formats`` without jsonl).
    Each batch carries the entities its papers mention; entities no paper mentions come last,
    in a batch without papers.
    """
    if papers_per_batch < 1:
        raise KgError("the shard size must be at least 1 paper")
    if "extraction.jsonl" in project.manifest.written:
        from kg.exports import check_export_dir

        check_export_dir(project.generation, reading="extraction.jsonl")
        yield from _jsonl_batches(project.generation / "extraction.jsonl", papers_per_batch)
        return
    yield from project.batches(papers_per_batch)


def _jsonl_batches(path: Path, size: int) -> Iterator[Corpus]:
    import itertools
    import tempfile

    from kg.io import read_jsonl

    with path.open(encoding="utf-8") as fh, \
            tempfile.TemporaryDirectory(prefix="kg-shard-") as tmp:
        part = Path(tmp) / "batch.jsonl"
        first_line, count = 1, size
        while count == size:
            lines = list(itertools.islice(fh, size))
            if not lines:
                break
            with part.open("w", encoding="utf-8") as out:
                out.writelines(lines)  # not "".join: a second copy of the batch's text
            count = len(lines)
            del lines  # the text is in the file: not held while its Corpus is
            try:
                yield read_jsonl(part)  # checked as every extraction file is
            except InputError as exc:  # name the project's file and line, not the batch's
                where = re.match(re.escape(str(part)) + r":(\d+): ", str(exc))
                if not where:
                    raise
                raise InputError(f"{path}:{first_line + int(where[1]) - 1}: "
                                 f"{str(exc)[where.end():]}") from exc
            first_line += count


def write_project_admin_csvs(project, out_dir: Path, *,
                             papers_per_shard: int = DEFAULT_SHARD_PAPERS, vocabulary=None,
                             on_batch: Callable[[int], None] | None = None) -> list[Path]:
    """``write_admin_shards`` over ``project_batches``: a project of any size, in bounded
    memory (a shard's papers at a time, plus the set of entity ids written).

    >>> import tempfile
    >>> from kg.ingest import IngestOptions, read_inputs
    >>> from kg.project import build, open_project
    >>> papers = read_inputs(["examples/iclr2025-seed.txt"], IngestOptions()).papers
    >>> out = Path(tempfile.mkdtemp())
    >>> _ = build(out, papers)
    >>> paths = write_project_admin_csvs(open_project(out), out / "neo4j-admin",
    ...                                  papers_per_shard=10)
    >>> sorted(p.name for p in paths if p.name.startswith("papers"))
    ['papers-000001.csv', 'papers-000002.csv', 'papers.header.csv']
    """
    return write_admin_shards(project_batches(project, papers_per_shard), out_dir,
                              vocabulary=vocabulary, on_batch=on_batch)


def admin_import_script(nodes: Sequence[str] = ADMIN_FILES[:3],
                        relationships: Sequence[str] = ADMIN_FILES[3:]) -> str:
    """The ``neo4j-admin database import full`` command for the CSVs (run where they are).

    ``nodes`` and ``relationships`` are the file groups, each a header file and its shards
    joined by commas (neo4j-admin reads a group as one file). ``import.sh --schema`` prints the
    constraints and indexes ``kg neo4j load`` creates, for cypher-shell once the database runs
    (an admin import creates none).

    >>> print(admin_import_script(["papers.header.csv,papers-000001.csv"], []).splitlines()[-1])
      --nodes=papers.header.csv,papers-000001.csv
    """
    options = [f"--nodes={group}" for group in nodes]
    options += [f"--relationships={group}" for group in relationships]
    schema = "".join(f"{statement};\n" for statement in SCHEMA)
    return (
        "#!/usr/bin/env bash\n"
        "# Import the kg graph into an empty database (stop Neo4j first; Neo4j 5.x).\n"
        "# Usage: ./import.sh [DATABASE]\n"
        "# Then start Neo4j and create kg's constraints and indexes:\n"
        "#   ./import.sh --schema | cypher-shell -u neo4j -p PASSWORD -d DATABASE\n"
        "set -euo pipefail\n"
        "if [ \"${1:-}\" = --schema ]; then\n"
        f"  cat <<'CYPHER'\n{schema}CYPHER\n"
        "  exit 0\n"
        "fi\n"
        "cd \"$(dirname \"$0\")\"\n"
        # The database name goes first: --nodes/--relationships take several files each.
        "neo4j-admin database import full \"${1:-neo4j}\" --overwrite-destination "
        f"--multiline-fields=true --array-delimiter='{ARRAY_DELIMITER}'"
        + "".join(f" \\\n  {option}" for option in options) + "\n")


# ---------------------------------------------------------------------------------------------
# Saved queries


@dataclass(frozen=True)
class QueryParam:
    name: str
    kind: str  # str | int | float | bool | list
    default: Any = None
    required: bool = True
    help: str = ""


_PARAM_LINE = re.compile(
    r"^//\s*@param\s+(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<kind>str|int|float|bool|list)"
    r"(?:\s*=\s*(?P<default>\S+))?\s*(?P<help>.*)$")


def query_params(text: str) -> dict[str, QueryParam]:
    """Parameters declared in a saved query's header: ``// @param name:type[=default] help``.

    >>> query_params("// @param limit:int=10 how many")["limit"].default
    10
    """
    out: dict[str, QueryParam] = {}
    for line in text.splitlines():
        m = _PARAM_LINE.match(line.strip())
        if not m:
            continue
        kind = m["kind"]
        raw = m["default"]
        default = None if raw in (None, "null") else convert_param(m["name"], kind, raw)
        out[m["name"]] = QueryParam(m["name"], kind, default, raw is None, m["help"].strip())
    return out


def convert_param(name: str, kind: str, raw: str) -> Any:
    """Turn a ``--param name=value`` string into the declared type."""
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        if kind == "bool":
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("true", "1", "yes")
        if kind == "list":
            return json.loads(raw) if raw.startswith("[") else [v for v in raw.split(",") if v]
    except ValueError as exc:
        raise QueryError(f"--param {name}={raw}: not a valid {kind}") from exc
    return raw


def bind_params(text: str, given: dict[str, str], path: str = "query") -> dict[str, Any]:
    """Declared params from ``given`` (strings, converted) or defaults; unknown/missing → error."""
    declared = query_params(text)
    params: dict[str, Any] = {}
    for name, raw in given.items():
        if declared and name not in declared:
            raise QueryError(f"{path}: unknown parameter {name!r}; it takes "
                             + (", ".join(sorted(declared)) or "no parameters"))
        params[name] = convert_param(name, declared[name].kind, raw) if name in declared else raw
    for name, p in declared.items():
        if name not in params:
            if p.required:
                raise QueryError(f"{path}: missing parameter {name!r}; pass --param {name}=…"
                                 + (f" ({p.help})" if p.help else ""))
            params[name] = p.default
    return params


def to_plain(value: Any) -> Any:
    """Driver values (nodes, relationships, paths, temporals) as JSON-friendly data."""
    import neo4j.graph as ng

    if isinstance(value, ng.Node):
        return {"labels": sorted(value.labels), **{k: to_plain(v) for k, v in value.items()}}
    if isinstance(value, ng.Relationship):
        return {"type": value.type, **{k: to_plain(v) for k, v in value.items()}}
    if isinstance(value, ng.Path):
        return [to_plain(x) for pair in zip(value.nodes, [*value.relationships, None],
                                            strict=True) for x in pair if x is not None]
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if hasattr(value, "iso_format"):
        return value.iso_format()
    return value


def run_query(session, text: str, params: dict[str, Any]) -> tuple[list[str], list[dict]]:
    """Run a (read) query; returns column names and rows as plain data."""
    result = session.run(text, params)
    records = list(result)
    keys = list(result.keys())
    return keys, [{k: to_plain(r[k]) for k in keys} for r in records]
