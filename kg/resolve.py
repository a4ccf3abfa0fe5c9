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


def resolve(
    extractions: Sequence[Extraction],
    vocab: Vocabulary | None = None,
    skipped: Sequence[Skip] = (),
) -> Corpus:
    """Merge every paper's candidates into corpus-wide entities and id'd relations."""
    vocab = vocab or load_vocabulary()
    index = vocab.label_index

    # Acronyms defined anywhere: (type, short-form key) → long-form keys. An undefined use of a
    # short form elsewhere joins the long form only when that mapping is unambiguous.
    defined: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for ex in extractions:
        for c in ex.candidates:
            if c.long_form:
                defined[_surface_key(c.type, c.span.text)].add(_entity_key(c, index))

    def key_of(c: Candidate) -> tuple[str, str]:
        key = _entity_key(c, index)
        if not c.concept and not c.long_form and len(defined.get(key, ())) == 1:
            return next(iter(defined[key]))
        return key

    surfaces: dict[tuple[str, str], Counter] = defaultdict(Counter)
    long_forms: dict[tuple[str, str], Counter] = defaultdict(Counter)
    per_paper: list[list[tuple[tuple[str, str], Candidate]]] = []
    for ex in extractions:
        keyed = [(key_of(c), c) for c in ex.candidates]
        per_paper.append(keyed)
        for key, c in keyed:
            surfaces[key][c.span.text] += 1
            if c.long_form:
                long_forms[key][c.long_form] += 1

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

    results: list[PaperResult] = []
    for ex, keyed in zip(extractions, per_paper, strict=True):
        paper = relabel(ex.paper, ex)
        spans: dict[str, list[Span]] = defaultdict(list)
        confidence: dict[str, float] = defaultdict(float)
        for key, c in keyed:
            eid = ids[key]
            if c.span not in spans[eid]:
                spans[eid].append(c.span)
            confidence[eid] = max(confidence[eid], c.confidence)
        mentions = tuple(sorted(((eid, tuple(sorted(s, key=lambda x: x.start)))
                                 for eid, s in spans.items()), key=lambda m: (m[1][0].start, m[0])))
        relations: dict[tuple[str, str, str], Relation] = {}
        for link in ex.links:
            subject = paper.id if link.subject is None else ids[keyed[link.subject][0]]
            obj = ids[keyed[link.object][0]]
            if subject == obj:
                continue
            rel = Relation(subject, link.predicate, obj, link.evidence, link.rule,
                           link.confidence)
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
        results.append(PaperResult(paper, mentions, ordered))
    return Corpus(tuple(results), entities, tuple(skipped))


def _sentence_for(ex: Extraction, span: Span) -> Span:
    """The evidence sentence around a mention (from the links' evidence when one covers it)."""
    for link in ex.links:
        if link.evidence.start <= span.start < link.evidence.end:
            return link.evidence
    return sentence_at(ex, span.start)
