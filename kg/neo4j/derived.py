"""Derived facts in Neo4j: what the saved queries would otherwise compute per query.

* ``(:Entity).users`` on every Technique/Method entity of a project: the papers using it,
  the number ``kg techniques`` prints (0 for one that papers only mention).
* ``(a:Entity)-[:CO_OCCURS {papers, sort_key, project}]->(b:Entity)``, ``a.id < b.id``:
  techniques used together, with the number of papers and the pair's place in
  ``kg.analysis.cooccurrence``'s order (what `kg techniques` lists) as text (``pair_sort_key``):
  a query pages through an index on it instead of sorting every pair. The pairs are the RDF
  ones (``kg.derived.pair_counts``: used together by 2 or more papers, the first 1,000).
* ``(:Paper)-[:PROPOSES {used_by, users, how_used, rank}]->(:Entity)``: how many other papers
  relate to what a paper proposes (anything but PROPOSES, mentions included), the first
  ``PROPOSAL_USERS_TOP`` of them by id and how, and the proposal's place by that count —
  computed in Cypher after the facts above.
* ``(:Technique)-[:USED_WITH {papers, rank}]->(:Dataset|Model)``: the ``USED_WITH_TOP``
  datasets and models most used by the technique's users, with those papers' ids (Cypher).
* ``(p:Paper)-[:RELATED {rank, weight, shared}]->(q:Paper)``: each paper's top ``RELATED_TOP``
  related papers, the score and the names of what they share — ``kg related`` (uses, not
  mentions), rank 1 first.

The users, pairs and related papers are computed from kg's analysis API over the project's
stored index (the numbers the CLI prints; users and pairs by the functions that give the RDF
ones, ``kg.derived.user_counts`` and ``pair_counts``), all of them on every load: a paper
added anywhere changes every rarity weight, so any related list may change. ``write_derived``
then writes all of them after a full load, and after a delta only what differs from the
``written_state`` of the last load: a delta's writes follow what changed. They carry no
``paper`` property, so they are never
counted as extracted relations.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from kg.analysis import analysis_index
from kg.analysis.related_all import related_all
from kg.derived import RELATED_K, pair_counts, user_counts
from kg.model import TECHNIQUE_TYPES
from kg.neo4j.rows import chunks

RELATED_TOP = RELATED_K  # `kg related`'s default -n
PAIR_COUNT_CAP = 10**8  # a CO_OCCURS sort key holds PAIR_COUNT_CAP - papers in 8 digits

# Every technique/method of the project, its users (0: only mentioned); a delta passes only
# those whose count changed.
SET_USERS = """\
UNWIND $rows AS row
MATCH (e:Entity {project: $project, id: row.id})
SET e.users = row.users"""

# A full rewrite first drops the counts of entities that are no technique any more.
CLEAR_USERS = """\
MATCH (e:Entity {project: $project})
WHERE e.users IS NOT NULL AND NOT e.id IN $ids
REMOVE e.users"""

DROP_USERS = """\
UNWIND $rows AS id
MATCH (e:Entity {project: $project, id: id})
REMOVE e.users"""

DELETE_COOCCURS = """\
MATCH (:Entity {project: $project})-[c:CO_OCCURS]->()
CALL { WITH c DELETE c } IN TRANSACTIONS OF 10000 ROWS"""

CREATE_COOCCURS = """\
UNWIND $rows AS row
MATCH (a:Entity {project: $project, id: row.a})
MATCH (b:Entity {project: $project, id: row.b})
CREATE (a)-[:CO_OCCURS {papers: row.papers, sort_key: row.sort_key, project: $project}]->(b)"""

# A delta: pairs whose count changed or that are new (MERGE), and pairs no paper has now.
SET_COOCCURS = """\
UNWIND $rows AS row
MATCH (a:Entity {project: $project, id: row.a})
MATCH (b:Entity {project: $project, id: row.b})
MERGE (a)-[c:CO_OCCURS]->(b)
SET c.papers = row.papers, c.sort_key = row.sort_key, c.project = $project"""

DROP_COOCCURS = """\
UNWIND $rows AS row
MATCH (:Entity {project: $project, id: row.a})-[c:CO_OCCURS]->(:Entity {project: $project,
                                                                    id: row.b})
DELETE c"""

DELETE_RELATED = """\
MATCH (:Paper {project: $project})-[r:RELATED]->()
CALL { WITH r DELETE r } IN TRANSACTIONS OF 10000 ROWS"""

# One row per paper: its related papers in rank order, their weights and shared names. The
# papers come as element ids (``PAPER_NODES``: a node lookup, not an index seek per end) and
# each paper's shared names as one string (``_packed``): the driver packs one string faster
# than forty, and the two halve this statement's time (1.8 → 1.3 s for 47,000 at 4,870
# papers). The project is checked, so a node id reused since it was read never links parts.
CREATE_RELATED = """\
UNWIND $rows AS row
MATCH (p:Paper) WHERE elementId(p) = row.paper AND p.project = $project
WITH p, row, split(row.shared, '\u001e') AS shared
UNWIND range(0, size(row.others) - 1) AS i
MATCH (q:Paper) WHERE elementId(q) = row.others[i] AND q.project = $project
CREATE (p)-[:RELATED {rank: i + 1, weight: row.weights[i],
                      shared: split(shared[i], '\u001f')}]->(q)"""

PAPER_NODES = """\
MATCH (p:Paper {project: $project})
RETURN p.id AS id, elementId(p) AS node"""

DROP_RELATED_OF = """\
UNWIND $rows AS id
MATCH (:Paper {project: $project, id: id})-[r:RELATED]->()
DELETE r"""

# A paper whose related papers, ranks and shared names stay, but not its weights (every
# rarity weight moves when papers come or go): one small row.
SET_RELATED_WEIGHTS = """\
UNWIND $rows AS row
MATCH (:Paper {project: $project, id: row.paper})-[r:RELATED]->()
SET r.weight = row.weights[r.rank - 1]"""

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

    users: tuple[dict, ...]  # {id, users}: every technique/method entity (0: only mentioned)
    cooccurs: tuple[dict, ...]  # {a, b, papers, sort_key}
    related: tuple[dict, ...]  # {paper, others, weights, shared}: papers with related ones

    @cached_property
    def state(self) -> dict:
        """``written_state(self)``, computed once (a delta compares it, then records it)."""
        return written_state(self)


def pair_sort_key(a: str, b: str, papers: int) -> str:
    """The key ``technique-cooccurrence.cypher`` orders pairs by, as ``kg techniques`` does:
    most papers first, then by ids (entity ids are slugs: no space, so ``a b`` sorts as the
    pair). A pair's key changes only with its own count, so a delta rewrites only the pairs
    whose count changed, where a rank would move every pair after them.

    >>> sorted([pair_sort_key("m/x", "m/y", 2), pair_sort_key("m/a", "m/b", 1),
    ...         pair_sort_key("m/a", "m/z", 2)])[0]
    '99999998 m/a m/z'
    """
    return f"{PAIR_COUNT_CAP - papers:08d} {a} {b}"


def derived_facts(index, ranked: dict[str, list] | None = None) -> DerivedFacts:
    """The derived facts of a project's analysis ``index`` (``Project.index()``, or any Corpus).

    Every paper's related papers are ``ranked`` (``Project.related()``: as the build that drew
    the technique map ranked them), else they come from ``related_all``, which ranks them all
    at once as ``kg related`` ranks one (a related() call per paper took 40 s at 4,870 papers).

    >>> from kg.pipeline import run
    >>> facts = derived_facts(run(["examples/iclr2025-seed.txt"]))
    >>> max(row["users"] for row in facts.users) >= 2, len(facts.related[0]["others"]) >= 1
    (True, True)
    """
    index = analysis_index(index)
    counts = {c.entity: c.papers for c in user_counts(index)}
    users = tuple({"id": eid, "users": counts.get(eid, 0)} for eid in sorted(index.entities)
                  if index.entities[eid].type in TECHNIQUE_TYPES)
    cooccurs = tuple({"a": c.a, "b": c.b, "papers": c.papers,
                      "sort_key": pair_sort_key(c.a, c.b, c.papers)} for c in pair_counts(index))
    if ranked is None:
        ranked = related_all(index, RELATED_TOP)
    # The score as `kg related --format json` gives it (RelatedPaper.as_dict rounds to 4).
    related = tuple({"paper": pid, "others": [other for other, _, _ in ranked[pid]],
                     "weights": [round(score, 4) for _, score, _ in ranked[pid]],
                     "shared": [shared for _, _, shared in ranked[pid]]}
                    for pid in sorted(ranked) if ranked[pid])
    return DerivedFacts(users, cooccurs, related)


def _write(session, query: str, rows: Sequence, project: str, size: int = 5000) -> int:
    for part in chunks(rows, size):
        session.run(query, rows=list(part), project=project).consume()
    return len(rows)


def _digest(value) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def written_state(facts: DerivedFacts) -> dict:
    """What ``write_derived`` leaves in the database, compactly (JSON): the next delta writes
    only what differs from it. Per paper: its related papers and digests of its rows with
    and without their weights.

    >>> facts = DerivedFacts(({"id": "m/a", "users": 2},), (), ({"paper": "p", "others": ["q"],
    ...     "weights": [1.5], "shared": [["A"]]},))
    >>> state = written_state(facts)
    >>> state["users"], state["related"]["p"][0]
    ({'m/a': 2}, ['q'])
    """
    return {"users": {row["id"]: row["users"] for row in facts.users},
            "pairs": [[row["a"], row["b"], row["papers"]] for row in facts.cooccurs],
            "related": {row["paper"]: [row["others"], _digest([row["others"], row["shared"]]),
                                       _digest(row["weights"])] for row in facts.related}}


@dataclass(frozen=True)
class DerivedWrite:
    """What ``write_derived`` wrote: rows of each kind (a full rewrite writes them all)."""

    full: bool
    users: int = 0
    pairs: int = 0  # CO_OCCURS created, changed or deleted
    related: int = 0  # papers whose RELATED were rewritten
    weights: int = 0  # papers whose RELATED only got new weights

    def summary(self) -> str:
        how = "rewritten" if self.full else "updated"
        return (f"derived facts {how}: {self.users:,} technique counts, {self.pairs:,} "
                f"co-occurring pairs, related papers of {self.related:,} papers"
                + ("" if self.full else f" (and the weights alone of {self.weights:,})"))


def _packed(session, project: str, rows: Sequence[dict]) -> list[dict]:
    """RELATED rows as ``CREATE_RELATED`` takes them: papers as element ids, shared names as
    one string (``_joined``)."""
    if not rows:
        return []
    node = {r["id"]: r["node"] for r in session.run(PAPER_NODES, project=project)}
    return [{"paper": node[row["paper"]], "others": [node[o] for o in row["others"]],
             "weights": row["weights"], "shared": _joined(row["shared"])} for row in rows]


def _joined(shared: Sequence[Sequence[str]]) -> str:
    r"""A paper's shared names as one string: U+001E between related papers, U+001F between
    names (a name holding one of these invisible separators loses it).

    >>> _joined([["KV cache", "LLaMA"], ["LoRA\x1f"]]).split("\x1e")
    ['KV cache\x1fLLaMA', 'LoRA']
    """
    return "\x1e".join("\x1f".join(name.translate(_SEPARATORS) for name in names)
                       for names in shared)


_SEPARATORS = {0x1E: None, 0x1F: None}


def write_derived(session, project: str, facts: DerivedFacts, previous: dict | None = None,
                  touched: Iterable[str] = ()) -> DerivedWrite:
    """Bring ``project``'s derived facts in the database to ``facts`` (an auto-commit
    ``session``: the deletes commit in transactions of 10,000).

    With ``previous``, the ``written_state`` the database holds (a delta's last load), only
    what differs is written: changed counts and pairs, the related papers of papers whose
    list changed (or that point at a paper in ``touched``: rewritten or deleted since, so
    its RELATED went with it), and new weights alone where only those moved. Without it,
    everything is rewritten. The Cypher-counted facts (proposal users, USED_WITH) are
    counted again either way. (Counting them in a second session while RELATED is written
    deadlocks: both lock relationship chains of the same nodes.)
    """
    if previous is None:
        done = _rewrite(session, project, facts)
    else:
        done = _update(session, project, facts, previous, set(touched))
    session.run(SET_USED_BY, project=project, top=PROPOSAL_USERS_TOP).consume()
    session.run(SET_PROPOSAL_RANK, project=project).consume()
    session.run(DELETE_USED_WITH, project=project).consume()
    session.run(CREATE_USED_WITH, project=project, top=USED_WITH_TOP).consume()
    return done


def _rewrite(session, project: str, facts: DerivedFacts) -> DerivedWrite:
    session.run(CLEAR_USERS, ids=[row["id"] for row in facts.users], project=project).consume()
    users = _write(session, SET_USERS, facts.users, project)
    session.run(DELETE_COOCCURS, project=project).consume()
    pairs = _write(session, CREATE_COOCCURS, facts.cooccurs, project)
    session.run(DELETE_RELATED, project=project).consume()
    related = _write(session, CREATE_RELATED, _packed(session, project, facts.related),
                     project, 1000)
    return DerivedWrite(True, users, pairs, related)


def _update(session, project: str, facts: DerivedFacts, previous: dict,
            touched: set[str]) -> DerivedWrite:
    old_users = previous["users"]
    users = [row for row in facts.users if old_users.get(row["id"]) != row["users"]]
    kept = {row["id"] for row in facts.users}
    _write(session, DROP_USERS, [eid for eid in old_users if eid not in kept], project)
    _write(session, SET_USERS, users, project)

    old_pairs = {(a, b): n for a, b, n in previous["pairs"]}
    pairs = [row for row in facts.cooccurs if old_pairs.get((row["a"], row["b"])) != row["papers"]]
    new_pairs = {(row["a"], row["b"]) for row in facts.cooccurs}
    gone = [{"a": a, "b": b} for a, b in old_pairs if (a, b) not in new_pairs]
    _write(session, DROP_COOCCURS, gone, project)
    _write(session, SET_COOCCURS, pairs, project)

    old_related, state = previous["related"], facts.state["related"]
    rewrite, weights = [], []
    for row in facts.related:
        old = old_related.get(row["paper"])
        if (old is None or row["paper"] in touched or old[1] != state[row["paper"]][1]
                or not touched.isdisjoint(old[0])):
            rewrite.append(row)
        elif old[2] != state[row["paper"]][2]:
            weights.append({"paper": row["paper"], "weights": row["weights"]})
    stale = [pid for pid in old_related if pid not in state] + [row["paper"] for row in rewrite]
    _write(session, DROP_RELATED_OF, stale, project)
    _write(session, CREATE_RELATED, _packed(session, project, rewrite), project, 1000)
    _write(session, SET_RELATED_WEIGHTS, weights, project, 1000)
    return DerivedWrite(False, len(users), len(pairs) + len(gone), len(rewrite), len(weights))
