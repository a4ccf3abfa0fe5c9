"""Derived facts: the whole-corpus answers saved queries would otherwise compute per request.

``derived_facts(index)`` gives, from ``kg.analysis`` itself (so the numbers are the CLI's):

- ``user_counts``: every technique/method with the papers using it (``technique_counts``,
  what ``kg techniques`` lists and ``kg shared`` counts; uses, not mentions);
- ``concept_counts``: every vocabulary concept with the papers using it or a narrower one
  (what ``sparql/concepts-by-paper-count.rq`` counted by walking ``skos:broader*``);
- ``cooccurrence``: the first ``STORED_PAIRS`` (1,000) pairs of techniques/methods of
  ``kg techniques``' ranking (``cooccurrence``), those used together by ``MIN_PAIR_PAPERS`` or
  more papers;
- ``related``: each paper's top ``k`` related papers, ranked, with weight and shared entities
  (``related``, what ``kg related PAPER -n k`` prints).

``derived_triples(facts)`` writes them as RDF under ``ontology/kg.ttl``'s DERIVED section, and
a project build puts those triples in its store and graph exports (``kg.project.store``), so
``kg add``/``kg remove`` keep them current. docs/derived-facts.md describes the contract.

>>> from kg.pipeline import run
>>> facts = derived_facts(run(["examples/iclr2025-seed.txt"]), k=3)
>>> max(len([r for r in facts.related if r.paper == p]) for p in {r.paper for r in facts.related})
3
>>> all(c.papers >= MIN_PAIR_PAPERS for c in facts.cooccurrence)
True
"""

from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal

from kg.analysis import (
    STORED_PAIRS,
    AnalysisIndex,
    analysis_index,
    cooccurrence,
    related,
    technique_counts,
)
from kg.model import Corpus
from kg.rdf import RDF_NS, XSD_NS, entity_iri, paper_iri
from kg.vocab import BASE, ONTOLOGY_NS

DERIVED_NS = BASE + "derived/"
RELATED_K = 10  # related papers kept per paper (`kg related`'s default -n)
MIN_PAIR_PAPERS = 2  # a pair used together by one paper only is not kept (~70% of all pairs)


@dataclass(frozen=True, slots=True, order=True)
class UserCount:
    """A technique or method (entity id), the number of papers using it, and its place in
    ``kg techniques``' list (1 = most used)."""

    entity: str
    papers: int
    rank: int


@dataclass(frozen=True, slots=True, order=True)
class ConceptCount:
    """A vocabulary concept (IRI), the papers using it or a narrower concept, and its place
    by that count (then label)."""

    concept: str
    papers: int
    rank: int


@dataclass(frozen=True, slots=True, order=True)
class Cooccurrence:
    """Two techniques/methods (entity ids, ``a < b``), how many papers use both, and the
    pair's place in ``kg techniques``' list of pairs."""

    a: str
    b: str
    papers: int
    rank: int


@dataclass(frozen=True, slots=True, order=True)
class FeatureWeight:
    """What sharing ``key`` (an entity id or concept IRI) adds to two papers' relatedness
    when both use it directly: its IDF × type weight (``AnalysisIndex.weight``)."""

    key: str
    weight: float


@dataclass(frozen=True, slots=True, order=True)
class SharedKey:
    """One thing two related papers share: an entity id, or a concept IRI reached through
    narrower entities, its name and its share of the weight."""

    key: str
    name: str
    weight: float


@dataclass(frozen=True, slots=True, order=True)
class Related:
    """``other`` is ``paper``'s ``rank``-th related paper (1 = closest), with the score
    ``kg related`` gives and what they share, heaviest first."""

    paper: str
    other: str
    rank: int
    weight: float
    shared: tuple[SharedKey, ...]


@dataclass(frozen=True, slots=True, order=True)
class DerivedFacts:
    """Every derived fact of a corpus, each tuple sorted (see the module docstring)."""

    user_counts: tuple[UserCount, ...]
    concept_counts: tuple[ConceptCount, ...]
    cooccurrence: tuple[Cooccurrence, ...]
    weights: tuple[FeatureWeight, ...]
    related: tuple[Related, ...]
    k: int = RELATED_K
    papers: tuple[str, ...] = ()  # every paper id in code point order: kg:position is 1-based


def derived_facts(corpus: Corpus | AnalysisIndex, k: int = RELATED_K) -> DerivedFacts:
    """The derived facts of ``corpus`` (a Corpus, or a project's index: ``open_project(DIR)
    .index()``), counted over uses (the CLI's default). Deterministic: same corpus, same
    facts, whatever the order work was done in.

    ``k`` related papers are kept per paper; the ranking costs one ``kg related`` per paper
    (about 8 ms each at 4,870 papers: 40 s), so a project build passes ``k=0`` and writes the
    feature ``weights`` the saved related-papers query ranks with instead.
    """
    index = analysis_index(corpus)
    weights = tuple(FeatureWeight(key, round(index.weight(key), 6))
                    for key in sorted(index.postings) if index.weight(key) > 0)
    return DerivedFacts(user_counts(index), _concept_counts(index), pair_counts(index),
                        weights, _related(index, k) if k > 0 else (), k,
                        tuple(sorted(index.papers)))


def user_counts(corpus: Corpus | AnalysisIndex) -> tuple[UserCount, ...]:
    """Every technique/method some paper uses, with its users and place: what RDF
    (``kg:userCount``) and Neo4j (``users``) both write, so both answer as ``kg techniques``.

    >>> from kg.pipeline import run
    >>> counts = user_counts(run(["examples/iclr2025-seed.txt"]))
    >>> [c.rank for c in counts[:3]], counts[0].papers >= counts[-1].papers >= 1
    ([1, 2, 3], True)
    """
    return tuple(UserCount(e.id, n, rank) for rank, (e, n)
                 in enumerate(technique_counts(analysis_index(corpus)), 1))


def pair_counts(corpus: Corpus | AnalysisIndex) -> tuple[Cooccurrence, ...]:
    """The co-occurring pairs kept as facts, in RDF (``kg:Cooccurrence``) and Neo4j
    (``CO_OCCURS``) alike: the first ``STORED_PAIRS`` of ``kg techniques``' ranking (those a
    project's index stores, computed when it was written: the whole list costs 2 s at 4,870
    papers), used together by ``MIN_PAIR_PAPERS`` or more papers. A pair of one paper links
    nothing (about 70% of all pairs: writing them cost Neo4j loads 3 s at 4,870 papers).

    >>> from kg.pipeline import run
    >>> pairs = pair_counts(run(["examples/iclr2025-seed.txt"]))
    >>> all(p.papers >= MIN_PAIR_PAPERS and p.a < p.b for p in pairs)
    True
    """
    return tuple(Cooccurrence(a.id, b.id, n, rank) for rank, (a, b, n)
                 in enumerate(cooccurrence(analysis_index(corpus), limit=STORED_PAIRS), 1)
                 if n >= MIN_PAIR_PAPERS)


def _concept_counts(index: AnalysisIndex) -> tuple[ConceptCount, ...]:
    papers: dict[str, set[str]] = defaultdict(set)
    # One read of a stored index's entity table, not a query per entity (0.55 s at 4,870).
    entities = dict(index.entities.items())
    for eid, pids in index.entity_papers.items():
        entity = entities.get(eid)
        if entity is None or not entity.concept:
            continue
        for iri in (entity.concept, *index.vocab.ancestors(entity.concept)):
            papers[iri].update(pids)
    concepts = index.vocab.concepts

    def label(iri: str) -> str:
        return concepts[iri].pref_label.casefold() if iri in concepts else iri

    ordered = sorted(papers, key=lambda iri: (-len(papers[iri]), label(iri), iri))
    return tuple(ConceptCount(iri, len(papers[iri]), rank)
                 for rank, iri in enumerate(ordered, 1))


def _related(index: AnalysisIndex, k: int) -> tuple[Related, ...]:
    out = []
    for pid in sorted(index.papers):
        for rank, hit in enumerate(related(index, pid, k), 1):
            out.append(Related(pid, hit.paper.id, rank, round(hit.score, 6), tuple(
                SharedKey(s.key, s.name, round(s.weight, 6)) for s in hit.shared)))
    return tuple(out)


# ------------------------------------------------------------------ as RDF


def _node(kind: str, *parts: str) -> str:
    key = "\x1f".join(parts).encode("utf-8")
    return f"<{DERIVED_NS}{kind}/{hashlib.sha256(key).hexdigest()[:24]}>"


def _int(n: int) -> str:
    return f'"{int(n)}"^^<{XSD_NS}integer>'


def _decimal(value: float) -> str:
    return f'"{format(Decimal(repr(value)), "f")}"^^<{XSD_NS}decimal>'


def _key_iri(key: str) -> str:
    # a feature key is an entity id, or the IRI of a concept reached through narrower ones
    return f"<{key}>" if key.startswith(("http://", "https://")) else f"<{entity_iri(key)}>"


def derived_triples(facts: DerivedFacts) -> Iterator[tuple[str, str, str]]:
    """The facts as N-Triples terms (kg.rdf's ``Triple``), in a fixed order.

    >>> facts = DerivedFacts((UserCount("technique/caching", 3, 1),), (), (), (), ())
    >>> [p.rsplit("#")[-1] for _, p, _ in derived_triples(facts)]
    ['userCount>', 'userRank>']
    """
    kg, type_ = f"<{ONTOLOGY_NS}", f"<{RDF_NS}type>"
    iri = functools.cache(entity_iri)  # (percent-encoding each entity once, not per fact)
    for position, pid in enumerate(facts.papers, 1):
        yield f"<{paper_iri(pid)}>", f"{kg}position>", _int(position)
    for u in facts.user_counts:
        yield f"<{iri(u.entity)}>", f"{kg}userCount>", _int(u.papers)
        yield f"<{iri(u.entity)}>", f"{kg}userRank>", _int(u.rank)
    for c in facts.concept_counts:
        yield f"<{c.concept}>", f"{kg}paperCount>", _int(c.papers)
        yield f"<{c.concept}>", f"{kg}paperRank>", _int(c.rank)
    for w in facts.weights:
        yield _key_iri(w.key), f"{kg}sharedWeight>", _decimal(w.weight)
    for pair in facts.cooccurrence:
        node = _node("cooccurrence", pair.a, pair.b)
        yield node, type_, f"{kg}Cooccurrence>"
        yield node, f"{kg}technique>", f"<{iri(pair.a)}>"
        yield node, f"{kg}technique>", f"<{iri(pair.b)}>"
        yield node, f"{kg}papers>", _int(pair.papers)
        yield node, f"{kg}pairRank>", _int(pair.rank)
    yield from _related_triples(facts.related)


def _related_triples(facts: Iterable[Related]) -> Iterator[tuple[str, str, str]]:
    kg, type_ = f"<{ONTOLOGY_NS}", f"<{RDF_NS}type>"
    for r in facts:
        paper, other = f"<{paper_iri(r.paper)}>", f"<{paper_iri(r.other)}>"
        node = _node("related", r.paper, r.other)
        yield paper, f"{kg}relatedTo>", other
        yield node, type_, f"{kg}Relatedness>"
        yield node, f"{kg}paper>", paper
        yield node, f"{kg}relatedPaper>", other
        yield node, f"{kg}rank>", _int(r.rank)
        yield node, f"{kg}weight>", _decimal(r.weight)
        for s in r.shared:
            yield node, f"{kg}sharedEntity>", _key_iri(s.key)


# The predicates on corpus nodes (entities, concepts, papers) that hold derived facts; the
# derived nodes themselves are under DERIVED_NS (kg.project.store replaces both).
DERIVED_PREDICATES = tuple(f"{ONTOLOGY_NS}{p}" for p in (
    "position", "userCount", "userRank", "paperCount", "paperRank", "sharedWeight",
    "relatedTo"))
