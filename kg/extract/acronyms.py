"""The acronym rule: long form ↔ short form pairs (Schwartz & Hearst 2003).

"Rotated Runtime Smooth (RRS)" gives the long form and the short form, typed by the vocabulary
when it knows the long form, else by the long form's head word.

>>> _type_of_long_form("Rotated Runtime Smooth", proposing=True)
'Method'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from kg.extract.document import Document
from kg.extract.text import singular, singular_phrase
from kg.extract.words import (
    ACRONYM_PAREN,
    GENERIC_HEADS,
    HEAD_TYPES,
    PROPOSE_WORD,
    WORD,
    named_by_cue,
)
from kg.labels import Label, LabelIndex, is_acronym_like
from kg.model import Candidate, EntityType


def _find_long_form(words: list[re.Match], short: str) -> int | None:
    """Schwartz & Hearst: index of the first word of the long form ending before '('."""
    letters = [ch.lower() for ch in short if ch.isalnum()]
    if re.search(r"[A-Za-z]\d[A-Za-z]", short):  # "GS4CO", "C3PO": a digit for a word
        letters = [ch for ch in letters if ch.isalpha()]
    if not letters or not short[0].isalnum():
        return None
    limit = min(len(letters) + 5, len(letters) * 2)
    candidate_words = words[-limit:]
    text = " ".join(w.group(0) for w in candidate_words).lower()
    s_i, l_i = len(letters) - 1, len(text) - 1
    while s_i >= 0:
        ch = letters[s_i]
        while l_i >= 0 and (text[l_i] != ch or (s_i == 0 and l_i > 0 and text[l_i - 1].isalnum())):
            l_i -= 1
        if l_i < 0:
            return None
        s_i -= 1
        l_i -= 1
    first_char = l_i + 1
    # map char position back to a word index
    pos = 0
    for i, w in enumerate(candidate_words):
        if pos <= first_char < pos + len(w.group(0)) + 1:
            offset = len(words) - len(candidate_words)
            if len(candidate_words) - i > 1 + len(letters) * 2:
                return None
            return offset + i
        pos += len(w.group(0)) + 1
    return None


# "SHORT (Long Form)": the inverse order, a short form first and its long form in parentheses.
_INVERSE = re.compile(r"(?<![\w\-])([A-Z][A-Za-z0-9\-]{1,11})\s+\(([A-Za-z][^()]{4,80})\)")


def _spells(short: str, long_form: str) -> bool:
    """Whether the long form's word initials spell the short form, in order (allowing extra
    words and inner capitals): "FOO" ↔ "Fast Optimal Operator"."""
    letters = [ch.lower() for ch in short if ch.isalpha()]
    words = re.findall(r"[A-Za-z][a-z]*", long_form)
    if len(letters) < 2 or not words or words[0][0].lower() != letters[0] or \
            len(words) > 2 * len(letters) + 1:
        return False
    k = 0
    for word in words:
        if k < len(letters) and word[0].lower() == letters[k]:
            k += 1
    return k == len(letters)


def inverse_acronyms(index: LabelIndex, d: Document, prior: Sequence[Candidate]
                     ) -> list[Candidate]:
    """Both forms of "SHORT (Long Form)" definitions the regular order does not cover.

    >>> from kg.model import Paper
    >>> from kg.vocab import load_vocabulary
    >>> doc = Document.of(Paper(id="p", abstract="We adopt FOO (Fast Optimal Operator)."))
    >>> [(c.span.text, c.type) for c in inverse_acronyms(LabelIndex(load_vocabulary()), doc, [])]
    [('FOO', 'Method'), ('Fast Optimal Operator', 'Method')]
    """
    out: list[Candidate] = []
    taken = [(c.span.start, c.span.end) for c in prior if c.rule == "acronym-definition"]
    for match in _INVERSE.finditer(d.text):
        short, long_form = match.group(1), match.group(2).strip()
        if sum(ch.isupper() for ch in short) < 2 or not _spells(short, long_form) or any(
                s < match.end() and match.start() < e for s, e in taken):
            continue
        sf_span = d.span(match.start(1), match.end(1))
        lf_start = match.start(2) + (len(match.group(2)) - len(match.group(2).lstrip()))
        lf_span = d.span(lf_start, lf_start + len(long_form))
        labels = index.lookup(long_form) or (
            index.lookup(short) if is_acronym_like(short) else [])
        if labels:
            for label in labels:
                out.append(Candidate(sf_span, label.type, "acronym-definition", label.concept,
                                     0.85, long_form=long_form))
            continue
        sentence = d.text[d.sentence_of(match.start()).start:match.start()]
        type_ = _type_of_long_form(long_form, bool(PROPOSE_WORD.search(sentence)), short)
        if type_ is None:
            continue
        out.append(Candidate(sf_span, type_, "acronym-definition", None, 0.8, long_form=long_form))
        out.append(Candidate(lf_span, type_, "acronym-definition", None, 0.8))
    return out


def acronyms(index: LabelIndex, d: Document, prior: Sequence[Candidate]) -> list[Candidate]:
    """Both forms of each defined acronym; ``prior`` holds the vocabulary's candidates."""
    out: list[Candidate] = []
    for match in ACRONYM_PAREN.finditer(d.text):
        short = match.group(1)
        if short[1:].islower() and d.text[match.end(1)] == "s":
            short += "s"  # "(Nemesis)" is a name, not the plural of "Nemesi" ("(LLMs)": LLM)
        found = _long_form_of(d, match, short)
        if found is None:
            continue
        sent, lf_start, lf_end, long_form = found
        if long_form.lower() == short.lower() or len(long_form) <= len(short):
            continue
        sf_start = match.start(1)
        sf_span = d.span(sf_start, sf_start + len(short))
        labels = index.lookup(long_form) or index.lookup(singular_phrase(long_form))
        if not labels:
            labels = [lab for lab in _labels_in(prior, lf_start, lf_end)]
        if labels:
            for label in labels:
                out.append(Candidate(sf_span, label.type, "acronym-definition",
                                     label.concept, 0.85, long_form=long_form))
            continue
        long_form, lf_end = _trim_generic_head(long_form, short, lf_start)
        sentence = d.text[sent[0]:sent[1]]
        type_ = _type_of_long_form(long_form, bool(PROPOSE_WORD.search(sentence)), short)
        if type_ in (EntityType.TECHNIQUE, None) and " " in long_form and \
                named_by_cue(d.text, lf_start):
            type_ = EntityType.METHOD.value  # "We propose differentially private … (DP-BiTFiT)"
        if type_ is None:
            continue
        if long_form == d.paper.text[lf_start:lf_end]:  # (not where markup is inside)
            out.append(Candidate(d.span(lf_start, lf_end), type_, "acronym-definition", None,
                                 0.8))
        out.append(Candidate(sf_span, type_, "acronym-definition", None, 0.8,
                             long_form=long_form))
    return out



def _long_form_of(d: Document, match: re.Match, short: str
                  ) -> tuple[tuple[int, int], int, int, str] | None:
    """The sentence, the (start, end) and the text of the long form "(short)" defines, if
    any."""
    if not any(ch.isupper() for ch in short) or len(short) < 2 or short.isdigit():
        return None
    sent = next(((s, e) for s, e in d.sentences if s <= match.start() < e), None)
    if sent is None:
        return None
    before = _joined(d, list(WORD.finditer(d.text, sent[0], match.start())))
    first = _find_long_form(before, short) if before else None
    if first is None:
        return None
    start, end = before[first].start(), before[-1].end()
    if any(isinstance(w, _Word) for w in before[first:]):
        return sent, start, end, " ".join(w.group(0) for w in before[first:])
    return sent, start, end, d.text[start:end]


class _Word(NamedTuple):
    """A word put together from pieces markup split (``re.Match``'s start/end/group)."""

    text: str
    begin: int
    finish: int

    def start(self) -> int:
        return self.begin

    def end(self) -> int:
        return self.finish

    def group(self, _: int = 0) -> str:
        return self.text


def _joined(d: Document, words: list) -> list:
    """Words that markup split made whole again: some abstracts set an acronym's letters in
    bold ("**P**reference **A**ided", "$\\textbf{T}$est"), which the blanked markup would
    split into two words each, so that "(PAIL)" would find no long form.

    >>> from kg.model import Paper
    >>> doc = Document.of(Paper(id="p", abstract="**P**reference **A**ided (PA)"))
    >>> [w.group(0) for w in _joined(doc, list(WORD.finditer(doc.text)))]
    ['Preference', 'Aided', 'PA']
    """
    out: list = []
    for w in words:
        prev = out[-1] if out else None
        gap = slice(prev.end(), w.start()) if prev is not None else None
        if gap is not None and not d.text[gap].strip() and d.paper.text[gap] \
                and not any(ch.isspace() for ch in d.paper.text[gap]):
            out[-1] = _Word(prev.group(0) + w.group(0), prev.start(), w.end())
        else:
            out.append(w)
    return out


def _labels_in(prior: Sequence[Candidate], start: int, end: int) -> list[Label]:
    """Vocabulary candidates spanning exactly [start, end)."""
    return [Label(c.concept, c.type) for c in prior
            if c.concept and c.span.start == start and c.span.end == end]



def _trim_generic_head(long_form: str, short: str, start: int) -> tuple[str, int]:
    """"Few-shot Attention Intervention method (FAI)" → drop "method", which FAI does not spell."""
    words = long_form.split(" ")
    last = words[-1]
    if len(words) > 2 and singular(last).lower() in GENERIC_HEADS and \
            short[-1:].lower() != last[:1].lower():
        long_form = " ".join(words[:-1])
    return long_form, start + len(long_form)


def _type_of_long_form(long_form: str, proposing: bool, short: str = "") -> str | None:
    words = long_form.split()
    # ("… Datasets for RL": the head is before the preposition and its one word)
    last = -3 if len(words) > 3 and words[-2].lower() in ("for", "of", "in", "on") else -1
    head = singular(words[last]).lower()
    by_head = HEAD_TYPES.get(head)
    significant = [w for w in words if w.lower() not in ("of", "with", "for", "and", "the", "in",
                                                          "on", "to", "via", "from", "a")]
    # Title Case, or the capitals of a name the paper proposes, spelled by the capitals of
    # its long form ("Preference Aided Imitation Learning from imperfect demonstrations").
    title_case = len(words) >= 2 and (all(w[:1].isupper() for w in significant)
                                      or (proposing and _capitals_spell(short, long_form)))
    # A Title Case long form is a named method unless its head says task/dataset/metric.
    if title_case and by_head in (None, "Model"):
        return "Method" if by_head is None else "Model"
    if title_case and by_head == EntityType.TECHNIQUE:
        # "Empirical Risk Minimization (ERM)" names a technique; one the paper proposes is
        # its method ("we propose Contrastive Preference Learning (CPL)").
        return EntityType.METHOD.value if proposing else EntityType.TECHNIQUE.value
    if by_head == "Model":
        # "recurrent spiking neural networks (RSNNs)": a lower-case class of models is a
        # Technique (ontology/README.md), unless the sentence introduces it as the paper's own.
        return EntityType.MODEL.value if proposing else EntityType.TECHNIQUE.value
    if by_head:
        return by_head
    if head in GENERIC_HEADS:
        return "Method"
    return "Method" if proposing and title_case else None


def _capitals_spell(short: str, long_form: str) -> bool:
    """Whether the short form's capitals (two or more) are the long form's, a word in capitals
    giving its first ("for MARL": M).

    >>> _capitals_spell("ACORM", "Attention-guided COntrastive Role representation learning "
    ...                 "for MARL")
    True
    >>> _capitals_spell("R2SR", "R2SGrasp designs the Real-to-Sim Data Repairer")
    False
    >>> _capitals_spell("IL", "imitation learning")
    False
    """
    capitals = [ch for ch in short if ch.isupper()]
    spelled: list[str] = []
    for word in re.findall(r"[A-Za-z]+", long_form):
        spelled += word[0] if len(word) > 1 and word.isupper() else \
            [ch for ch in word if ch.isupper()]
    return len(capitals) >= 2 and capitals == spelled
