"""The task-phrase rule: task-shaped noun phrases the vocabulary lacks.

>>> from kg.model import Paper
>>> doc = Document.of(Paper(id="p", abstract="We study talking portrait synthesis."))
>>> [c.span.text for c in task_phrases(doc, [])]
['talking portrait synthesis']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kg.extract.document import Document
from kg.extract.words import TASK_HEAD, TASK_MODIFIERS, TASK_STOP
from kg.model import Candidate

# Participles that name a kind of task, not a clause: "unsupervised part segmentation".
SUPERVISED = re.compile(r"(?:un|self-|semi-|weakly-|weakly\s)?supervised|federated|distributed")


def task_phrases(d: Document, prior: Sequence[Candidate]) -> list[Candidate]:
    """Task-shaped noun phrases the vocabulary lacks: "talking portrait synthesis",
    "causal effect estimation" (1–2 modifiers + a task head), never over a vocabulary match."""
    taken = [(c.span.start, c.span.end) for c in prior]
    out: list[Candidate] = []
    title = d.paper.title or ""
    long_words = [w for w in re.findall(r"[A-Za-z][\w\-]*", title) if len(w) > 3]
    if long_words and len(title.lower()) == len(title) and \
            sum(w[0].isupper() for w in long_words) >= 0.8 * len(long_words):
        # A Title Case title ("Zero-Shot Audio Editing"): its phrases read in lower case.
        text = title.lower() + d.text[len(title):]
    else:
        text = d.text
    last_end = 0
    for head in TASK_HEAD.finditer(text):
        m = TASK_MODIFIERS.search(text, max(last_end, head.start() - 60), head.start())
        if m is None:
            continue
        last_end = head.end()
        words = m.group(0).split()
        # (a leading participle describes the task: "enable localized watermark detection")
        while words and (words[0] in TASK_STOP or words[0].endswith("ly") or (
                words[0].endswith("ed") and not SUPERVISED.fullmatch(words[0]))):
            words.pop(0)
        if not words or any(w in TASK_STOP or (w.endswith(("ly", "ed")) and
                                               not SUPERVISED.fullmatch(w)) for w in words):
            continue
        if len(words) == 2 and "-" in words[0]:  # "human-level video reasoning": an adjective
            words.pop(0)
        # English compounds take singular, non-verbal modifiers: "enhances recognition" and
        # "generating reasoning" are clauses, "time series forecasting" is a compound.
        if len(words[-1]) < 2 or words[-1].endswith("ing") or (
            words[-1].endswith("s") and not words[-1].endswith(("ics", "ss", "us", "series"))
        ):
            continue
        start = m.end() - len(" ".join(words)) - (len(m.group(0)) - len(m.group(0).rstrip()))
        end = head.end()
        if any(s < end and start < e for s, e in taken):
            continue
        out.append(Candidate(d.span(start, end), "Task", "task-phrase", None, 0.6))
    return out


