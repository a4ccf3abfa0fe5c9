"""The interactive pages: one self-contained, offline HTML file (pyvis / vis-network).

Two pages. The graph (kg.viz.graph): papers and entities are nodes (coloured by type, sized by
degree); a paper is linked to each entity it mentions, and entity → entity relations
(``extends``, ``outperforms``) are arrows. The technique map (kg.viz.map), the default above
``MAP_MIN_PAPERS`` papers: techniques, their associations and clusters, and the papers using
each. Every script and stylesheet is inlined — vis-network comes from the copy pyvis ships —
so the file makes no network request (kg.viz.page). Layouts are computed here (kg.viz.layout)
and physics is off on load, so large graphs open at once and re-runs give a byte-identical
file. The page draws node labels itself, at a fixed size on screen and never over one another
(kg/viz/templates/viz.js).

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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kg.errors import InputError
from kg.fs import replacing
from kg.model import Corpus
from kg.viz.graph import (
    DEFAULT_MAX_ENTITIES,
    DEFAULT_RELATED,
    TYPE_COLORS,
    GraphView,
    build_view,
    paper_name,
    render_html,
)
from kg.viz.map import MAP_MIN_PAPERS, MapView, build_map, render_map_html
from kg.viz.map_source import MapSource

__all__ = [
    "DEFAULT_MAX_ENTITIES",
    "DEFAULT_RELATED",
    "MAP_MIN_PAPERS",
    "TYPE_COLORS",
    "VIEWS",
    "GraphView",
    "MapSource",
    "MapView",
    "VizSummary",
    "build_map",
    "build_view",
    "paper_name",
    "render_html",
    "render_map_html",
    "write_viz",
]


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
    corpus: Corpus | MapSource,
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
    give their focused graph. A ``MapSource`` (a project's stored index) draws the map only.

    >>> from kg.pipeline import load_corpus
    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "graph.html")
    >>> write_viz(load_corpus(["examples/iclr2025-seed.txt"]), out).papers
    19
    """
    if view not in VIEWS:
        raise InputError(f"--view {view!r}: choose one of {', '.join(VIEWS)}")
    use_map = technique is None and paper is None and (
        view == "map" or (view == "auto" and len(corpus) > MAP_MIN_PAPERS))
    if not use_map and isinstance(corpus, MapSource):
        raise InputError("only the technique map is drawn from a project's index; "
                         "give the corpus for the graph view")
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
        # A new file renamed into place, never a write through an existing name: that name may
        # be a hard link into a project's recorded generation (issue 25).
        with replacing(path) as tmp:
            tmp.write_bytes(data)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the graph HTML ({exc.strerror}); "
                         "choose another -o path") from exc
    return VizSummary(path, counts["nodes"], counts["edges"], counts["papers"],
                      counts["entities"], len(data), notice)
