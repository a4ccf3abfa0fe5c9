"""Resolution rules, on candidates built by hand so each test exercises exactly one rule."""

from __future__ import annotations

from kg.model import Candidate, Extraction, Paper, Span
from kg.resolve import resolve


def _extraction(paper: Paper, *found: tuple[str, str]) -> Extraction:
    """Candidates for each (surface, type), at the surface's next occurrence in the text."""
    candidates, at = [], 0
    for surface, type_ in found:
        start = paper.text.index(surface, at)
        at = start + len(surface)
        candidates.append(Candidate(Span(surface, start, at), type_, "test"))
    return Extraction(paper, tuple(candidates), ())


def test_types_never_merge():
    text = "We present SPACE, a benchmark. SPACE models are small."
    paper = Paper("a", text)
    other = Paper("b", "We evaluate on SPACE.")
    corpus = resolve([_extraction(paper, ("SPACE", "Dataset"), ("SPACE", "Model")),
                      _extraction(other, ("SPACE", "Dataset"))])
    assert {(e.id, e.type, e.name) for e in corpus.entities.values()} == {
        ("dataset/space", "Dataset", "SPACE"), ("model/space", "Model", "SPACE")}
    first, second = corpus.results
    assert [eid for eid, _ in first.mentions] == ["dataset/space", "model/space"]
    assert [eid for eid, _ in second.mentions] == ["dataset/space"]


def test_same_name_and_type_in_two_papers_is_one_entity():
    corpus = resolve([_extraction(Paper("a", "We use FooNet."), ("FooNet", "Model")),
                      _extraction(Paper("b", "FooNet is fast."), ("FooNet", "Model"))])
    assert list(corpus.entities) == ["model/foonet"]
