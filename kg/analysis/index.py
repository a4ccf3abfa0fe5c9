"""The query index of a corpus (``AnalysisIndex``): inverted index entity → papers, IDF
weights, evidence per paper and entity, each paper's features (the entities it counts for
and the broader concepts they inherit). ``kg.analysis.stored`` keeps one on disk.
"""

from __future__ import annotations

import math
import weakref
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kg.errors import KgError
from kg.model import (
    Corpus,
    Entity,
    EntityType,
    Paper,
    PaperResult,
    Predicate,
    Span,
)
from kg.vocab import Vocabulary, load_vocabulary

# How much sharing one entity of each type says about two papers being related. Hardware and
# metrics ("GPU", "accuracy") are shared by unrelated papers, so they do not count.
TYPE_WEIGHTS: dict[str, float] = {
    EntityType.TECHNIQUE: 1.0, EntityType.METHOD: 1.0, EntityType.MODEL: 1.0,
    EntityType.DATASET: 1.0, EntityType.TASK: 0.5,
}
# A concept a paper reaches only through a narrower one counts INHERITED ** (levels up) of a
# direct use, up to MAX_DEPTH levels: "KV cache" → "caching" at 0.5; root concepts such as
# "computational efficiency" would otherwise link almost every pair of papers.
INHERITED = 0.5
MAX_DEPTH = 3

# ------------------------------------------------------------------ the index


class Facets(NamedTuple):
    """What ``kg trends`` groups a paper by, kept apart from the paper (whose abstract a
    query over every paper need not read)."""

    year: int | None
    date: str | None  # ISO "2024-05-01" or "2024-05"
    venue: str | None
    categories: tuple[str, ...]


def facet_tables(papers: Mapping[str, Paper]) -> tuple[dict[int, Facets], dict[str, int]]:
    """Each distinct ``Facets`` of ``papers`` by number (in order of first use), and each
    paper's number: a stored index reads 100,000 papers' numbers in a tenth of the time their
    facets would take (a conference has a few distinct facets, arXiv some thousands).

    >>> values, of = facet_tables({"a": Paper(id="a", abstract="", year=2024),
    ...                            "b": Paper(id="b", abstract="", year=2024)})
    >>> values, of
    ({0: Facets(year=2024, date=None, venue=None, categories=())}, {'a': 0, 'b': 0})
    """
    number: dict[Facets, int] = {}
    of = {pid: number.setdefault(Facets(p.year, p.date, p.venue, p.categories), len(number))
          for pid, p in papers.items()}
    return {i: value for value, i in number.items()}, of


class Feature(NamedTuple):  # a tuple: a stored index holds ~10 per paper, read in bulk
    factor: float  # 1.0 direct use, INHERITED ** depth through narrower entities
    via: tuple[str, ...]  # entity ids in this paper that brought an inherited feature, nearest
    # first


@dataclass
class AnalysisIndex:
    """Everything the queries need, computed once per corpus (see ``analysis_index``)."""

    papers: dict[str, PaperResult]  # by paper id, in corpus order
    entities: dict[str, Entity]
    features: dict[str, dict[str, Feature]]  # paper id → feature key → feature
    postings: dict[str, tuple[str, ...]]  # feature key → paper ids (corpus order)
    factors: dict[str, tuple[tuple[str, float], ...]]  # feature key → (paper id, factor)
    entity_papers: dict[str, tuple[str, ...]]  # any entity id → paper ids (corpus order)
    order: dict[str, int]  # paper id → position in the corpus
    idf: dict[str, float]
    info: dict[str, tuple[str, str]]  # feature key → (name, type)
    evidence: dict[tuple[str, str], Span]  # (paper id, entity id) → best evidence
    names: dict[str, tuple[str, ...]]  # casefolded entity name/alias → entity ids
    concept_entity: dict[str, str]  # concept IRI → entity id
    titles: dict[str, tuple[str, ...]]  # casefolded label or title → paper ids
    texts: tuple[tuple[str, str], ...]  # (paper id, casefolded "label\0title") for substrings
    labels: dict[str, str]  # casefolded entity/concept name or alias → as written
    concept_labels: dict[str, tuple[str, ...]]  # casefolded pref/alt label → concept IRIs
    broader: dict[str, frozenset[str]]  # feature key → keys of all its broader concepts
    vocab: Vocabulary = field(repr=False)
    confidence: dict[tuple[str, str], float] = field(default_factory=dict)  # like evidence
    used: frozenset[tuple[str, str]] = frozenset()  # (paper id, entity id) the paper uses
    include_mentions: bool = False  # built over every mention, not only uses
    min_confidence: float = 0.0
    # Where the corpus comes from when a query needs another index (a project's stored index
    # is built with the defaults; --include-mentions needs the corpus).
    source: Callable[[], Corpus] | None = field(default=None, repr=False)
    # Results of the slow whole-corpus calls, computed when a project is built (result_key).
    stored: Mapping[str, object] | None = field(default=None, repr=False)
    # The distinct facets of the papers by number, and each paper's number (facet_tables).
    facets: Mapping[int, Facets] = field(default_factory=dict, repr=False)
    facet_of: Mapping[str, int] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.papers)

    @property
    def n_papers(self) -> int:
        return len(self.papers)

    def weight(self, key: str) -> float:
        """IDF × type weight of a feature."""
        return self.idf[key] * TYPE_WEIGHTS.get(self.info[key][1], 0.0)


def _best_evidence(result: PaperResult) -> dict[str, tuple[Span, float]]:
    """Per entity: the evidence and confidence of its strongest non-"mentions" relation, else
    of its mention."""
    best: dict[str, tuple[tuple, Span, float]] = {}
    for rel in result.relations:
        if rel.subject != result.paper.id:
            continue
        rank = (rel.predicate == Predicate.MENTIONS, -rel.confidence, rel.evidence.start)
        if rel.object not in best or rank < best[rel.object][0]:
            best[rel.object] = (rank, rel.evidence, rel.confidence)
    out = {eid: (span, confidence) for eid, (_, span, confidence) in best.items()}
    for eid, spans in result.mentions:
        out.setdefault(eid, (spans[0], 0.5))
    return out


def ancestor_depths(vocab: Vocabulary, iri: str) -> dict[str, int]:
    """Broader concepts of ``iri`` up to MAX_DEPTH levels, each with its shortest distance."""
    depths: dict[str, int] = {}
    frontier = [iri]
    for depth in range(1, MAX_DEPTH + 1):
        nxt = []
        for current in frontier:
            for parent in vocab.concepts[current].broader if current in vocab.concepts else ():
                if parent != iri and parent not in depths and parent in vocab.concepts:
                    depths[parent] = depth
                    nxt.append(parent)
        frontier = nxt
    return depths


class PaperPart(NamedTuple):
    """What the index keeps of one paper, from its result alone (a project reuses it while
    the paper's result is unchanged)."""

    paper: Paper
    evidence: dict[str, tuple[str, int, int]]  # entity id → best evidence (text, start, end)
    confidence: dict[str, float]  # entity id → confidence of that evidence
    used: frozenset[str]  # entity ids the paper uses
    counted: tuple[str, ...]  # entity ids the paper counts for, in mention order


def paper_part(result: PaperResult, include_mentions: bool = False,
               min_confidence: float = 0.0) -> PaperPart:
    """The index's view of one paper: a paper counts for an entity when it uses it
    (``PaperResult.used_ids``) with a relation of at least ``min_confidence``;
    ``include_mentions`` counts mere mentions too."""
    evidence, confidence = {}, {}
    for eid, (span, conf) in _best_evidence(result).items():
        evidence[eid] = (span.text, span.start, span.end)
        confidence[eid] = conf
    counted = tuple(eid for eid in (result.entity_ids if include_mentions else result.used_ids)
                    if confidence.get(eid, 0.0) >= min_confidence)
    return PaperPart(result.paper, evidence, confidence, frozenset(result.used_ids), counted)


def build_index(corpus: Corpus, vocab: Vocabulary | None = None, *,
                include_mentions: bool = False, min_confidence: float = 0.0) -> AnalysisIndex:
    """Build the query index of ``corpus`` (linear in its size). Prefer ``analysis_index``.

    A paper counts for an entity when it uses it (``PaperResult.used_ids``) with a relation of
    at least ``min_confidence``; ``include_mentions`` counts mere mentions too.
    """
    parts = {r.paper.id: paper_part(r, include_mentions, min_confidence)
             for r in corpus.results}
    index = assemble_index(parts, corpus.entities, vocab, include_mentions=include_mentions,
                           min_confidence=min_confidence)
    index.papers = {r.paper.id: r for r in corpus.results}
    index.evidence = {(pid, eid): Span(*span) for pid, part in parts.items()
                      for eid, span in part.evidence.items()}
    index.confidence = {(pid, eid): c for pid, part in parts.items()
                        for eid, c in part.confidence.items()}
    index.used = frozenset((pid, eid) for pid, part in parts.items() for eid in part.used)
    return index


def concept_entities(entities: Mapping[str, Entity]) -> dict[str, str]:
    """Concept IRI → the entity standing for it (the last by id when several share one)."""
    return {e.concept: eid for eid, e in sorted(entities.items()) if e.concept}


def paper_features(counted: Sequence[str], entities: Mapping[str, Entity],
                   concept_entity: Mapping[str, str], vocab: Vocabulary,
                   depths_of: dict[str, dict[str, int]]) -> dict[str, Feature]:
    """A paper's features: the entities it counts for, and the broader concepts they inherit
    (``depths_of`` memoizes each concept's ancestors)."""
    own: dict[str, Feature] = {}
    inherited: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for eid in counted:
        entity = entities.get(eid)
        if entity is None or entity.type not in TYPE_WEIGHTS:
            continue
        own[eid] = Feature(1.0, ())
        if entity.concept:
            if entity.concept not in depths_of:
                depths_of[entity.concept] = ancestor_depths(vocab, entity.concept)
            for iri, depth in depths_of[entity.concept].items():
                inherited[concept_entity.get(iri, iri)].append((depth, eid))
    for key, via in inherited.items():
        if key not in own and TYPE_WEIGHTS.get(_key_type(key, entities, vocab), 0.0) > 0:
            via = sorted(set(via))
            own[key] = Feature(INHERITED ** via[0][0],
                                tuple(dict.fromkeys(eid for _, eid in via)))
    return own


def _key_type(key: str, entities: Mapping[str, Entity], vocab: Vocabulary) -> str:
    return entities[key].type if key in entities else vocab.concepts[key].type


def _inherited_info(entity_papers: Mapping[str, list[str]], entities: Mapping[str, Entity],
                    concept_entity: Mapping[str, str], vocab: Vocabulary,
                    depths_of: dict[str, dict[str, int]], info: dict[str, tuple[str, str]]
                    ) -> None:
    """Add to ``info`` the names of the broader concepts counted entities inherit (features
    or not), each counted entity once, in the order first counted."""
    for eid in entity_papers:
        entity = entities.get(eid)
        if entity is None or entity.type not in TYPE_WEIGHTS or not entity.concept:
            continue
        if entity.concept not in depths_of:
            depths_of[entity.concept] = ancestor_depths(vocab, entity.concept)
        for iri in depths_of[entity.concept]:
            key = concept_entity.get(iri, iri)
            if key not in info:
                concept = vocab.concepts[iri]
                info[key] = (concept.pref_label, concept.type)


def _broader(info: Mapping[str, tuple[str, str]], entities: Mapping[str, Entity],
             concept_entity: Mapping[str, str], vocab: Vocabulary) -> dict[str, frozenset[str]]:
    """Every feature key's broader keys (all levels), to drop redundant shared concepts."""
    # The vocabulary builds its narrower-concept map on first use; pay that here, not in the
    # first `shared` query.
    for iri in list(vocab.concepts)[:1]:
        vocab.descendants(iri)
    key_of = {iri: concept_entity.get(iri, iri) for iri in vocab.concepts}
    broader: dict[str, frozenset[str]] = {}
    for key in info:
        iri = entities[key].concept if key in entities else key
        if iri and iri in vocab.concepts:
            broader[key] = frozenset([key_of[a] for a in vocab.ancestors(iri)])
    return broader


def _names(entities: Mapping[str, Entity]) -> dict[str, tuple[str, ...]]:
    """Casefolded entity name or alias → the entity ids with it."""
    names: dict[str, list[str]] = defaultdict(list)
    for eid, e in sorted(entities.items()):
        for form in (e.name, *e.aliases):
            listed = names[form.casefold()]
            if eid not in listed:
                listed.append(eid)
    return {k: tuple(v) for k, v in names.items()}


def _titles(parts: Mapping[str, PaperPart]) -> dict[str, tuple[str, ...]]:
    """Casefolded label or title → the paper ids with it."""
    titles: dict[str, list[str]] = defaultdict(list)
    for pid, part in parts.items():
        label, title = part.paper.label, part.paper.title
        if label:
            titles[label.casefold()].append(pid)
        if title and (not label or title.casefold() != label.casefold()):
            titles[title.casefold()].append(pid)
    return {k: tuple(v) for k, v in titles.items()}


def _labels(entities: Mapping[str, Entity], vocab: Vocabulary
            ) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """Casefolded entity/concept name or alias → as written; pref/alt label → concepts."""
    labels, concept_labels = vocab.label_tables()
    labels = dict(labels)
    for e in entities.values():
        for form in (e.name, *e.aliases):
            labels.setdefault(form.casefold(), form)
    return labels, dict(concept_labels)


def assemble_index(parts: Mapping[str, PaperPart], entities: Mapping[str, Entity],
                   vocab: Vocabulary | None = None, *, include_mentions: bool = False,
                   min_confidence: float = 0.0,
                   features: Mapping[str, dict[str, Feature]] | None = None) -> AnalysisIndex:
    """The index of papers' ``parts`` (in corpus order) and the corpus's ``entities``.

    Its ``papers`` hold each paper with empty mentions and relations, and ``evidence``,
    ``confidence`` and ``used`` are left empty: ``build_index`` fills them, a project stores
    them per paper. ``features`` given (of some papers) are used as they are (a project
    reuses them); the others are computed.
    """
    vocab = vocab or load_vocabulary()
    entities = dict(entities)
    concept_entity = concept_entities(entities)
    info: dict[str, tuple[str, str]] = {eid: (e.name, e.type) for eid, e in entities.items()}
    depths_of: dict[str, dict[str, int]] = {}
    given = features or {}
    features = {pid: given[pid] if pid in given else
                paper_features(part.counted, entities, concept_entity, vocab, depths_of)
                for pid, part in parts.items()}
    entity_papers: dict[str, list[str]] = defaultdict(list)
    for pid, part in parts.items():
        for eid in part.counted:
            entity_papers[eid].append(pid)
    _inherited_info(entity_papers, entities, concept_entity, vocab, depths_of, info)
    broader = _broader(info, entities, concept_entity, vocab)
    factor_lists: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for pid, own in features.items():
        for key, (factor, _) in own.items():
            factor_lists[key].append((pid, factor))
    factors = {k: tuple(v) for k, v in sorted(factor_lists.items())}
    postings = {k: tuple([pid for pid, _ in v]) for k, v in factors.items()}
    idf = {k: math.log(len(parts) / len(v)) for k, v in postings.items()}
    labels, concept_labels = _labels(entities, vocab)
    facets, facet_of = facet_tables({pid: part.paper for pid, part in parts.items()})
    return AnalysisIndex({pid: PaperResult(part.paper, (), ()) for pid, part in parts.items()},
                         entities, features, postings, factors,
                         {k: tuple(v) for k, v in entity_papers.items()},
                         {pid: i for i, pid in enumerate(parts)}, idf, info, {},
                         _names(entities), concept_entity, _titles(parts),
                         tuple((pid, f"{part.paper.label}\0{part.paper.title or ''}".casefold())
                               for pid, part in parts.items()),
                         labels, concept_labels, broader, vocab, {}, frozenset(),
                         include_mentions, min_confidence, facets=facets, facet_of=facet_of)


_INDEXES: dict[tuple[int, bool, float], tuple[weakref.ref, AnalysisIndex]] = {}


def analysis_index(corpus: Corpus, include_mentions: bool = False,
                   min_confidence: float = 0.0) -> AnalysisIndex:
    """The index of ``corpus``, built on first use and kept while the corpus lives.

    >>> from kg.pipeline import run
    >>> corpus = run(["examples/iclr2025-seed.txt"])
    >>> analysis_index(corpus) is analysis_index(corpus)
    True
    """
    if isinstance(corpus, AnalysisIndex):  # a project's stored index, or one built before
        if (corpus.include_mentions, corpus.min_confidence) == (include_mentions,
                                                                min_confidence):
            return corpus
        if corpus.source is None:
            raise KgError("this index was built with other --include-mentions / "
                          "--min-confidence settings and has no corpus to rebuild from")
        corpus = source_corpus(corpus)
    key = (id(corpus), include_mentions, min_confidence)
    cached = _INDEXES.get(key)
    if cached is not None and cached[0]() is corpus:
        return cached[1]
    index = build_index(corpus, include_mentions=include_mentions,
                        min_confidence=min_confidence)
    _INDEXES[key] = (weakref.ref(corpus), index)
    weakref.finalize(corpus, _INDEXES.pop, key, None)
    return index


_CORPORA: dict[int, Corpus] = {}


STORED_PAIRS = 1000  # co-occurring pairs a project stores (the CLI shows the first -n)


def result_key(name: str, *args: object) -> str:
    """The key of a stored result: the function's name and its arguments."""
    return repr((name, *(tuple(a) if isinstance(a, list | set | frozenset) else a
                         for a in args)))


def stored_result(corpus: Corpus | AnalysisIndex, name: str, *args: object) -> object | None:
    if isinstance(corpus, AnalysisIndex) and corpus.stored is not None:
        return corpus.stored.get(result_key(name, *args))
    return None


def source_corpus(index: AnalysisIndex) -> Corpus:
    """The corpus behind a stored index, read once per index."""
    if id(index) not in _CORPORA:
        _CORPORA[id(index)] = index.source()
        weakref.finalize(index, _CORPORA.pop, id(index), None)
    return _CORPORA[id(index)]

