r"""The vocabulary rule: SKOS labels matched by spaCy's PhraseMatcher, and versioned and
coordinated names on a known family.

>>> from kg.vocab import load_vocabulary
>>> index = load_vocabulary().label_index
>>> [(c.span.text, c.type) for c in versioned_names(index, [re.search(r"\S+", "LLaMA-2-7B")],
...                                                   "LLaMA-2-7B")]
[('LLaMA-2-7B', 'Model')]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

from spacy.attrs import LOWER, ORTH
from spacy.language import Language
from spacy.matcher import PhraseMatcher
from spacy.tokens import Doc

from kg.extract.nlp import split_words
from kg.extract.text import variants
from kg.extract.words import (
    COORDINATED,
    NEEDS_CONTEXT,
    OTHER_SENSE,
    TYPE_CONFIDENCE,
    VERSION_TAIL,
)
from kg.labels import Label, LabelIndex, is_acronym_like
from kg.model import Candidate, Span
from kg.vocab import Vocabulary


def versioned_names(index: LabelIndex, names: list[re.Match], text: str
                    ) -> Iterator[Candidate]:
    """Name tokens extending a vocabulary family: LLaMA-2-7B, Qwen2.5-7B, ResNet18, GPT-4o."""
    for match in names:
        token = match.group(0)
        labels, cut = index.lookup_name(token)
        if not labels:
            continue
        tail = token[cut:]
        if tail and not VERSION_TAIL.match(tail):
            continue
        start = match.start()
        # "Llama 2" / "GPT 4": a family name followed by a bare version number.
        follow = re.match(r" (\d+(?:\.\d+)?[A-Za-z]?)\b(?![\-.]\w)", text[match.end():])
        end = match.end()
        for label in labels:
            if follow and label.type == "Model":
                longer = index.lookup(token + follow.group(1))
                if longer:
                    label = longer[0]
                    end = match.end() + follow.end()
            yield Candidate(Span(text[start:end], start, end), label.type, "vocabulary-version",
                            label.concept, TYPE_CONFIDENCE["vocabulary-version"])


# ---------------------------------------------------------------- acronyms

def coordinated_names(index: LabelIndex, text: str) -> Iterator[Candidate]:
    """The later members of "CIFAR10/100" (CIFAR-100), when the vocabulary knows them; the
    mention is the number, the concept the full name.

    >>> from kg.vocab import load_vocabulary
    >>> [(c.span.text, c.concept.rsplit("/", 1)[-1]) for c in coordinated_names(
    ...     LabelIndex(load_vocabulary()), "on CIFAR-10/100.")]
    [('100', 'cifar-100')]
    """
    if "/" not in text:
        return
    for m in COORDINATED.finditer(text):
        family, sep = m.group(1), m.group(2)
        pos = m.start(4)
        for number in m.group(4).split("/")[1:]:
            pos += 1
            for label in index.lookup(family + sep + number) or index.lookup(family + number):
                yield Candidate(Span(text[pos:pos + len(number)], pos, pos + len(number)),
                                label.type, "vocabulary-version", label.concept,
                                TYPE_CONFIDENCE["vocabulary-version"],
                                long_form=family + sep + number)
            pos += len(number)


def phrases(vocab: Vocabulary) -> dict[str, list[Label]]:
    """Every surface form the vocabulary component matches, keyed "ci:form" (any case) or
    "cs:form" (acronym-like labels: this case only), with the labels of the concepts it names.

    >>> from kg.vocab import load_vocabulary
    >>> keys = phrases(load_vocabulary())
    >>> sorted(k for k in keys if k[3:].lower().startswith("lipschitz continuit"))
    ['ci:Lipschitz continuities', 'ci:Lipschitz continuity', 'ci:Lipschitz continuitys']
    >>> [k for k in keys if k[3:].lower() == "llms"]
    ['cs:LLMs']
    """
    keys: dict[str, list[Label]] = {}
    for concept in vocab.concepts.values():
        if not concept.matchable:
            continue
        entry = Label(concept.iri, concept.type)
        for text in (concept.pref_label, *concept.alt_labels):
            sensitive = is_acronym_like(text)
            for form in sorted(variants(text)):
                key = ("cs:" if sensitive else "ci:") + form
                bucket = keys.setdefault(key, [])
                if entry not in bucket:
                    bucket.append(entry)
    return keys


LAZY_DOCS = 100


class VocabularyMatcher:
    """Phrase matches of every label of a vocabulary, as Candidates, by spaCy's PhraseMatcher.

    Matching is case-insensitive (attr LOWER), except for acronym-like labels ("RL", "BLEU":
    ORTH), and covers plural and hyphen/space variants. The candidates come in canonical order
    (start, end, type, concept), whatever order the matchers report them in.

    For its first ``LAZY_DOCS`` Docs, a label's phrase is given to the PhraseMatcher when a Doc
    holds every one of its tokens (it cannot match before); then every phrase left is. A
    `kg add` of 50 papers needs 2,500 of the 18,500 phrases, and building the whole matcher
    (1.0-1.3 s: a lexeme for each new word, a Doc per phrase) was most of what extracting
    them cost; checking a Doc costs 0.25 ms, a third of matching it, which a conference's
    worth of papers would pay for nothing. The matches are those of a matcher given every
    phrase up front (tests/test_matcher.py). Docs must be made by kg's tokenizer
    (``kg.extract.nlp``): the phrases are split here as it splits them.

    >>> import spacy
    >>> from kg.extract.nlp import register_tokenizer
    >>> from kg.vocab import load_vocabulary
    >>> register_tokenizer()
    >>> nlp = spacy.blank("en", config={"nlp": {"tokenizer": {"@tokenizers": "kg.tokenizer.v1"}}})
    >>> matcher = VocabularyMatcher(load_vocabulary(), nlp)
    >>> [c.span.text for c in matcher(nlp.make_doc("INT4 quantization"))]
    ['INT4', 'INT4 quantization', 'quantization']
    """

    def __init__(self, vocab: Vocabulary, nlp: Language) -> None:
        # One matcher key per kind and set of concepts, not per form: a form's labels are what
        # a match needs.
        groups: dict[tuple[str, tuple[Label, ...]], list[str]] = {}
        for key, labels in sorted(phrases(vocab).items()):
            groups.setdefault((key[:2], tuple(labels)), []).append(key[3:])
        self._tokenizer = nlp.tokenizer
        self._labels: dict[int, tuple[Label, ...]] = {}
        self._matchers = (PhraseMatcher(nlp.vocab, attr="LOWER"), PhraseMatcher(nlp.vocab))
        ids = nlp.vocab.strings  # a str's hash, as Doc.to_array gives ORTH and LOWER
        split = []  # (exact, matcher key, phrase, the hashes of its tokens)
        for n, ((kind, labels), forms) in enumerate(groups.items()):
            name, exact = f"{kind}:{n}", kind == "cs"
            self._labels[ids.add(name)] = labels
            split.extend((exact, name, form, frozenset(
                ids[w if exact else w.lower()] for w in split_words(form)[0])) for form in forms)
        # The phrases not yet given to a matcher, by kind (case-insensitive, then exact) and
        # by the token of each that the fewest phrases share (so a common word such as
        # "learning" keys few of them and a Doc checks few): (matcher key, phrase, its tokens).
        shared = Counter(w for *_, words in split for w in words)
        self._waiting: tuple[dict[int, list], dict[int, list]] = ({}, {})
        for exact, name, form, words in split:
            if words:
                key = min(words, key=lambda w: (shared[w], w))
                self._waiting[exact].setdefault(key, []).append((name, form, words))
        self._checks = LAZY_DOCS

    def _add_phrases(self, doc: Doc | None) -> None:
        """Give the matchers every waiting phrase whose tokens all occur in ``doc`` (every
        waiting phrase if ``doc`` is None)."""
        tokens = None if doc is None else doc.to_array([LOWER, ORTH])
        for exact in (False, True):
            waiting = self._waiting[exact]
            ready: dict[str, list[str]] = {}
            if tokens is None:
                for name, form, _ in (p for phrases in waiting.values() for p in phrases):
                    ready.setdefault(name, []).append(form)
                waiting.clear()
            else:
                self._take_ready(waiting, set(tokens[:, int(exact)].tolist()), ready)
            for name, forms in ready.items():
                self._matchers[exact].add(name, list(self._tokenizer.pipe(forms)))

    @staticmethod
    def _take_ready(waiting: dict[int, list], seen: set[int], ready: dict[str, list[str]]
                    ) -> None:
        """Move the phrases of ``waiting`` whose tokens are all in ``seen`` to ``ready``."""
        for word in seen & waiting.keys():
            phrases = waiting[word]
            if not any(words <= seen for *_, words in phrases):
                continue
            for name, form, words in phrases:
                if words <= seen:
                    ready.setdefault(name, []).append(form)
            left = [p for p in phrases if not p[2] <= seen]
            if left:
                waiting[word] = left
            else:
                del waiting[word]

    def __call__(self, doc: Doc, text: str | None = None) -> list[Candidate]:
        """The candidates in ``doc`` (made by kg's tokenizer), in canonical order; ``text`` is
        ``doc.text`` when the caller has it (``doc.text`` joins every token anew)."""
        if self._checks:
            self._checks -= 1
            self._add_phrases(doc if self._checks else None)
        text = doc.text if text is None else text
        found: list[Candidate] = []
        for matcher in self._matchers:
            for key, start, end in matcher(doc):
                s_char = doc[start].idx
                last = doc[end - 1]
                e_char = last.idx + len(last)
                span = Span(text[s_char:e_char], s_char, e_char)
                found.extend(Candidate(span, label.type, "vocabulary", label.concept, _CONFIDENCE)
                             for label in self._labels[key])
        found.sort(key=canonical)
        return found


def in_context(text: str, found: list[Candidate]) -> list[Candidate]:
    """The vocabulary's matches less those of an ambiguous alias where its context shows the
    other sense (``OTHER_SENSE``, ``NEEDS_CONTEXT``).

    >>> from kg.model import Span
    >>> text = "It reduces GPU L2 cache misses. A KV cache."
    >>> found = [Candidate(Span("cache", m.start(), m.end()), "Technique", "vocabulary", "t", 0.9)
    ...          for m in re.finditer("cache", text)]
    >>> [c.span.start for c in in_context(text, found)]
    [37]
    """
    return [c for c in found if not _other_sense(text, c)]


def _other_sense(text: str, c: Candidate) -> bool:
    surface = c.span.text
    needs = NEEDS_CONTEXT.get(" ".join(surface.replace("-", " ").split()).casefold())
    if needs is not None:
        return needs.search(text) is None
    for alias, before, after, paper in OTHER_SENSE:
        if alias.fullmatch(surface) and (
                (before is not None and before.search(text, max(0, c.span.start - 40),
                                                      c.span.start))
                or (after is not None and after.match(text, c.span.end))
                or (paper is not None and paper.search(text))):
            return True
    return False


def canonical(c: Candidate) -> tuple:
    """The order candidates are put in before selection: (start, end, type, concept), then
    the rule, so that no output depends on the order a matcher or a rule found them in."""
    return (c.span.start, c.span.end, c.type, c.concept or "", c.rule)


_CONFIDENCE = TYPE_CONFIDENCE["vocabulary"]
