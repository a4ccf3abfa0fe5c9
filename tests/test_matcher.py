"""The vocabulary's phrase matcher: what it matches, and that it matches exactly what spaCy's
PhraseMatcher (which it replaced) matched, in the same order."""

from __future__ import annotations

import pytest
from conftest import SEED

from kg.extract.nlp import split_words
from kg.extract.vocabulary import PhraseTable, VocabularyMatcher, phrases, string_hash
from kg.model import Concept
from kg.vocab import Vocabulary, load_vocabulary


def _vocab(*concepts: tuple[str, str, tuple[str, ...]]) -> Vocabulary:
    out = {}
    for slug, pref, alts in concepts:
        iri = f"https://w3id.org/mlkg/concept/technique/{slug}"
        out[iri] = Concept(iri, "Technique", pref, alts)
    return Vocabulary(out)


def _found(vocab: Vocabulary, text: str) -> list[tuple[str, int, str]]:
    """(mention, start, concept slug) of the vocabulary candidates, in the matcher's order."""
    out = [(c.span.text, c.span.start, c.concept.rsplit("/", 1)[-1])
           for c in VocabularyMatcher(vocab)(text, *split_words(text))]
    assert all(text[start:start + len(mention)] == mention for mention, start, _ in out)
    return out


def test_labels_match_in_any_case_but_acronyms_only_in_their_own():
    vocab = _vocab(("lipschitz", "Lipschitz continuity", ()), ("rl", "RL", ()))
    found = _found(vocab, "LIPSCHITZ Continuity helps rl, and RL needs lipschitz continuity.")
    # The case-insensitive matches come first, then the case-sensitive ones.
    assert found == [("LIPSCHITZ Continuity", 0, "lipschitz"),
                     ("lipschitz continuity", 44, "lipschitz"), ("RL", 35, "rl")]


def test_plural_hyphen_and_space_variants_of_a_label_match():
    vocab = _vocab(("kv-cache", "KV-cache compression", ()), ("vit-l", "ViT-L", ()))
    text = ("KV cache compression, KVcache compressions and kv-cache compression; "
            "ViTL, ViT L and ViT-Ls but not vit-l")
    assert [m for m, _, _ in _found(vocab, text)] == [
        "KV cache compression", "KVcache compressions", "kv-cache compression",
        "ViTL", "ViT L", "ViT-Ls"]


def test_overlapping_labels_all_match_by_start_then_shortest_first():
    vocab = _vocab(("llm", "large language model", ()), ("lm", "language model", ()),
                   ("large-language", "large language", ()), ("model", "model", ()))
    assert _found(vocab, "A large language model.") == [
        ("large language", 2, "large-language"), ("large language model", 2, "llm"),
        ("language model", 8, "lm"), ("model", 17, "model")]


def test_a_label_never_matches_across_a_line_break_or_a_double_space():
    vocab = _vocab(("llm", "large language model", ()))
    assert _found(vocab, "large\nlanguage model, large  language model") == []
    # Whitespace tokens still count for the offsets of what follows them.
    assert _found(vocab, "\n\n  large language model") == [("large language model", 4, "llm")]


def test_one_label_of_two_concepts_yields_both_in_vocabulary_order():
    vocab = _vocab(("a", "feature caching", ()), ("b", "caching", ("feature caching",)))
    assert _found(vocab, "feature caching") == [
        ("feature caching", 0, "a"), ("feature caching", 0, "b"), ("caching", 8, "b")]


# --------------------------------------------------- the PhraseMatcher it replaced

def _phrasematcher(keys: dict[str, list]):
    """The matching kg did before: one spaCy PhraseMatcher per kind, fed in sorted key order,
    over spaCy Docs of kg's tokens."""
    import spacy
    from spacy.matcher import PhraseMatcher
    from spacy.tokens import Doc

    strings = spacy.blank("en").vocab  # English lexical attributes: LOWER

    def make_doc(text: str) -> Doc:
        words, spaces = split_words(text)
        return Doc(strings, words=words, spaces=spaces)

    ci = PhraseMatcher(strings, attr="LOWER")
    cs = PhraseMatcher(strings, attr="ORTH")
    for key in sorted(keys):
        (cs if key.startswith("cs:") else ci).add(key, [make_doc(key[3:])])

    def matches(text: str) -> list[tuple[int, int, object]]:
        doc = make_doc(text)
        return [(start, end, label) for match_id, start, end in [*ci(doc), *cs(doc)]
                for label in keys[strings.strings[match_id]]]

    return matches


def _table(keys: dict[str, list]):
    table = PhraseTable(keys)
    return lambda text: [(start, end, label) for start, end, labels in
                         table.matches(split_words(text)[0]) for label in labels]


@pytest.fixture(scope="module")
def vocabulary_keys():
    return phrases(load_vocabulary())


def test_the_whole_vocabulary_matches_as_spacys_phrase_matcher_did(vocabulary_keys):
    reference = _phrasematcher(vocabulary_keys)
    table = _table(vocabulary_keys)
    forms = [key[3:] for key in sorted(vocabulary_keys)]
    texts = [SEED.read_text(encoding="utf-8"),
             "; ".join(forms), " ".join(forms), " ".join(forms).upper(),
             "\n".join(forms), "  ".join(f.lower() for f in forms),
             "We train Visual AutoRegressive modeling (VAR) and visual autoregressive "
             "modelings, scored by CLIP Score and clip scores, with 1.58 bit LLMs."]
    for text in texts:
        expected = reference(text)
        assert expected, text[:80]
        assert table(text) == expected, text[:80]


def test_forms_sharing_their_words_come_in_phrase_matcher_order():
    # Case variants of one phrase are one token sequence to a LOWER matcher; PhraseMatcher
    # reported them in its hash map's order, 2 to 7 at a time (the map grows at 4).
    keys = {f"ci:{variant} {n}": [f"{variant} {n}"] for n in range(60)
            for variant in ("foo bar", "Foo bar", "foo Bar", "FOO bar", "Foo Bar", "FOO BAR",
                            "fOO bar")[: 2 + n % 6]}
    reference = _phrasematcher(keys)
    table = _table(keys)
    text = " , ".join(f"foo bar {n}" for n in range(60))
    assert table(text) == reference(text)
    assert len(reference(text)) == len(keys)


def test_the_matchers_string_hash_is_spacys(vocabulary_keys):
    # PhraseMatcher's order among forms sharing their words follows this hash.
    from spacy.strings import hash_string

    assert all(string_hash(key) == hash_string(key) for key in vocabulary_keys)
    assert string_hash("é 中文, eight+ bytes") == hash_string("é 中文, eight+ bytes")
