"""What the technique map reads about a corpus, and the counts and panels it takes from it.

A ``MapSource`` is the uses index (``AnalysisIndex``: who uses what, the stored clusters) and
two passes over the papers: their metadata and entity lists, then each one's best evidence per
entity. ``MapSource.of(corpus)`` reads a Corpus in memory; a project passes one over its
stored index (``kg.project.generation``), so a 100,000-paper build's map never holds every
paper's result (the Corpus alone took 450 MB at 20,000 papers).

The panels are what ``kg shared ID --include-mentions`` lists for each entity, gathered in one
pass over the papers' evidence instead of one lookup per paper and entity.

>>> from kg.pipeline import load_corpus
>>> source = MapSource.of(load_corpus(["examples/iclr2025-seed.txt"]))
>>> users = Users.of(source)
>>> len(users.papers), len(users.used["technique/caching"]) >= 1
(19, True)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kg.analysis import (
    TECHNIQUE_TYPES,
    AnalysisIndex,
    analysis_index,
    entity_users,
    shared_targets,
)
from kg.analysis.index import paper_part
from kg.model import Corpus, Paper

LAYER_TYPES = ("Task", "Model", "Dataset")


class MapPaper(NamedTuple):
    """One paper as the map shows it."""

    paper: Paper  # (its abstract is not read)
    entity_ids: tuple[str, ...]  # every entity it names, in mention order
    used_ids: tuple[str, ...]  # those it uses, in mention order


class PaperEvidence(NamedTuple):
    """One paper's best evidence per entity it names (``kg.analysis.PaperPart``)."""

    pid: str
    evidence: Mapping[str, tuple[str, int, int]]  # entity id → (sentence, start, end)
    confidence: Mapping[str, float]
    used: Collection[str]  # entity ids it uses


@dataclass(frozen=True)
class MapSource:
    """The uses index of a corpus and two passes over its papers (each call a new pass)."""

    index: AnalysisIndex  # a project's stored one, or built over a Corpus
    papers: Callable[[], Iterable[MapPaper]]  # in the index's paper order
    evidence: Callable[[], Iterable[PaperEvidence]]  # any order
    # Each paper's related papers as ``related_all`` ranks them (the map lists the first
    # five), where they are ranked already (``kg.project.Project.related``, or by a build's
    # worker); else the map ranks them itself.
    ranked: Callable[[], Mapping[str, list]] | None = None

    def __len__(self) -> int:
        return self.index.n_papers

    @classmethod
    def of(cls, corpus: Corpus) -> MapSource:
        """The source of a Corpus in memory."""
        results = corpus.results

        def evidence() -> Iterable[PaperEvidence]:
            for r in results:
                part = paper_part(r)
                yield PaperEvidence(r.paper.id, part.evidence, part.confidence, part.used)

        return cls(analysis_index(corpus),
                   lambda: (MapPaper(r.paper, r.entity_ids, r.used_ids) for r in results),
                   evidence)


@dataclass(frozen=True)
class Users:
    """Which papers use which entity: ``used[eid]`` holds the indices of its papers."""

    papers: list[MapPaper]
    used_ids: list[tuple[str, ...]]  # per paper, in mention order
    used_sets: list[set[str]]
    used: dict[str, set[int]]
    entities: dict  # entity id → Entity (every entity of the corpus)

    @classmethod
    def of(cls, source: MapSource) -> Users:
        """A paper uses an entity when it uses it or a narrower concept (``entity_users``:
        the count `kg shared` and `kg techniques` give)."""
        papers = list(source.papers())
        order = {p.paper.id: i for i, p in enumerate(papers)}
        used: dict[str, set[int]] = defaultdict(set)
        used_sets: list[set[str]] = [set() for _ in papers]
        for eid, pids in entity_users(source.index, (*TECHNIQUE_TYPES, *LAYER_TYPES)).items():
            used[eid] = {order[pid] for pid in pids}
            for i in used[eid]:
                used_sets[i].add(eid)
        # Those it names first, in mention order, then those it reaches through them.
        used_ids = []
        for p, ids in zip(papers, used_sets, strict=True):
            named = tuple(e for e in dict.fromkeys(p.used_ids) if e in ids)
            used_ids.append(named + tuple(sorted(ids.difference(named))))
        return cls(papers, used_ids, used_sets, used, dict(source.index.entities.items()))

    def top(self, types: tuple[str, ...], limit: int) -> list[str]:
        """The ``limit`` entities of ``types`` most papers use (those of two papers or more
        when there are enough of them)."""
        entities, used = self.entities, self.used
        ranked = sorted((eid for eid in used if entities[eid].type in types),
                        key=lambda e: (-len(used[e]), entities[e].name.casefold(), e))
        shared_ones = [e for e in ranked if len(used[e]) >= 2]
        return (shared_ones if len(shared_ones) >= min(limit, 10) else ranked)[:limit]


class Panel(NamedTuple):
    """What ``kg shared ID --include-mentions`` lists for one entity, as the map keeps it."""

    rows: list[tuple[int, str, float, bool]]  # (paper index, sentence, confidence, used)
    targets: set[str]  # the entity and the narrower ones some paper names


def panels(source: MapSource, users: Users, ids: Iterable[str]) -> dict[str, Panel]:
    """Per entity of ``ids``: each paper naming it or a narrower concept (paper order), with
    the sentence of its first use (else of its first mention), as ``kg shared`` sorts them.
    One pass over the papers' evidence."""
    ids = list(ids)
    serves: dict[str, list[tuple[str, bool]]] = defaultdict(list)  # target → (eid, direct)
    for eid in ids:
        direct, concepts, targets = shared_targets(source.index, eid)
        for t in sorted(targets):
            serves[t].append((eid, t in direct or users.entities[t].concept in concepts))
    order = {p.paper.id: i for i, p in enumerate(users.papers)}
    out = {eid: Panel([], {eid}) for eid in ids}
    for row in source.evidence():
        i = order[row.pid]
        hits: dict[str, list[tuple]] = defaultdict(list)
        for t in users.papers[i].entity_ids:
            for eid, direct in serves.get(t, ()):
                start = row.evidence[t][1]
                hits[eid].append((not direct, start, t))
        for eid, found in hits.items():
            found.sort()
            chosen = next((t for _, _, t in found if t in row.used), found[0][2])
            out[eid].rows.append((i, row.evidence[chosen][0], row.confidence[chosen],
                                  chosen in row.used))
            out[eid].targets.update(t for _, _, t in found)
    for panel in out.values():
        panel.rows.sort()
    return out
