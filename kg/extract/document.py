"""What every rule reads about one paper: the text, its sentences and its name tokens.

>>> from kg.model import Paper
>>> doc = Document.of(Paper(id="p", abstract="We use LLaMA-2. It works."))
>>> doc.sentence_of(8).text, [m.group(0) for m in doc.names]
('We use LLaMA-2.', ['LLaMA-2'])
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from kg.extract.text import clean_text, sentence_offsets
from kg.extract.words import MARKED_NAME, is_name_token
from kg.model import Extraction, Paper, Span


@dataclass(frozen=True)
class Document:
    """A paper as the rules see it. ``text`` is the cleaned text (same length as the paper's
    text, so offsets agree); spans and evidence are always cut from the paper's own text."""

    paper: Paper
    text: str
    sentences: tuple[tuple[int, int], ...]
    names: tuple[re.Match, ...]  # name tokens with a digit or an inner capital

    @classmethod
    def of(cls, paper: Paper, text: str | None = None) -> Document:
        text = clean_text(paper.text) if text is None else text
        return cls(paper, text, tuple(sentence_offsets(text)),
                   tuple(m for m in MARKED_NAME.finditer(text) if is_name_token(m.group(0))))

    def sentence_of(self, pos: int) -> Span:
        """The sentence holding ``pos`` (the last one for a position between sentences)."""
        k = bisect.bisect_right(self.sentences, (pos, float("inf"))) - 1
        if k >= 0 and self.sentences[k][0] <= pos < self.sentences[k][1]:
            start, end = self.sentences[k]
            return Span(self.paper.text[start:end], start, end)
        start, end = self.sentences[-1] if self.sentences else (0, len(self.text))
        return Span(self.paper.text[start:end], start, end)

    def span(self, start: int, end: int) -> Span:
        return Span(self.paper.text[start:end], start, end)


def sentence_at(ex: Extraction, pos: int) -> Span:
    """The sentence of an extracted paper that holds ``pos`` (the whole text if none does).

    >>> from kg.model import Paper
    >>> ex = Extraction(Paper(id="p", abstract="One. Two words."), (), (), None, ((0, 4), (5, 15)))
    >>> sentence_at(ex, 7).text
    'Two words.'
    """
    text = ex.paper.text
    for start, end in ex.sentences or sentence_offsets(clean_text(text)):
        if start <= pos < end:
            return Span(text[start:end], start, end)
    return Span(text, 0, len(text))
