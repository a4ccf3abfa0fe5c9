"""Selection: the best non-overlapping candidates, plus what follows from them (later uses of
a defined name, known terms inside new names).

>>> from kg.model import Span
>>> a = Candidate(Span("KV cache", 0, 8), "Technique", "vocabulary", "c1", 0.9)
>>> b = Candidate(Span("cache", 3, 8), "Technique", "vocabulary", "c2", 0.9)
>>> [c.span.text for c in select([a, b])]
['KV cache']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kg.extract.document import Document
from kg.extract.words import RULE_PRIORITY, TYPE_CONFIDENCE
from kg.model import Candidate


def _rank(c: Candidate) -> tuple:
    return (-(c.span.end - c.span.start), -RULE_PRIORITY.get(c.rule, 0), c.type, c.concept or "")


def select(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Longest candidate wins an overlap; then rule priority. Same span, several concepts: all."""
    chosen: list[Candidate] = []
    for cand in sorted(candidates, key=_rank):
        s, e = cand.span.start, cand.span.end
        clash = [c for c in chosen if c.span.start < e and s < c.span.end]
        if not clash:
            chosen.append(cand)
            continue
        same = [c for c in clash if (c.span.start, c.span.end) == (s, e)]
        if same and len(same) == len(clash) and all(
            RULE_PRIORITY.get(c.rule, 0) == RULE_PRIORITY.get(cand.rule, 0) for c in same
        ) and all(c.type == cand.type and c.concept != cand.concept for c in same):
            chosen.append(cand)
    return sorted(chosen, key=lambda c: (c.span.start, c.span.end, c.type, c.concept or ""))


def inside_new_names(candidates: Sequence[Candidate], chosen: list[Candidate]
                     ) -> list[Candidate]:
    """A new name built from known terms mentions them too: "Annealing Self-Distillation
    Rectification" uses self-distillation. Only inside names the vocabulary does not know."""
    names = [c for c in chosen if c.concept is None and c.type in ("Method", "Model")
             and " " in c.span.text]
    if not names:
        return chosen
    inner = [c for c in candidates if c.rule == "vocabulary" and c.type != "Method" and any(
        n.span.start <= c.span.start and c.span.end <= n.span.end and c.span != n.span
        for n in names)]
    if not inner:
        return chosen
    return sorted({*chosen, *inner}, key=lambda c: (c.span.start, c.span.end, c.type,
                                                     c.concept or ""))


def propagate(d: Document, chosen: list[Candidate]) -> list[Candidate]:
    """Later uses of a defined acronym or a proposed name become mentions too."""
    extra: list[Candidate] = []
    for cand in chosen:
        if cand.rule not in ("acronym-definition", "proposed-name"):
            continue
        surface = cand.span.text
        rule = "acronym-use" if cand.rule == "acronym-definition" else "proposed-name-use"
        for start in _uses(d.text, surface, any(ch.isupper() for ch in surface)):
            extra.append(Candidate(d.span(start, start + len(surface)), cand.type, rule,
                                   cand.concept, TYPE_CONFIDENCE[rule], cand.long_form))
    if not extra:
        return chosen
    return select([*chosen, *extra])



def _uses(text: str, surface: str, case_sensitive: bool) -> list[int]:
    """Starts of whole-word uses of ``surface`` (or its plural -s) in ``text``: what
    ``(?<![\\w-])surface s?(?![\\w-])`` finds, without compiling a regex per name.

    >>> _uses("FooNet and FooNets, not FooNetX or pre-FooNet.", "FooNet", True)
    [0, 11]
    """
    hay, needle = text, surface
    if not case_sensitive:
        hay, needle = text.lower(), surface.lower()
        if len(hay) != len(text):  # lower() changed a length: keep offsets exact
            flags = re.IGNORECASE
            pattern = re.compile(r"(?<![\w\-])" + re.escape(surface) + r"s?(?![\w\-])", flags)
            return [m.start() for m in pattern.finditer(text)]

    def free(i: int) -> bool:
        return i < 0 or i >= len(hay) or not (hay[i].isalnum() or hay[i] in "_-")

    out: list[int] = []
    pos = hay.find(needle) if needle else -1
    while pos >= 0:
        end = pos + len(needle)
        ok_before = free(pos - 1)
        if ok_before and hay[end:end + 1] == "s" and free(end + 1):
            out.append(pos)
            end += 1
        elif ok_before and free(end):
            out.append(pos)
        else:
            end = pos + 1
        pos = hay.find(needle, end)
    return out
