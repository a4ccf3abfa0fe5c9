"""The ring layout of the older views (the demo graph, --technique, --paper): papers on a ring,
evenly spaced per side so their outward labels cannot touch, what they share inside it, the
chosen paper or technique at its centre. The pages themselves are opened in
test_viz_browser.py.
"""

from __future__ import annotations

from itertools import pairwise

from kg.viz import build_view
from kg.viz.layout import RING_GAP


def ring_sides(view) -> tuple[list[dict], list[dict]]:
    """The papers on the ring's right and left sides, each top to bottom."""
    papers = [n for n in view.nodes if n["group"] == "Paper" and "side" in n]
    return tuple(sorted((n for n in papers if n["side"] == s), key=lambda n: n["y"])
                 for s in ("r", "l"))


def inside(point: tuple[float, float], polygon: list[tuple[float, float]]) -> bool:
    """Ray casting: is ``point`` strictly inside ``polygon``?"""
    x, y = point
    hit = False
    for (x0, y0), (x1, y1) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        if (y0 > y) != (y1 > y) and x < x0 + (y - y0) * (x1 - x0) / (y1 - y0):
            hit = not hit
    return hit


def check_ring(view) -> None:
    right, left = ring_sides(view)
    assert len(right) - len(left) in (0, 1)
    assert all(n["x"] > 0 for n in right) and all(n["x"] < 0 for n in left)
    for side in (right, left):
        gaps = [b["y"] - a["y"] for a, b in pairwise(side)]
        # Equal heights apart (to rounding), never closer than the gap two labels need.
        assert not gaps or (min(gaps) >= RING_GAP - 1 and max(gaps) - min(gaps) <= 1)
    ring = [(n["x"], n["y"]) for n in right + left[::-1]]
    others = [n for n in view.nodes if "side" not in n]
    if len(ring) >= 3:
        assert all(inside((n["x"], n["y"]), ring) for n in others)


def test_the_demo_graph_puts_every_paper_on_the_ring_and_every_entity_inside(seed_corpus):
    view = build_view(seed_corpus)
    assert view.ring and view.centre == []
    right, left = ring_sides(view)
    assert len(right) + len(left) == len(view.papers) == 19
    check_ring(view)


def test_the_paper_view_has_the_paper_at_the_centre_and_its_related_papers_around(seed_corpus):
    center = seed_corpus.results[3].paper.id  # Rotated Runtime Smooth, related to several
    view = build_view(seed_corpus, paper=center, related=8)
    assert view.centre == [view.focus]
    middle = view.nodes[view.focus]
    assert (middle["x"], middle["y"]) == (0, 0) and "side" not in middle
    right, left = ring_sides(view)
    assert len(right) + len(left) == len(view.papers) - 1 >= 3
    check_ring(view)


def test_the_technique_view_has_the_technique_at_the_centre_and_narrower_ones_inside(
        seed_corpus):
    view = build_view(seed_corpus, technique="quantization")
    (middle,) = view.centre
    assert view.entities[str(middle)]["name"] == "quantization"
    assert (view.nodes[middle]["x"], view.nodes[middle]["y"]) == (0, 0)
    narrower = {view.entities[str(i)]["name"] for i in view.narrower}
    assert {"INT4 quantization", "activation quantization"} <= narrower
    check_ring(view)


def test_a_large_corpus_keeps_the_force_layout(seed_corpus, monkeypatch):
    import kg.viz.graph

    monkeypatch.setattr(kg.viz.graph, "RING_MAX_PAPERS", 10)
    view = build_view(seed_corpus)
    assert not view.ring and not any("side" in n for n in view.nodes)
