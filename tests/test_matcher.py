"""The vocabulary's phrase matcher (spaCy's PhraseMatcher over kg's tokens): what it matches,
and that its candidates come in canonical order whatever order the matchers report them in."""

from __future__ import annotations

from conftest import SEED

from kg.extract import pipeline, vocabulary
from kg.extract.vocabulary import VocabularyMatcher, canonical
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
    nlp = pipeline(vocab)
    matcher = nlp.get_pipe("kg_vocabulary").matcher
    out = [(c.span.text, c.span.start, c.concept.rsplit("/", 1)[-1])
           for c in matcher(nlp.make_doc(text))]
    assert all(text[start:start + len(mention)] == mention for mention, start, _ in out)
    return out


def test_labels_match_in_any_case_but_acronyms_only_in_their_own():
    vocab = _vocab(("lipschitz", "Lipschitz continuity", ()), ("rl", "RL", ()))
    found = _found(vocab, "LIPSCHITZ Continuity helps rl, and RL needs lipschitz continuity.")
    assert found == [("LIPSCHITZ Continuity", 0, "lipschitz"), ("RL", 35, "rl"),
                     ("lipschitz continuity", 44, "lipschitz")]


def test_plural_hyphen_and_space_variants_of_a_label_match():
    vocab = _vocab(("kv-cache", "KV-cache compression", ()), ("vit-l", "ViT-L", ()))
    text = ("KV cache compression, KVcache compressions and kv-cache compression; "
            "ViTL, ViT L and ViT-Ls but not vit-l")
    assert [m for m, _, _ in _found(vocab, text)] == [
        "KV cache compression", "KVcache compressions", "kv-cache compression",
        "ViTL", "ViT L", "ViT-Ls"]


def test_overlapping_labels_all_match_in_canonical_order():
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


def test_one_label_of_two_concepts_yields_both_by_concept():
    vocab = _vocab(("b", "feature caching", ()), ("a", "caching", ("feature caching",)))
    assert _found(vocab, "feature caching") == [
        ("feature caching", 0, "a"), ("feature caching", 0, "b"), ("caching", 8, "a")]


def test_case_variants_of_one_form_match_once_per_concept():
    # "CLIP Score" and "CLIP score" are one token sequence to the LOWER matcher.
    vocab = _vocab(("clip-score", "CLIP Score", ("CLIP score", "clip score")))
    assert _found(vocab, "the CLIP SCORE") == [("CLIP SCORE", 4, "clip-score")]


def test_the_candidates_are_in_canonical_order_on_the_whole_vocabulary():
    nlp = pipeline()
    matcher = VocabularyMatcher(load_vocabulary(), nlp)
    text = SEED.read_text(encoding="utf-8")
    found = matcher(nlp.make_doc(text))
    assert len(found) > 200
    # The two matchers (LOWER, then ORTH) report theirs one after the other.
    assert found == sorted(found, key=canonical)


def test_phrases_given_to_the_matcher_as_docs_need_them_match_as_if_all_were_given_first(
        seed_corpus, monkeypatch):
    nlp = pipeline()
    texts = [r.paper.text for r in seed_corpus.results] * 2  # the second time: all are in

    def found(lazy_docs: int) -> list:
        monkeypatch.setattr(vocabulary, "LAZY_DOCS", lazy_docs)
        matcher = VocabularyMatcher(load_vocabulary(), nlp)
        return [matcher(nlp.make_doc(text)) for text in texts]

    up_front = found(1)  # every phrase is given on the first Doc
    assert sum(map(len, up_front)) > 400
    assert found(10**6) == up_front  # each phrase when a Doc holds all its tokens
    assert found(5) == up_front  # five Docs that way, then all the rest
