"""Load a Corpus into Neo4j, export it as a Cypher script or neo4j-admin CSVs, run saved queries.

Graph model (the same stable ids as the RDF graph):

* ``(:Paper {project, id, title, label, abstract, authors, keywords, venue, year, url, date,
  categories, links})``
* ``(:Entity:<Type> {project, id, type, name, aliases, concept, users})`` — ``<Type>`` is one
  of ENTITY_TYPES (Technique, Method, Model, Dataset, Hardware, Task, Metric); ``id`` is
  ``Entity.id``. ``project`` scopes papers and entities: each project (``kg.neo4j.scope``)
  owns its part, unique per ``(project, id)``; loads of plain inputs share ``"default"``.
* ``(:Concept {iri, label, type, alt_labels})`` for every vocabulary concept an entity has, plus
  all its ancestors; ``(:Entity)-[:HAS_CONCEPT]->(:Concept)`` and
  ``(:Concept)-[:BROADER]->(:Concept)`` (``skos:broader``). "Technique X or anything narrower"
  is ``(e)-[:HAS_CONCEPT]->()-[:BROADER*0..]->(x)``.
* One relationship per ``Relation``: PROPOSES, USES_TECHNIQUE, … (``kg.model.PREDICATES`` in
  UPPER_SNAKE) from the paper (or, for OUTPERFORMS/EXTENDS, from an entity) to an entity, with
  properties ``paper, evidence, start, end, rule, confidence``. It is MERGEd on
  ``(subject, type, object, paper, start, end, rule)``, so re-loading adds nothing.
* Derived facts a project load writes (``kg.neo4j.derived``): ``Entity.users``,
  ``(:Entity)-[:CO_OCCURS {papers}]->(:Entity)``, ``(:Paper)-[:RELATED {rank, weight,
  shared}]->(:Paper)``.

The modules, low to high: ``connection`` (where the server is, the driver, its errors as
KgErrors), ``rows`` (the Corpus as parameter rows and the MERGE statements), ``queries`` (saved
queries, counts), ``scope`` (a project's part: id, counts, clearing), ``loader`` (``load``:
whole-paper transactions), ``derived`` (the derived facts), ``delta`` (``load_project``: a
project loaded delta by delta), ``script`` (a cypher-shell script) and ``admin`` (neo4j-admin
CSVs); what they read of a project comes through ``kg.project.Project``. The names below
are the package's API.

>>> from kg.neo4j import REL_TYPES
>>> REL_TYPES["usesTechnique"]
'USES_TECHNIQUE'
"""

from __future__ import annotations

from kg.neo4j.admin import (
    ADMIN_FILES,
    ADMIN_NAME,
    admin_import_script,
    project_batches,
    write_admin_csvs,
    write_admin_shards,
    write_project_admin_csvs,
)
from kg.neo4j.connection import Connection, connect, service_error, service_errors
from kg.neo4j.delta import ProjectLoad, clear_project_dir, load_project, read_loads
from kg.neo4j.derived import DerivedFacts, derived_facts, write_derived
from kg.neo4j.loader import LoadReport, load
from kg.neo4j.queries import (
    bind_params,
    corpus_counts,
    db_counts,
    graph_counts,
    query_params,
    run_query,
)
from kg.neo4j.rows import DEFAULT_PROJECT, REL_TYPES, SCHEMA, concept_rows, plan_batches
from kg.neo4j.scope import Cleared, clear_all, clear_project, project_counts, project_id
from kg.neo4j.script import run_cypher_script, write_cypher_script

__all__ = [
    "ADMIN_FILES", "ADMIN_NAME", "DEFAULT_PROJECT", "REL_TYPES", "SCHEMA", "Cleared",
    "Connection", "DerivedFacts", "LoadReport", "ProjectLoad", "admin_import_script",
    "bind_params", "clear_all", "clear_project", "clear_project_dir", "concept_rows",
    "connect", "corpus_counts", "db_counts", "derived_facts", "graph_counts", "load",
    "load_project", "plan_batches", "project_batches", "project_counts", "project_id",
    "query_params", "read_loads", "run_cypher_script", "run_query", "service_error",
    "service_errors", "write_admin_csvs", "write_admin_shards", "write_cypher_script",
    "write_derived", "write_project_admin_csvs",
]
