"""Tokens: kg's regex tokenizer, registered with spaCy as ``kg.tokenizer.v1``.

kg's pipeline (``kg.extract.components``) makes its Docs with it, and the vocabulary's phrases
are split the same way, so "ResNet-18" in a label and in a text are the same tokens.

>>> split_words("LLaMA-2-7B, e.g. 6.66")[0]
['LLaMA', '-', '2', '-', '7B', ',', 'e.g.', '6.66']
"""

from __future__ import annotations

import re

import spacy
from spacy.tokens import Doc

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


class KgTokenizer:
    """kg's tokenizer as a spaCy tokenizer: ``split_words`` turned into a ``Doc``.

    Registered as ``kg.tokenizer.v1``, so a spaCy config (``[nlp.tokenizer]``) and a trained
    pipeline shipped with kg rebuild it by name. It has no state to save.
    """

    def __init__(self, vocab) -> None:
        self.vocab = vocab

    def __call__(self, text: str) -> Doc:
        words, spaces = split_words(text)
        return Doc(self.vocab, words=words, spaces=spaces)

    def pipe(self, texts, batch_size: int = 1000):
        for text in texts:
            yield self(text)

    # Nothing to serialise: spaCy's Language.to_disk/from_disk call these.
    def to_disk(self, path, **kwargs) -> None:
        pass

    def from_disk(self, path, **kwargs) -> KgTokenizer:
        return self

    def to_bytes(self, **kwargs) -> bytes:
        return b""

    def from_bytes(self, data: bytes, **kwargs) -> KgTokenizer:
        return self


def register_tokenizer() -> None:
    """Register ``kg.tokenizer.v1`` with spaCy (idempotent)."""
    if "kg.tokenizer.v1" not in spacy.registry.tokenizers.get_all():
        spacy.registry.tokenizers.register("kg.tokenizer.v1",
                                           func=lambda: lambda nlp: KgTokenizer(nlp.vocab))
