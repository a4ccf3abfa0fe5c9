"""Linking and analysis (kg.analysis) on the real pipeline over the demo corpus and small files."""

from __future__ import annotations

import doctest
import math

import networkx as nx
import pytest
from conftest import paper_with

from kg import analysis
from kg.analysis import (
    AmbiguousPaperError,
    NotFoundError,
    analysis_index,
    clusters,
    cooccurrence,
    entity_users,
    find_paper,
    paper_entity_graph,
    related,
    shared,
    technique_counts,
    top_shared_techniques,
)
from kg.errors import KgError
from kg.pipeline import run
from kg.vocab import load_vocabulary

CACHES = """\
We propose SnapKV, a method that compresses the KV cache of LLaMA-2 models during long-context \
inference on the LongBench benchmark.

We accelerate diffusion transformers with prefix caching of attention outputs and evaluate \
image generation on ImageNet.

We study graph neural networks for molecule property prediction on QM9.
"""


@pytest.fixture(scope="module")
def caches_corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("caches") / "caches.txt"
    path.write_text(CACHES, encoding="utf-8")
    return run([path])


def _text_of(corpus, paper_id: str) -> str:
    return analysis_index(corpus).papers[paper_id].paper.text


def _assert_evidence_is_paper_text(corpus, paper_id: str, span) -> None:
    assert _text_of(corpus, paper_id)[span.start:span.end] == span.text


# ------------------------------------------------------------------ related


def test_quantization_paper_is_most_related_to_model_folding_through_llama(seed_corpus):
    rrs = paper_with(seed_corpus, "Rotated Runtime Smooth").paper
    folding = paper_with(seed_corpus, "We introduce model folding").paper
    results = related(seed_corpus, rrs.id)
    assert results[0].paper.id == folding.id
    llama = next(s for s in results[0].shared if s.key == "model/llama")
    assert llama.type == "Model" and llama.via == () and llama.other_via == ()
    # The evidence is the sentence naming LLaMA in each paper, at its real offsets.
    assert "LLaMA and Qwen" in llama.evidence.text
    assert "LLaMA-7B" in llama.other_evidence.text
    _assert_evidence_is_paper_text(seed_corpus, rrs.id, llama.evidence)
    _assert_evidence_is_paper_text(seed_corpus, folding.id, llama.other_evidence)


def test_model_folding_links_to_lotos_through_resnet18(seed_corpus):
    folding = paper_with(seed_corpus, "We introduce model folding").paper
    lotos = paper_with(seed_corpus, "we introduce LOTOS").paper
    by_id = {r.paper.id: r for r in related(seed_corpus, folding.id, n=20)}
    assert lotos.id in by_id
    names = {s.name for s in by_id[lotos.id].shared}
    assert "ResNet-18" in names


def test_related_scores_sum_idf_weights_and_are_sorted(seed_corpus):
    rrs = paper_with(seed_corpus, "Rotated Runtime Smooth").paper
    index = analysis_index(seed_corpus)
    results = related(seed_corpus, rrs.id, n=50)
    assert results and rrs.id not in {r.paper.id for r in results}
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    for r in results:
        assert r.score == pytest.approx(sum(s.weight for s in r.shared))
        for s in r.shared:
            if not s.via and not s.other_via:  # direct on both sides: the full IDF weight
                df = len(index.postings[s.key])
                assert s.weight == pytest.approx(
                    math.log(len(seed_corpus) / df) * analysis.TYPE_WEIGHTS[s.type])


def test_rare_shared_entity_weighs_more_than_a_common_one(seed_corpus):
    index = analysis_index(seed_corpus)
    # LLaMA appears in two abstracts, Transformer in at least four (read the demo corpus).
    assert len(index.postings["model/llama"]) == 2
    assert len(index.postings["model/transformer"]) >= 4
    assert index.weight("model/llama") > index.weight("model/transformer")


def test_related_limits_results_to_n(seed_corpus):
    rrs = paper_with(seed_corpus, "Rotated Runtime Smooth").paper
    assert len(related(seed_corpus, rrs.id, n=1)) == 1
    assert related(seed_corpus, rrs.id, n=3) == related(seed_corpus, rrs.id, n=50)[:3]


def test_top_n_is_a_prefix_of_the_full_ranking_for_every_paper(seed_corpus):
    # related() stops scoring early once no paper can enter the top n; that must not change it.
    for result in seed_corpus.results:
        full = related(seed_corpus, result.paper.id, n=len(seed_corpus))
        for n in (1, 2, 3, 5):
            assert related(seed_corpus, result.paper.id, n=n) == full[:n]


def test_papers_share_a_broader_concept_through_different_narrower_ones(caches_corpus):
    snapkv, prefix, gnn = (r.paper for r in caches_corpus.results)
    (result,) = related(caches_corpus, snapkv.id)
    assert result.paper.id == prefix.id
    (caching,) = result.shared
    assert caching.name == "caching"
    assert caching.via == ("KV cache",) and caching.other_via == ("prefix caching",)
    assert "KV cache" in caching.evidence.text and "prefix caching" in caching.other_evidence.text
    # Reached by inheritance on both sides: half the weight of a direct use.
    assert caching.weight == pytest.approx(math.log(3 / 2) * analysis.INHERITED)
    # The graph-network paper shares nothing with SnapKV (only one result above, and here).
    assert snapkv.id not in {r.paper.id for r in related(caches_corpus, gnn.id)}


# ------------------------------------------------------------------ finding papers


def test_paper_is_found_by_id_prefix_and_title_words(seed_corpus):
    rrs = paper_with(seed_corpus, "Rotated Runtime Smooth").paper
    assert find_paper(seed_corpus, rrs.id) == rrs
    assert find_paper(seed_corpus, rrs.id[:8]) == rrs
    assert find_paper(seed_corpus, "rotated runtime") == rrs


def test_ambiguous_paper_reference_lists_the_candidates(seed_corpus):
    with pytest.raises(AmbiguousPaperError) as err:
        find_paper(seed_corpus, "large")
    assert len(err.value.candidates) >= 2
    for paper in err.value.candidates:
        assert paper.id in str(err.value)
        assert "large" in (paper.label + (paper.title or "")).casefold()


def test_unknown_paper_is_a_kg_error_naming_the_reference(seed_corpus):
    with pytest.raises(NotFoundError, match="no paper matches 'zzz-no-such'") as err:
        related(seed_corpus, "zzz-no-such")
    assert isinstance(err.value, KgError)


# ------------------------------------------------------------------ shared


def test_shared_caching_finds_fastercache_with_evidence(seed_corpus):
    faster = paper_with(seed_corpus, "FasterCache").paper
    uses = shared(seed_corpus, "caching")
    assert faster.id in {u.paper.id for u in uses}
    vocab = load_vocabulary()
    caching = vocab.by_label("Technique", "caching")
    allowed = {caching, *vocab.descendants(caching)}
    for use in uses:
        assert use.uses
        for u in use.uses:
            assert u.entity.concept in allowed
            assert u.direct == (u.entity.concept == caching)
            _assert_evidence_is_paper_text(seed_corpus, use.paper.id, u.evidence)


def test_shared_includes_papers_using_only_a_narrower_concept(caches_corpus):
    snapkv, prefix, _ = (r.paper for r in caches_corpus.results)
    uses = shared(caches_corpus, "caching")
    assert [u.paper.id for u in uses] == [snapkv.id, prefix.id]
    assert [(x.entity.name, x.direct) for x in uses[0].uses] == [("KV cache", False)]
    assert [(x.entity.name, x.direct) for x in uses[1].uses] == [("prefix caching", False)]


def test_shared_resnet_reaches_both_resnet18_papers(seed_corpus):
    lotos = paper_with(seed_corpus, "we introduce LOTOS").paper
    folding = paper_with(seed_corpus, "We introduce model folding").paper
    uses = {u.paper.id: u for u in shared(seed_corpus, "resnet")}
    assert {lotos.id, folding.id} <= set(uses)
    assert [(x.entity.name, x.direct) for x in uses[lotos.id].uses] == [("ResNet-18", False)]


def test_shared_matches_aliases_case_insensitively(seed_corpus):
    assert shared(seed_corpus, "llama") == shared(seed_corpus, "LLaMA")
    rrs = paper_with(seed_corpus, "Rotated Runtime Smooth").paper
    # "RRS" is an alias of the proposed method.
    assert [u.paper.id for u in shared(seed_corpus, "rrs")] == [rrs.id]


def test_known_concept_no_paper_uses_gives_no_papers(seed_corpus):
    # No demo abstract mentions a KV cache.
    assert shared(seed_corpus, "KV cache") == []


def test_unknown_technique_suggests_close_names(seed_corpus):
    with pytest.raises(NotFoundError) as err:
        shared(seed_corpus, "cachng")
    assert "caching" in err.value.suggestions
    assert "did you mean" in str(err.value) and "caching" in str(err.value)


# ------------------------------------------------------------------ techniques and clusters


def test_technique_counts_are_the_papers_kg_shared_lists(seed_corpus):
    counts = technique_counts(seed_corpus)
    assert counts
    for entity, count in counts:
        assert entity.type in analysis.TECHNIQUE_TYPES
        assert count == len(shared(seed_corpus, entity.id)) == len(shared(seed_corpus,
                                                                          entity.name))
    assert [c for _, c in counts] == sorted((c for _, c in counts), reverse=True)
    with_mentions = dict(technique_counts(seed_corpus, include_mentions=True))
    for entity, count in with_mentions.items():
        assert count == len(shared(seed_corpus, entity.id, include_mentions=True))


def test_a_broader_technique_counts_the_papers_of_narrower_ones(seed_corpus):
    """"model compression" counts the papers using quantization or pruning too, as
    `kg shared "model compression"` lists them (one paper names it, four reach it)."""
    users = entity_users(seed_corpus)["technique/model-compression"]
    listed = shared(seed_corpus, "model compression")
    assert users == tuple(u.paper.id for u in listed)
    assert sum(any(x.direct for x in u.uses) for u in listed) < len(users)
    counts = {e.id: c for e, c in technique_counts(seed_corpus)}
    assert counts["technique/model-compression"] == len(users) == 4


def test_top_shared_techniques_keeps_those_in_two_or_more_papers(seed_corpus):
    top = top_shared_techniques(seed_corpus, 5)
    assert len(top) <= 5
    assert top == [(e, c) for e, c in technique_counts(seed_corpus) if c >= 2][:5]


def test_cooccurrence_counts_pairs_once_per_paper(seed_corpus):
    faster = paper_with(seed_corpus, "FasterCache")
    pairs = {(a.id, b.id): c for a, b, c in cooccurrence(seed_corpus)}
    # FasterCache proposes FasterCache and uses classifier-free guidance (CFG).
    assert pairs[("method/fastercache", "technique/classifier-free-guidance")] >= 1
    assert all(a < b for a, b in pairs)
    for (a, b), count in pairs.items():
        assert count == sum(a in r.used_ids and b in r.used_ids for r in seed_corpus.results)
    assert "method/fastercache" in faster.entity_ids


def test_clusters_are_deterministic_disjoint_and_labelled_by_shared_terms(seed_corpus):
    groups = clusters(seed_corpus, seed=0)
    assert groups == clusters(seed_corpus, seed=0)
    assert groups
    seen: set[str] = set()
    index = analysis_index(seed_corpus)
    for group in groups:
        ids = {p.id for p in group.papers}
        assert len(ids) >= 2 and not ids & seen
        seen |= ids
        assert group.terms
        for name, score in group.terms:
            keys = [k for k, (n, _) in index.info.items() if n == name]
            users = {pid for k in keys for pid in index.postings.get(k, ()) if pid in ids}
            assert len(users) >= 2 and score > 0


def test_paper_entity_graph_is_bipartite(seed_corpus):
    graph = paper_entity_graph(seed_corpus)
    papers = {n for n, d in graph.nodes(data=True) if d["bipartite"] == 0}
    assert papers == {r.paper.id for r in seed_corpus.results}
    assert nx.is_bipartite(graph)
    assert all((u in papers) != (v in papers) for u, v in graph.edges)
    assert set(graph["model/llama"]) == {r.paper.id for r in seed_corpus.results
                                         if "model/llama" in r.entity_ids}


def test_index_is_built_once_per_corpus(seed_corpus):
    assert analysis_index(seed_corpus) is analysis_index(seed_corpus)


def test_docstring_examples_hold(seed_corpus):
    # The module docstring builds the demo corpus; function examples use it as ``corpus``.
    result = doctest.testmod(analysis, extraglobs={"corpus": seed_corpus},
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 10 and result.failed == 0


def test_one_shortener_keeps_the_term_marks_every_cut_and_respects_the_width():
    from kg.text import shorten

    text = "word " * 40 + "the instruction-tuned model wins " + "tail " * 40
    for width in (20, 40, 80, 160):
        short = shorten(text, width, around=["instruction-tuned"])
        assert len(short) <= width and "instruction-tuned" in short
        assert short.startswith("…") and short.endswith("…")
    assert shorten("no term here " * 10, 30, around=["absent"]).endswith("…")
    assert shorten("short", 30, around=["absent"]) == "short"
