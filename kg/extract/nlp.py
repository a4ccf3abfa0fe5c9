"""Tokens: kg's regex tokenizer, and the optional trained spaCy pipeline.

The default pipeline needs no spaCy model and no spaCy ``Language``: its rules read the text,
its sentences (``kg.extract.text.sentence_offsets``) and these words, never a spaCy ``Doc``.
Running them inside ``spacy.blank("en")``, as kg first did, produced the same extractions and
cost every process 0.6 s to import spaCy and build the blank pipeline, and every paper a
``Doc`` nobody read. spaCy is imported only for ``--spacy-model``.

>>> split_words("LLaMA-2-7B, e.g. 6.66")[0]
['LLaMA', '-', '2', '-', '7B', ',', 'e.g.', '6.66']
"""

from __future__ import annotations

import re

TOKEN = re.compile(r"\d+(?:[.,]\d+)+|(?:e\.g|i\.e|etc|et al|vs|cf|Fig|Eq|resp|approx|w\.r\.t)\."
                    r"|[^\W_]+|\S")


PIECE = re.compile(TOKEN.pattern + r"|\s+")


def split_words(text: str) -> tuple[list[str], list[bool]]:
    """The tokens of ``text`` as spaCy represents them: the words, and whether each is
    followed by one space.

    Splits at every non-alphanumeric character, keeping decimals and a few abbreviations, so
    hyphens and dots inside names ("ResNet-18" → ResNet - 18) split the same way in the
    vocabulary's phrases and in the text. One space after a word is that word's trailing
    space; any other whitespace is a token of its own (so a phrase never matches across a line
    break or a double space).

    >>> split_words("BERT-base  e.g. 6.66")
    (['BERT', '-', 'base', ' ', 'e.g.', '6.66'], [False, False, True, False, True, False])
    """
    words: list[str] = []
    spaces: list[bool] = []
    for piece in PIECE.findall(text):
        if piece[0].isspace():
            if words and not spaces[-1] and piece[0] == " ":
                spaces[-1] = True
                piece = piece[1:]
            if not piece:
                continue
        words.append(piece)
        spaces.append(False)
    return words, spaces


def load_trained(name: str):
    """An installed trained spaCy pipeline (its NER may add candidates), or a clear KgError."""
    import spacy

    from kg.errors import KgError

    try:
        return spacy.load(name, disable=["parser", "lemmatizer"])
    except OSError as exc:
        raise KgError(f"spaCy pipeline {name!r} is not installed ({exc}); install its package or "
                      "drop --spacy-model (the default pipeline needs no model)") from exc
