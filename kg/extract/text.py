"""Text helpers every rule shares: markup blanking, lookup keys, plurals, sentence offsets.

>>> match_key("KV caches") == match_key("KV-cache")
True
"""

from __future__ import annotations

import re

from kg.labels import label_key

LATEX_CMD = re.compile(r"\\[A-Za-z]+")
MARKUP = re.compile(r"[*{}$\\~^_]")


def clean_text(text: str) -> str:
    """Blank out LaTeX/Markdown markup *without changing length*, so offsets stay valid.

    >>> clean_text(r"we present \\textbf{FasterCache} and (**RRS**)")
    'we present         FasterCache  and (  RRS  )'
    """
    text = LATEX_CMD.sub(lambda m: " " * len(m.group(0)), text)
    # A link names no entity of the paper: "github.com/NJU-RL/ACORM" is not reinforcement learning.
    text = URL.sub(lambda m: " " * len(m.group(0)), text)
    return MARKUP.sub(" ", text)


URL = re.compile(r"(?:https?://|www\.)[^\s)\]}>]+")


def singular(word: str) -> str:
    """English plural → singular for the last word of a name, conservatively.

    >>> [singular(w) for w in ("strategies", "caches", "LLMs", "class", "GPUs", "analysis")]
    ['strategy', 'cache', 'LLM', 'class', 'GPU', 'analysis']
    """
    lower = word.lower()
    if len(word) > 2 and word.endswith("s") and word[:-1].isupper():  # LLMs, GPUs
        return word[:-1]
    if len(word) <= 3 or lower.endswith(("ss", "us", "is", "ics")):
        return word
    if lower.endswith("ies") and len(word) > 4:
        return word[:-3] + ("Y" if word[-3:].isupper() else "y")
    if lower.endswith(("sses", "xes")):
        return word[:-2]
    if lower.endswith("s"):
        return word[:-1]
    return word


def match_key(text: str) -> str:
    """The key under which surface forms are the same entity: case, spacing, hyphens and
    plurals ignored ("approaches" = "approach", "KV caches" = "KV-cache").

    >>> match_key("KV caches") == match_key("KV-cache"), match_key("approaches")
    (True, 'approach')
    """
    key = label_key(singular_phrase(text.strip()))
    return key[:-1] if key.endswith(("che", "she")) else key


def variants(label: str) -> set[str]:
    """The surface forms a label is matched in: hyphen/space variants and plurals."""
    forms = {label, label.replace("-", " "), label.replace("-", "")}
    out = set()
    for form in forms:
        form = " ".join(form.split())
        if not form:
            continue
        out.add(form)
        head, _, last = form.rpartition(" ")
        if last and last[-1].isalpha():
            prefix = head + " " if head else ""
            if last[-1] in "sxh" and not last.endswith(("ss", "th")):
                out.add(prefix + last + "es")
            elif last[-1] == "y" and len(last) > 1 and last[-2] not in "aeiou":
                out.add(prefix + last[:-1] + "ies")
            if not last.endswith("s"):
                out.add(prefix + last + "s")
            else:
                out.add(prefix + last + "es")
    return out


def singular_phrase(phrase: str) -> str:
    """The phrase with its last word made singular ("KV caches" → "KV cache")."""
    head, _, last = phrase.rpartition(" ")
    return (head + " " if head else "") + singular(last)


# A sentence ends at . ! ? (or a line break, e.g. after a title) followed by a capital, digit
# or bracket — not after the abbreviations that keep a sentence going.
# (Many OpenReview abstracts lose the space after a period: "this paradigm.Unlike existing")
SENTENCE_BREAK = re.compile(r"[.!?]\s+(?=[A-Z0-9(\[\"'])|\n+|(?<=[a-z]{2})[.!?](?=[A-Z][a-z])")
ABBREVIATION = re.compile(r"(?:\be\.g|\bi\.e|\bet al|\bvs|\bcf|\bFig|\bEq|\bresp|\bapprox)\.$")


def sentence_offsets(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, trailing spaces excluded.

    >>> t = "We use caching, e.g. KV caches. It works!\\nNext.Then on"
    >>> [t[s:e] for s, e in sentence_offsets(t)]
    ['We use caching, e.g. KV caches.', 'It works!', 'Next.', 'Then on']
    """
    out: list[tuple[int, int]] = []
    start = 0
    for m in SENTENCE_BREAK.finditer(text):
        if text[m.start()] == "." and ABBREVIATION.search(text, max(0, m.start() - 8),
                                                          m.start() + 1):
            continue
        end = m.start() + (1 if text[m.start()] in ".!?" else 0)
        if end > start:
            out.append((start, end))
        start = m.end()
    if start < len(text.rstrip()):
        out.append((start, len(text.rstrip())))
    return out or [(0, len(text))]

