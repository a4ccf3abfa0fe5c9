"""The vocabulary rule: SKOS labels matched by phrase, and versioned names on a known family.

>>> from kg.vocab import load_vocabulary
>>> index = LabelIndex(load_vocabulary())
>>> [label.type for label in index.lookup("ResNet-18")]
['Model']
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from operator import add

from kg.extract.nlp import TOKEN, split_words
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


class PhraseTable:
    """Phrases as token sequences, matched in a text's tokens exactly as spaCy's PhraseMatcher
    would (the one this replaces): what it found, in its order. Building it takes no Doc
    and no lexemes, which made PhraseMatcher.add cost over a second per process.

    ``phrases`` maps each key ("ci:form" matched case-insensitively, i.e. on str.lower like
    spaCy's LOWER, "cs:form" exactly, like ORTH) to its labels. The forms are split with the
    pipeline's tokenizer; a phrase never spans a whitespace token.

    >>> table = PhraseTable({"ci:language model": ["LM"], "ci:large language model": ["LLM"],
    ...                      "cs:LM": ["LM (acronym)"]})
    >>> table.matches(["Large", "language", "model", "LM", "lm"])
    [(0, 3, ('LLM',)), (1, 3, ('LM',)), (3, 4, ('LM (acronym)',))]
    """

    def __init__(self, phrases: dict[str, list]) -> None:
        # A trie flattened into one dict per kind: each phrase's words → its labels, and each
        # proper prefix of a phrase → (), so a walk stops where PhraseMatcher's trie walk would.
        # (Nested dicts take twice as long to build.)
        ci: dict[tuple[str, ...], tuple] = {}
        cs: dict[tuple[str, ...], tuple] = {}
        for key in sorted(phrases):  # the order PhraseMatcher.add was called in
            form = key[3:]
            # With single spaces only (as ``variants`` makes every form), the tokenizer's
            # words are just the TOKEN matches, and six times cheaper to find.
            words = TOKEN.findall(form) if form == " ".join(form.split()) else \
                split_words(form)[0]
            if key.startswith("cs:"):
                table, seq = cs, tuple(words)
            else:
                table, seq = ci, tuple(w.lower() for w in words)
            for end in range(1, len(seq)):
                table.setdefault(seq[:end], ())
            table[seq] = (*table.get(seq, ()), key)
        for table in (ci, cs):
            for seq, keys in table.items():
                if len(keys) == 1:
                    table[seq] = tuple(phrases[keys[0]])
                elif keys:
                    table[seq] = tuple(label for key in _phrasematcher_order(list(keys))
                                       for label in phrases[key])
        self._ci, self._cs = ci, cs
        # The first words of phrases: most words start none, and skip the table at once.
        self._ci_heads = {seq[0] for seq in ci}
        self._cs_heads = {seq[0] for seq in cs}

    def matches(self, words: list[str]) -> list[tuple[int, int, tuple]]:
        """(start, end, labels) for every phrase at ``words[start:end]``: the case-insensitive
        ones first, each kind by start, then by length (PhraseMatcher's order)."""
        out: list[tuple[int, int, tuple]] = []
        for table, heads, seq in ((self._ci, self._ci_heads, tuple(map(str.lower, words))),
                                  (self._cs, self._cs_heads, tuple(words))):
            n = len(seq)
            for i in [i for i, word in enumerate(seq) if word in heads]:
                for j in range(i + 1, n + 1):
                    labels = table.get(seq[i:j])
                    if labels is None:  # no phrase starts with these words
                        break
                    if labels:
                        out.append((i, j, labels))
        return out


def _phrasematcher_order(keys: list[str]) -> list[str]:
    """Keys sharing one token sequence in the order PhraseMatcher reported them: the slot
    order of the preshed hash map it keeps them in (8 cells, linear probing, doubled when 3/5
    full), keyed by spaCy's string hash and filled in ``keys`` order. Only a few dozen forms
    share their words with another ("CLIP Score", "CLIP score"), but in two pairs the concepts
    differ, and candidate order reaches the output. tests/test_matcher.py checks this against
    the real PhraseMatcher, so a spaCy upgrade that changes it shows."""
    def place(cells: list[int], h: int) -> None:
        i = h & (len(cells) - 1)
        while cells[i]:
            i = (i + 1) & (len(cells) - 1)
        cells[i] = h

    hashes = {key: string_hash(key) for key in keys}
    cells = [0] * 8
    for filled, key in enumerate(keys, 1):  # the keys are distinct
        place(cells, hashes[key])
        if (filled + 1) * 5 >= len(cells) * 3:
            old, cells = cells, [0] * (len(cells) * 2)
            for h in old:
                if h:
                    place(cells, h)
    by_hash = {h: key for key, h in hashes.items()}
    return [by_hash[h] for h in cells if h]


_M, _MASK = 0xC6A4A7935BD1E995, (1 << 64) - 1


def string_hash(string: str) -> int:
    """spaCy's ``spacy.strings.hash_string``: MurmurHash64A of the UTF-8 bytes, seed 1, here so
    that building the matcher does not import spaCy (0.5 s). tests/test_matcher.py checks it
    against spaCy's on every vocabulary key.

    >>> string_hash("CLIP Score")
    14950244816457781424
    """
    data = string.encode("utf-8")
    n = len(data)
    h = (1 ^ (n * _M)) & _MASK
    tail = n - n % 8
    for i in range(0, tail, 8):
        k = int.from_bytes(data[i:i + 8], "little") * _M & _MASK
        k ^= k >> 47
        h = (h ^ (k * _M & _MASK)) * _M & _MASK
    if n % 8:
        h = (h ^ int.from_bytes(data[tail:], "little")) * _M & _MASK
    h ^= h >> 47
    h = h * _M & _MASK
    return h ^ (h >> 47)


def phrases(vocab: Vocabulary) -> dict[str, list[_Label]]:
    """Every surface form the vocabulary component matches, keyed "ci:form" (any case) or
    "cs:form" (acronym-like labels: this case only), with the labels of the concepts it names.

    >>> from kg.vocab import load_vocabulary
    >>> keys = phrases(load_vocabulary())
    >>> sorted(k for k in keys if k[3:].lower().startswith("lipschitz continuit"))
    ['ci:Lipschitz continuities', 'ci:Lipschitz continuity', 'ci:Lipschitz continuitys']
    >>> [k for k in keys if k[3:].lower() == "llms"]
    ['cs:LLMs']
    """
    keys: dict[str, list[_Label]] = {}
    for concept in vocab.concepts.values():
        if not concept.matchable:
            continue
        entry = _Label(concept.iri, concept.type)
        for text in (concept.pref_label, *concept.alt_labels):
            sensitive = is_acronym_like(text)
            for form in sorted(variants(text)):
                key = ("cs:" if sensitive else "ci:") + form
                bucket = keys.setdefault(key, [])
                if entry not in bucket:
                    bucket.append(entry)
    return keys


class VocabularyMatcher:
    """Phrase matches of every label of a vocabulary, as Candidates.

    Matching is case-insensitive, except for acronym-like labels ("RL", "BLEU"), and covers
    plural and hyphen/space variants.

    >>> from kg.extract.nlp import split_words
    >>> from kg.vocab import load_vocabulary
    >>> text = "INT4 quantization"
    >>> [c.span.text for c in VocabularyMatcher(load_vocabulary())(text, *split_words(text))]
    ['INT4 quantization', 'quantization', 'INT4']
    """

    def __init__(self, vocab: Vocabulary) -> None:
        self.table = PhraseTable(phrases(vocab))

    def __call__(self, text: str, words: list[str], spaces: list[bool]) -> list[Candidate]:
        """The candidates in ``text``, given its words and spaces (``split_words``)."""
        found: list[Candidate] = []
        matches = self.table.matches(words)
        if matches:
            # Each word's offset in the text: the lengths of the words and spaces before it.
            starts = [0, *accumulate(map(add, map(len, words), spaces))]
            for start, end, labels in matches:
                s_char, e_char = starts[start], starts[end - 1] + len(words[end - 1])
                for label in labels:
                    found.append(Candidate(Span(text[s_char:e_char], s_char, e_char),
                                           label.type, "vocabulary", label.concept,
                                           TYPE_CONFIDENCE["vocabulary"]))
        return found
