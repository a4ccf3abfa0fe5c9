"""The technique map: the default page for corpora above a few hundred papers.

Nodes are the techniques papers *use* (``PaperResult.used_ids``), sized by how many papers
use them; an edge joins two techniques used by the same papers, weighted by their Jaccard
index and thinned to each node's strongest few. Clusters come from networkx Louvain (fixed
seed) and are named by their biggest techniques. Tasks, models and datasets are optional
layers placed next to the techniques they go with. Positions are computed here; the page
only decides which labels fit at the current zoom (biggest first, none overlapping).

Each technique carries what its panel lists: the papers ``kg shared NAME`` returns, split
into those that use it (evidence sentence, confidence) and those that only mention it, and
the techniques its papers combine it with. Each paper carries the papers ``kg related``
ranks first and what they share.

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

from kg.errors import KgError
from kg.model import Corpus, PaperResult

MAP_MIN_PAPERS = 300  # above this many papers the default page is the map
DEFAULT_MAP_NODES = 300
_SEED = 7
_TECHNIQUE_TYPES = ("Technique", "Method")
LAYER_TYPES = ("Task", "Model", "Dataset")
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


def _paper_url(result: PaperResult) -> str | None:
    url = result.paper.url or (result.paper.id if result.paper.id.startswith(
        ("https://", "http://")) else None)
    return url if url and url.startswith(("https://", "http://")) else None


# Ranking every paper's related papers grows with the square of the corpus (related_all: ~0.6 s
# at 5,000 papers); above this size the panel points to `kg related` instead of precomputing.
RELATED_MAX_PAPERS = 20_000
_RELATED_BLOCK = 64  # papers related_all scores at once: (block × papers) cells stay in cache
# Above that size, a technique's panel lists this many papers (the surest), and says how many
# more `kg shared` would list: the evidence sentences of every use would make the file huge.
LIST_MAX = 100


def build_map(corpus: Corpus, *, max_nodes: int = DEFAULT_MAP_NODES) -> MapView:
    """Techniques, their associations, clusters, layers and per-node paper lists.

    At most ``max_nodes`` techniques are kept (most papers first; each used by at least two
    papers when there are enough of those).
    """
    import networkx as nx

    from kg.analysis import shared

    results = list(corpus)
    n_papers = len(results)
    entities = corpus.entities
    # PaperResult.used_ids is recomputed on every access; the map reads it ~80,000 times.
    used_ids = [r.used_ids for r in results]
    used_sets = [set(ids) for ids in used_ids]
    used: dict[str, set[int]] = defaultdict(set)
    for i, ids in enumerate(used_sets):
        for eid in ids:
            used[eid].add(i)

    def top(types: tuple[str, ...], limit: int) -> list[str]:
        ranked = sorted((eid for eid in used if entities[eid].type in types),
                        key=lambda e: (-len(used[e]), entities[e].name.casefold(), e))
        shared_ones = [e for e in ranked if len(used[e]) >= 2]
        return (shared_ones if len(shared_ones) >= min(limit, 10) else ranked)[:limit]

    techniques = top(_TECHNIQUE_TYPES, max_nodes)
    tech_set = set(techniques)
    # Co-use counts among the kept techniques.
    co: Counter[tuple[str, str]] = Counter()
    for ids in used_sets:
        ids = sorted(ids & tech_set)
        for a_i, a in enumerate(ids):
            for b in ids[a_i + 1:]:
                co[(a, b)] += 1

    def jaccard(a: str, b: str, c: int) -> float:
        return c / (len(used[a]) + len(used[b]) - c)

    assoc = {pair: jaccard(*pair, c) for pair, c in co.items()}
    # Louvain on every association (two or more shared papers), fixed seed.
    full = nx.Graph()
    full.add_nodes_from(techniques)
    full.add_weighted_edges_from((a, b, w) for (a, b), w in sorted(assoc.items())
                                 if co[(a, b)] >= 2)
    communities = nx.community.louvain_communities(full, weight="weight", seed=_SEED)
    communities = sorted((sorted(c) for c in communities),
                         key=lambda c: (-sum(len(used[e]) for e in c), c[0]))
    cluster_of = {e: k for k, c in enumerate(communities) for e in c}

    # Thinned edges: each node's strongest few (shared by ≥ 2 papers), drawn and laid out.
    by_node: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for (a, b), w in assoc.items():
        if co[(a, b)] >= 2:
            by_node[a].append((w, b))
            by_node[b].append((w, a))
    kept: set[tuple[str, str]] = set()
    for a, items in by_node.items():
        for _, b in sorted(items, key=lambda t: (-t[0], t[1]))[:_EDGES_PER_NODE]:
            kept.add((min(a, b), max(a, b)))
    layout_graph = nx.Graph()
    layout_graph.add_nodes_from(techniques)
    for a, b in sorted(kept):
        # Same-cluster pairs pull harder, so clusters read as regions.
        boost = 3.0 if cluster_of[a] == cluster_of[b] else 0.3
        layout_graph.add_edge(a, b, weight=assoc[(a, b)] * boost + 0.05)
    pos = _layout(layout_graph, communities,
                  {e: 5 + 2.4 * math.sqrt(len(used[e])) for e in techniques})

    # Optional layers sit near the techniques their papers use most.
    layers: list[str] = []
    for t in LAYER_TYPES:
        layers += top((t,), _LAYER_NODES)
    layer_pos: dict[str, tuple[float, float]] = {}
    crowd: Counter[tuple[int, int]] = Counter()
    for eid in layers:
        near: Counter[str] = Counter()
        for i in used[eid]:
            near.update(used_sets[i] & tech_set)
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
        layer_pos[eid] = (x + radius * math.cos(angle), y + radius * math.sin(angle))

    node_ids = techniques + layers
    index_of = {eid: i for i, eid in enumerate(node_ids)}
    view = MapView(title=f"Technique map of {n_papers:,} papers")
    sentences: dict[int, dict[str, int]] = defaultdict(dict)
    order = {r.paper.id: i for i, r in enumerate(results)}

    def sentence_ref(i: int, text: str) -> int:
        bank = sentences[i]
        if text not in bank:
            bank[text] = len(bank)
        return bank[text]

    facet_specs = _facets(results)
    for eid in node_ids:
        e = entities[eid]
        is_tech = eid in tech_set
        node: dict = {"id": index_of[eid], "name": e.name, "type": e.type, "kg": eid,
                      "n": len(used[eid]),
                      "x": round((pos if is_tech else layer_pos)[eid][0]),
                      "y": round((pos if is_tech else layer_pos)[eid][1]),
                      "layer": "" if is_tech else e.type}
        if e.aliases:
            node["aliases"] = list(e.aliases)
        if is_tech:
            node["c"] = cluster_of[eid]
        for facet in facet_specs:
            counts = Counter(facet["of"][i] for i in used[eid] if facet["of"][i] is not None)
            node.setdefault("f", {})[facet["name"]] = [counts.get(v, 0)
                                                       for v in facet["values"]]
        # The panel's papers are exactly `kg shared NAME` (users), and apart from them the
        # papers `kg shared NAME --include-mentions` adds (they only mention it).
        try:
            uses = shared(corpus, e.name, include_mentions=True)
        except KgError:
            uses = []
        use_rows, mention_rows = [], []
        combined: Counter[int] = Counter()
        for use in uses:
            i = order[use.paper.id]
            hit = [u for u in use.uses if u.used]
            if hit:
                u = hit[0]
                use_rows.append([i, u.evidence.text, round(u.confidence, 2)])
                for other in used_sets[i] & tech_set:
                    if other not in {x.entity.id for x in use.uses}:
                        combined[index_of[other]] += 1
            else:
                u = use.uses[0]
                mention_rows.append([i, u.evidence.text, round(u.confidence, 2)])
        for key, rows in (("uses", use_rows), ("mentions", mention_rows)):
            if len(results) > RELATED_MAX_PAPERS and len(rows) > LIST_MAX:
                # A very large corpus lists the surest uses; `kg shared` lists them all.
                node[key + "Total"] = len(rows)
                rows = sorted(sorted(rows, key=lambda r: (-r[2], r[0]))[:LIST_MAX])
            node[key] = [[i, sentence_ref(i, text), conf] for i, text, conf in rows]
        node["with"] = [[j, c] for j, c in sorted(combined.items(),
                                                  key=lambda kv: (-kv[1], kv[0]))[:8]]
        view.nodes.append(node)

    for a, b in sorted(kept):
        view.edges.append({"from": index_of[a], "to": index_of[b], "w": round(assoc[(a, b)], 3),
                           "n": co[(a, b)]})

    for k, members in enumerate(communities):
        ranked = sorted(members, key=lambda e: (-len(used[e]), entities[e].name.casefold()))
        names = [entities[e].name for e in ranked[:3]]
        view.clusters.append({
            "id": k, "label": " · ".join(names[:2]), "terms": names, "size": len(members),
            "papers": len(set().union(*(used[e] for e in members))),
            "color": CLUSTER_COLORS[k] if k < len(CLUSTER_COLORS) and len(members) > 1
            else OTHER_COLOR,
            "members": [index_of[e] for e in ranked]})

    # Every paper: metadata, its map techniques, the papers `kg related` ranks first.
    ranked = related_all(corpus, _RELATED) if len(results) <= RELATED_MAX_PAPERS else None
    for i, r in enumerate(results):
        p = r.paper
        row: dict = {"id": p.id, "t": p.title or p.label or p.id}
        if p.venue:
            row["v"] = p.venue
        if p.year:
            row["y"] = p.year
        url = _paper_url(r)
        if url:
            row["u"] = url
        row["k"] = [index_of[e] for e in dict.fromkeys(used_ids[i]) if e in index_of]
        row["m"] = [index_of[e] for e in dict.fromkeys(r.entity_ids)
                    if e in index_of and e not in used_sets[i]]
        if ranked is not None:
            row["r"] = [[order[q], round(score, 3), names[:4]]
                        for q, score, names in ranked[p.id]]
        bank = sentences.get(i)
        if bank:
            row["s"] = list(bank)
        view.papers.append(row)
    view.facets = [{"name": f["name"], "values": f["values"],
                    "totals": [sum(1 for v in f["of"] if v == value) for value in f["values"]],
                    "colors": [FACET_COLORS[j % len(FACET_COLORS)]
                               for j in range(len(f["values"]))]}
                   for f in facet_specs]
    left = len([e for e in used if entities[e].type in _TECHNIQUE_TYPES]) - len(techniques)
    if left > 0:
        view.notice = (f"The map shows the {len(techniques):,} techniques used by the most "
                       f"papers; {left:,} rarer ones are searchable through their papers.")
    return view


def related_all(corpus: Corpus, n: int) -> dict[str, list[tuple[str, float, list[str]]]]:
    """For every paper, what ``kg related ID -n n`` lists: (paper id, score, shared names).

    The ranking of ``kg.analysis.related`` — the same scores to the last bit, ties by paper
    id, shared names best first — for all papers at once: one related() call costs ~2 ms,
    and a conference's 5,000 of them took most of the time to write its map.

    Papers are scored in blocks with numpy, over the same index. Per pair of papers, an upper
    bound counts every shared feature and a lower bound only those both name directly (never
    dropped); a pair whose upper bound is below a paper's n-th lower bound cannot rank. The
    rest are scored as ``_shared_between`` scores them (an inherited concept broader than
    another shared feature is dropped), and those that may tie at the n-th place are summed
    again in related()'s order, so ties break alike.

    >>> from kg.analysis import related
    >>> from kg.pipeline import load_corpus
    >>> corpus = load_corpus(["examples/iclr2025-seed.txt"])
    >>> pid = corpus.results[0].paper.id
    >>> related_all(corpus, 3)[pid] == [(r.paper.id, r.score, [s.name for s in r.shared])
    ...                                 for r in related(corpus, pid, 3)]
    True
    """
    import numpy as np

    from kg.analysis import analysis_index

    index = analysis_index(corpus)
    pids = list(index.papers)
    n_papers = len(pids)
    out: dict[str, list[tuple[str, float, list[str]]]] = {pid: [] for pid in pids}
    # Features that can link two papers: positive weight, two or more papers.
    keys = [k for k, rows in index.factors.items() if len(rows) > 1 and index.weight(k) > 0]
    if not keys or n < 1:
        return out
    row_of = {pid: i for i, pid in enumerate(pids)}
    kid = {k: j for j, k in enumerate(keys)}
    weight = np.array([index.weight(k) for k in keys])
    names = [index.info[k][0] for k in keys]
    name_rank = _rank(sorted(range(len(keys)), key=lambda j: (names[j].casefold(), keys[j])))
    id_rank = _rank(sorted(range(n_papers), key=pids.__getitem__))
    # Each feature's papers (CSR, corpus order): paper, factor, inherited. And the same
    # entries sorted by (paper, feature) code, to look up one paper's factor of a feature.
    post_len = np.array([len(index.factors[k]) for k in keys], dtype=np.intp)
    post_ptr = np.concatenate([[0], np.cumsum(post_len)])
    post_paper = np.array([row_of[p] for k in keys for p, _ in index.factors[k]],
                          dtype=np.intp)
    post_factor = np.array([f for k in keys for _, f in index.factors[k]])
    post_inherited = np.array([bool(index.features[p][k].via) for k in keys
                               for p, _ in index.factors[k]], dtype=bool)
    code = post_paper * len(keys) + np.repeat(np.arange(len(keys)), post_len)
    by_code = np.argsort(code, kind="stable")
    code = code[by_code]
    # Each paper's features (CSR) and, among them, which is broader than which.
    f_kid: list[int] = []
    f_factor: list[float] = []
    f_inherited: list[bool] = []
    f_len: list[int] = []
    b_from: list[int] = []
    b_to: list[int] = []
    b_len: list[int] = []
    for pid in pids:
        own = [(k, f) for k, f in index.features[pid].items() if k in kid]
        col = {k: c for c, (k, _) in enumerate(own)}
        f_len.append(len(own))
        b_len.append(0)
        for c, (k, f) in enumerate(own):
            f_kid.append(kid[k])
            f_factor.append(f.factor)
            f_inherited.append(bool(f.via))
            for b in sorted(index.broader.get(k, frozenset()) & col.keys()):
                b_from.append(c)
                b_to.append(col[b])
                b_len[-1] += 1
    feat_kid = np.array(f_kid, dtype=np.intp)
    feat_factor = np.array(f_factor)
    feat_inherited = np.array(f_inherited, dtype=bool)
    feat_len = np.array(f_len, dtype=np.intp)
    feat_ptr = np.concatenate([[0], np.cumsum(feat_len)])
    bro_from = np.array(b_from, dtype=np.intp)
    bro_to = np.array(b_to, dtype=np.intp)
    bro_len = np.array(b_len, dtype=np.intp)
    bro_ptr = np.concatenate([[0], np.cumsum(bro_len)])
    tol = 1e-9  # far above the rounding difference of two summation orders

    for start in range(0, n_papers, _RELATED_BLOCK):
        block = np.arange(start, min(start + _RELATED_BLOCK, n_papers))
        size = len(block)
        # Bounds for every (paper in block, other paper) cell, over every shared feature.
        slots = _ranges(feat_ptr[block], feat_len[block])
        slot_kid = feat_kid[slots]
        ent = _ranges(post_ptr[slot_kid], post_len[slot_kid])
        ent_slot = np.repeat(np.arange(len(slots)), post_len[slot_kid])
        value = (np.minimum(post_factor[ent], feat_factor[slots][ent_slot])
                 * weight[slot_kid][ent_slot])
        cell = np.repeat(np.arange(size), feat_len[block])[ent_slot] * n_papers + post_paper[ent]
        direct = ~(post_inherited[ent] | feat_inherited[slots][ent_slot])
        upper = np.bincount(cell, value, size * n_papers)
        lower = np.bincount(cell[direct], value[direct], size * n_papers)
        itself = np.arange(size) * n_papers + block
        upper[itself] = lower[itself] = 0.0
        hit = np.flatnonzero(lower > 0)
        floor = _nth_largest(hit // n_papers, lower[hit], size, n)
        cand = np.flatnonzero((upper.reshape(size, n_papers) > 0)
                              & (upper.reshape(size, n_papers) >= (floor - tol)[:, None]))
        c_row, c_other = np.divmod(cand, n_papers)
        c_paper = block[c_row]
        # Exact terms per candidate pair and feature of the paper (a row of "terms").
        t_len = feat_len[c_paper]
        t_ptr = np.concatenate([[0], np.cumsum(t_len)])
        t_slot = _ranges(feat_ptr[c_paper], t_len)
        t_pair = np.repeat(np.arange(len(cand)), t_len)
        t_kid = feat_kid[t_slot]
        wanted = c_other[t_pair] * len(keys) + t_kid
        at = np.minimum(np.searchsorted(code, wanted), len(code) - 1)
        common = code[at] == wanted
        entry = by_code[at]
        pairs = _ranges(bro_ptr[c_paper], bro_len[c_paper])
        p_pair = np.repeat(np.arange(len(cand)), bro_len[c_paper])
        covered = np.bincount(t_ptr[p_pair] + bro_to[pairs],
                              common[t_ptr[p_pair] + bro_from[pairs]], len(t_pair)) > 0
        # An inherited concept (in either paper) broader than another shared key is dropped.
        inherited = (common & post_inherited[entry]) | feat_inherited[t_slot]
        keep = common & ~(covered & inherited)
        terms = np.where(keep, np.minimum(np.where(common, post_factor[entry], 0.0),
                                          feat_factor[t_slot]) * weight[t_kid], 0.0)
        score = np.bincount(t_pair, terms, len(cand))
        hit = np.flatnonzero(score > 0)
        nth = _nth_largest(c_row[hit], score[hit], size, n)
        near = (score > 0) & (score >= nth[c_row] - tol)
        # related() sums a pair's weights largest first; one or two terms sum alike in any
        # order, more are summed again that way so near-ties break as there.
        for c in np.flatnonzero(near & (np.bincount(t_pair, keep, len(cand)) > 2)):
            values = terms[t_ptr[c]:t_ptr[c + 1]]
            score[c] = sum(sorted(values[values > 0].tolist(), reverse=True))
        chosen = np.flatnonzero(near & (score > 1e-12))
        chosen = chosen[np.lexsort((id_rank[c_other[chosen]], -score[chosen], c_row[chosen]))]
        group = c_row[chosen]
        chosen = chosen[np.arange(len(chosen)) - np.searchsorted(group, group) < n]
        # The shared features of each chosen pair, named in related()'s order.
        place = np.full(len(cand), -1, dtype=np.intp)
        place[chosen] = np.arange(len(chosen))
        named = _ranges(t_ptr[chosen], t_len[chosen])
        named = named[keep[named]]
        named = named[np.lexsort((name_rank[t_kid[named]], -terms[named], place[t_pair[named]]))]
        counts = np.bincount(place[t_pair[named]], minlength=len(chosen)).tolist()
        shared = [names[j] for j in t_kid[named].tolist()]
        at = 0
        for p, q, s, m in zip(c_paper[chosen].tolist(), c_other[chosen].tolist(),
                              score[chosen].tolist(), counts, strict=True):
            out[pids[p]].append((pids[q], s, shared[at:at + m]))
            at += m
    return out


def _rank(order: list[int]):
    """The inverse permutation: rank[order[i]] = i."""
    import numpy as np

    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return rank


def _ranges(starts, counts):
    """The ranges [start, start + count) one after another, as one index array.

    >>> _ranges([5, 0], [2, 3]).tolist()
    [5, 6, 0, 1, 2]
    """
    import numpy as np

    counts = np.asarray(counts, dtype=np.intp)
    ends = np.cumsum(counts)
    total = int(ends[-1]) if len(ends) else 0
    return np.repeat(np.asarray(starts, dtype=np.intp) - ends + counts, counts) + np.arange(total)


def _nth_largest(group, values, groups: int, n: int):
    """Per group 0..groups-1, the n-th largest of its ``values`` (0.0 when it has fewer).

    >>> import numpy as np
    >>> _nth_largest(np.array([0, 0, 1, 0]), np.array([3.0, 1.0, 5.0, 2.0]), 2, 2).tolist()
    [2.0, 0.0]
    """
    import numpy as np

    order = np.lexsort((-values, group))
    group, values = group[order], values[order]
    first = np.searchsorted(group, np.arange(groups))
    enough = np.searchsorted(group, np.arange(groups), side="right") - first >= n
    out = np.zeros(groups)
    out[enough] = values[first[enough] + n - 1]
    return out


def _facets(results: list[PaperResult]) -> list[dict]:
    """Overlays the papers support: venue and year, when at least one paper has them."""
    out = []
    venues = [venue_name(r.paper.venue) for r in results]
    if any(venues):
        out.append({"name": "venue", "of": venues,
                    "values": sorted({v for v in venues if v})})
    years = [r.paper.year for r in results]
    if len({y for y in years if y}) > 1:
        out.append({"name": "year", "of": years, "values": sorted({y for y in years if y})})
    return out


def _layout(graph, communities: list[list[str]],
            size: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Spring layout (fixed seed) of the connected core, started from cluster sectors; nodes
    outside it sit next to the node they share most with; then overlaps are pushed apart.

    A spring layout flings unconnected nodes to the edge of the square, which squeezes the
    map into its centre, so only the largest component is simulated.
    """
    import networkx as nx
    import numpy as np

    n = len(graph)
    if n == 0:
        return {}
    core = max(nx.connected_components(graph), key=lambda c: (len(c), sorted(c)))
    start: dict[str, tuple[float, float]] = {}
    for k, members in enumerate(communities):
        angle = k * 2.399963
        radius = 0.15 + 0.6 * math.sqrt(k / max(1, len(communities)))
        for j, e in enumerate(members):
            a2 = j * 2.399963
            r2 = 0.08 * math.sqrt(j)
            start[e] = (radius * math.cos(angle) + r2 * math.cos(a2),
                        radius * math.sin(angle) + r2 * math.sin(a2))
    sub = graph.subgraph(sorted(core))
    nodes = list(sub)
    if len(nodes) == 1:
        pos = {nodes[0]: (0.0, 0.0)}
    else:
        xy = _spring_force(nx.to_numpy_array(sub, weight="weight"),
                           np.array([start[e] for e in nodes], dtype=float),
                           k=2.0 / math.sqrt(len(sub)), iterations=150)
        pos = dict(zip(nodes, nx.rescale_layout(xy, scale=1) + np.zeros(2), strict=True))
    xs = [float(p[0]) for p in pos.values()]
    ys = [float(p[1]) for p in pos.values()]
    cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    span = max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
    scale = 60 * math.sqrt(n) / span
    out = {e: ((float(p[0]) - cx) * scale, (float(p[1]) - cy) * scale) for e, p in pos.items()}
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
    # Push overlapping discs apart (a few dozen rounds of pairwise separation). The pair
    # matrices are indexed [j, i] (other, node) so that summing over axis 0 adds each node's
    # pushes in j order, as the (n, n, 2) version this replaced did: the same bits, 5× faster.
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
    import html as html_lib

    from pyvis.network import Network

    from kg.viz import _TEMPLATES, _inline_safe, _script_json, _vis_assets, app_script

    net = Network(height="100%", width="100%", heading=view.title, cdn_resources="in_line")
    net.set_template_dir(str(_TEMPLATES) + "/", "map.html")
    vis_js, vis_css = _vis_assets()
    layer_counts = Counter(n["layer"] for n in view.nodes if n["layer"])
    payload = {
        "title": view.title, "view": view.view, "notice": view.notice, "nodes": view.nodes,
        "edges": view.edges, "clusters": view.clusters, "papers": view.papers,
        "facets": view.facets, "options": _vis_options(),
        "layers": [{"type": t, "count": layer_counts[t]} for t in LAYER_TYPES
                   if layer_counts[t]],
        "layerColors": LAYER_COLORS, "sharedColor": SHARED_COLOR, "otherColor": OTHER_COLOR,
    }
    css = ((_TEMPLATES / "viz.css").read_text(encoding="utf-8")
           + (_TEMPLATES / "map.css").read_text(encoding="utf-8"))
    net.templateEnv.globals.update(
        page_title=html_lib.escape(f"kg — {view.title}"),
        vis_js=_inline_safe(vis_js, "vis-network.min.js"),
        vis_css=_inline_safe(vis_css, "vis-network.css"),
        app_js=app_script("map.js"),
        app_css=_inline_safe(css, "map.css"),
        payload=_script_json(payload),
    )
    return net.generate_html(name="graph.html")
