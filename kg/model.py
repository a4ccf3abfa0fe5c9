"""The small frozen dataclasses that flow between stages.

ingest → ``Paper``; extract → ``Candidate``; resolve → ``Entity``, ``Relation``,
``PaperResult``; the whole run → ``Corpus``. Sinks (rdf, neo4j, analysis, viz) read a
``Corpus`` and never call back into extraction.

>>> p = Paper(id="p1", abstract="We use caching.", title="Fast")
>>> p.text
'Fast\\nWe use caching.'
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from enum import StrEnum

ENTITY_TYPES: tuple[str, ...] = (
    "Method", "Model", "Dataset", "Hardware", "Technique", "Task", "Metric",
)

# Predicates from a paper (subject) to an entity (object); "outperforms" and "extends" link
# entity → entity. PREDICATE_FOR_TYPE says which predicate a paper's use of each type gets.
PREDICATES: tuple[str, ...] = (
    "proposes", "usesTechnique", "usesModel", "evaluatedOn", "runsOn",
    "addresses", "improves", "outperforms", "extends", "mentions",
)
PREDICATE_FOR_TYPE: dict[str, str] = {
    "Technique": "usesTechnique",
    "Method": "usesTechnique",  # a used (not proposed) method is a technique the paper uses
    "Model": "usesModel",
    "Dataset": "evaluatedOn",
    "Hardware": "runsOn",
    "Task": "addresses",
    "Metric": "improves",
}
# What a paper does with an entity, as opposed to only mentioning it (negated, contrasted or
# attributed to prior work): "papers sharing X" counts these by default.
USE_PREDICATES: frozenset[str] = frozenset({"proposes", *PREDICATE_FOR_TYPE.values()})


def _pickled_by_fields(cls):
    """Pickle ``cls`` as its constructor and field values: 3-5× faster both ways than the
    field-by-field state dataclasses give slotted classes (a project pickles these by the
    thousand on every build)."""
    import operator

    names = [f.name for f in fields(cls)]
    values = operator.attrgetter(*names)
    one = len(names) == 1  # attrgetter of one name gives the value, not a tuple

    def __reduce__(self):
        return (cls, (values(self),) if one else values(self))

    cls.__reduce__ = __reduce__
    return cls


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Span:
    """A piece of a paper's text: ``text == paper.text[start:end]``."""

    text: str
    start: int
    end: int


# A mention of an entity and the evidence of a relation are both spans of the paper text.
Mention = Span
Evidence = Span


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Paper:
    """One input record. ``text`` (title + newline + abstract) is what offsets index into."""

    id: str
    abstract: str
    title: str | None = None
    label: str = ""
    authors: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    venue: str | None = None
    year: int | None = None
    url: str | None = None
    source: str = ""  # "file:line" — where the record came from, for messages
    # Appended after ``source`` so positional tuples of older caches still construct a Paper.
    date: str | None = None  # ISO date ("2024-05-01", or "2024-05"), finer than ``year``
    categories: tuple[str, ...] = ()  # subjects or topics (arXiv "cs.LG", OpenAlex topics)
    links: tuple[str, ...] = ()  # other URLs of the same paper (https://arxiv.org/abs/…, doi.org)

    @property
    def text(self) -> str:
        return f"{self.title}\n{self.abstract}" if self.title else self.abstract

    def metadata(self) -> dict[str, object]:
        """The paper as the JSON contract's ``paper`` object (empty optional fields left out)."""
        out: dict[str, object] = {"id": self.id, "title": self.title, "label": self.label}
        for key in ("authors", "keywords", "venue", "year", "url", "date", "categories", "links"):
            value = getattr(self, key)
            if value not in (None, (), ""):
                out[key] = list(value) if isinstance(value, tuple) else value
        out["abstract"] = self.abstract
        return out


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Concept:
    """A SKOS concept from ``ontology/vocab/*.ttl``."""

    iri: str
    type: str  # one of ENTITY_TYPES
    pref_label: str
    alt_labels: tuple[str, ...] = ()
    broader: tuple[str, ...] = ()  # concept IRIs
    matchable: bool = True  # False: kept for the hierarchy, its labels are too generic to match


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Candidate:
    """A typed mention found by one extraction rule, before resolution."""

    span: Span
    type: str
    rule: str
    concept: str | None = None  # concept IRI when the vocabulary matched
    confidence: float = 0.8
    long_form: str | None = None  # set on an acronym whose long form the paper defines


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Entity:
    """One concept across the whole corpus; ``id`` is stable (derived from the concept/name)."""

    id: str  # "<type-lowercase>/<slug>", e.g. "technique/quantization"
    type: str
    name: str
    aliases: tuple[str, ...] = ()
    concept: str | None = None


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Relation:
    """``subject predicate object``; subject is a paper id or an entity id."""

    subject: str
    predicate: str
    object: str
    evidence: Span
    rule: str
    confidence: float


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class PaperResult:
    """What one paper yields: its entity ids with their mentions, and its relations."""

    paper: Paper
    mentions: tuple[tuple[str, tuple[Span, ...]], ...]  # (entity id, spans), sorted by first span
    relations: tuple[Relation, ...]

    @property
    def entity_ids(self) -> tuple[str, ...]:
        return tuple(eid for eid, _ in self.mentions)

    @property
    def used_ids(self) -> tuple[str, ...]:
        """The entities the paper uses (or proposes), in mention order: not those it only
        mentions."""
        used = {r.object for r in self.relations
                if r.subject == self.paper.id and r.predicate in USE_PREDICATES}
        return tuple(eid for eid, _ in self.mentions if eid in used)


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Skip:
    """A record that could not be used: where, and why (with the fix)."""

    source: str
    reason: str


@dataclass(frozen=True)
class Corpus:
    """The resolved result of a run: papers in input order and the corpus-wide entities."""

    results: tuple[PaperResult, ...]
    entities: dict[str, Entity] = field(default_factory=dict)  # by id
    skipped: tuple[Skip, ...] = ()

    def __iter__(self) -> Iterator[PaperResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def relations(self) -> Iterator[Relation]:
        for result in self.results:
            yield from result.relations


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Link:
    """A relation between candidates of one paper, before resolution.

    ``subject``/``object`` index into ``Extraction.candidates``; ``subject=None`` is the paper.
    """

    subject: int | None
    predicate: str
    object: int
    evidence: Span
    rule: str
    confidence: float


@_pickled_by_fields
@dataclass(frozen=True, slots=True)
class Extraction:
    """What the extractor finds in one paper: candidates (non-overlapping) and links."""

    paper: Paper
    candidates: tuple[Candidate, ...]
    links: tuple[Link, ...]
    label: str | None = None  # a readable label derived from what the paper proposes
    sentences: tuple[tuple[int, int], ...] = ()  # (start, end) of each sentence of paper.text
    # Terms that wait for the corpus: kept only when another paper uses them too
    # (kg.extract.terms.promote_recurring), never overlapping ``candidates``.
    pending: tuple[Candidate, ...] = ()


class EntityType(StrEnum):
    """The entity types (``ENTITY_TYPES``, in that order), for code that names one.

    >>> EntityType.TECHNIQUE == "Technique", tuple(EntityType) == ENTITY_TYPES
    (True, True)
    """

    METHOD = "Method"
    MODEL = "Model"
    DATASET = "Dataset"
    HARDWARE = "Hardware"
    TECHNIQUE = "Technique"
    TASK = "Task"
    METRIC = "Metric"


class Predicate(StrEnum):
    """The relation predicates (``PREDICATES``, in that order), for code that names one.

    >>> Predicate.MENTIONS == "mentions", tuple(Predicate) == PREDICATES
    (True, True)
    """

    PROPOSES = "proposes"
    USES_TECHNIQUE = "usesTechnique"
    USES_MODEL = "usesModel"
    EVALUATED_ON = "evaluatedOn"
    RUNS_ON = "runsOn"
    ADDRESSES = "addresses"
    IMPROVES = "improves"
    OUTPERFORMS = "outperforms"
    EXTENDS = "extends"
    MENTIONS = "mentions"


# What counts as a technique (`kg techniques`, kg.analysis): a used (not proposed) method is a
# technique too (see PREDICATE_FOR_TYPE). Plain strings: stored results are keyed by them.
TECHNIQUE_TYPES: tuple[str, ...] = (EntityType.TECHNIQUE.value, EntityType.METHOD.value)


# The compact form of an Extraction: what travels between processes and what a project's
# cache stores (kg.pipeline, kg.distributed, kg.project).


def compact(e: Extraction) -> tuple:
    """An Extraction as plain tuples of offsets (what travels between processes and what the
    project cache stores); ``expand(paper, compact(e)) == e``."""
    def spans(candidates):
        return tuple((c.span.start, c.span.end, c.type, c.rule, c.concept, c.confidence,
                      c.long_form) for c in candidates)

    return (spans(e.candidates),
            tuple((k.subject, k.predicate, k.object, k.evidence.start, k.evidence.end, k.rule,
                   k.confidence) for k in e.links), e.label, e.sentences, spans(e.pending))


def expand(paper: Paper, found: tuple) -> Extraction:
    """The Extraction of ``paper`` from its ``compact`` form."""
    text = paper.text
    candidates, links, label, sentences, pending = found

    def rebuild(spans):
        return tuple(Candidate(Span(text[s:e], s, e), t, r, c, conf, lf)
                     for s, e, t, r, c, conf, lf in spans)

    return Extraction(
        paper, rebuild(candidates),
        tuple(Link(sub, pred, obj, Span(text[s:e], s, e), r, conf)
              for sub, pred, obj, s, e, r, conf in links),
        label, sentences, rebuild(pending))
