"""The interactive graph: one self-contained, offline HTML file (pyvis / vis-network).

Papers and entities are nodes (coloured by type, sized by degree); a paper is linked to each
entity it mentions, and entity → entity relations (``extends``, ``outperforms``) are arrows.
Every script and stylesheet is inlined — vis-network comes from the copy pyvis ships — so the
file makes no network request. The layout is computed here (a ring of papers for the focused
views and small corpora, else networkx with a fixed seed) and physics is off on load, so large
graphs open at once and re-runs give a byte-identical file. The page draws node labels itself,
at a fixed size on screen and never over one another (kg/templates/viz.js).

All corpus text travels as JSON inside ``<script type="application/json">`` with ``<``, ``>``
and ``&`` escaped, and the page puts it on screen only through text nodes, so an abstract
holding ``<script>`` shows as text.

>>> from kg.pipeline import load_corpus
>>> view = build_view(load_corpus(["examples/iclr2025-seed.txt"]))
>>> view.counts()["papers"]
19
>>> html = render_html(view)
>>> "<script src" in html or "https://cdn" in html
False
"""

from __future__ import annotations

import gc
import hashlib
import html as html_lib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kg.errors import InputError
from kg.model import Corpus, PaperResult
from kg.text import shorten

DEFAULT_MAX_ENTITIES = 500
DEFAULT_RELATED = 20
_SEED = 7
# Above this many nodes the full force layout (O(n²) per iteration, no scipy here) gets slow,
# so only the entity skeleton is laid out and papers are placed around their entities.
_FULL_LAYOUT_MAX_NODES = 400
_CORE = 400  # most nodes one force layout simulates (see _spring)
# The ring layout (see _ring_layout): for the --technique and --paper views up to
# _FULL_LAYOUT_MAX_NODES nodes, and for whole corpora up to this many papers; beyond that a ring
# is too tall for its labels to read at the first zoom and the force layout is used.
_RING_MAX_PAPERS = 60
_RING_GAP = 56  # canvas units between two papers on one side of the ring
_RING_SIZES = (6, 24)  # node radius range (vis "scaling") in ring views: below _RING_GAP / 2
_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

# Colour-blind-friendly (Okabe–Ito based) colours per node type; "Paper" first.
TYPE_COLORS: dict[str, str] = {
    "Paper": "#8a8f98",
    "Method": "#e69f00",
    "Model": "#0072b2",
    "Dataset": "#009e73",
    "Hardware": "#cc79a7",
    "Technique": "#d55e00",
    "Task": "#56b4e9",
    "Metric": "#b8a200",
}
_TECHNIQUE_TYPES = ("Technique", "Method")  # a used method is a technique (PREDICATE_FOR_TYPE)


@dataclass
class GraphView:
    """What the page shows: vis nodes/edges plus the details the side panel reads.

    Node ids are integers (compact JSON); ``kg_id`` in ``papers``/``entities`` is the real id.
    """

    title: str
    view: str  # "corpus" | "technique" | "paper"
    nodes: list[dict] = field(default_factory=list)
    edges: list[dict] = field(default_factory=list)
    papers: dict[str, dict] = field(default_factory=dict)  # node id (str) -> paper details
    entities: dict[str, dict] = field(default_factory=dict)  # node id (str) -> entity details
    techniques: list[dict] = field(default_factory=list)  # filter options
    notice: str = ""
    focus: int | None = None  # node selected on load (the --paper / --technique node)
    centre: list[int] = field(default_factory=list)  # the ring's centre (the chosen nodes)
    narrower: list[int] = field(default_factory=list)  # --technique: its narrower concepts
    ring: bool = False  # laid out as a ring (_ring_layout), each paper with a "side"

    def counts(self) -> dict[str, int]:
        """Numbers of nodes, edges, papers and entities in the view."""
        return {"nodes": len(self.nodes), "edges": len(self.edges),
                "papers": len(self.papers), "entities": len(self.entities)}


def _paper_counts(corpus: Corpus) -> Counter[str]:
    return Counter(eid for result in corpus for eid in set(result.entity_ids))


def _paper_title(result: PaperResult) -> str:
    paper = result.paper
    return paper.title or paper.label or shorten(paper.abstract, 80) or paper.id


def build_view(
    corpus: Corpus,
    *,
    technique: str | None = None,
    paper: str | None = None,
    max_entities: int = DEFAULT_MAX_ENTITIES,
    related: int = DEFAULT_RELATED,
    include_mentions: bool = False,
) -> GraphView:
    """Choose the papers and entities to show, lay them out, and collect their details.

    Views: the whole corpus (default), ``technique`` (papers using it or a narrower concept,
    and what else they share) or ``paper`` (a paper and its related papers). At most
    ``max_entities`` entities are kept — the most frequent by paper count — and the notice
    says what was left out.

    >>> from kg.pipeline import load_corpus
    >>> view = build_view(load_corpus(["examples/iclr2025-seed.txt"]), max_entities=5)
    >>> view.counts()["entities"], view.notice[:20]
    (5, 'Showing the 5 most f')
    """
    if technique and paper:
        raise InputError("--technique and --paper choose different views; pass only one")
    if max_entities < 1:
        raise InputError("--max-entities must be at least 1")
    results = list(corpus)
    df = _paper_counts(corpus)
    notes: list[str] = []
    focus_kg: str | None = None
    members: list[str] = []
    direct: set[str] = set()  # technique members the query names itself (not narrower ones)
    if paper is not None:
        # The same paper lookup and relatedness as `kg related` (kg.analysis).
        from kg.analysis import find_paper
        from kg.analysis import related as related_papers

        by_id = {r.paper.id: r for r in results}
        center = find_paper(corpus, paper).id
        chosen = [by_id[center]] + [by_id[r.paper.id]
                                    for r in related_papers(corpus, center, related)]
        view, title = "paper", f"{shorten(_paper_title(by_id[center]), 80)} and related papers"
        must = set(by_id[center].entity_ids)  # the paper's own entities always show
        focus_kg = "p:" + center
    elif technique is not None:
        # The same matching as `kg shared`: names, aliases, vocabulary labels, narrower concepts.
        from kg.analysis import shared

        uses = shared(corpus, technique, include_mentions=include_mentions)
        if not uses:
            raise InputError(f"--technique {technique!r}: no paper in this graph uses it "
                             "(or a narrower concept)")
        members = sorted({u.entity.id for use in uses for u in use.uses})
        direct = {u.entity.id for use in uses for u in use.uses if u.direct}
        using = {use.paper.id for use in uses}
        chosen = [r for r in results if r.paper.id in using]
        view, title = "technique", f"Papers using {technique}"
        must = set(members)
        if len(members) == 1:
            focus_kg = "e:" + members[0]
    else:
        chosen, view, title = results, "corpus", "Knowledge graph"
        must = set()

    # Entity candidates: in the focused views, those shared by ≥2 chosen papers (plus `must`).
    local = Counter(eid for r in chosen for eid in set(r.entity_ids))
    if view == "corpus" or len(chosen) == 1:
        candidates = set(local)
    else:
        candidates = {e for e, c in local.items() if c >= 2} | (must & set(local))
    ranked = sorted(candidates, key=lambda e: (e not in must, -local[e], -df[e], e))
    kept = ranked[:max_entities]
    kept_set = set(kept)
    if len(ranked) > len(kept):
        notes.append(
            f"Showing the {len(kept):,} most frequent entities (by paper count) of "
            f"{len(ranked):,}; {len(ranked) - len(kept):,} entities are left out "
            f"(raise --max-entities to show more).")
    shown = [r for r in chosen if kept_set.intersection(r.entity_ids) or view == "paper"]
    if len(shown) < len(chosen):
        bare = sum(1 for r in chosen if not r.mentions)
        parts = [f"{bare:,} have no extracted entity"] if bare else []
        if len(chosen) - len(shown) - bare:
            parts.append(f"{len(chosen) - len(shown) - bare:,} mention none of the entities shown")
        notes.append(f"{len(chosen) - len(shown):,} of {len(chosen):,} papers are left out: "
                     + " and ".join(parts) + ".")

    g = GraphView(title=title, view=view, notice=" ".join(notes))
    node_of: dict[str, int] = {}

    def add_node(kg_key: str, label: str, group: str) -> int:
        node_of[kg_key] = len(g.nodes)
        g.nodes.append({"id": len(g.nodes), "label": label, "group": group})
        return node_of[kg_key]

    for r in shown:
        p = r.paper
        idx = add_node("p:" + p.id, paper_name(p.label or p.title or p.id), "Paper")
        g.papers[str(idx)] = {
            "id": p.id, "label": p.label, "title": p.title, "abstract": p.abstract,
            "venue": p.venue, "year": p.year, "url": p.url, "authors": list(p.authors),
        }
    for eid in sorted(kept_set & {e for r in shown for e in r.entity_ids}):
        e = corpus.entities[eid]
        idx = add_node("e:" + eid, shorten(e.name, 40), e.type)
        g.entities[str(idx)] = {"id": e.id, "name": e.name, "type": e.type,
                                "aliases": list(e.aliases), "concept": e.concept,
                                "papers": df[eid]}

    # Edges: one per (paper, entity) pair with every predicate and evidence sentence behind it,
    # and one per (entity, predicate, entity) relation between shown entities.
    pair: dict[tuple[int, int], dict] = {}
    for r in shown:
        pnode = node_of["p:" + r.paper.id]
        by_entity: dict[str, list] = defaultdict(list)
        for rel in r.relations:
            by_entity[rel.object].append(rel)
        for eid, spans in r.mentions:
            if eid not in kept_set:
                continue
            rels = [x for x in by_entity.get(eid, []) if x.subject == r.paper.id]
            # Evidence is (paper node, start, end) into the paper's text, which the page already
            # holds: quoting sentences again would double the file for big corpora.
            spans_of = {(x.evidence.start, x.evidence.end) for x in rels} or {
                (s.start, s.end) for s in spans}
            predicates = sorted({x.predicate for x in rels} - {"mentions"}) or ["mentions"]
            pair[(pnode, node_of["e:" + eid])] = {
                "predicates": predicates,
                "evidence": [[pnode, a, b] for a, b in sorted(spans_of)]}
        for rel in r.relations:
            if rel.subject in kept_set and rel.object in kept_set:
                key = (node_of["e:" + rel.subject], node_of["e:" + rel.object], rel.predicate)
                item = pair.setdefault(key, {"predicates": [rel.predicate], "evidence": []})
                ev = [pnode, rel.evidence.start, rel.evidence.end]
                if ev not in item["evidence"]:
                    item["evidence"].append(ev)
    for key in sorted(pair, key=lambda k: (k[0], k[1], k[2] if len(k) > 2 else "")):
        item = pair[key]
        edge = {"id": len(g.edges), "from": key[0], "to": key[1],
                "predicates": item["predicates"], "evidence": sorted(item["evidence"])}
        if len(key) > 2:
            edge["relation"] = True
        g.edges.append(edge)

    degree = Counter()
    for e in g.edges:
        degree[e["from"]] += 1
        degree[e["to"]] += 1
    for node in g.nodes:
        node["value"] = degree[node["id"]]
    if view == "paper":
        g.centre = [node_of[focus_kg]]
    elif view == "technique":  # the technique itself; its narrower concepts go inside
        g.centre = sorted(node_of["e:" + m] for m in direct if "e:" + m in node_of)
        g.narrower = sorted(node_of["e:" + m] for m in set(members) - direct
                            if "e:" + m in node_of)
    g.ring = len(g.nodes) <= _FULL_LAYOUT_MAX_NODES and (
        view != "corpus" or len(g.papers) <= _RING_MAX_PAPERS)
    for (x, y), node in zip(_layout(g), g.nodes, strict=True):
        node["x"], node["y"] = x, y
    if len(g.nodes) > _FULL_LAYOUT_MAX_NODES:
        # Thousands of paper labels overlap into noise and cost the browser ~0.1 ms each to
        # lay out; in big views papers are named by their tooltip, the panel and the search.
        for node in g.nodes:
            if node["group"] == "Paper":
                del node["label"]
    g.techniques = _technique_options(g)
    if focus_kg in node_of:
        g.focus = node_of[focus_kg]
    elif members:
        present = [node_of["e:" + m] for m in members if "e:" + m in node_of]
        g.focus = present[0] if len(present) == 1 else None
    return g


def paper_name(text: str, limit: int = 40) -> str:
    """A paper's node label: the name before a colon when its title starts with one (the full
    text is in the tooltip and the panel), else the text shortened to ``limit`` characters.

    >>> paper_name("LQ-LoRA: Low-rank plus Quantized Matrix Decomposition for Finetuning")
    'LQ-LoRA'
    >>> paper_name("On the generalization capacity of neural networks during generic training")
    'On the generalization capacity of…'
    """
    head, colon, _ = text.partition(": ")
    if colon and 2 <= len(head) <= 32:
        return head
    return shorten(text, limit)


def _technique_options(g: GraphView) -> list[dict]:
    """The technique filter: each technique concept (and its broader concepts) in the view."""
    from kg.vocab import load_vocabulary

    vocab = load_vocabulary()
    options: dict[str, dict] = {}
    for node_id, e in g.entities.items():
        if e["type"] not in _TECHNIQUE_TYPES:
            continue
        if e["concept"] and e["concept"] in vocab.concepts:
            for iri in (e["concept"], *vocab.ancestors(e["concept"])):
                concept = vocab.concepts.get(iri)
                if concept is None or concept.type not in _TECHNIQUE_TYPES:
                    continue
                opt = options.setdefault(iri, {"label": concept.pref_label, "members": []})
                opt["members"].append(int(node_id))
        elif e["type"] == "Technique":
            options["e:" + e["id"]] = {"label": e["name"], "members": [int(node_id)]}
    out = []
    for key, opt in options.items():
        out.append({"key": key, "label": opt["label"], "members": sorted(opt["members"])})
    return sorted(out, key=lambda o: (o["label"].casefold(), o["key"]))


def _jitter(key: str) -> float:
    """A stable pseudo-random angle for ``key`` (hash-based, so order-independent)."""
    return int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF * 2 * math.pi


def _spring(graph) -> dict[int, tuple[float, float]]:
    """Spring layout in [-1, 1]²; above _CORE nodes only the best-connected core is simulated.

    networkx's force layout is O(n²) per iteration (and needs scipy from 500 nodes), so the
    rest of a big component is placed next to its already-placed neighbours, breadth first.
    """
    import networkx as nx

    if len(graph) <= _CORE:
        pos = nx.spring_layout(graph, seed=_SEED, iterations=80, method="force")
        return {i: (float(p[0]), float(p[1])) for i, p in pos.items()}
    strength = dict(graph.degree(weight="weight"))
    core = sorted(graph, key=lambda i: (-strength[i], i))[:_CORE]
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
                angle = k * 2.399963 + _jitter(str(i))
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
    placed: list[tuple[list[int], dict[int, tuple[float, float]], float]] = []
    for comp in parts:
        if len(comp) == 1:
            placed.append((comp, {comp[0]: (0.0, 0.0)}, unit * 0.6))
            continue
        pos = _spring(graph.subgraph(comp))
        radius = unit * math.sqrt(len(comp)) * 0.9
        placed.append((comp, {i: (float(pos[i][0]) * radius, float(pos[i][1]) * radius)
                              for i in comp}, radius))
    # Shelf packing: rows of components, left to right, about as wide as the whole is tall.
    width = math.sqrt(sum((2 * r + unit) ** 2 for _, _, r in placed)) * 1.1
    out: dict[int, tuple[float, float]] = {}
    x = y = row_height = 0.0
    for _, pos, radius in placed:
        size = 2 * radius + unit
        if x > 0 and x + size > width:
            x, y, row_height = 0.0, y + row_height, 0.0
        for i, (px, py) in pos.items():
            out[i] = (x + size / 2 + px, y + size / 2 + py)
        x += size
        row_height = max(row_height, size)
    cx, cy = width / 2, (y + row_height) / 2
    return {i: (px - cx, py - cy) for i, (px, py) in out.items()}


def _layout(g: GraphView) -> list[tuple[int, int]]:
    """Integer (x, y) positions for every node, deterministic for a given view.

    Ring views (``g.ring``: --technique, --paper, small corpora): see _ring_layout. Other small
    views: networkx spring layout of each component of the whole graph. Large views:
    the same for the entity co-occurrence graph only, then each paper sits near the centroid of
    its entities, papers with the same entities spiralling outwards so none overlap.
    """
    import networkx as nx

    n = len(g.nodes)
    if n == 0:
        return []
    if g.ring:
        return _ring_layout(g)
    if n <= _FULL_LAYOUT_MAX_NODES:
        graph = nx.Graph()
        graph.add_nodes_from(range(n))
        graph.add_edges_from((e["from"], e["to"]) for e in g.edges)
        pos = _pack_components(graph, 110)
        return [(round(pos[i][0]), round(pos[i][1])) for i in range(n)]

    entity_ids = sorted(int(k) for k in g.entities)
    entity_set = set(entity_ids)
    by_paper: dict[int, list[int]] = defaultdict(list)
    for e in g.edges:
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
    out: list[tuple[float, float]] = [(0.0, 0.0)] * n
    for i in entity_ids:
        out[i] = pos[i]
    crowd: Counter[tuple[int, ...]] = Counter()
    for node in g.nodes:
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
        angle = k * 2.399963 + _jitter(repr(ents))
        out[i] = (cx + radius * math.cos(angle), cy + radius * math.sin(angle))
    return [(round(x), round(y)) for x, y in out]


def _ring_layout(g: GraphView) -> list[tuple[int, int]]:
    """Papers on a ring, what they share inside it, the chosen paper or technique at its centre.

    Each side of the ring holds its papers at equal heights (``_RING_GAP`` or more apart), and the
    page writes a paper's label outward (right of the right side, left of the left side), so no
    two paper labels can touch. The right side runs down and the left side up through a chain in
    which each paper is the one left that shares most with the previous (Jaccard over their
    entities; ties by node id): papers that share sit side by side. An entity sits toward the
    mean direction of its papers, nearer the centre the more widely they are spread (an entity
    of one paper sits just inside it), and overlapping nodes are then pushed apart.

    >>> from kg.pipeline import load_corpus
    >>> view = build_view(load_corpus(["examples/iclr2025-seed.txt"]))
    >>> sides = [n["side"] for n in view.nodes if n["group"] == "Paper"]
    >>> view.ring, sides.count("r"), sides.count("l")
    (True, 10, 9)
    """
    import numpy as np

    n = len(g.nodes)
    links: dict[int, set[int]] = {i: set() for i in range(n)}
    for e in g.edges:
        links[e["from"]].add(e["to"])
        links[e["to"]].add(e["from"])
    centre = list(g.centre)
    order = _chain(sorted(int(k) for k in g.papers if int(k) not in g.centre), links)
    right, left = order[:(len(order) + 1) // 2], order[(len(order) + 1) // 2:]
    # Taller than wide, as the labels beside the ring take most of a page's width: at least
    # _RING_GAP between papers, more when there are few.
    half_w = max(0.42 * (len(right) + 1) * _RING_GAP / 2, 3 * _RING_GAP)
    half_h = max((len(right) + 1) * _RING_GAP / 2, 2.6 * half_w)
    gap = 2 * half_h / (len(right) + 1)
    pos: dict[int, tuple[float, float]] = {}
    for side, members, sign in (("r", right, 1.0), ("l", left[::-1], -1.0)):
        for j, i in enumerate(members):  # top to bottom
            y = (j - (len(members) - 1) / 2) * gap
            pos[i] = (sign * half_w * math.sqrt(1 - (y / half_h) ** 2), y)
            g.nodes[i]["side"] = side
    on_ring = set(pos)
    for k, i in enumerate(centre):
        angle = 2 * math.pi * k / len(centre) - math.pi / 2
        spread = 0.25 * half_w if len(centre) > 1 else 0.0
        pos[i] = (spread * math.cos(angle), spread * math.sin(angle))
    inner = [i for i in range(n) if i not in pos]
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
        pos[i] = (x + 18 * math.sqrt(k) * math.cos(k * 2.399963),
                  y + 18 * math.sqrt(k) * math.sin(k * 2.399963))
    # Push overlapping discs inside the ring apart (the centre stays put; papers on the ring
    # take no part), keeping them inside it.
    xy = np.array([pos[i] for i in range(n)], dtype=float)
    movable = np.isin(np.arange(n), inner)
    inside = ~np.isin(np.arange(n), sorted(on_ring))
    both = inside[:, None] & inside[None, :]
    lo, hi = _size_range(g)
    radius = _node_radii(g, lo, hi) + 8.0
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


def _size_range(g: GraphView) -> tuple[int, int]:
    """Smallest and largest node radius (vis-network ``scaling``): smaller on a ring."""
    return _RING_SIZES if g.ring else (8, 40)


def _node_radii(g: GraphView, lo: float, hi: float):
    """Each node's radius as vis-network sizes it from its value (``lo`` to ``hi``)."""
    import numpy as np

    values = np.array([float(node["value"]) for node in g.nodes])
    if not len(values) or values.max() == values.min():
        return np.full(len(values), (lo + hi) / 2)
    return lo + (values - values.min()) / (values.max() - values.min()) * (hi - lo)


def _vis_options(g: GraphView) -> dict:
    groups = {t: {"color": {"background": c, "border": c,
                            "highlight": {"background": c, "border": "#222222"},
                            "hover": {"background": c, "border": "#222222"}},
                  "shape": "square" if t == "Paper" else "dot"}
              for t, c in TYPE_COLORS.items()}
    return {
        "autoResize": True,
        "groups": groups,
        # Node labels are drawn by the page (viz.js) at a fixed on-screen size, never over
        # each other; vis-network draws none.
        "nodes": {
            "scaling": dict(zip(("min", "max"), _size_range(g), strict=True)),
            "borderWidth": 1,
        },
        "edges": {"color": {"color": "#b8bec7", "highlight": "#3b4652", "hover": "#3b4652",
                            "inherit": False},
                  "width": 1, "smooth": False, "selectionWidth": 2, "hoverWidth": 1},
        # Positions are precomputed; physics would move every node on load and, for thousands
        # of nodes, keep the page busy for seconds.
        "physics": {"enabled": False},
        "interaction": {"hover": True, "tooltipDelay": 120, "hideEdgesOnDrag": len(g.edges) > 3000,
                        "navigationButtons": False, "keyboard": False, "multiselect": False},
        "layout": {"improvedLayout": False},
    }


def _script_json(data: object) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` characters."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def app_script(name: str) -> str:
    """A page's script as inlined: the shared DOM helper (dom.js), then ``name``."""
    code = "\n".join((_TEMPLATES / f).read_text(encoding="utf-8") for f in ("dom.js", name))
    return _inline_safe(code, name)


def _inline_safe(code: str, what: str) -> str:
    if "</script" in code.lower() or "</style" in code.lower():  # would end the element early
        raise RuntimeError(f"{what} contains a closing tag and cannot be inlined")
    return code


def _vis_assets() -> tuple[str, str]:
    """vis-network's JS and CSS from the copy the installed pyvis ships (no CDN, no vendoring)."""
    import pyvis

    base = Path(pyvis.__file__).resolve().parent
    for lib in (base / "templates" / "lib" / "vis-9.1.2", base / "lib" / "vis-9.1.2"):
        if (lib / "vis-network.min.js").is_file():
            return ((lib / "vis-network.min.js").read_text(encoding="utf-8"),
                    (lib / "vis-network.css").read_text(encoding="utf-8"))
    raise RuntimeError(f"pyvis at {base} ships no vis-network 9.1.2; reinstall pyvis>=0.3.2")


def render_html(g: GraphView) -> str:
    """The page for ``g`` as one HTML string (pyvis renders our offline template)."""
    from pyvis.network import Network

    net = Network(height="100%", width="100%", directed=True, heading=g.title,
                  cdn_resources="in_line")
    # pyvis's add_node/add_edge scan every existing node/edge (quadratic for thousands), so the
    # prepared lists are handed over as they are.
    net.nodes = g.nodes
    net.edges = [{k: v for k, v in e.items() if k in ("id", "from", "to")} for e in g.edges]
    net.options = _vis_options(g)
    net.set_template_dir(str(_TEMPLATES) + "/", "viz.html")
    vis_js, vis_css = _vis_assets()
    payload = {
        "title": g.title, "view": g.view, "notice": g.notice, "focus": g.focus,
        "centre": g.centre, "narrower": g.narrower, "ring": g.ring,
        "options": net.options, "nodes": net.nodes, "edges": g.edges, "papers": g.papers,
        "entities": g.entities, "techniques": g.techniques,
        "types": [{"type": t, "color": c} for t, c in TYPE_COLORS.items()],
    }
    net.templateEnv.globals.update(
        page_title=html_lib.escape(f"kg — {g.title}"),
        vis_js=_inline_safe(vis_js, "vis-network.min.js"),
        vis_css=_inline_safe(vis_css, "vis-network.css"),
        app_js=app_script("viz.js"),
        app_css=_inline_safe((_TEMPLATES / "viz.css").read_text(encoding="utf-8"), "viz.css"),
        payload=_script_json(payload),
    )
    return net.generate_html(name="graph.html")


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause CPython's cycle collector (reference counting still frees memory) for a build.

    A page allocates millions of small objects that outlive it: the analysis indexes and
    the page data. Each time enough have piled up the collector rescans every object alive,
    corpus included: four full passes, a third of the time of a conference's map. Nothing
    here leaves cycles worth collecting sooner than the next pass after this.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class VizSummary:
    """What ``write_viz`` wrote."""

    path: Path
    nodes: int
    edges: int
    papers: int
    entities: int
    bytes: int
    notice: str


VIEWS = ("auto", "map", "graph")


def write_viz(
    corpus: Corpus,
    output: str | Path,
    *,
    technique: str | None = None,
    paper: str | None = None,
    max_entities: int = DEFAULT_MAX_ENTITIES,
    related: int = DEFAULT_RELATED,
    view: str = "auto",
    include_mentions: bool = False,
) -> VizSummary:
    """Build the view and write the HTML file (parent directories are created).

    ``include_mentions``: the technique view also shows papers that only mention it.
    ``view``: "map" (the technique map, kg.viz.map), "graph" (papers and entities) or "auto":
    the map above ``MAP_MIN_PAPERS`` papers, else the graph. ``technique``/``paper`` always
    give their focused graph.

    >>> from kg.pipeline import load_corpus
    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "graph.html")
    >>> write_viz(load_corpus(["examples/iclr2025-seed.txt"]), out).papers
    19
    """
    from kg.viz.map import MAP_MIN_PAPERS, build_map, render_map_html

    if view not in VIEWS:
        raise InputError(f"--view {view!r}: choose one of {', '.join(VIEWS)}")
    use_map = technique is None and paper is None and (
        view == "map" or (view == "auto" and len(corpus) > MAP_MIN_PAPERS))
    with _collector_paused():
        if use_map:
            m = build_map(corpus)
            text = render_map_html(m)
            counts = {"nodes": len(m.nodes), "edges": len(m.edges), "papers": len(m.papers),
                      "entities": len(m.nodes)}
            notice = m.notice
        else:
            g = build_view(corpus, technique=technique, paper=paper,
                           max_entities=max_entities, related=related,
                           include_mentions=include_mentions)
            text = render_html(g)
            counts, notice = g.counts(), g.notice
    path = Path(output)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("utf-8")
        path.write_bytes(data)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the graph HTML ({exc.strerror}); "
                         "choose another -o path") from exc
    return VizSummary(path, counts["nodes"], counts["edges"], counts["papers"],
                      counts["entities"], len(data), notice)
