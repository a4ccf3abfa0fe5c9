"""Derived facts in Neo4j: what the saved queries would otherwise compute per query.

* ``(:Entity).users`` on every Technique/Method entity of a project: the papers using it,
  the number ``kg techniques`` prints (0 for one that papers only mention).
* ``(a:Entity)-[:CO_OCCURS {papers, rank, project}]->(b:Entity)``, ``a.id < b.id``:
  techniques used together, with the number of papers and the pair's place in
  ``kg.analysis.cooccurrence``'s order (what `kg techniques` lists): a query pages through an
  index on ``rank`` instead of sorting every pair.
* ``(:Paper)-[:PROPOSES {used_by, users, how_used, rank}]->(:Entity)``: how many other papers
  relate to what a paper proposes (anything but PROPOSES, mentions included), the first
  ``PROPOSAL_USERS_TOP`` of them by id and how, and the proposal's place by that count —
  computed in Cypher after the facts above.
* ``(:Technique)-[:USED_WITH {papers, rank}]->(:Dataset|Model)``: the ``USED_WITH_TOP``
  datasets and models most used by the technique's users, with those papers' ids (Cypher).
* ``(p:Paper)-[:RELATED {rank, weight, shared}]->(q:Paper)``: each paper's top ``RELATED_TOP``
  related papers, the score and the names of what they share — ``kg related`` (uses, not
  mentions), rank 1 first.

All are computed from kg's analysis API over the project's stored index (the same numbers
the CLI prints) and rewritten whole by every load of the project, delta or full: a paper
added anywhere changes every rarity weight, so no related list can be vouched for alone.
They carry no ``paper`` property, so they are never counted as extracted relations.

``derived_facts`` is the one place that computes them: a shared function computing the same
facts for RDF can replace its body.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kg import analysis
from kg.analysis.related_all import related_all
from kg.model import TECHNIQUE_TYPES
from kg.neo4j.rows import chunks

RELATED_TOP = 10  # `kg related`'s default -n

SET_USERS = """\
MATCH (e:Entity {project: $project})
WHERE e.type IN $types
SET e.users = 0
WITH count(*) AS reset
UNWIND $rows AS row
MATCH (e:Entity {project: $project, id: row.id})
SET e.users = row.users"""

DELETE_COOCCURS = """\
MATCH (:Entity {project: $project})-[c:CO_OCCURS]->()
CALL { WITH c DELETE c } IN TRANSACTIONS OF 10000 ROWS"""

CREATE_COOCCURS = """\
UNWIND $rows AS row
MATCH (a:Entity {project: $project, id: row.a})
MATCH (b:Entity {project: $project, id: row.b})
CREATE (a)-[:CO_OCCURS {papers: row.papers, rank: row.rank, project: $project}]->(b)"""

DELETE_RELATED = """\
MATCH (:Paper {project: $project})-[r:RELATED]->()
CALL { WITH r DELETE r } IN TRANSACTIONS OF 10000 ROWS"""

CREATE_RELATED = """\
UNWIND $rows AS row
MATCH (p:Paper {project: $project, id: row.paper})
MATCH (q:Paper {project: $project, id: row.other})
CREATE (p)-[:RELATED {rank: row.rank, weight: row.weight, shared: row.shared}]->(q)"""

PROPOSAL_USERS_TOP = 25  # users listed per proposal (its used_by counts them all)

# Per proposal: the other papers relating to what it proposes (anything but PROPOSES), their
# number and the first by id with how they relate ("id (MENTIONS, USES_TECHNIQUE)").
SET_USED_BY = """\
MATCH (proposer:Paper {project: $project})-[pr:PROPOSES]->(m:Entity)
CALL {
  WITH proposer, pr, m
  OPTIONAL MATCH (user:Paper)-[r]->(m)
  WHERE user <> proposer AND type(r) <> 'PROPOSES'
  WITH pr, user, type(r) AS how
  ORDER BY how
  WITH pr, user, collect(DISTINCT how) AS via
  ORDER BY user.id
  WITH pr, collect(CASE WHEN user IS NULL THEN null ELSE {paper: user.id, via: via} END) AS users
  SET pr.used_by = size(users), pr.users = [u IN users[..$top] | u.paper],
      pr.how_used = [u IN users[..$top] | u.paper + ' (' + reduce(s = '', t IN u.via |
                     s + CASE s WHEN '' THEN '' ELSE ', ' END + t) + ')']
} IN TRANSACTIONS OF 500 ROWS"""

USED_WITH_TOP = 10  # datasets and models kept per technique

DELETE_USED_WITH = """\
MATCH (:Technique {project: $project})-[w:USED_WITH]->()
CALL { WITH w DELETE w } IN TRANSACTIONS OF 10000 ROWS"""

# Per technique, the datasets and models its users (not those that only mention it) use most.
CREATE_USED_WITH = """\
MATCH (t:Technique {project: $project})
WHERE t.users > 0
CALL {
  WITH t
  MATCH (p:Paper)-[r]->(t)
  WHERE type(r) <> 'MENTIONS'
  WITH DISTINCT t, p
  MATCH (p)-[:EVALUATED_ON|USES_MODEL]->(x:Entity)
  WHERE x:Dataset OR x:Model
  WITH t, x, p
  ORDER BY p.id
  WITH t, x, collect(DISTINCT p.id) AS papers
  ORDER BY size(papers) DESC, x.type, x.name
  WITH t, collect({x: x, papers: papers})[..$top] AS best
  UNWIND range(1, size(best)) AS rank
  WITH t, best[rank - 1] AS pick, rank
  WITH t, pick.x AS x, pick.papers AS papers, rank
  CREATE (t)-[:USED_WITH {papers: papers, rank: rank}]->(x)
} IN TRANSACTIONS OF 500 ROWS"""

# Each proposal's place in the saved query's order: a page comes from an index on rank.
SET_PROPOSAL_RANK = """\
MATCH (proposer:Paper {project: $project})-[pr:PROPOSES]->(m:Entity)
WITH pr ORDER BY pr.used_by DESC, m.name, proposer.id
WITH collect(pr) AS ranked
UNWIND range(1, size(ranked)) AS rank
WITH ranked[rank - 1] AS pr, rank
SET pr.rank = rank"""


@dataclass(frozen=True)
class DerivedFacts:
    """A project's derived facts, as parameter rows (sorted: the same index, the same rows)."""

    users: tuple[dict, ...]  # {id, users}: technique entities some paper uses
    cooccurs: tuple[dict, ...]  # {a, b, papers, rank}
    related: tuple[dict, ...]  # {paper, other, rank, weight, shared}


def derived_facts(index) -> DerivedFacts:
    """The derived facts of a project's analysis ``index`` (``Project.index()``, or any Corpus).

    Every paper's related papers come from ``related_all``, which ranks them all at once as
    ``kg related`` ranks one (a related() call per paper took 40 s at 4,870 papers).

    >>> from kg.pipeline import run
    >>> facts = derived_facts(run(["examples/iclr2025-seed.txt"]))
    >>> max(row["users"] for row in facts.users) >= 2, facts.related[0]["rank"]
    (True, 1)
    """
    users = tuple({"id": e.id, "users": n} for e, n in analysis.technique_counts(index))
    cooccurs = tuple({"a": a.id, "b": b.id, "papers": n, "rank": rank}
                     for rank, (a, b, n) in enumerate(analysis.cooccurrence(index), start=1))
    ranked = related_all(index, RELATED_TOP)
    # The score as `kg related --format json` gives it (RelatedPaper.as_dict rounds to 4).
    rows = tuple({"paper": pid, "other": other, "rank": rank, "weight": round(score, 4),
                  "shared": shared}
                 for pid in sorted(ranked)
                 for rank, (other, score, shared) in enumerate(ranked[pid], start=1))
    return DerivedFacts(users, cooccurs, rows)


def _create(session, query: str, rows: Iterable[dict], project: str, size: int = 5000) -> None:
    rows = list(rows)
    for part in chunks(rows, size):
        session.run(query, rows=list(part), project=project).consume()


def write_derived(session, project: str, facts: DerivedFacts) -> None:
    """Replace ``project``'s derived facts in the database by ``facts`` (an auto-commit
    ``session``: the deletes commit in transactions of 10,000)."""
    session.run(SET_USERS, rows=list(facts.users), types=list(TECHNIQUE_TYPES),
                project=project).consume()
    session.run(DELETE_COOCCURS, project=project).consume()
    _create(session, CREATE_COOCCURS, facts.cooccurs, project)
    session.run(DELETE_RELATED, project=project).consume()
    _create(session, CREATE_RELATED, facts.related, project)
    session.run(SET_USED_BY, project=project, top=PROPOSAL_USERS_TOP).consume()
    session.run(SET_PROPOSAL_RANK, project=project).consume()
    session.run(DELETE_USED_WITH, project=project).consume()
    session.run(CREATE_USED_WITH, project=project, top=USED_WITH_TOP).consume()
