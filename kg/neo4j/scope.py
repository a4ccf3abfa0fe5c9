"""A project's part of a database: its id, its counts, clearing it, and checking a load.

Every Paper and Entity node carries ``project``, the id of the project (or load) it belongs
to, and is unique per ``(project, id)``. Relationships belong to the project of their ends
(a project's papers and entities link only to each other and to concepts). Concepts are the
vocabulary's, shared by every project: a concept goes when no entity of any project reaches
it. So two projects holding the same paper or entity each have their own node, with their own
properties, relations and derived facts; a question across projects joins on ``id``.

>>> project_id(Path("/data/iclr 2024"))[:10]
'iclr-2024-'
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from kg.errors import ServiceError

LOADS_FILE = "neo4j-loads.json"

# Concepts no entity (of any project) reaches: what clearing or a delta leaves behind.
DELETE_UNUSED_CONCEPTS = """\
MATCH (c:Concept)
WHERE NOT EXISTS { MATCH (:Entity)-[:HAS_CONCEPT]->(:Concept)-[:BROADER*0..]->(c) }
DETACH DELETE c"""


def project_id(root: Path) -> str:
    """The id a project's nodes carry: the one its load record names, else its folder's name
    and a digest of its absolute path (two folders of the same name stay apart)."""
    root = Path(root)
    try:
        recorded = json.loads((root / ".kg" / LOADS_FILE).read_text(encoding="utf-8"))
        if isinstance(recorded.get("project"), str) and recorded["project"]:
            return recorded["project"]
    except (OSError, ValueError, AttributeError):
        pass
    absolute = root.absolute()
    slug = re.sub(r"[^A-Za-z0-9_.]+", "-", absolute.name).strip("-").lower() or "project"
    return f"{slug}-{hashlib.sha256(str(absolute).encode()).hexdigest()[:8]}"


def project_counts(session, project: str) -> dict[str, int]:
    """Papers, entities and relations (the extracted ones: those naming their paper) of one
    project in the database."""
    one = session.run(
        "CALL { MATCH (p:Paper {project: $project}) RETURN count(p) AS papers } "
        "CALL { MATCH (e:Entity {project: $project}) RETURN count(e) AS entities } "
        "CALL { MATCH (p:Paper {project: $project})-[r]->() WHERE r.paper IS NOT NULL "
        "       RETURN count(r) AS from_papers } "
        "CALL { MATCH (e:Entity {project: $project})-[r]->() WHERE r.paper IS NOT NULL "
        "       RETURN count(r) AS from_entities } "
        "RETURN papers, entities, from_papers + from_entities AS relations",
        project=project).single()
    return {"papers": one["papers"], "entities": one["entities"], "relations": one["relations"]}


def unscoped_papers(session) -> int:
    """Papers without a project: loaded by a kg from before projects owned their part."""
    return session.run("MATCH (p:Paper) WHERE p.project IS NULL RETURN count(p) AS n"
                       ).single()["n"]


@dataclass(frozen=True)
class Cleared:
    """What a clear deleted."""

    papers: int
    entities: int
    concepts: int

    def summary(self, what: str) -> str:
        return (f"cleared {what}: deleted {self.papers:,} papers, {self.entities:,} entities "
                f"and {self.concepts:,} concepts")


def _deleted(session, query: str, **params) -> int:
    return session.run(query, params).consume().counters.nodes_deleted


def clear_project(session, project: str) -> Cleared:
    """Delete one project's papers and entities (with their relationships), then the concepts
    no entity reaches any more. Each step commits in transactions of 2,000 nodes (an
    auto-commit session: ``session`` must not be inside a transaction)."""
    papers = _deleted(session, "MATCH (p:Paper {project: $project}) CALL { WITH p DETACH "
                               "DELETE p } IN TRANSACTIONS OF 2000 ROWS", project=project)
    entities = _deleted(session, "MATCH (e:Entity {project: $project}) CALL { WITH e DETACH "
                                 "DELETE e } IN TRANSACTIONS OF 2000 ROWS", project=project)
    return Cleared(papers, entities, _deleted(session, DELETE_UNUSED_CONCEPTS))


def clear_all(session) -> Cleared:
    """Delete every node and relationship (kg's or not) in the database."""
    counts = {label: session.run(f"MATCH (n:{label}) RETURN count(n) AS n").single()["n"]
              for label in ("Paper", "Entity", "Concept")}
    session.run("MATCH (n) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS"
                ).consume()
    return Cleared(counts["Paper"], counts["Entity"], counts["Concept"])


def check_counts(session, project: str, expected: dict[str, int], rerun: str) -> None:
    """Raise KgError unless the database holds ``expected`` papers, entities and relations of
    ``project`` (a project manifest's counts), saying what differs and what to run."""
    now = project_counts(session, project)
    differ = [f"{key} {now[key]:,} (the project has {expected[key]:,})"
              for key in ("papers", "entities", "relations") if now[key] != expected.get(key)]
    if differ:
        raise ServiceError(f"after the load the database holds {', '.join(differ)} of project "
                      f"{project}; it is not a copy of the project: {rerun}")
