"""Positions for the graph page: a ring for focused views and small corpora, else networkx.

Every layout here is deterministic (a fixed seed, hash-based angles, no clock): the same view
gives the same integer positions, so re-runs write a byte-identical page. Nodes and edges are
the page's own dicts: a node has an ``id`` (its index), a ``group`` ("Paper" or an entity
type) and a ``value`` (its degree); an edge has ``from`` and ``to``.

>>> nodes = [{"id": 0, "group": "Paper", "value": 1}, {"id": 1, "group": "Task", "value": 1}]
>>> layout(nodes, [{"from": 0, "to": 1}], ring=True, centre=[])
[(168, 0), (134, 0)]
>>> nodes[0]["side"]  # the paper is on the ring's right side, its task just inside it
'r'
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict

# networkx (0.2 s) and numpy are imported where a layout runs, not when kg.viz is imported:
# `kg viz --help` and the CLI's other light commands import this module.

SEED = 7
# Above this many nodes the full force layout (O(n²) per iteration, no scipy here) gets slow,
# so only the entity skeleton is laid out and papers are placed around their entities.
FULL_LAYOUT_MAX_NODES = 400
CORE = 400  # most nodes one force layout simulates (see _spring)
# The ring layout (see ring_layout): for the --technique and --paper views up to
# FULL_LAYOUT_MAX_NODES nodes, and for whole corpora up to this many papers; beyond that a ring
# is too tall for its labels to read at the first zoom and the force layout is used.
RING_MAX_PAPERS = 60
RING_GAP = 56  # canvas units between two papers on one side of the ring
RING_SIZES = (6, 24)  # node radius range (vis "scaling") in ring views: below RING_GAP / 2
GOLDEN_ANGLE = 2.399963  # radians: a spiral at this step spaces its points evenly


def layout(nodes: list[dict], edges: list[dict], *, ring: bool,
           centre: list[int]) -> list[tuple[int, int]]:
    """Integer (x, y) positions for every node, deterministic for a given view.

    Ring views (--technique, --paper, small corpora): see ring_layout, which also gives each
    paper node its ``side``. Other small views: networkx spring layout of each component of the
    whole graph. Large views: the same for the entity co-occurrence graph only, then each paper
    sits near the centroid of its entities, papers with the same entities spiralling outwards
    so none overlap.
    """
    if not nodes:
        return []
    if ring:
        return ring_layout(nodes, edges, centre)
    if len(nodes) <= FULL_LAYOUT_MAX_NODES:
        return _whole_layout(len(nodes), edges)
    return _skeleton_layout(nodes, edges)


def _whole_layout(n: int, edges: list[dict]) -> list[tuple[int, int]]:
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from((e["from"], e["to"]) for e in edges)
    pos = _pack_components(graph, 110)
    return [(round(pos[i][0]), round(pos[i][1])) for i in range(n)]


def _skeleton_layout(nodes: list[dict], edges: list[dict]) -> list[tuple[int, int]]:
    """The entities' co-occurrence graph laid out, then the papers spiralling around them."""
    import networkx as nx

    entity_ids = [node["id"] for node in nodes if node["group"] != "Paper"]
    entity_set = set(entity_ids)
    by_paper: dict[int, list[int]] = defaultdict(list)
    for e in edges:
        if e["from"] not in entity_set and e["to"] in entity_set:
            by_paper[e["from"]].append(e["to"])
    weights: Counter[tuple[int, int]] = Counter()
    for ents in by_paper.values():
        ents = sorted(set(ents))
        for i, a in enumerate(ents):
            for b in ents[i + 1:]:
                weights[(a, b)] += 1
    graph = nx.Graph()
    graph.add_nodes_from(entity_ids)
    graph.add_weighted_edges_from((a, b, w) for (a, b), w in sorted(weights.items()))
    # Room around each entity for the papers that will circle it.
    share = Counter(j for ents in by_paper.values() for j in set(ents))
    unit = 60 + 14 * math.sqrt(max(1, sum(share.values()) / max(1, len(entity_ids))))
    pos = _pack_components(graph, unit)
    out: list[tuple[float, float]] = [(0.0, 0.0)] * len(nodes)
    for i in entity_ids:
        out[i] = pos[i]
    crowd: Counter[tuple[int, ...]] = Counter()
    for node in nodes:
        i = node["id"]
        if i in entity_set:
            continue
        ents = tuple(sorted(set(by_paper.get(i, ()))))
        if ents:
            cx = sum(out[j][0] for j in ents) / len(ents)
            cy = sum(out[j][1] for j in ents) / len(ents)
        else:
            cx = cy = 0.0
        k = crowd[ents]
        crowd[ents] += 1
        # Golden-angle spiral around the anchor: even spacing, no overlaps, no randomness.
        radius = 26 + 12 * math.sqrt(k)
        angle = k * GOLDEN_ANGLE + _jitter(repr(ents))
        out[i] = (cx + radius * math.cos(angle), cy + radius * math.sin(angle))
    return [(round(x), round(y)) for x, y in out]


def _jitter(key: str) -> float:
    """A stable pseudo-random angle for ``key`` (hash-based, so order-independent)."""
    return int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF * 2 * math.pi


def _spring(graph) -> dict[int, tuple[float, float]]:
    """Spring layout in [-1, 1]²; above CORE nodes only the best-connected core is simulated.

    networkx's force layout is O(n²) per iteration (and needs scipy from 500 nodes), so the
    rest of a big component is placed next to its already-placed neighbours, breadth first.
    """
    import networkx as nx

    if len(graph) <= CORE:
        pos = nx.spring_layout(graph, seed=SEED, iterations=80, method="force")
        return {i: (float(p[0]), float(p[1])) for i, p in pos.items()}
    strength = dict(graph.degree(weight="weight"))
    core = sorted(graph, key=lambda i: (-strength[i], i))[:CORE]
    out = _spring(graph.subgraph(core))
    step = 1.6 / math.sqrt(len(graph))
    frontier = sorted(core)
    crowd: Counter[int] = Counter()
    while frontier:
        nxt: list[int] = []
        for i in frontier:
            for j in sorted(graph[i]):
                if j in out:
                    continue
                k = crowd[i]
                crowd[i] += 1
                angle = k * GOLDEN_ANGLE + _jitter(str(i))
                radius = step * (1 + 0.5 * math.sqrt(k))
                out[j] = (out[i][0] + radius * math.cos(angle),
                          out[i][1] + radius * math.sin(angle))
                nxt.append(j)
        frontier = nxt
    return out


def _pack_components(graph, unit: float) -> dict[int, tuple[float, float]]:
    """Spring-lay out each connected component, then pack the components in rows.

    One spring layout of a disconnected graph squeezes every component into a corner of the
    unit square; laying them out separately keeps nodes ``unit`` pixels or so apart.
    """
    import networkx as nx

    parts = sorted((sorted(c) for c in nx.connected_components(graph)),
                   key=lambda c: (-len(c), c[0]))
    placed: list[tuple[dict[int, tuple[float, float]], float]] = []
    for comp in parts:
        if len(comp) == 1:
            placed.append(({comp[0]: (0.0, 0.0)}, unit * 0.6))
            continue
        pos = _spring(graph.subgraph(comp))
        radius = unit * math.sqrt(len(comp)) * 0.9
        placed.append(({i: (float(pos[i][0]) * radius, float(pos[i][1]) * radius)
                        for i in comp}, radius))
    # Shelf packing: rows of components, left to right, about as wide as the whole is tall.
    width = math.sqrt(sum((2 * r + unit) ** 2 for _, r in placed)) * 1.1
    out: dict[int, tuple[float, float]] = {}
    x = y = row_height = 0.0
    for pos, radius in placed:
        size = 2 * radius + unit
        if x > 0 and x + size > width:
            x, y, row_height = 0.0, y + row_height, 0.0
        for i, (px, py) in pos.items():
            out[i] = (x + size / 2 + px, y + size / 2 + py)
        x += size
        row_height = max(row_height, size)
    cx, cy = width / 2, (y + row_height) / 2
    return {i: (px - cx, py - cy) for i, (px, py) in out.items()}


def ring_layout(nodes: list[dict], edges: list[dict], centre: list[int]) -> list[tuple[int, int]]:
    """Papers on a ring, what they share inside it, the chosen paper or technique at its centre.

    Each side of the ring holds its papers at equal heights (``RING_GAP`` or more apart), and the
    page writes a paper's label outward (right of the right side, left of the left side), so no
    two paper labels can touch; each paper node gets its ``side`` ("r" or "l"). The right side
    runs down and the left side up through a chain in which each paper is the one left that
    shares most with the previous (Jaccard over their entities; ties by node id): papers that
    share sit side by side. An entity sits toward the mean direction of its papers, nearer the
    centre the more widely they are spread (an entity of one paper sits just inside it), and
    overlapping nodes are then pushed apart.

    >>> from kg.pipeline import load_corpus
    >>> from kg.viz import build_view
    >>> view = build_view(load_corpus(["examples/iclr2025-seed.txt"]))
    >>> sides = [n["side"] for n in view.nodes if n["group"] == "Paper"]
    >>> view.ring, sides.count("r"), sides.count("l")
    (True, 10, 9)
    """
    links: dict[int, set[int]] = {i: set() for i in range(len(nodes))}
    for e in edges:
        links[e["from"]].add(e["to"])
        links[e["to"]].add(e["from"])
    papers = [node["id"] for node in nodes if node["group"] == "Paper" and node["id"] not in centre]
    order = _chain(papers, links)
    right, left = order[:(len(order) + 1) // 2], order[(len(order) + 1) // 2:]
    # Taller than wide, as the labels beside the ring take most of a page's width: at least
    # RING_GAP between papers, more when there are few.
    half_w = max(0.42 * (len(right) + 1) * RING_GAP / 2, 3 * RING_GAP)
    half_h = max((len(right) + 1) * RING_GAP / 2, 2.6 * half_w)
    gap = 2 * half_h / (len(right) + 1)
    pos: dict[int, tuple[float, float]] = {}
    for side, members, sign in (("r", right, 1.0), ("l", left[::-1], -1.0)):
        for j, i in enumerate(members):  # top to bottom
            y = (j - (len(members) - 1) / 2) * gap
            pos[i] = (sign * half_w * math.sqrt(1 - (y / half_h) ** 2), y)
            nodes[i]["side"] = side
    on_ring = set(pos)
    for k, i in enumerate(centre):
        angle = 2 * math.pi * k / len(centre) - math.pi / 2
        spread = 0.25 * half_w if len(centre) > 1 else 0.0
        pos[i] = (spread * math.cos(angle), spread * math.sin(angle))
    inner = [i for i in range(len(nodes)) if i not in pos]
    _place_inner(inner, links, on_ring, pos, half_w, half_h)
    return _push_apart(nodes, pos, inner, on_ring, half_w, half_h)


def _place_inner(inner: list[int], links: dict[int, set[int]], on_ring: set[int],
                 pos: dict[int, tuple[float, float]], half_w: float, half_h: float) -> None:
    """Each inner node toward the mean direction of its papers on the ring (into ``pos``)."""
    crowd: Counter[tuple[int, int]] = Counter()
    for i in inner:
        vx = vy = 0.0
        for j in links[i]:  # a link to the centre or another entity pulls toward the middle
            if j in on_ring:
                ux, uy = pos[j][0] / half_w, pos[j][1] / half_h
                norm = math.hypot(ux, uy)
                vx, vy = vx + ux / norm, vy + uy / norm
        spread = math.hypot(vx, vy) / max(1, len(links[i]))
        angle = math.atan2(vy, vx) if spread > 1e-9 else _jitter(str(i))
        rho = 0.25 + 0.55 * spread
        x, y = half_w * rho * math.cos(angle), half_h * rho * math.sin(angle)
        # Entities of the same papers land on one spot: a golden-angle spiral parts them.
        cell = (round(x), round(y))
        k = crowd[cell]
        crowd[cell] += 1
        pos[i] = (x + 18 * math.sqrt(k) * math.cos(k * GOLDEN_ANGLE),
                  y + 18 * math.sqrt(k) * math.sin(k * GOLDEN_ANGLE))


def _push_apart(nodes: list[dict], pos: dict[int, tuple[float, float]], inner: list[int],
                on_ring: set[int], half_w: float, half_h: float) -> list[tuple[int, int]]:
    """Push overlapping discs inside the ring apart (the centre stays put; papers on the ring
    take no part), keeping them inside it."""
    import numpy as np

    n = len(nodes)
    xy = np.array([pos[i] for i in range(n)], dtype=float)
    movable = np.isin(np.arange(n), inner)
    inside = ~np.isin(np.arange(n), sorted(on_ring))
    both = inside[:, None] & inside[None, :]
    radius = _node_radii(nodes, *RING_SIZES) + 8.0
    for _ in range(80 if inner else 0):
        d = xy[:, None, :] - xy[None, :, :]
        dist = np.sqrt((d ** 2).sum(-1)) + np.eye(n)
        overlap = np.where(both, radius[:, None] + radius[None, :] - dist, 0.0)
        np.fill_diagonal(overlap, 0.0)
        overlap = np.clip(overlap, 0.0, None)
        if not overlap.any():
            break
        push = ((d / dist[:, :, None]) * (overlap[:, :, None] / 2)).sum(1)
        xy[movable] += push[movable]
        rho = np.hypot(xy[:, 0] / half_w, xy[:, 1] / half_h)
        out = movable & (rho > 0.85)
        xy[out] *= (0.85 / rho[out])[:, None]
    return [(round(float(x)), round(float(y))) for x, y in xy]


def _chain(papers: list[int], links: dict[int, set[int]]) -> list[int]:
    """Papers in an order where each is the one left sharing most with the previous.

    >>> _chain([1, 2, 3], {1: {7}, 2: {8, 9}, 3: {7, 9}})
    [2, 3, 1]
    """
    if not papers:
        return []
    order = [min(papers, key=lambda i: (-len(links[i]), i))]
    left = set(papers) - set(order)
    while left:
        last = links[order[-1]]
        order.append(min(left, key=lambda i: (
            -len(last & links[i]) / max(1, len(last | links[i])), i)))
        left.remove(order[-1])
    return order


def size_range(ring: bool) -> tuple[int, int]:
    """Smallest and largest node radius (vis-network ``scaling``): smaller on a ring."""
    return RING_SIZES if ring else (8, 40)


def _node_radii(nodes: list[dict], lo: float, hi: float):
    """Each node's radius as vis-network sizes it from its value (``lo`` to ``hi``)."""
    import numpy as np

    values = np.array([float(node["value"]) for node in nodes])
    if not len(values) or values.max() == values.min():
        return np.full(len(values), (lo + hi) / 2)
    return lo + (values - values.min()) / (values.max() - values.min()) * (hi - lo)
