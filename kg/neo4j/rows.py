"""The Corpus flattened into parameter rows and the Cypher statements that MERGE them (shared by
the loader, the delta, the script and the neo4j-admin exports).

Every value travels as a query parameter; labels and relationship types (which Cypher cannot
take as parameters) come from fixed whitelists built from ENTITY_TYPES and PREDICATES.

>>> rel_type("usesTechnique")
'USES_TECHNIQUE'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kg.errors import InputError, KgError
from kg.model import ENTITY_TYPES, PREDICATES, Corpus, Entity, Paper, PaperResult, Relation
from kg.vocab import load_vocabulary

DEFAULT_BATCH_PAPERS = 250
# The scope of a load that is not a project's (`kg neo4j load FILE…`, `kg export`): such loads
# MERGE into one shared scope, as every load did before projects owned their part.
DEFAULT_PROJECT = "default"


def rel_type(predicate: str) -> str:
    """``usesTechnique`` → ``USES_TECHNIQUE`` (only for predicates in kg.model.PREDICATES)."""
    if predicate not in PREDICATES:
        raise KgError(f"unknown predicate {predicate!r}; expected one of {', '.join(PREDICATES)}")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", predicate).upper()


REL_TYPES: dict[str, str] = {p: rel_type(p) for p in PREDICATES}

# ---------------------------------------------------------------------------------------------
# Cypher statements. Labels/types are interpolated only from the whitelists above.

# Papers and entities are unique per project (kg.neo4j's module doc: a project owns its part).
SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT kg_paper_key IF NOT EXISTS FOR (p:Paper) REQUIRE (p.project, p.id) "
    "IS UNIQUE",
    "CREATE CONSTRAINT kg_entity_key IF NOT EXISTS FOR (e:Entity) REQUIRE (e.project, e.id) "
    "IS UNIQUE",
    "CREATE CONSTRAINT kg_concept_iri IF NOT EXISTS FOR (c:Concept) REQUIRE c.iri IS UNIQUE",
    "CREATE INDEX kg_entity_name IF NOT EXISTS FOR (e:Entity) ON (e.name)",
    "CREATE INDEX kg_entity_type IF NOT EXISTS FOR (e:Entity) ON (e.type)",
    "CREATE INDEX kg_concept_label IF NOT EXISTS FOR (c:Concept) ON (c.label)",
    "CREATE INDEX kg_paper_id_lookup IF NOT EXISTS FOR (p:Paper) ON (p.id)",
    "CREATE INDEX kg_entity_id_lookup IF NOT EXISTS FOR (e:Entity) ON (e.id)",
    "CREATE INDEX kg_technique_users IF NOT EXISTS FOR (t:Technique) ON (t.users)",
    "CREATE INDEX kg_cooccurs_key IF NOT EXISTS FOR ()-[c:CO_OCCURS]-() ON (c.sort_key)",
    "CREATE INDEX kg_proposes_rank IF NOT EXISTS FOR ()-[r:PROPOSES]-() ON (r.rank)",
)
# What databases loaded before projects owned their part hold: a paper id unique across the
# database would refuse a second project's copy of a paper (dropped before SCHEMA is created).
OLD_SCHEMA: tuple[str, ...] = (
    "DROP CONSTRAINT kg_paper_id IF EXISTS",
    "DROP CONSTRAINT kg_entity_id IF EXISTS",
    "DROP INDEX kg_cooccurs_rank IF EXISTS",  # pairs are ordered by sort_key now
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
MERGE (p:Paper {project: $project, id: row.id})
SET p += row.props"""


def _merge_entities(type_: str) -> str:
    # MERGE on the base label (the uniqueness constraint), then add the type label.
    # Aliases are unioned so a second corpus adds its spellings instead of replacing them.
    return f"""\
UNWIND $rows AS row
MERGE (e:Entity {{project: $project, id: row.id}})
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
MATCH (s:{subject_label} {{project: $project, id: row.subject}})
MATCH (o:Entity {{project: $project, id: row.object}})
MERGE (s)-[r:{rtype} {{paper: row.paper, start: row.start, end: row.end, rule: row.rule}}]->(o)
SET r.evidence = row.evidence, r.confidence = row.confidence"""


MERGE_ENTITIES: dict[str, str] = {t: _merge_entities(t) for t in ENTITY_TYPES}
MERGE_RELATIONS: dict[tuple[str, str], str] = {
    (p, label): _merge_relations(REL_TYPES[p], label)
    for p in PREDICATES for label in ("Paper", "Entity")
}

# ---------------------------------------------------------------------------------------------
# Rows: the Corpus flattened into parameter rows (shared by the loader and the exporters).


def paper_props(paper: Paper) -> dict[str, Any]:
    """Node properties of a paper; empty optional fields are left out (Neo4j has no nulls)."""
    props: dict[str, Any] = {"title": paper.title, "label": paper.label or None,
                             "abstract": paper.abstract, "authors": list(paper.authors) or None,
                             "keywords": list(paper.keywords) or None, "venue": paper.venue,
                             "year": paper.year, "url": paper.url, "date": paper.date,
                             "categories": list(paper.categories) or None,
                             "links": list(paper.links) or None}
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
        vocabulary = load_vocabulary()
    used = vocabulary.closure(e.concept for e in corpus.entities.values() if e.concept)
    return closed_concept_rows(used, vocabulary)


def closed_concept_rows(used: Iterable[str], vocabulary) -> tuple[list[dict], list[dict]]:
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


def chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    """``items`` in slices of ``size``.

    >>> list(chunks("abcde", 2))
    ['ab', 'cd', 'e']
    """
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
    for index, group in enumerate(chunks(results, papers_per_batch)):
        batch = Batch(index, [r.paper.id for r in group])
        entity_ids, relation_statements = group_rows(group, corpus.entities)
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


def group_rows(group: Iterable[PaperResult], entities: dict[str, Entity]
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


