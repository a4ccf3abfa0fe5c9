"""Links: the relations of a paper to what it mentions, and between the entities it names.

A paper *proposes* its new names; each other entity gets the predicate of its type
(``PREDICATE_FOR_TYPE``), with the first sentence that shows a use or evaluation cue as its
evidence; "outperforms" and "extends" join entities inside one sentence.
"""

from __future__ import annotations

import re
from collections.abc import Set

from kg.extract.document import Document
from kg.extract.words import (
    BACKGROUND_OPENER,
    BACKGROUND_VERB,
    CONTRAST_CUE,
    COORDINATION,
    EVAL_CUE,
    EXTEND,
    INSPIRED_BY,
    LEFT_BEHIND,
    NEGATED_RELIANCE,
    NOT_USED_BEFORE,
    OUTPERFORM,
    PRIOR_WORK_BEFORE,
    PRIOR_WORK_SENTENCE,
    REJECTED_AFTER,
    TITLE_NEGATION,
    USE_CUE,
)
from kg.labels import label_key
from kg.model import PREDICATE_FOR_TYPE, Candidate, EntityType, Link


def links(d: Document, chosen: list[Candidate], proposed_names: Set[str]) -> list[Link]:
    """The links of one paper; ``proposed_names`` are the label keys of the names it proposes."""
    proposed = _proposed(chosen, proposed_names)
    out = [Link(None, "proposes", i, d.sentence_of(chosen[i].span.start), "propose-cue", 0.85)
           for i in proposed]
    out += _uses(d, chosen, proposed)
    for start, end in d.sentences:
        out += _between(d, chosen, proposed, start, end)
    return out


def _proposed(chosen: list[Candidate], proposed_names: Set[str]) -> set[int]:
    """The first candidate of each proposed name."""
    proposed: set[int] = set()
    for key in sorted(proposed_names):
        first = next((i for i, c in enumerate(chosen) if key in
                      (label_key(c.span.text), label_key(c.long_form or ""))), None)
        if first is not None:
            proposed.add(first)
    return proposed


def _uses(d: Document, chosen: list[Candidate], proposed: set[int]) -> list[Link]:
    """One link per entity the paper does not propose: its type's predicate, with the first
    sentence that shows a use or evaluation cue as evidence; or "mentions" when every
    occurrence is negated, contrasted, prior work or background."""
    out: list[Link] = []
    proposed_keys = {label_key(chosen[i].long_form or chosen[i].span.text) for i in proposed} | \
        {label_key(chosen[i].span.text) for i in proposed}
    not_used = _not_used(d, chosen)
    # Candidates by entity key, in order: the first is the key's first occurrence.
    occurrences: dict[tuple, list[int]] = {}
    for i, c in enumerate(chosen):
        key = (c.type, c.concept or label_key(c.long_form or c.span.text))
        occurrences.setdefault(key, []).append(i)
    cue_in: dict[tuple[int, bool], bool] = {}  # (sentence start, use cue?) → cue found

    def has_cue(j: int, use: bool) -> bool:
        sentence = d.sentence_of(chosen[j].span.start)
        if (sentence.start, use) not in cue_in:
            cue_in[(sentence.start, use)] = bool((USE_CUE if use else EVAL_CUE).search(
                sentence.text))
        return cue_in[(sentence.start, use)]

    for same in sorted(occurrences.values(), key=lambda v: v[0]):
        c = chosen[same[0]]
        if same[0] in proposed or label_key(c.span.text) in proposed_keys or \
                label_key(c.long_form or "") in proposed_keys:
            continue
        reasons = [not_used[j] for j in same]
        if all(reasons):
            # Only negated, contrasted or prior work: the paper mentions it, it does not use it.
            out.append(Link(None, "mentions", same[0], d.sentence_of(c.span.start),
                            f"mentions:{reasons[0]}", 0.7))
            continue
        same = [j for j in same if not not_used[j]]
        predicate = PREDICATE_FOR_TYPE[c.type]
        use = predicate in ("usesTechnique", "usesModel", "runsOn")
        best = next((j for j in same if has_cue(j, use)), None)
        j = best if best is not None else same[0]
        confidence = round(min(c.confidence, 0.9 if best is not None else 0.6), 2)
        out.append(Link(None, predicate, j, d.sentence_of(chosen[j].span.start),
                        f"{predicate}:{'cue' if best is not None else 'mention'}", confidence))
    return out


def _between(d: Document, chosen: list[Candidate], proposed: set[int], start: int, end: int
             ) -> list[Link]:
    """"outperforms" / "extends" inside one sentence: the proposed (or last named) method →
    a later entity."""
    out: list[Link] = []
    sentence = d.text[start:end]
    in_sent = [i for i, c in enumerate(chosen) if start <= c.span.start < end]
    for regex, predicate in ((OUTPERFORM, "outperforms"), (EXTEND, "extends")):
        m = regex.search(sentence)
        if not m:
            continue
        pivot = start + m.start()
        subjects = [i for i in in_sent if chosen[i].span.end <= pivot
                    and chosen[i].type in ("Method", "Model")]
        subject = subjects[-1] if subjects else next(iter(sorted(proposed)), None)
        if subject is None:
            continue
        for j in in_sent:
            o = chosen[j]
            # Baselines and what a method builds on may be techniques ("extends test-time
            # augmentation", "outperforms fine-tuning").
            if o.span.start < start + m.end() or o.type not in (
                    EntityType.METHOD, EntityType.MODEL, EntityType.TECHNIQUE):
                continue
            gap = d.text[start + m.end():o.span.start]
            # "outperforms X on/in/with Y": Y is where, not whom.
            if re.search(r"\b(?:in|on|across|using|for|with|of|at|by|under)\b", gap) or \
                    label_key(o.span.text) == label_key(chosen[subject].span.text):
                continue
            out.append(Link(subject, predicate, j, d.span(start, end), f"{predicate}-cue", 0.7))
            if predicate == "extends":
                break
    return out


# The first words of every NOT_USED_BEFORE cue (the pattern cannot match without one).
_CUE_WORDS = frozenset((
    "without", "neither", "nor", "instead", "rather", "unlike", "contrast", "opposed",
    "contrary", "comparison", "free", "no", "not", "never", "avoid", "avoids", "avoiding",
    "avoided", "eliminate", "eliminates", "eliminating", "eliminated", "obviate", "obviates",
    "obviating", "obviated", "bypass", "bypasses", "bypassing", "bypassed", "circumvent",
    "circumvents", "circumventing", "circumvented", "dispense", "dispenses", "dispensing",
    "dispensed", "alternative", "alternatives", "replace", "replaces", "replaced", "replacing",
    "compared", "than", "lack", "absence"))


_LETTERS = re.compile(r"[a-z]+")


def _negated_in_place(d: Document, c: Candidate, title_end: int) -> bool:
    """Negated by its own words: "cache-free", "training-free", "tuning free", or a title
    "No Cache, No Problem: …" (not "No Token Left Behind", and never a task or metric: those
    a paper addresses and measures)."""
    return (d.text[c.span.end:c.span.end + 5].lower() in ("-free", " free")
            or (c.span.start < title_end and c.type not in ("Task", "Metric")
                and TITLE_NEGATION.search(d.text[:c.span.start]) is not None
                and not LEFT_BEHIND.match(d.text, c.span.end)))


def _not_used(d: Document, chosen: list[Candidate]) -> list[str | None]:
    """Per candidate: why this occurrence is not a use ("negated", "contrasted", "prior-work")
    or None. Tasks and metrics are what a paper addresses and measures: never discounted."""
    out: list[str | None] = []
    title_end = len(d.paper.title) if d.paper.title else -1
    # Per sentence, once: is it about prior work, and from where on does it speak of it.
    prior_from: dict[int, int | None] = {}
    background: dict[int, int] = {}  # sentence start → end of its background subject
    for k, c in enumerate(chosen):
        reason = None
        if _negated_in_place(d, c, title_end):
            reason = "negated"
        elif c.type not in ("Task", "Metric") and c.span.start > title_end:
            sentence = d.sentence_of(c.span.start)
            if sentence.start not in prior_from:
                text = d.text[sentence.start:sentence.end]
                found = None if PRIOR_WORK_SENTENCE.search(text) is None else sentence.start
                if found is None:
                    m = PRIOR_WORK_BEFORE.search(text)
                    found = None if m is None else sentence.start + m.end()
                prior_from[sentence.start] = found
                background[sentence.start] = sentence.start + _background_end(text)
            window = d.text[max(sentence.start, c.span.start - 80):c.span.start]
            near = _negated_near(d, c, window, sentence.end)
            if near:
                reason = near
            elif k and out[k - 1] and COORDINATION.fullmatch(
                    d.text[chosen[k - 1].span.end:c.span.start]):
                reason = out[k - 1]  # "without caching or quantization"
            elif c.span.end <= background[sentence.start]:
                reason = "background"
            elif (prior_from[sentence.start] is not None
                  and prior_from[sentence.start] <= c.span.start) or (
                    "nspired" in window and INSPIRED_BY.search(
                        d.text[sentence.start:c.span.start])):
                reason = "prior-work"
        out.append(reason)
    return out


def _negated_near(d: Document, c: Candidate, window: str, sentence_end: int) -> str | None:
    """"negated" or "contrasted" by the words just before the occurrence (``window``: up to 80
    characters of its sentence), or by what its sentence says of it after; else None."""
    # Most windows hold no cue word at all: a set lookup spares them the big pattern.
    words = _LETTERS.findall(window.lower())
    cue = NOT_USED_BEFORE.search(window) if not _CUE_WORDS.isdisjoint(words) else None
    if cue:
        return "contrasted" if CONTRAST_CUE.match(cue.group(0).strip()) else "negated"
    if ("not" in words and NEGATED_RELIANCE.search(window)) or REJECTED_AFTER.match(
            d.text, c.span.end, sentence_end):
        return "negated"
    return None


def _background_end(sentence: str) -> int:
    """Where the subject of a background sentence ends ("LLMs have shown …": before "have";
    "Recent advances in X, …": at the comma), or 0 for a sentence about this paper.

    >>> sentence = "Large language models have shown strong reasoning abilities."
    >>> sentence[:_background_end(sentence)]
    'Large language models have shown'
    >>> _background_end("We show that RL has achieved little."), _background_end("RL works.")
    (0, 0)
    """
    m = BACKGROUND_VERB.match(sentence) or BACKGROUND_OPENER.match(sentence)
    return m.end() if m else 0

