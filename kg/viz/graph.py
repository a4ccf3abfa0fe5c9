"""The graph page: papers and entities as nodes, chosen, ranked, linked and laid out.

``build_view`` runs four steps: choose the papers (the whole corpus, a technique's users or a
paper and its related papers), rank the entities and keep the top ``max_entities``, make the
nodes and edges, then lay them out (kg.viz.layout). ``render_html`` writes the page.

>>> from kg.pipeline import load_corpus
>>> view = build_view(load_corpus(["examples/iclr2025-seed.txt"]), technique="quantization")
>>> view.view, view.ring, view.entities[str(view.centre[0])]["name"]
('technique', True, 'quantization')
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from kg.analysis import TECHNIQUE_TYPES, find_paper, shared
from kg.analysis import related as related_papers  # build_view's `related` is a count
from kg.errors import InputError
from kg.model import Corpus, EntityType, PaperResult
from kg.text import shorten
from kg.viz.layout import FULL_LAYOUT_MAX_NODES, RING_MAX_PAPERS, layout, size_range
from kg.viz.page import render_page
from kg.vocab import load_vocabulary

DEFAULT_MAX_ENTITIES = 500
DEFAULT_RELATED = 20

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
    ring: bool = False  # laid out as a ring (kg.viz.layout), each paper with a "side"

    def counts(self) -> dict[str, int]:
        """Numbers of nodes, edges, papers and entities in the view."""
        return {"nodes": len(self.nodes), "edges": len(self.edges),
                "papers": len(self.papers), "entities": len(self.entities)}


@dataclass(frozen=True)
class Choice:
    """The papers a view shows before ranking, and what it centres on."""

    view: str  # "corpus" | "technique" | "paper"
    title: str
    papers: list[PaperResult]
    must: frozenset[str] = frozenset()  # entities kept whatever their rank
    focus: str | None = None  # "p:ID" or "e:ID": the node selected on load
    members: tuple[str, ...] = ()  # --technique: its entities (sorted), narrower ones too
    direct: frozenset[str] = frozenset()  # the members the query names itself


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
    if paper is not None:
        choice = choose_paper(corpus, paper, related)
    elif technique is not None:
        choice = choose_technique(corpus, technique, include_mentions)
    else:
        choice = Choice("corpus", "Knowledge graph", list(corpus))
    df = Counter(eid for result in corpus for eid in set(result.entity_ids))
    kept, notes = rank_entities(choice, df, max_entities)
    shown = [r for r in choice.papers if kept.intersection(r.entity_ids) or choice.view == "paper"]
    notes += _left_out(choice.papers, shown)
    g = GraphView(title=choice.title, view=choice.view, notice=" ".join(notes))
    node_of = _add_nodes(g, corpus, shown, kept, df)
    _add_edges(g, shown, kept, node_of)
    _place(g, choice, node_of)
    return g


def _paper_title(result: PaperResult) -> str:
    paper = result.paper
    return paper.title or paper.label or shorten(paper.abstract, 80) or paper.id


def choose_paper(corpus: Corpus, paper: str, n: int) -> Choice:
    """A paper and its ``n`` related papers: the same lookup and ranking as `kg related`."""
    by_id = {r.paper.id: r for r in corpus}
    center = find_paper(corpus, paper).id
    chosen = [by_id[center]] + [by_id[r.paper.id] for r in related_papers(corpus, center, n)]
    return Choice("paper", f"{shorten(_paper_title(by_id[center]), 80)} and related papers",
                  chosen, must=frozenset(by_id[center].entity_ids),  # its own always show
                  focus="p:" + center)


def choose_technique(corpus: Corpus, technique: str, include_mentions: bool) -> Choice:
    """The papers using ``technique`` as `kg shared` matches it: names, aliases, vocabulary
    labels, narrower concepts."""
    uses = shared(corpus, technique, include_mentions=include_mentions)
    if not uses:
        raise InputError(f"--technique {technique!r}: no paper in this graph uses it "
                         "(or a narrower concept)")
    members = sorted({u.entity.id for use in uses for u in use.uses})
    using = {use.paper.id for use in uses}
    return Choice("technique", f"Papers using {technique}",
                  [r for r in corpus if r.paper.id in using], must=frozenset(members),
                  focus="e:" + members[0] if len(members) == 1 else None,
                  members=tuple(members),
                  direct=frozenset(u.entity.id for use in uses for u in use.uses if u.direct))


def rank_entities(choice: Choice, df: Counter[str], limit: int) -> tuple[set[str], list[str]]:
    """The entities kept (at most ``limit``) and a note on those left out.

    Candidates: in the focused views those shared by two or more chosen papers, plus
    ``choice.must``; ranked must-first, then by chosen papers, then by papers in the corpus.
    """
    local = Counter(eid for r in choice.papers for eid in set(r.entity_ids))
    if choice.view == "corpus" or len(choice.papers) == 1:
        candidates = set(local)
    else:
        candidates = {e for e, c in local.items() if c >= 2} | (choice.must & set(local))
    ranked = sorted(candidates, key=lambda e: (e not in choice.must, -local[e], -df[e], e))
    kept = ranked[:limit]
    if len(ranked) == len(kept):
        return set(kept), []
    return set(kept), [
        f"Showing the {len(kept):,} most frequent entities (by paper count) of "
        f"{len(ranked):,}; {len(ranked) - len(kept):,} entities are left out "
        f"(raise --max-entities to show more)."]


def _left_out(chosen: list[PaperResult], shown: list[PaperResult]) -> list[str]:
    """A note on the chosen papers not shown, if any: why they are left out."""
    if len(shown) == len(chosen):
        return []
    bare = sum(1 for r in chosen if not r.mentions)
    parts = [f"{bare:,} have no extracted entity"] if bare else []
    if len(chosen) - len(shown) - bare:
        parts.append(f"{len(chosen) - len(shown) - bare:,} mention none of the entities shown")
    return [f"{len(chosen) - len(shown):,} of {len(chosen):,} papers are left out: "
            + " and ".join(parts) + "."]


def _add_nodes(g: GraphView, corpus: Corpus, shown: list[PaperResult], kept: set[str],
               df: Counter[str]) -> dict[str, int]:
    """Paper nodes, then entity nodes (by id) with the panel's details; "p:"/"e:" key → node."""
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
            "links": list(p.links),
        }
    for eid in sorted(kept & {e for r in shown for e in r.entity_ids}):
        e = corpus.entities[eid]
        idx = add_node("e:" + eid, shorten(e.name, 40), e.type)
        g.entities[str(idx)] = {"id": e.id, "name": e.name, "type": e.type,
                                "aliases": list(e.aliases), "concept": e.concept,
                                "papers": df[eid]}
    return node_of


def _paper_links(r: PaperResult, kept: set[str], node_of: dict[str, int],
                 pair: dict[tuple, dict]) -> None:
    """One item per (paper, entity) pair: every predicate and evidence span behind it."""
    pnode = node_of["p:" + r.paper.id]
    by_entity: dict[str, list] = defaultdict(list)
    for rel in r.relations:
        by_entity[rel.object].append(rel)
    for eid, spans in r.mentions:
        if eid not in kept:
            continue
        rels = [x for x in by_entity.get(eid, []) if x.subject == r.paper.id]
        # Evidence is (paper node, start, end) into the paper's text, which the page already
        # holds: quoting sentences again would double the file for big corpora.
        spans_of = {(x.evidence.start, x.evidence.end) for x in rels} or {
            (s.start, s.end) for s in spans}
        predicates = sorted({x.predicate for x in rels} - {"mentions"}) or ["mentions"]
        pair[(pnode, node_of["e:" + eid])] = {
            "predicates": predicates, "evidence": [[pnode, a, b] for a, b in sorted(spans_of)]}


def _relation_links(r: PaperResult, kept: set[str], node_of: dict[str, int],
                    pair: dict[tuple, dict]) -> None:
    """One item per (entity, entity, predicate) relation between kept entities."""
    pnode = node_of["p:" + r.paper.id]
    for rel in r.relations:
        if rel.subject in kept and rel.object in kept:
            key = (node_of["e:" + rel.subject], node_of["e:" + rel.object], rel.predicate)
            item = pair.setdefault(key, {"predicates": [rel.predicate], "evidence": []})
            ev = [pnode, rel.evidence.start, rel.evidence.end]
            if ev not in item["evidence"]:
                item["evidence"].append(ev)


def _add_edges(g: GraphView, shown: list[PaperResult], kept: set[str],
               node_of: dict[str, int]) -> None:
    """The edges in (from, to, predicate) order, then each node's value: its degree."""
    pair: dict[tuple, dict] = {}
    for r in shown:
        _paper_links(r, kept, node_of, pair)
        _relation_links(r, kept, node_of, pair)
    for key in sorted(pair, key=lambda k: (k[0], k[1], k[2] if len(k) > 2 else "")):
        item = pair[key]
        edge = {"id": len(g.edges), "from": key[0], "to": key[1],
                "predicates": item["predicates"], "evidence": sorted(item["evidence"])}
        if len(key) > 2:
            edge["relation"] = True
        g.edges.append(edge)
    degree: Counter[int] = Counter()
    for e in g.edges:
        degree[e["from"]] += 1
        degree[e["to"]] += 1
    for node in g.nodes:
        node["value"] = degree[node["id"]]


def _place(g: GraphView, choice: Choice, node_of: dict[str, int]) -> None:
    """The centre, the layout, the labels big views leave out, the filter and the focus."""
    if choice.view == "paper":
        g.centre = [node_of[choice.focus]]
    elif choice.view == "technique":  # the technique itself; its narrower concepts go inside
        g.centre = sorted(node_of["e:" + m] for m in choice.direct if "e:" + m in node_of)
        g.narrower = sorted(node_of["e:" + m] for m in set(choice.members) - choice.direct
                            if "e:" + m in node_of)
    g.ring = len(g.nodes) <= FULL_LAYOUT_MAX_NODES and (
        choice.view != "corpus" or len(g.papers) <= RING_MAX_PAPERS)
    for (x, y), node in zip(layout(g.nodes, g.edges, ring=g.ring, centre=g.centre), g.nodes,
                            strict=True):
        node["x"], node["y"] = x, y
    if len(g.nodes) > FULL_LAYOUT_MAX_NODES:
        # Thousands of paper labels overlap into noise and cost the browser ~0.1 ms each to
        # lay out; in big views papers are named by their tooltip, the panel and the search.
        for node in g.nodes:
            if node["group"] == "Paper":
                del node["label"]
    g.techniques = _technique_options(g)
    if choice.focus in node_of:
        g.focus = node_of[choice.focus]
    elif choice.members:
        present = [node_of["e:" + m] for m in choice.members if "e:" + m in node_of]
        g.focus = present[0] if len(present) == 1 else None


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
    vocab = load_vocabulary()
    options: dict[str, dict] = {}
    for node_id, e in g.entities.items():
        if e["type"] not in TECHNIQUE_TYPES:
            continue
        if e["concept"] and e["concept"] in vocab.concepts:
            for iri in (e["concept"], *vocab.ancestors(e["concept"])):
                concept = vocab.concepts.get(iri)
                if concept is None or concept.type not in TECHNIQUE_TYPES:
                    continue
                opt = options.setdefault(iri, {"label": concept.pref_label, "members": []})
                opt["members"].append(int(node_id))
        elif e["type"] == EntityType.TECHNIQUE:
            options["e:" + e["id"]] = {"label": e["name"], "members": [int(node_id)]}
    out = [{"key": key, "label": opt["label"], "members": sorted(opt["members"])}
           for key, opt in options.items()]
    return sorted(out, key=lambda o: (o["label"].casefold(), o["key"]))


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
            "scaling": dict(zip(("min", "max"), size_range(g.ring), strict=True)),
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


def render_html(g: GraphView) -> str:
    """The page for ``g`` as one HTML string (our offline template, kg.viz.page)."""
    payload = {
        "title": g.title, "view": g.view, "notice": g.notice, "focus": g.focus,
        "centre": g.centre, "narrower": g.narrower, "ring": g.ring, "options": _vis_options(g),
        "nodes": g.nodes, "edges": g.edges, "papers": g.papers,
        "entities": g.entities, "techniques": g.techniques,
        "types": [{"type": t, "color": c} for t, c in TYPE_COLORS.items()],
    }
    return render_page("viz.html", g.title, "viz.js", ("viz.css",), payload)
