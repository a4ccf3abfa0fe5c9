"""Label lookup below both the vocabulary and the extractor: the keys labels are compared by,
and the index of a vocabulary's labels that the matcher's rules and the resolver share.

It lives here, not in ``kg.extract``, so that ``kg.vocab`` can build it without importing the
extractor (which imported ``kg.vocab``: a circle).

>>> label_key("ResNet-18") == label_key("Resnet18") == label_key("resnet 18")
True
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only for annotations: kg.vocab imports this module
    from kg.vocab import Vocabulary

_SEPARATORS = re.compile(r"[\s\-_.]")


@functools.lru_cache(maxsize=1 << 16)  # called for every candidate, often on the same words
def label_key(text: str) -> str:
    """Lookup key that ignores case, spaces, hyphens and dots: ResNet-18 = resnet18.

    >>> label_key("ResNet-18") == label_key("Resnet18") == label_key("resnet 18")
    True
    """
    return _SEPARATORS.sub("", text.casefold())


def is_acronym_like(label: str) -> bool:
    """Short labels with two or more capitals are matched case-sensitively ("RL", "BLEU").

    >>> is_acronym_like("BERT"), is_acronym_like("GPT-4"), is_acronym_like("Lipschitz")
    (True, True, False)
    """
    letters = [ch for ch in label if ch.isalpha()]
    return len(letters) <= 5 and sum(ch.isupper() for ch in letters) >= 2


@dataclass(frozen=True, slots=True)
class Label:
    """One concept a label names, with the concept's type."""

    concept: str
    type: str


class LabelIndex:
    """Vocabulary lookups by label key: case-insensitive and (for acronyms) case-sensitive.

    >>> from kg.vocab import load_vocabulary
    >>> [label.type for label in LabelIndex(load_vocabulary()).lookup("ResNet-18")]
    ['Model']
    """

    def __init__(self, vocab: Vocabulary) -> None:
        self.ci: dict[str, list[Label]] = {}
        self.cs: dict[str, list[Label]] = {}
        for concept in sorted(vocab.concepts.values(), key=lambda c: c.iri):
            if not concept.matchable:
                continue
            for text in (concept.pref_label, *concept.alt_labels):
                target = self.cs if is_acronym_like(text) else self.ci
                key = label_key(text) if target is self.ci else _SEPARATORS.sub("", text)
                entry = Label(concept.iri, concept.type)
                bucket = target.setdefault(key, [])
                if entry not in bucket:
                    bucket.append(entry)

    def lookup(self, text: str) -> list[Label]:
        return self.cs.get(_SEPARATORS.sub("", text)) or self.ci.get(label_key(text)) or []

    def lookup_name(self, name: str) -> tuple[list[Label], int]:
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
