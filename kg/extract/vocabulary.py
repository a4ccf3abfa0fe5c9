"""The vocabulary rule: SKOS labels matched by phrase, and versioned names on a known family.

``kg_vocabulary`` is a spaCy component registered once with ``Language.factory``; the extractor
hands each instance its own labels (``set_labels``), so a pipeline can never match with another
extractor's vocabulary.

>>> from kg.vocab import load_vocabulary
>>> index = LabelIndex(load_vocabulary())
>>> [label.type for label in index.lookup("ResNet-18")]
['Model']
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from kg.extract.text import is_acronym_like, label_key, variants
from kg.extract.words import COORDINATED, TYPE_CONFIDENCE, VERSION_TAIL
from kg.model import Candidate, Span
from kg.vocab import Vocabulary


@dataclass(frozen=True, slots=True)
class _Label:
    concept: str
    type: str


class LabelIndex:
    """Vocabulary lookups by label key: case-insensitive and (for acronyms) case-sensitive."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.ci: dict[str, list[_Label]] = {}
        self.cs: dict[str, list[_Label]] = {}
        for concept in sorted(vocab.concepts.values(), key=lambda c: c.iri):
            if not concept.matchable:
                continue
            for text in (concept.pref_label, *concept.alt_labels):
                target = self.cs if is_acronym_like(text) else self.ci
                key = label_key(text) if target is self.ci else re.sub(r"[\s\-_.]", "", text)
                entry = _Label(concept.iri, concept.type)
                bucket = target.setdefault(key, [])
                if entry not in bucket:
                    bucket.append(entry)

    def lookup(self, text: str) -> list[_Label]:
        exact = re.sub(r"[\s\-_.]", "", text)
        return self.cs.get(exact) or self.ci.get(label_key(text)) or []

    def lookup_name(self, name: str) -> tuple[list[_Label], int]:
        """Longest vocabulary prefix of a name token, as (labels, prefix length in chars)."""
        for end in _prefix_ends(name):
            found = self.lookup(name[:end])
            if not found and name[end - 1 : end] == "s":
                found = self.lookup(name[: end - 1])
            if found:
                return found, end
        return [], 0


def _prefix_ends(name: str) -> list[int]:
    """Cut points of a name, longest first: at separators and letter→digit changes."""
    cuts = {len(name)}
    for i in range(1, len(name)):
        prev, ch = name[i - 1], name[i]
        if ch in "-./" or (prev.isalpha() and ch.isdigit()):
            cuts.add(i)
    return sorted((c for c in cuts if c > 0 and name[:c][-1] not in "-./"), reverse=True)



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


class VocabularyMatcher:
    """The ``kg_vocabulary`` component: phrase matches of every label as Candidates.

    Matching is case-insensitive, except for acronym-like labels ("RL", "BLEU"), and covers
    plural and hyphen/space variants. The candidates go to ``doc.user_data["kg_candidates"]``.
    """

    def __init__(self, nlp) -> None:
        from spacy.matcher import PhraseMatcher

        self.nlp = nlp
        self.ci = PhraseMatcher(nlp.vocab, attr="LOWER")
        self.cs = PhraseMatcher(nlp.vocab, attr="ORTH")
        self.keys: dict[str, list[_Label]] = {}

    def set_labels(self, vocab: Vocabulary) -> None:
        """Match the labels of ``vocab`` (replacing any labels set before)."""
        from spacy.matcher import PhraseMatcher

        self.ci = PhraseMatcher(self.nlp.vocab, attr="LOWER")
        self.cs = PhraseMatcher(self.nlp.vocab, attr="ORTH")
        keys: dict[str, list[_Label]] = {}
        for concept in vocab.concepts.values():
            if not concept.matchable:
                continue
            for text in (concept.pref_label, *concept.alt_labels):
                sensitive = is_acronym_like(text)
                for form in sorted(variants(text)):
                    key = ("cs:" if sensitive else "ci:") + form
                    entry = _Label(concept.iri, concept.type)
                    bucket = keys.setdefault(key, [])
                    if entry not in bucket:
                        bucket.append(entry)
        for key in sorted(keys):
            sensitive, form = key.startswith("cs:"), key[3:]
            (self.cs if sensitive else self.ci).add(key, [self.nlp.make_doc(form)])
        self.keys = keys

    def __call__(self, doc):
        found: list[Candidate] = []
        matches = [*self.ci(doc), *self.cs(doc)]
        if matches:
            from spacy.attrs import IDX, LENGTH

            strings = doc.vocab.strings
            offsets = doc.to_array([IDX, LENGTH]).tolist()  # no Token objects: much faster
            text = doc.user_data["kg_text"]
            for match_id, start, end in matches:
                s_char = offsets[start][0]
                e_char = offsets[end - 1][0] + offsets[end - 1][1]
                for label in self.keys[strings[match_id]]:
                    found.append(Candidate(Span(text[s_char:e_char], s_char, e_char),
                                           label.type, "vocabulary", label.concept,
                                           TYPE_CONFIDENCE["vocabulary"]))
        doc.user_data["kg_candidates"] = found
        return doc
