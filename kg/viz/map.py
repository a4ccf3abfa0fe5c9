"""The technique map: the default page for corpora above a few hundred papers.

Nodes are the techniques papers use, sized by how many papers use them or a narrower concept
(``kg.analysis.entity_users``: the count `kg shared` and `kg techniques` give); an edge joins
two techniques used by the same papers, weighted by their Jaccard index and thinned to each
node's strongest few. Clusters are the clusters of papers `kg techniques` lists
(``kg.analysis.clusters``, same seed); a technique takes the colour of the cluster most of
its papers are in. Tasks, models and datasets are optional layers placed next to the
techniques they go with. Positions are computed here; the page only decides which labels fit
at the current zoom (biggest first, none overlapping), and filters by year.

Each technique carries what its panel lists: the papers ``kg shared NAME`` returns, split
into those that use it (evidence sentence, confidence) and those that only mention it, and
the techniques its papers combine it with. Each paper carries the papers ``kg related``
ranks first and what they share, and its links (url and ``Paper.links``, http(s) only).

>>> from kg.pipeline import load_corpus
>>> view = build_map(load_corpus(["examples/iclr2025-seed.txt"]))
>>> view.view, len(view.nodes) > 3, view.clusters[0]["label"] != ""
('map', True, True)
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from kg.analysis import TECHNIQUE_TYPES, Cluster, clusters
from kg.analysis.related_all import related_all
from kg.model import Corpus, Paper
from kg.viz.map_source import LAYER_TYPES, MapPaper, MapSource, Panel, Users, panels
from kg.viz.page import render_page

# networkx (0.2 s) and numpy are imported where the map is built, not when kg.viz is
# imported: `kg viz --help` imports this module.

MAP_MIN_PAPERS = 300  # above this many papers the default page is the map
DEFAULT_MAP_NODES = 300
_LAYER_NODES = 40  # per optional layer
_EDGES_PER_NODE = 3  # strongest associations drawn per node
_RELATED = 5
# Cluster colours (Tableau 10, colour-blind-tolerant); smaller clusters share the grey.
CLUSTER_COLORS = ("#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2",
                  "#edc948", "#9c755f", "#ff9da7", "#3f9fd8", "#c2a25a", "#6b8e23")
OTHER_COLOR = "#9aa3ad"
LAYER_COLORS = {"Task": "#56b4e9", "Model": "#0072b2", "Dataset": "#009e73"}
FACET_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")
SHARED_COLOR = "#7f7f7f"
# "ICLR 2024 poster" and "ICLR 2024 oral" are one venue for the overlay.
_PRESENTATION = re.compile(r"\s+(poster|oral|spotlight|notable[\w\s%-]*|accept[\w\s-]*)$",
                           re.IGNORECASE)


@dataclass
class MapView:
    """What the map page shows; plain JSON-ready lists (indices, not ids, keep it small)."""

    title: str
    view: str = "map"
    nodes: list[dict] = field(default_factory=list)
    edges: list[dict] = field(default_factory=list)
    clusters: list[dict] = field(default_factory=list)
    papers: list[dict] = field(default_factory=list)
    facets: list[dict] = field(default_factory=list)
    notice: str = ""
    cluster_note: str = ""  # under the legend: how papers and techniques fall in clusters

    def counts(self) -> dict[str, int]:
        """Numbers of technique/layer nodes, edges, clusters and papers."""
        return {"nodes": len(self.nodes), "edges": len(self.edges),
                "clusters": len(self.clusters), "papers": len(self.papers)}


def venue_name(venue: str | None) -> str | None:
    """The conference a venue string names, without the presentation type.

    >>> venue_name("ICLR 2024 spotlight"), venue_name("CoRL 2024"), venue_name(None)
    ('ICLR 2024', 'CoRL 2024', None)
    """
    if not venue:
        return None
    return _PRESENTATION.sub("", venue.strip()) or venue.strip()


def _is_http(url: str) -> bool:
    return url.lower().startswith(("https://", "http://"))


def _paper_url(paper: Paper) -> str | None:
    url = paper.url or (paper.id if _is_http(paper.id) else None)
    return url if url and _is_http(url) else None


# Ranking every paper's related papers grows with the square of the corpus (related_all: ~0.6 s
# at 5,000 papers); above this size the panel points to `kg related` instead of precomputing.
RELATED_MAX_PAPERS = 20_000
# Above that size, a technique's panel lists this many papers (the surest), and says how many
# more `kg shared` would list: the evidence sentences of every use would make the file huge.
LIST_MAX = 100


def build_map(corpus: Corpus | MapSource, *, max_nodes: int = DEFAULT_MAP_NODES) -> MapView:
    """Techniques, their associations, clusters, layers and per-node paper lists.

    ``corpus`` is a Corpus or a ``MapSource`` (a project's stored index: the same map without
    holding every paper's result). At most ``max_nodes`` techniques are kept (most papers
    first; each used by at least two papers when there are enough of those). The steps:
    choose the techniques and layers, rank their associations and clusters, lay them out,
    then write the nodes, edges, clusters, papers and facets.
    """
    source = corpus if isinstance(corpus, MapSource) else MapSource.of(corpus)
    usage = Users.of(source)
    techniques = usage.top(TECHNIQUE_TYPES, max_nodes)
    co, assoc = _associations(usage, techniques)
    groups = clusters(source.index)  # what `kg techniques` lists: the same function, same seed
    communities = _communities(groups, techniques, usage)
    # (techniques in no cluster are laid out as one more group, coloured as "other")
    cluster_of = {e: k for k, c in enumerate(communities) for e in c}
    kept = _thin(co, assoc)
    pos = _technique_positions(techniques, kept, assoc, communities, cluster_of, usage)
    # Optional layers sit near the techniques their papers use most.
    layers = [e for t in LAYER_TYPES for e in usage.top((t,), _LAYER_NODES)]
    pos.update(_layer_positions(layers, usage, set(techniques), pos))
    parts = _Parts(usage, frozenset(techniques), pos, cluster_of,
                   {eid: i for i, eid in enumerate(techniques + layers)},
                   _facets(usage.papers), len(groups),
                   {p.id: k for k, c in enumerate(groups) for p in c.papers},
                   panels(source, usage, techniques + layers))
    view = MapView(title=f"Technique map of {len(usage.papers):,} papers")
    sentences: dict[int, dict[str, int]] = defaultdict(dict)
    view.nodes = [_node(eid, parts, sentences) for eid in techniques + layers]
    view.edges = [{"from": parts.index_of[a], "to": parts.index_of[b],
                   "w": round(assoc[(a, b)], 3), "n": co[(a, b)]} for a, b in sorted(kept)]
    view.clusters = _cluster_rows(groups, communities, parts)
    view.cluster_note = _cluster_note(groups, techniques, parts)
    view.papers = _paper_rows(source, parts, sentences)
    view.facets = [{"name": f["name"], "values": f["values"],
                    "totals": [sum(1 for v in f["of"] if v == value) for value in f["values"]],
                    "colors": [FACET_COLORS[j % len(FACET_COLORS)]
                               for j in range(len(f["values"]))]}
                   for f in parts.facets]
    left = len([e for e in usage.used if usage.entities[e].type in TECHNIQUE_TYPES]
               ) - len(techniques)
    if left > 0:
        view.notice = (f"The map shows the {len(techniques):,} techniques used by the most "
                       f"papers; {left:,} rarer ones are searchable through their papers.")
    return view


class _Parts(NamedTuple):
    """What the map's node, cluster and paper rows are written from."""

    usage: Users
    tech_set: frozenset[str]
    pos: dict[str, tuple[float, float]]  # techniques and layer entities
    cluster_of: dict[str, int]
    index_of: dict[str, int]  # entity -> node index
    facets: list[dict]
    n_clusters: int  # cluster_of beyond it: in no cluster
    cluster_of_paper: dict[str, int]  # paper id -> its cluster (papers in none left out)
    panels: dict[str, Panel]  # entity -> `kg shared ID --include-mentions`


def _associations(usage: Users, techniques: list[str]
                  ) -> tuple[Counter[tuple[str, str]], dict[tuple[str, str], float]]:
    """Co-use counts of the kept techniques, and each pair's Jaccard index."""
    tech_set = set(techniques)
    co: Counter[tuple[str, str]] = Counter()
    for ids in usage.used_sets:
        ids = sorted(ids & tech_set)
        for a_i, a in enumerate(ids):
            for b in ids[a_i + 1:]:
                co[(a, b)] += 1
    used = usage.used
    return co, {(a, b): c / (len(used[a]) + len(used[b]) - c) for (a, b), c in co.items()}


def _communities(groups: list[Cluster], techniques: list[str], usage: Users
                 ) -> list[list[str]]:
    """Each technique in the cluster (of papers) most of its papers are in, ties to the
    bigger; one list per cluster, then those whose papers are in none."""
    of_paper = {p.id: k for k, c in enumerate(groups) for p in c.papers}
    out: list[list[str]] = [[] for _ in range(len(groups) + 1)]
    for eid in techniques:
        votes = Counter(of_paper[pid] for pid in (usage.papers[i].paper.id
                                                  for i in usage.used[eid]) if pid in of_paper)
        out[min(votes, key=lambda k: (-votes[k], k)) if votes else len(groups)].append(eid)
    return out


def _thin(co: Counter[tuple[str, str]], assoc: dict[tuple[str, str], float]
          ) -> set[tuple[str, str]]:
    """The edges drawn and laid out: each node's strongest few (shared by ≥ 2 papers)."""
    by_node: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for (a, b), w in assoc.items():
        if co[(a, b)] >= 2:
            by_node[a].append((w, b))
            by_node[b].append((w, a))
    kept: set[tuple[str, str]] = set()
    for a, items in by_node.items():
        for _, b in sorted(items, key=lambda t: (-t[0], t[1]))[:_EDGES_PER_NODE]:
            kept.add((min(a, b), max(a, b)))
    return kept


def _technique_positions(techniques: list[str], kept: set[tuple[str, str]],
                         assoc: dict[tuple[str, str], float], communities: list[list[str]],
                         cluster_of: dict[str, int], usage: Users
                         ) -> dict[str, tuple[float, float]]:
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(techniques)
    for a, b in sorted(kept):
        # Same-cluster pairs pull harder, so clusters read as regions.
        boost = 3.0 if cluster_of[a] == cluster_of[b] else 0.3
        graph.add_edge(a, b, weight=assoc[(a, b)] * boost + 0.05)
    return place_techniques(graph, communities,
                            {e: 5 + 2.4 * math.sqrt(len(usage.used[e])) for e in techniques})


def _layer_positions(layers: list[str], usage: Users, tech_set: set[str],
                     pos: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """Each layer entity beside the (up to three) techniques its papers use most."""
    out: dict[str, tuple[float, float]] = {}
    crowd: Counter[tuple[int, int]] = Counter()
    for eid in layers:
        near: Counter[str] = Counter()
        for i in usage.used[eid]:
            near.update(usage.used_sets[i] & tech_set)
        anchors = [t for t, _ in sorted(near.items(), key=lambda kv: (-kv[1], kv[0]))[:3]]
        if anchors:
            x = sum(pos[a][0] for a in anchors) / len(anchors)
            y = sum(pos[a][1] for a in anchors) / len(anchors)
        else:
            x = y = 0.0
        cell = (round(x / 40), round(y / 40))
        k = crowd[cell]
        crowd[cell] += 1
        angle = k * 2.399963 + 0.7
        radius = 28 + 14 * math.sqrt(k)
        out[eid] = (x + radius * math.cos(angle), y + radius * math.sin(angle))
    return out


def _sentence_ref(sentences: dict[int, dict[str, int]], i: int, text: str) -> int:
    """The index of ``text`` among paper ``i``'s quoted sentences (added if new)."""
    bank = sentences[i]
    if text not in bank:
        bank[text] = len(bank)
    return bank[text]


def _node(eid: str, parts: _Parts, sentences: dict[int, dict[str, int]]) -> dict:
    """A technique or layer node with its facet counts and its panel's paper lists."""
    e = parts.usage.entities[eid]
    is_tech = eid in parts.tech_set
    node: dict = {"id": parts.index_of[eid], "name": e.name, "type": e.type, "kg": eid,
                  "n": len(parts.usage.used[eid]),
                  "x": round(parts.pos[eid][0]), "y": round(parts.pos[eid][1]),
                  "layer": "" if is_tech else e.type}
    if e.aliases:
        node["aliases"] = list(e.aliases)
    if is_tech and parts.cluster_of[eid] < parts.n_clusters:
        node["c"] = parts.cluster_of[eid]
    for facet in parts.facets:
        counts = Counter(facet["of"][i] for i in parts.usage.used[eid]
                         if facet["of"][i] is not None)
        node.setdefault("f", {})[facet["name"]] = [counts.get(v, 0) for v in facet["values"]]
    node.update(_panel(eid, parts, sentences))
    return node


def _panel(eid: str, parts: _Parts, sentences: dict[int, dict[str, int]]) -> dict:
    """A node's panel: exactly the papers `kg shared NAME` lists (users), and apart from them
    those `kg shared NAME --include-mentions` adds (they only mention it)."""
    panel = parts.panels[eid]
    use_rows, mention_rows = [], []
    combined: Counter[int] = Counter()
    # It and its narrower techniques are not "combined with" it (the page's year filter
    # recounts "with" the same way, from the papers' techniques minus these).
    others = parts.tech_set - panel.targets  # (once per node, not once per paper)
    for i, text, confidence, used in panel.rows:
        (use_rows if used else mention_rows).append([i, text, round(confidence, 2)])
        if used:
            combined.update(parts.index_of[other]
                            for other in parts.usage.used_sets[i] & others)
    out: dict = {"narrow": sorted(parts.index_of[t] for t in panel.targets
                                  if t in parts.index_of)}
    for key, rows in (("uses", use_rows), ("mentions", mention_rows)):
        if len(parts.usage.papers) > RELATED_MAX_PAPERS and len(rows) > LIST_MAX:
            # A very large corpus lists the surest uses; `kg shared` lists them all.
            out[key + "Total"] = len(rows)
            rows = sorted(sorted(rows, key=lambda r: (-r[2], r[0]))[:LIST_MAX])
        out[key] = [[i, _sentence_ref(sentences, i, text), conf] for i, text, conf in rows]
    out["with"] = [[j, c] for j, c in sorted(combined.items(),
                                             key=lambda kv: (-kv[1], kv[0]))[:8]]
    return out


def _cluster_rows(groups: list[Cluster], communities: list[list[str]], parts: _Parts
                  ) -> list[dict]:
    """Each cluster of papers `kg techniques` lists, named by its top terms, with its size in
    papers (each paper is in one cluster), colour and the map techniques it colours."""
    used = parts.usage.used
    rows = []
    for k, group in enumerate(groups):
        members = sorted(communities[k], key=lambda e: (-len(used[e]), e))
        names = [name for name, _ in group.terms]
        rows.append({
            "id": k, "label": " · ".join(names[:2]), "terms": names, "size": len(members),
            "papers": len(group.papers),
            "color": CLUSTER_COLORS[k] if k < len(CLUSTER_COLORS) else OTHER_COLOR,
            "members": [parts.index_of[e] for e in members]})
    return rows


def _cluster_note(groups: list[Cluster], techniques: list[str], parts: _Parts) -> str:
    """Says that each paper is in one cluster (or none) while a technique's papers may be in
    several: its colour is that of the cluster most of them are in."""
    papers = len(parts.usage.papers)
    clustered = sum(len(c.papers) for c in groups)
    spread = sum(1 for e in techniques if len({parts.cluster_of_paper.get(
        parts.usage.papers[i].paper.id) for i in parts.usage.used[e]} - {None}) > 1)
    return (f"Clusters of papers, as `kg techniques` lists them: each paper is in one cluster "
            f"or none ({clustered:,} of {papers:,} papers are in one). A technique takes the "
            f"colour of the cluster most of its papers are in; the papers of {spread:,} of the "
            f"{len(techniques):,} techniques shown belong to several clusters.")


def _paper_rows(source: MapSource, parts: _Parts, sentences: dict[int, dict[str, int]]
                ) -> list[dict]:
    """Every paper: metadata, its map techniques, the papers `kg related` ranks first."""
    papers = parts.usage.papers
    ranked = None
    if len(papers) <= RELATED_MAX_PAPERS:
        ranked = source.ranked() if source.ranked else related_all(source.index, _RELATED)
    order = {p.paper.id: i for i, p in enumerate(papers)} if ranked is not None else {}
    rows = []
    for i, (p, entity_ids, _) in enumerate(papers):
        url = _paper_url(p)
        row: dict = {"id": p.id, "t": p.title or p.label or p.id, "v": p.venue, "y": p.year,
                     "u": url, "l": [x for x in p.links if x != url and _is_http(x)],
                     "c": parts.cluster_of_paper.get(p.id, -1) + 1}  # 0: in no cluster
        row = {k: v for k, v in row.items() if v}
        row["k"] = [parts.index_of[e] for e in dict.fromkeys(parts.usage.used_ids[i])
                    if e in parts.index_of]
        row["m"] = [parts.index_of[e] for e in dict.fromkeys(entity_ids)
                    if e in parts.index_of and e not in parts.usage.used_sets[i]]
        if ranked is not None:
            row["r"] = [[order[q], round(score, 3), names[:4]]
                        for q, score, names in ranked[p.id][:_RELATED]]
        if sentences.get(i):
            row["s"] = list(sentences[i])
        rows.append(row)
    return rows


def _facets(papers: list[MapPaper]) -> list[dict]:
    """Overlays the papers support: venue and year, when at least one paper has them."""
    out = []
    venues = [venue_name(p.paper.venue) for p in papers]
    if any(venues):
        out.append({"name": "venue", "of": venues,
                    "values": sorted({v for v in venues if v})})
    years = [p.paper.year for p in papers]
    if len({y for y in years if y}) > 1:
        out.append({"name": "year", "of": years, "values": sorted({y for y in years if y})})
    return out


def place_techniques(graph, communities: list[list[str]],
                     size: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Spring layout (fixed seed) of the connected core, started from cluster sectors; nodes
    outside it sit next to the node they share most with; then overlaps are pushed apart.

    A spring layout flings unconnected nodes to the edge of the square, which squeezes the
    map into its centre, so only the largest component is simulated.
    """
    import networkx as nx

    if len(graph) == 0:
        return {}
    core = max(nx.connected_components(graph), key=lambda c: (len(c), sorted(c)))
    # In the graph's order: a subgraph view of under half the graph would iterate its node
    # set, whose order (hence the bits of the layout) changes with PYTHONHASHSEED.
    pos = _spring_core(graph, [e for e in graph if e in core], _cluster_sectors(communities))
    xs = [float(p[0]) for p in pos.values()]
    ys = [float(p[1]) for p in pos.values()]
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    span = max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
    scale = 60 * math.sqrt(len(graph)) / span
    out = {e: ((float(p[0]) - cx) * scale, (float(p[1]) - cy) * scale) for e, p in pos.items()}
    _attach_rest(graph, out, size)
    return _separate(out, size)


def _cluster_sectors(communities: list[list[str]]) -> dict[str, tuple[float, float]]:
    """Start positions: each cluster a golden-angle spiral around its own point of a spiral."""
    start: dict[str, tuple[float, float]] = {}
    for k, members in enumerate(communities):
        angle = k * 2.399963
        radius = 0.15 + 0.6 * math.sqrt(k / max(1, len(communities)))
        for j, e in enumerate(members):
            a2 = j * 2.399963
            r2 = 0.08 * math.sqrt(j)
            start[e] = (radius * math.cos(angle) + r2 * math.cos(a2),
                        radius * math.sin(angle) + r2 * math.sin(a2))
    return start


def _spring_core(graph, nodes: list[str], start: dict[str, tuple[float, float]]) -> dict:
    """networkx's force layout of ``nodes`` (of ``graph``) from ``start``, rescaled to
    [-1, 1]²."""
    import networkx as nx
    import numpy as np

    if len(nodes) == 1:
        return {nodes[0]: (0.0, 0.0)}
    xy = _spring_force(nx.to_numpy_array(graph.subgraph(nodes), nodelist=nodes, weight="weight"),
                       np.array([start[e] for e in nodes], dtype=float),
                       k=2.0 / math.sqrt(len(nodes)), iterations=150)
    return dict(zip(nodes, nx.rescale_layout(xy, scale=1) + np.zeros(2), strict=True))


def _attach_rest(graph, out: dict[str, tuple[float, float]], size: dict[str, float]) -> None:
    """Each node outside the core beside its strongest placed neighbour (into ``out``), biggest
    first; a node with none beside the biggest placed node."""
    crowd: Counter[str] = Counter()
    for e in sorted(graph, key=lambda e: (-size[e], e)):
        if e in out:
            continue
        anchors = sorted(((graph[e][o]["weight"], o) for o in graph[e] if o in out),
                         key=lambda t: (-t[0], t[1]))
        anchor = anchors[0][1] if anchors else max(out, key=lambda o: (size[o], o))
        k = crowd[anchor]
        crowd[anchor] += 1
        angle = k * 2.399963 + 0.5
        r = size[anchor] + size[e] + 18 + 10 * math.sqrt(k)
        out[e] = (out[anchor][0] + r * math.cos(angle), out[anchor][1] + r * math.sin(angle))


def _separate(out: dict[str, tuple[float, float]], size: dict[str, float]
              ) -> dict[str, tuple[float, float]]:
    """Push overlapping discs apart (a few dozen rounds of pairwise separation).

    The pair matrices are indexed [j, i] (other, node) so that summing over axis 0 adds each
    node's pushes in j order, as the (n, n, 2) version this replaced did: the same bits, 5×
    faster.
    """
    import numpy as np

    names = sorted(out)
    x = np.array([out[e][0] for e in names], dtype=float)
    y = np.array([out[e][1] for e in names], dtype=float)
    rad = np.array([size[e] for e in names], dtype=float) + 3.0
    reach = rad[None, :] + rad[:, None]
    eye = np.eye(len(names))
    for _ in range(60):
        dx, dy = x[None, :] - x[:, None], y[None, :] - y[:, None]
        dist = np.sqrt(dx * dx + dy * dy) + eye
        gap = reach - dist
        np.fill_diagonal(gap, 0.0)
        gap = np.clip(gap, 0.0, None)
        if not gap.any():
            break
        half = gap / 2
        x += np.add.reduce(dx / dist * half, axis=0)
        y += np.add.reduce(dy / dist * half, axis=0)
    return {e: (float(a), float(b)) for e, a, b in zip(names, x, y, strict=True)}


def _spring_force(adjacency, pos, *, k: float, iterations: int, threshold: float = 1e-4):
    """networkx's dense spring layout (``spring_layout(method="force")``, its
    ``_fruchterman_reingold``) with the same arithmetic in the same order, so the same bits,
    on separate x and y matrices instead of (n, n, 2) arrays: 5× faster.

    Matrices are indexed [j, i] (other node, node): reducing over axis 0 sums each node's
    forces sequentially in j order, which is how ``einsum("ijk,ij->ik")`` sums them.

    >>> import networkx as nx, numpy as np
    >>> g = nx.path_graph(5)
    >>> start = {i: (i / 10, (i * 7 % 5) / 10) for i in g}
    >>> ref = nx.spring_layout(g, pos=start, k=0.5, iterations=30, method="force")
    >>> xy = _spring_force(nx.to_numpy_array(g), np.array([start[i] for i in g]), k=0.5,
    ...                    iterations=30)
    >>> bool((nx.rescale_layout(xy, scale=1) == np.array([ref[i] for i in g])).all())
    True
    """
    import numpy as np

    n = len(pos)
    x, y = pos[:, 0].copy(), pos[:, 1].copy()
    weight = np.ascontiguousarray(adjacency.T)
    t = max(max(pos.T[0]) - min(pos.T[0]), max(pos.T[1]) - min(pos.T[1])) * 0.1
    dt = t / (iterations + 1)
    for _ in range(iterations):
        dx, dy = x[None, :] - x[:, None], y[None, :] - y[:, None]
        distance = np.clip(np.sqrt(dx * dx + dy * dy), 0.01, None)
        force = k * k / distance ** 2 - weight * distance / k
        fx, fy = np.add.reduce(dx * force, axis=0), np.add.reduce(dy * force, axis=0)
        step = t / np.clip(np.sqrt(fx * fx + fy * fy), 0.01, None)
        delta = np.column_stack([fx * step, fy * step])
        x += delta[:, 0]
        y += delta[:, 1]
        t -= dt
        if np.linalg.norm(delta) / n < threshold:
            break
    return np.column_stack([x, y])


def _vis_options() -> dict:
    return {
        "autoResize": True,
        "nodes": {"shape": "dot", "borderWidth": 1, "borderWidthSelected": 3,
                  "font": {"size": 0}},
        "edges": {"color": {"color": "#9aa3ad", "opacity": 0.45, "highlight": "#3b4652",
                            "hover": "#3b4652", "inherit": False},
                  "smooth": False, "selectionWidth": 1.5, "hoverWidth": 0.5},
        # Positions are precomputed: physics would move every node on load.
        "physics": {"enabled": False},
        "interaction": {"hover": True, "tooltipDelay": 150, "navigationButtons": False,
                        "keyboard": False, "multiselect": False, "hideEdgesOnDrag": False},
        "layout": {"improvedLayout": False},
    }


def render_map_html(view: MapView) -> str:
    """The map page as one HTML string: vis-network, styles, script and data inlined."""
    layer_counts = Counter(n["layer"] for n in view.nodes if n["layer"])
    payload = {
        "title": view.title, "view": view.view, "notice": view.notice, "nodes": view.nodes,
        "edges": view.edges, "clusters": view.clusters, "papers": view.papers,
        "facets": view.facets, "options": _vis_options(), "clusterNote": view.cluster_note,
        "layers": [{"type": t, "count": layer_counts[t]} for t in LAYER_TYPES
                   if layer_counts[t]],
        "layerColors": LAYER_COLORS, "sharedColor": SHARED_COLOR, "otherColor": OTHER_COLOR,
    }
    return render_page("map.html", view.title, "map.js", ("viz.css", "map.css"), payload)
