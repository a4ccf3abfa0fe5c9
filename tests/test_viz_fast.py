"""The map's fast paths give exactly what the straightforward code gives: the related papers
of `kg related`, networkx's spring layout, the same overlap removal — to the last bit, since
the page must stay byte-identical. (Speed itself is measured by bench/viz.py, not asserted.)
"""

from __future__ import annotations

import gc
import math

import networkx as nx
import numpy as np
import pytest

from kg.analysis import related
from kg.analysis.related_all import related_all
from kg.errors import KgError
from kg.viz import write_viz
from kg.viz.map import build_map, place_techniques

ICLR = "openreview-2024/ICLR_cc_2024_Conference.tsv"


def related_rows(corpus, pid: str, n: int) -> list[tuple[str, float, list[str]]]:
    return [(r.paper.id, r.score, [s.name for s in r.shared]) for r in related(corpus, pid, n)]


@pytest.fixture(scope="module")
def iclr_slice(corpora_dir, tmp_path_factory):
    """The first 700 ICLR 2024 abstracts, through the real pipeline (read in place)."""
    from kg.pipeline import run

    lines = (corpora_dir / ICLR).read_text(encoding="utf-8").splitlines(keepends=True)[:700]
    path = tmp_path_factory.mktemp("iclr") / "iclr-700.tsv"
    path.write_text("".join(lines), encoding="utf-8")
    return run([path])


def test_the_map_lists_the_related_papers_kg_related_lists(seed_corpus):
    view = build_map(seed_corpus)
    for row in view.papers:
        want = [[next(i for i, p in enumerate(view.papers) if p["id"] == pid), round(score, 3),
                 names[:4]] for pid, score, names in related_rows(seed_corpus, row["id"], 5)]
        assert row["r"] == want


@pytest.mark.parametrize("n", [1, 5, 12])
def test_related_all_ranks_every_paper_of_a_conference_slice_as_related_does(iclr_slice, n):
    # Real abstracts: many ties on one shared rare term, inherited concepts dropped under
    # narrower shared ones, scores of three or more terms whose sum order shows in the bits.
    got = related_all(iclr_slice, n)
    assert got.keys() == {r.paper.id for r in iclr_slice}
    for result in iclr_slice:
        assert got[result.paper.id] == related_rows(iclr_slice, result.paper.id, n)


def _reference_layout(graph, communities, size):
    """kg.viz.map.place_techniques as first written: nx.spring_layout, (n, n, 2) arrays."""
    core = max(nx.connected_components(graph), key=lambda c: (len(c), sorted(c)))
    start = {}
    for k, members in enumerate(communities):
        angle = k * 2.399963
        radius = 0.15 + 0.6 * math.sqrt(k / max(1, len(communities)))
        for j, e in enumerate(members):
            start[e] = (radius * math.cos(angle) + 0.08 * math.sqrt(j) * math.cos(j * 2.399963),
                        radius * math.sin(angle) + 0.08 * math.sqrt(j) * math.sin(j * 2.399963))
    sub = graph.subgraph(sorted(core))
    pos = nx.spring_layout(sub, pos={e: start[e] for e in sub}, seed=7, iterations=150,
                           weight="weight", k=2.0 / math.sqrt(len(sub)), method="force")
    xs = [float(p[0]) for p in pos.values()]
    ys = [float(p[1]) for p in pos.values()]
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    scale = 60 * math.sqrt(len(graph)) / max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
    out = {e: ((float(p[0]) - cx) * scale, (float(p[1]) - cy) * scale) for e, p in pos.items()}
    crowd = {}
    for e in sorted(graph, key=lambda e: (-size[e], e)):
        if e in out:
            continue
        anchors = sorted(((graph[e][o]["weight"], o) for o in graph[e] if o in out),
                         key=lambda t: (-t[0], t[1]))
        anchor = anchors[0][1] if anchors else max(out, key=lambda o: (size[o], o))
        k = crowd[anchor] = crowd.get(anchor, -1) + 1
        r = size[anchor] + size[e] + 18 + 10 * math.sqrt(k)
        out[e] = (out[anchor][0] + r * math.cos(k * 2.399963 + 0.5),
                  out[anchor][1] + r * math.sin(k * 2.399963 + 0.5))
    names = sorted(out)
    xy = np.array([out[e] for e in names], dtype=float)
    rad = np.array([size[e] for e in names], dtype=float) + 3.0
    for _ in range(60):
        d = xy[:, None, :] - xy[None, :, :]
        dist = np.sqrt((d ** 2).sum(-1)) + np.eye(len(names))
        gap = rad[:, None] + rad[None, :] - dist
        np.fill_diagonal(gap, 0.0)
        gap = np.clip(gap, 0.0, None)
        if not gap.any():
            break
        xy += ((d / dist[:, :, None]) * (gap[:, :, None] / 2)).sum(1)
    return {e: (float(x), float(y)) for e, (x, y) in zip(names, xy, strict=True)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_map_layout_is_bit_for_bit_the_networkx_one(seed):
    # A clustered graph with weights, stray nodes outside the core, and crowded big discs.
    graph = nx.relabel_nodes(nx.planted_partition_graph(6, 25, 0.3, 0.02, seed=seed),
                             lambda i: f"t{i:03d}")
    rng = np.random.default_rng(seed)
    for a, b in graph.edges:
        graph[a][b]["weight"] = float(rng.random())
    graph.add_nodes_from(["zz-alone", "zz-other"])
    graph.add_edge("zz-alone", "zz-other", weight=0.5)
    communities = [sorted(c) for c in nx.community.louvain_communities(graph, seed=seed)]
    size = {e: 5 + 2.4 * math.sqrt(1 + int(rng.integers(0, 60))) for e in sorted(graph)}
    assert place_techniques(graph, communities, size) == _reference_layout(graph, communities, size)


def test_writing_a_page_pauses_the_cycle_collector_only_while_it_runs(tmp_path, seed_corpus):
    collections: list[str] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(phase)

    gc.callbacks.append(seen)
    try:
        write_viz(seed_corpus, tmp_path / "a.html", view="map")
    finally:
        gc.callbacks.remove(seen)
    # Thousands of allocations, yet at most the one pass owed when the collector resumes.
    assert len(collections) <= 1
    assert gc.isenabled()
    gc.disable()
    try:
        write_viz(seed_corpus, tmp_path / "b.html", view="map")
        assert not gc.isenabled()  # a caller's choice is left as it was
    finally:
        gc.enable()
    with pytest.raises(KgError):
        write_viz(seed_corpus, tmp_path / "c.html", technique="no such technique at all")
    assert gc.isenabled()


def test_each_map_panel_lists_what_kg_shared_include_mentions_lists(iclr_slice):
    """The panels are gathered in one pass over the papers' evidence, not by a `kg shared`
    per node: the same papers in the same order, the same sentence, use or mention."""
    from kg.analysis import shared
    from kg.viz.map_source import MapSource, Users, panels

    source = MapSource.of(iclr_slice)
    users = Users.of(source)
    ids = users.top(("Technique", "Method"), 40) + users.top(("Task",), 10)
    found = panels(source, users, ids)
    order = {p.paper.id: i for i, p in enumerate(users.papers)}
    for eid in ids:
        expected = []
        for use in shared(iclr_slice, eid, include_mentions=True):
            hit = [u for u in use.uses if u.used]
            u = hit[0] if hit else use.uses[0]
            expected.append((order[use.paper.id], u.evidence.text, u.confidence, bool(hit)))
        assert found[eid].rows == expected, eid
