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
from collections.abc import Collection, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from operator import itemgetter
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


Key = tuple[str, str]  # an entity key: (type, concept IRI or surface key)


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
    which entity each candidate is: linear in the candidates, no text needed.

    Three group-bys, each a map over papers and a reduce by key, composed here in one process
    (``kg.distributed.plan_on_cluster`` runs the same pieces on a Dask cluster): papers per
    term key (``recurring_terms``), long forms per acronym key (``acronyms``), forms per entity
    key (``name_entity``); then the id-collision rule by entity id (``number_entities``).
    """
    vocab = vocab or load_vocabulary()
    terms = recurring_terms(Counter(chain.from_iterable(p.terms for p in preps)).items()
                            ) if recurring else frozenset()
    kept = tuple(kept_terms(prep, terms) for prep in preps)
    joins = acronyms(defined_forms(preps, kept).items())
    keyed = [entity_keys(prep, keep, joins) for prep, keep in zip(preps, kept, strict=True)]
    found = forms_by_key(Counter(chain.from_iterable(
        surface_forms(prep, keep, keys) for prep, keep, keys in zip(preps, kept, keyed,
                                                                    strict=True))).items())
    numbered = number_entities((key, name_entity(key, forms, vocab))
                               for key, forms in found.items())
    ids = {key: entity.id for key, entity in numbered.items()}
    return Plan(kept, tuple(tuple(map(ids.__getitem__, keys)) for keys in keyed),
                entity_table(numbered))


# Map steps (one paper) and reduce steps (one key), pure: a cluster may run them anywhere.

def recurring_terms(counts: Iterable[tuple[str, int]]) -> frozenset[str]:
    """The term keys that recur, from (term key, papers counting it) pairs: a paper's pending
    term is kept where another paper counts its key too.

    >>> sorted(recurring_terms([("kv cache", 2), ("warm start", 1)]))
    ['kv cache']
    """
    return frozenset(key for key, n in counts if n >= 2)


def kept_terms(prep: Prep, recurring: Container[str]) -> tuple[int, ...]:
    """The positions of the pending terms ``prep`` keeps: those whose key recurs."""
    return tuple(i for i, key in enumerate(prep.pending) if key is not None and key in recurring)


def _active(prep: Prep, keep: tuple[int, ...], field: tuple) -> tuple:
    """``field`` of the paper's candidates, then of its kept pending terms."""
    n = len(prep.keys) - len(prep.pending)
    return field[:n] + tuple(field[n + i] for i in keep) if keep else field[:n]


def definitions(prep: Prep, keep: tuple[int, ...]) -> list[tuple[Key, Key]]:
    """(short-form key, long-form entity key) of each acronym the paper defines."""
    if prep.shorts.count(None) == len(prep.shorts):
        return []
    return [(short, key) for short, key in zip(_active(prep, keep, prep.shorts),
                                               _active(prep, keep, prep.keys), strict=True)
            if short is not None]


def defined_forms(preps: Sequence[Prep], kept: Sequence[tuple[int, ...]]
                  ) -> defaultdict[Key, set[Key]]:
    """Every long-form key the papers define for each short-form key (``definitions``)."""
    defined: defaultdict[Key, set[Key]] = defaultdict(set)
    for prep, keep in zip(preps, kept, strict=True):
        for short, long in definitions(prep, keep):
            defined[short].add(long)
    return defined


def acronyms(defined: Iterable[tuple[Key, Collection[Key]]]) -> dict[Key, Key]:
    """The long form each short form joins, from (short key, every long key defined for it):
    a use of the short form without a definition joins its long form only when the corpus
    defines it one way.

    >>> rrs, a, b = ("Method", "rrs"), ("Method", "rotated runtime smooth"), ("Method", "x")
    >>> acronyms([(rrs, {a})]) == {rrs: a}, acronyms([(rrs, {a, b})])
    (True, {})
    """
    return {short: next(iter(longs)) for short, longs in defined if len(longs) == 1}


def entity_keys(prep: Prep, keep: tuple[int, ...], joins: Mapping[Key, Key]
                ) -> tuple[Key, ...]:
    """The entity key of each candidate of the paper, kept terms last: a free short form
    joins the long form of ``joins`` (``acronyms``)."""
    keys = _active(prep, keep, prep.keys)
    if joins.keys().isdisjoint(keys):  # most papers: no short form to join
        return keys
    return tuple([joins.get(key, key) if free else key
                  for key, free in zip(keys, _active(prep, keep, prep.free),
                                       strict=True)])


def surface_forms(prep: Prep, keep: tuple[int, ...], keys: Sequence[Key]
                  ) -> list[tuple[Key, str, str | None]]:
    """(entity key, surface form, long form) of each candidate, to count (``forms_by_key``)."""
    return list(zip(keys, _active(prep, keep, prep.forms),
                    _active(prep, keep, prep.long_forms), strict=True))


Forms = dict  # of one entity key: (surface form, long form or None) → candidates


def forms_by_key(counted: Iterable[tuple[tuple[Key, str, str | None], int]]
                 ) -> dict[Key, Forms]:
    """The ``Forms`` of each entity key, from counted ``surface_forms`` items.

    >>> forms_by_key([((("Model", "bert"), "BERT", None), 2)])
    {('Model', 'bert'): {('BERT', None): 2}}
    """
    # Plain dicts, not Counters: a Counter costs 7 µs to make, and a corpus has a key per
    # entity (0.05 s of a 4,870-paper plan).
    by_key: dict[Key, Forms] = {}
    for (key, form, long), n in counted:
        forms = by_key.get(key)
        if forms is None:
            by_key[key] = {(form, long): n}
        else:
            forms[form, long] = forms.get((form, long), 0) + n
    return by_key


def name_entity(key: Key, forms: Forms, vocab: Vocabulary) -> Entity:
    """The entity of one key, its id not yet checked for collisions (``number_ids``): a
    concept's preferred label, else the most frequent long form (else surface form), ties to
    the smallest string; every other form is an alias.

    >>> forms = Counter({("ResNet18", None): 1, ("ResNet-18", None): 2})
    >>> entity = name_entity(("Model", "resnet18"), forms, load_vocabulary())
    >>> entity.id, entity.name, entity.aliases
    ('model/resnet-18', 'ResNet-18', ('ResNet18',))
    """
    type_, ident = key
    concept = ident if ident.startswith(CONCEPT_NS) else None
    longs = [(long, n) for (_, long), n in forms.items() if long]
    every = {form for form, _ in forms}.union(long for long, _ in longs)
    if concept:
        name = vocab.concepts[concept].pref_label
    elif len(every) == 1:  # most keys: one form
        (name,) = every
    else:
        # The long forms, else the surface forms, counted per candidate.
        pool: dict[str, int] = {}
        for (form, long), n in forms.items():
            if long or not longs:
                pool[long or form] = pool.get(long or form, 0) + n
        name = min(pool.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    # A bare number ("100" of "CIFAR-10/100") is a mention, never an alias.
    every.discard(name)
    aliases = tuple(sorted((f for f in every if not f.isdigit()),
                           key=lambda s: (s.casefold(), s))) if every else ()
    return Entity(f"{type_.lower()}/{concept_slug(concept) if concept else slugify(name)}",
                  type_, name, aliases, concept)


def number_ids(named: Sequence[tuple[Key, Entity]]) -> Sequence[tuple[Key, Entity]]:
    """The id-collision rule, in key order (not the order given): an id held by an entity of
    another concept gets a suffix from the key; two names (no concept) of one id are one entity.

    >>> ours = ("Method", f"{CONCEPT_NS}method/foo")
    >>> [(e.concept is not None, e.id) for k, e in number_ids([
    ...     (ours, Entity("method/foo", "Method", "Foo", (), ours[1])),
    ...     (("Method", "foo"), Entity("method/foo", "Method", "FOO"))])]
    [(False, 'method/foo'), (True, 'method/foo-thod-foo')]
    """
    if len(named) < 2:  # most ids: one key
        return named
    held: dict[str, Entity] = {}
    out = []
    for key, entity in sorted(named, key=itemgetter(0)):
        if entity.id in held and held[entity.id].concept != entity.concept:
            ident = key[1]
            suffix = ident[:8] if entity.concept is None else slugify(ident)[-8:]
            entity = replace(entity, id=f"{entity.id}-{suffix}")
        held[entity.id] = entity
        out.append((key, entity))
    return out


def number_entities(named: Iterable[tuple[Key, Entity]]) -> dict[Key, Entity]:
    """Each key's entity, its id final: the keys are grouped by entity id, each group
    numbered alone (``number_ids``), and the groups settled (``settle``)."""
    groups: dict[str, list[tuple[Key, Entity]]] = defaultdict(list)
    for key, entity in named:
        groups[entity.id].append((key, entity))
    return settle((base, number_ids(group)) for base, group in groups.items())


def settle(groups: Iterable[tuple[str, list[tuple[Key, Entity]]]]) -> dict[Key, Entity]:
    """Each key's entity, from (id before numbering, ``number_ids`` of its keys) groups.

    Numbering each group alone equals numbering every key at once unless a suffixed id is
    another group's id too; then every key is numbered at once, as ``number_ids`` would.
    """
    groups = list(groups)
    out: dict[Key, Entity] = {}
    claims: dict[str, str] = {}  # id → the group whose keys hold it
    for base, numbered in groups:
        for key, entity in numbered:
            if claims.setdefault(entity.id, base) != base:
                return dict(number_ids([(k, replace(e, id=b)) for b, group in groups
                                        for k, e in group]))
            out[key] = entity
    return out


def entity_table(numbered: Mapping[Key, Entity]) -> dict[str, Entity]:
    """The entities by id, in key order (of keys sharing an id, the last)."""
    return {numbered[key].id: numbered[key] for key in sorted(numbered)}


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
