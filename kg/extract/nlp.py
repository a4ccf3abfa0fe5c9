"""The spaCy pipeline: ``spacy.blank("en")``, a regex tokenizer and kg's components.

Components are registered once, by name, with ``Language.factory``; each pipeline gets its own
instances, and the vocabulary component is handed its labels by the extractor that built it. The
tokenizer is registered too and named in the config of ``spacy.blank``, so spaCy never builds
its English rule tokenizer (a quarter of a second of special cases and regexes) only to drop it.

>>> from kg.vocab import load_vocabulary
>>> build_pipeline(load_vocabulary()).pipe_names
['kg_sentences', 'kg_vocabulary']
"""

from __future__ import annotations

import re

from kg.extract.text import sentence_offsets
from kg.extract.vocabulary import VocabularyMatcher
from kg.vocab import Vocabulary

TOKEN = re.compile(r"\d+(?:[.,]\d+)+|(?:e\.g|i\.e|etc|et al|vs|cf|Fig|Eq|resp|approx|w\.r\.t)\."
                    r"|[^\W_]+|\S")


PIECE = re.compile(TOKEN.pattern + r"|\s+")


class RegexTokenizer:
    """Splits at every non-alphanumeric character (keeping decimals and a few abbreviations).

    Five times faster than spaCy's rule tokenizer on abstracts, and it splits hyphens and
    dots inside names ("ResNet-18" → ResNet - 18) the same way in patterns and text, which is
    what the phrase matcher needs.

    >>> import spacy
    >>> [t.text for t in RegexTokenizer(spacy.blank("en").vocab)("LLaMA-2-7B, e.g. 6.66")]
    ['LLaMA', '-', '2', '-', '7B', ',', 'e.g.', '6.66']
    """

    def __init__(self, vocab) -> None:
        self.vocab = vocab

    def __call__(self, text: str):
        from spacy.tokens import Doc

        words, spaces = split_words(text)
        doc = Doc(self.vocab, words=words, spaces=spaces)
        doc.user_data["kg_text"] = text  # Doc.text re-joins every token; keep the string
        # The vocabulary component matches on these (no Token objects, no attribute arrays).
        doc.user_data["kg_words"] = (words, spaces)
        return doc


def split_words(text: str) -> tuple[list[str], list[bool]]:
    """The tokens of ``text`` as spaCy represents them: the words, and whether each is
    followed by one space.

    One space after a word is that word's trailing space; any other whitespace is a token of
    its own (so a phrase never matches across a line break or a double space).

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


def _sentences(doc):
    """Sentence boundaries as character offsets (a regex over the text: no Token objects)."""
    doc.user_data["kg_sentences"] = sentence_offsets(doc.user_data["kg_text"])
    return doc


def _register_components() -> None:
    from spacy.language import Language
    from spacy.util import registry

    if "kg_vocabulary" in Language.factories:
        return
    # A registered tokenizer is a function returning a factory that takes the nlp object.
    registry.tokenizers.register("kg_regex_tokenizer",
                                 func=lambda: lambda nlp: RegexTokenizer(nlp.vocab))
    Language.component("kg_sentences", func=_sentences)
    Language.factory("kg_vocabulary", func=lambda nlp, name: VocabularyMatcher())


def build_pipeline(vocab: Vocabulary):
    """A blank English pipeline with kg's tokenizer and components, matching ``vocab``."""
    import spacy

    _register_components()
    nlp = spacy.blank("en", config={"nlp": {"tokenizer": {"@tokenizers": "kg_regex_tokenizer"}}})
    nlp.add_pipe("kg_sentences")
    nlp.add_pipe("kg_vocabulary").set_labels(vocab)
    return nlp


def load_trained(name: str):
    """An installed trained spaCy pipeline (its NER may add candidates), or a clear KgError."""
    import spacy

    from kg.errors import KgError

    try:
        return spacy.load(name, disable=["parser", "lemmatizer"])
    except OSError as exc:
        raise KgError(f"spaCy pipeline {name!r} is not installed ({exc}); install its package or "
                      "drop --spacy-model (the default pipeline needs no model)") from exc

