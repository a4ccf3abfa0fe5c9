"""Resolution: candidates from every paper → one entity per concept across the corpus.

Rules: a vocabulary concept is one entity (all its aliases merge); an acronym and its long form
merge; spelling variants merge by ``label_key`` (ResNet18 = ResNet-18) and plurals by
``singular``; types never merge; every surface form is kept as an alias. Ids derive from the
concept (or the name), never from order, so they are stable across runs and corpora.

>>> from kg.model import Paper
>>> from kg.extract import Extractor
>>> ex = Extractor()
>>> papers = [Paper(id="a", abstract="We propose Rotated Runtime Smooth (RRS), a novel method."),
...           Paper(id="b", abstract="RRS is fast.")]
>>> corpus = resolve([ex.extract_one(p) for p in papers], vocab=ex.vocab)
>>> corpus.entities["method/rotated-runtime-smooth"].aliases
('RRS',)
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from kg.extract import LabelIndex, match_key, relabel, singular_phrase
from kg.extract.document import sentence_at
from kg.model import (
    Candidate,
    Corpus,
    Entity,
    Extraction,
    PaperResult,
    Relation,
    Skip,
    Span,
)
from kg.vocab import CONCEPT_NS, Vocabulary, load_vocabulary


def slugify(text: str) -> str:
    """Lower-case words joined by hyphens.

    >>> slugify("Rotated Runtime Smooth"), slugify("ResNet18"), slugify("Qwen2.5-7B")
    ('rotated-runtime-smooth', 'resnet18', 'qwen2-5-7b')
    """
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-") or "x"


def concept_slug(iri: str) -> str:
    local = iri.removeprefix(CONCEPT_NS)
    return local.split("/", 1)[1] if "/" in local else slugify(local)


def _surface_key(type_: str, text: str) -> tuple[str, str]:
    return (type_, match_key(text))


def _entity_key(c: Candidate, index: LabelIndex) -> tuple[str, str]:
    if c.concept:
        return (c.type, c.concept)
    for form in (c.long_form, c.span.text):
        if form:
            for label in index.lookup(form) or index.lookup(singular_phrase(form)):
                if label.type == c.type:
                    return (c.type, label.concept)
    return _surface_key(c.type, c.long_form or c.span.text)


class Prep(NamedTuple):
    """What resolution reads of one paper's extraction: keys and forms, not its text.

    A pure function of the extraction and the vocabulary (``prepare``), so a project caches
    it with the extraction. Candidates first, then pending terms, position by position.
    """

    terms: tuple[str, ...]  # recurring-term keys the paper counts for (sorted)
    pending: tuple[str | None, ...]  # per pending term: its key; None when it is never kept
    keys: tuple[tuple[str, str], ...]  # entity key (type, concept or surface key)
    free: tuple[bool, ...]  # neither a concept nor a long form: may join a defined long form
    shorts: tuple[tuple[str, str] | None, ...]  # surface key of an acronym with a long form
    forms: tuple[str, ...]  # the surface form
    long_forms: tuple[str | None, ...]


def prepare(ex: Extraction, vocab: Vocabulary | None = None) -> Prep:
    """The ``Prep`` of one extraction (promoted or not)."""
    from kg.extract.terms import keepable, recurring_keys

    index = (vocab or load_vocabulary()).label_index
    every = (*ex.candidates, *ex.pending)
    return Prep(tuple(sorted(recurring_keys(ex))),
                tuple(match_key(c.span.text) if keepable(c) else None for c in ex.pending),
                tuple(_entity_key(c, index) for c in every),
                tuple(not c.concept and not c.long_form for c in every),
                tuple(_surface_key(c.type, c.span.text) if c.long_form else None
                      for c in every),
                tuple(c.span.text for c in every), tuple(c.long_form for c in every))


@dataclass(frozen=True)
class Plan:
    """Corpus-level resolution decided from the papers' ``Prep``s alone.

    ``kept[i]``: the pending terms paper ``i`` keeps (recurring in another paper);
    ``entity_ids[i]``: the entity id of each candidate of paper ``i`` once those are appended.
    """

    kept: tuple[tuple[int, ...], ...]
    entity_ids: tuple[tuple[str, ...], ...]
    entities: dict[str, Entity]


def plan(preps: Sequence[Prep], vocab: Vocabulary | None = None, recurring: bool = True
         ) -> Plan:
    """Decide, from every paper's ``Prep``, which pending terms are kept (``recurring``) and
    which entity each candidate is: linear in the candidates, no text needed."""
    vocab = vocab or load_vocabulary()
    papers_with: Counter[str] = Counter()
    if recurring:
        for prep in preps:
            papers_with.update(prep.terms)
    kept = tuple(tuple(i for i, key in enumerate(prep.pending)
                       if key is not None and papers_with[key] >= 2) for prep in preps)

    def active(prep: Prep, keep: tuple[int, ...]) -> list[int]:
        n = len(prep.keys) - len(prep.pending)
        return [*range(n), *(n + i for i in keep)]

    # Acronyms defined anywhere: (type, short-form key) → long-form keys. An undefined use of a
    # short form elsewhere joins the long form only when that mapping is unambiguous.
    defined: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    positions = [active(prep, keep) for prep, keep in zip(preps, kept, strict=True)]
    for prep, at in zip(preps, positions, strict=True):
        for j in at:
            if prep.shorts[j] is not None:
                defined[prep.shorts[j]].add(prep.keys[j])

    surfaces: dict[tuple[str, str], Counter] = defaultdict(Counter)
    long_forms: dict[tuple[str, str], Counter] = defaultdict(Counter)
    per_paper: list[list[tuple[str, str]]] = []
    for prep, at in zip(preps, positions, strict=True):
        keyed = []
        for j in at:
            key = prep.keys[j]
            if prep.free[j] and len(defined.get(key, ())) == 1:
                key = next(iter(defined[key]))
            keyed.append(key)
            surfaces[key][prep.forms[j]] += 1
            if prep.long_forms[j]:
                long_forms[key][prep.long_forms[j]] += 1
        per_paper.append(keyed)

    ids: dict[tuple[str, str], str] = {}
    entities: dict[str, Entity] = {}
    for key in sorted(surfaces):
        type_, ident = key
        concept = ident if ident.startswith(CONCEPT_NS) else None
        if concept:
            name = vocab.concepts[concept].pref_label
            slug = concept_slug(concept)
        else:
            pool = long_forms[key] or surfaces[key]
            name = sorted(pool.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
            slug = slugify(name)
        entity_id = f"{type_.lower()}/{slug}"
        if entity_id in entities and entities[entity_id].concept != concept:
            entity_id = f"{entity_id}-{ident[:8] if concept is None else slugify(ident)[-8:]}"
        # A bare number ("100" of "CIFAR-10/100") is a mention, never an alias.
        forms = {f for f in set(surfaces[key]) | set(long_forms[key]) if not f.isdigit()}
        aliases = tuple(sorted(forms - {name}, key=lambda s: (s.casefold(), s)))
        ids[key] = entity_id
        entities[entity_id] = Entity(entity_id, type_, name, aliases, concept)
    return Plan(kept, tuple(tuple(ids[k] for k in keyed) for keyed in per_paper), entities)


def resolve(
    extractions: Sequence[Extraction],
    vocab: Vocabulary | None = None,
    skipped: Sequence[Skip] = (),
) -> Corpus:
    """Merge every paper's candidates into corpus-wide entities and id'd relations (pending
    terms are left out: ``kg.extract.terms.promote_recurring`` decides them first)."""
    vocab = vocab or load_vocabulary()
    decided = plan([prepare(ex, vocab) for ex in extractions], vocab, recurring=False)
    return Corpus(tuple(paper_result(ex, eids) for ex, eids in
                        zip(extractions, decided.entity_ids, strict=True)),
                  decided.entities, tuple(skipped))


def paper_result(ex: Extraction, entity_ids: Sequence[str]) -> PaperResult:
    """One paper's mentions and relations, given the entity id of each of its candidates."""
    paper = relabel(ex.paper, ex)
    spans: dict[str, list[Span]] = defaultdict(list)
    confidence: dict[str, float] = defaultdict(float)
    for eid, c in zip(entity_ids, ex.candidates, strict=True):
        if c.span not in spans[eid]:
            spans[eid].append(c.span)
        confidence[eid] = max(confidence[eid], c.confidence)
    mentions = tuple(sorted(((eid, tuple(sorted(s, key=lambda x: x.start)))
                             for eid, s in spans.items()), key=lambda m: (m[1][0].start, m[0])))
    relations: dict[tuple[str, str, str], Relation] = {}
    for link in ex.links:
        subject = paper.id if link.subject is None else entity_ids[link.subject]
        obj = entity_ids[link.object]
        if subject == obj:
            continue
        rel = Relation(subject, link.predicate, obj, link.evidence, link.rule, link.confidence)
        triple = (subject, link.predicate, obj)
        if triple not in relations or relations[triple].confidence < rel.confidence:
            relations[triple] = rel
    # A proposed entity is not also "used": keep proposes, drop the weaker use relation.
    proposed = {o for (s, p, o) in relations if p == "proposes"}
    for triple in [t for t in relations if t[2] in proposed and t[1] not in
                   ("proposes", "outperforms", "extends")]:
        del relations[triple]
    for eid, spans_ in mentions:
        first = spans_[0]
        sentence = _sentence_for(ex, first)
        relations[(paper.id, "mentions", eid)] = Relation(
            paper.id, "mentions", eid, sentence, "mention", round(confidence[eid], 2))
    ordered = tuple(sorted(relations.values(),
                           key=lambda r: (r.evidence.start, r.predicate, r.subject, r.object)))
    return PaperResult(paper, mentions, ordered)


def _sentence_for(ex: Extraction, span: Span) -> Span:
    """The evidence sentence around a mention (from the links' evidence when one covers it)."""
    for link in ex.links:
        if link.evidence.start <= span.start < link.evidence.end:
            return link.evidence
    return sentence_at(ex, span.start)
