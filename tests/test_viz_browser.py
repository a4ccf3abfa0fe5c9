"""kg viz pages in a real headless Chromium (DevTools protocol via tests/browser.py).

Skipped when Chromium or websocket-client is missing — unless KG_REQUIRE_SERVICES=1 (CI),
where that is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser import Browser, distinct_colours, find_chromium
from test_viz import EVIL_ABSTRACT, EVIL_TITLE, evidence_text, evil_inputs

from kg.viz import build_view, write_viz

SEED_TEXT = Path(__file__).resolve().parent.parent / "examples" / "iclr2025-seed.txt"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    missing = None
    if find_chromium() is None:
        missing = "chromium is not installed (apt-get install -y chromium, or set KG_CHROMIUM)"
    else:
        try:
            import websocket  # noqa: F401
        except ImportError:
            missing = "websocket-client is not installed (pip install websocket-client)"
    if missing:
        if os.environ.get("KG_REQUIRE_SERVICES") == "1":
            pytest.fail(f"KG_REQUIRE_SERVICES=1 but {missing}")
        pytest.skip(missing)
    with Browser.launch() as b:
        yield b


@pytest.fixture(scope="module")
def seed_page_file(tmp_path_factory, seed_corpus):
    out = tmp_path_factory.mktemp("viz") / "graph.html"
    write_viz(seed_corpus, out)
    return out


def open_graph(browser, path: Path):
    page = browser.open(path.as_uri())
    page.wait_for("window.kgViz && window.kgViz.ready")
    return page


def visible(page) -> tuple[int, int]:
    """Nodes and edges vis-network itself treats as shown (not hidden)."""
    return tuple(page.evaluate("""(() => {
        const b = kgViz.network.body;
        const n = Object.values(b.nodes).filter(x => !x.options.hidden).length;
        const e = Object.values(b.edges).filter(x => !x.options.hidden && x.connected).length;
        return [n, e];
    })()"""))


def test_the_page_draws_every_node_and_edge_with_no_errors_and_no_requests(
        browser, seed_page_file, seed_corpus):
    page = open_graph(browser, seed_page_file)
    browser.pump(0.3)
    counts = build_view(seed_corpus).counts()
    assert page.evaluate("[kgViz.nodes.length, kgViz.edges.length]") == [
        counts["nodes"], counts["edges"]]
    assert visible(page) == (counts["nodes"], counts["edges"])
    assert page.errors() == []
    assert page.requests == [seed_page_file.as_uri()]
    notice_hidden = page.evaluate("document.getElementById('kg-notice').hidden")
    assert notice_hidden is (build_view(seed_corpus).notice == "")


def test_a_trimmed_graph_shows_a_visible_notice_of_what_was_left_out(
        browser, tmp_path, seed_corpus):
    out = tmp_path / "top5.html"
    summary = write_viz(seed_corpus, out, max_entities=5)
    page = open_graph(browser, out)
    assert page.evaluate("document.getElementById('kg-notice').hidden") is False
    assert page.evaluate("document.getElementById('kg-notice').textContent") == summary.notice
    box = page.evaluate("document.getElementById('kg-notice').getBoundingClientRect().height")
    assert box > 10
    assert page.evaluate("kgViz.nodes.length") == summary.nodes


def test_the_rendered_graph_is_not_blank(browser, seed_page_file):
    page = open_graph(browser, seed_page_file)
    canvas = page.evaluate("""(() => {
        const c = document.querySelector('#kg-network canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let painted = 0;
        for (let i = 3; i < d.length; i += 16) if (d[i] > 0) painted++;
        return [c.width, c.height, painted];
    })()""")
    assert canvas[0] > 300 and canvas[1] > 300 and canvas[2] > 200  # nodes drawn on the canvas
    assert distinct_colours(page.screenshot(scale=0.5)) > 30  # the screenshot has real content


def test_unchecking_a_type_hides_its_nodes_and_their_links(browser, seed_page_file, seed_corpus):
    page = open_graph(browser, seed_page_file)
    view = build_view(seed_corpus)
    papers = view.counts()["papers"]
    entity_links = sum(1 for e in view.edges if e.get("relation"))
    page.evaluate("document.querySelector('input[data-type=\"Paper\"]').click()")
    assert visible(page) == (view.counts()["nodes"] - papers, entity_links)
    assert "showing" in page.evaluate("document.getElementById('kg-counts').textContent")
    page.evaluate("document.querySelector('input[data-type=\"Paper\"]').click()")
    assert visible(page) == (view.counts()["nodes"], view.counts()["edges"])
    assert page.errors() == []


def test_the_technique_filter_keeps_only_the_papers_using_it(browser, seed_page_file, seed_corpus):
    page = open_graph(browser, seed_page_file)
    view = build_view(seed_corpus)
    option = max(view.techniques, key=lambda o: len(o["members"]))
    members = set(option["members"])
    users = {e["from"] for e in view.edges if e["to"] in members and str(e["from"]) in view.papers}
    index = view.techniques.index(option)
    page.evaluate(f"""(() => {{ const s = document.getElementById('kg-technique');
        s.value = '{index}'; s.dispatchEvent(new Event('change')); }})()""")
    shown = set(page.evaluate("kgViz.visibleNodeIds()"))
    assert {n for n in shown if str(n) in view.papers} == users
    assert members <= shown
    assert len(shown) < view.counts()["nodes"]


def test_the_search_box_narrows_the_view_to_matches_and_their_neighbours(
        browser, seed_page_file, seed_corpus):
    page = open_graph(browser, seed_page_file)
    view = build_view(seed_corpus)
    node, entity = next((int(k), e) for k, e in sorted(view.entities.items())
                        if e["papers"] == 1 and len(e["name"]) > 5)
    neighbours = {e["from"] for e in view.edges if e["to"] == node} | {
        e["to"] for e in view.edges if e["from"] == node}
    page.evaluate(f"""(() => {{ const s = document.getElementById('kg-search');
        s.value = {entity['id']!r}; s.dispatchEvent(new Event('input')); }})()""")
    page.wait_for(f"kgViz.visibleNodeIds().length < {view.counts()['nodes']}")
    assert set(page.evaluate("kgViz.visibleNodeIds()")) >= {node} | neighbours
    assert len(page.evaluate("kgViz.visibleNodeIds()")) < view.counts()["nodes"]


def click_node(page, node: int) -> None:
    """A real left click (DevTools mouse events) on a node where the canvas draws it."""
    x, y = page.evaluate(f"""(() => {{
        const p = kgViz.network.canvasToDOM(kgViz.network.getPosition({node}));
        const r = document.getElementById('kg-network').getBoundingClientRect();
        return [p.x + r.left, p.y + r.top]; }})()""")
    for kind in ("mousePressed", "mouseReleased"):
        page.send("Input.dispatchMouseEvent",
                  {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})


def test_clicking_a_node_highlights_its_neighbourhood_and_shows_its_evidence(
        browser, seed_page_file, seed_corpus):
    page = open_graph(browser, seed_page_file)
    view = build_view(seed_corpus)
    node = max(view.nodes, key=lambda n: n["value"])["id"]
    click_node(page, node)
    page.wait_for("kgViz.network.getSelectedNodes().length === 1")
    assert page.evaluate("kgViz.network.getSelectedNodes()") == [node]
    panel = page.evaluate("document.getElementById('kg-panel').textContent")
    sentences = [evidence_text(view, ev) for e in view.edges if node in (e["from"], e["to"])
                 for ev in e["evidence"]]
    assert sentences[0] in panel
    dimmed = page.evaluate("kgViz.nodes.get({filter: n => n.opacity < 1}).length")
    neighbours = {e["from"] for e in view.edges if e["to"] == node} | {
        e["to"] for e in view.edges if e["from"] == node}
    assert dimmed == view.counts()["nodes"] - len(neighbours | {node})


def test_clicking_an_edge_shows_the_sentences_behind_it(browser, seed_page_file, seed_corpus):
    page = open_graph(browser, seed_page_file)
    view = build_view(seed_corpus)
    edge = next(e for e in view.edges if e["evidence"])
    page.evaluate(f"kgViz.showEdge({edge['id']})")
    panel = page.evaluate("document.getElementById('kg-panel').textContent")
    assert evidence_text(view, edge["evidence"][0]) in panel
    assert ", ".join(edge["predicates"]) in panel


def test_a_malicious_abstract_is_shown_as_text_and_never_runs(browser, tmp_path):
    from kg.pipeline import load_corpus

    out = tmp_path / "evil.html"
    corpus = load_corpus([evil_inputs(tmp_path)])
    write_viz(corpus, out)
    page = open_graph(browser, out)
    node = page.evaluate(
        "Number(Object.keys(kgViz.data.papers).find(k => kgViz.data.papers[k].id === 'evil-1'))")
    page.evaluate(f"kgViz.select({node})")
    # Hover the node too, so vis-network builds and shows its tooltip.
    x, y = page.evaluate(f"""(() => {{
        const p = kgViz.network.canvasToDOM(kgViz.network.getPosition({node}));
        const r = document.getElementById('kg-network').getBoundingClientRect();
        return [p.x + r.left, p.y + r.top]; }})()""")
    page.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    page.wait_for("document.querySelector('div.vis-tooltip') && "
                  "document.querySelector('div.vis-tooltip').style.visibility === 'visible'",
                  timeout=10)
    browser.pump(0.3)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.dialogs == []
    panel = page.evaluate("document.getElementById('kg-panel').textContent")
    assert EVIL_ABSTRACT in panel and EVIL_TITLE in panel
    # Its node label is drawn on the canvas as the characters of the title.
    label = next(x for x in page.evaluate("kgViz.labelsShown()") if x["id"] == node)
    assert label["text"].startswith("<img src=x") and label["full"] == EVIL_TITLE
    tooltip = page.evaluate("document.querySelector('div.vis-tooltip').textContent")
    assert EVIL_TITLE in tooltip
    assert page.evaluate("document.querySelectorAll('img, b, #kg-panel script').length") == 0
    assert page.evaluate("document.scripts.length") == 3
    assert page.errors() == []
    assert page.requests == [out.as_uri()]  # the <img src=x> never loaded


# ------------------------------------------- legible labels in the graph, technique and paper views


def label_clashes(labels: list[dict], tolerance: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of label boxes that overlap by more than ``tolerance`` pixels both ways."""
    return [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:]
            if min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > tolerance
            and min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > tolerance]


def check_labels(page, min_px: int = 12) -> list[dict]:
    """The labels of the view as drawn: legible, inside the canvas, none on another."""
    labels = page.evaluate("kgViz.labelsShown()")
    width, height = page.evaluate("[document.getElementById('kg-network').clientWidth, "
                                  "document.getElementById('kg-network').clientHeight]")
    assert labels and all(x["px"] >= min_px for x in labels)
    assert all(0 <= x["x0"] < x["x1"] <= width and 0 <= x["y0"] < x["y1"] <= height
               for x in labels)
    assert label_clashes(labels) == []
    return labels


def test_every_paper_of_the_demo_graph_is_labelled_legibly_and_no_label_lies_on_another(
        browser, seed_page_file, seed_corpus, tmp_path):
    page = open_graph(browser, seed_page_file)
    view = build_view(seed_corpus)
    labels = check_labels(page)
    papers = {x["id"] for x in labels if x["kind"] == "paper"}
    assert papers == {int(k) for k in view.papers}  # all 19, at the first zoom
    entities = {x["id"] for x in labels if x["kind"] == "entity"}
    assert len(entities) >= 10
    # A long name ends in "…" on the canvas; its tooltip has the whole of it.
    cut = next(x for x in labels if x["text"].endswith("…"))
    assert cut["full"].startswith(cut["text"][:-1].rstrip())
    assert cut["full"] in page.evaluate(f"kgViz.nodes.get({cut['id']}).title.textContent")
    (tmp_path / "demo.png").write_bytes(page.screenshot())
    # Zoomed in, more entities find room; still legible, still none on another.
    page.evaluate("kgViz.network.moveTo({scale: kgViz.network.getScale() * 2.5}); "
                  "kgViz.network.redraw()")
    zoomed = check_labels(page)
    assert len({x["id"] for x in zoomed if x["kind"] == "entity"} - entities) >= 5
    assert page.errors() == []
    assert page.requests == [seed_page_file.as_uri()]


def test_a_window_resized_before_the_reader_moves_the_view_is_fitted_again(
        browser, seed_page_file, seed_corpus):
    page = browser.open(seed_page_file.as_uri(), width=1280, height=700)
    page.wait_for("window.kgViz && window.kgViz.ready")
    before = page.evaluate("kgViz.network.getScale()")
    page.send("Emulation.setDeviceMetricsOverride",
              {"width": 1100, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    page.wait_for(f"kgViz.network.getScale() < {before} * 0.95", timeout=10)
    browser.pump(0.2)
    labels = check_labels(page)
    assert {x["id"] for x in labels if x["kind"] == "paper"} == {
        int(k) for k in build_view(seed_corpus).papers}
    assert page.errors() == []


def test_the_paper_view_of_the_demo_keeps_its_ring_in_full_view(browser, tmp_path, seed_corpus):
    out = tmp_path / "paper.html"
    center = seed_corpus.results[3].paper
    write_viz(seed_corpus, out, paper=center.id, related=8)
    page = open_graph(browser, out)
    labels = check_labels(page)
    view = build_view(seed_corpus, paper=center.id, related=8)
    assert {x["id"] for x in labels if x["kind"] == "paper"} == {int(k) for k in view.papers}
    middle = next(x for x in labels if x["id"] == view.focus)
    assert middle["px"] >= 15 and middle["text"] == "Rotated Runtime Smooth"
    # The paper is selected and in the panel, and nothing is dimmed.
    assert page.evaluate("kgViz.network.getSelectedNodes()") == [view.focus]
    assert center.label in page.evaluate("document.getElementById('kg-panel').textContent")
    assert page.evaluate("kgViz.nodes.get({filter: n => n.opacity < 1}).length") == 0
    assert page.errors() == []


@pytest.fixture(scope="module")
def iclr_quantization(iclr_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("technique") / "quantization.html"
    return out, write_viz(iclr_corpus, out, technique="quantization")


def test_kg_viz_technique_quantization_on_iclr_labels_every_paper_around_the_technique(
        browser, iclr_quantization, iclr_corpus, tmp_path):
    from kg.analysis import shared

    out, summary = iclr_quantization
    page = open_graph(browser, out)
    labels = check_labels(page)
    users = {u.paper.id for u in shared(iclr_corpus, "quantization")}
    shown = {page.evaluate(f"kgViz.data.papers[{x['id']}].id") for x in labels
             if x["kind"] == "paper"}
    assert shown == users and summary.papers == len(users) > 20
    middle = [x for x in labels if x["text"] == "quantization"]
    assert len(middle) == 1 and middle[0]["px"] >= 15
    # The technique sits in the middle of the canvas, its papers' labels to both sides.
    width = page.evaluate("document.getElementById('kg-network').clientWidth")
    centre_x = page.evaluate(f"kgViz.network.canvasToDOM(kgViz.network.getPosition("
                             f"{middle[0]['id']})).x")
    assert abs(centre_x - width / 2) < width * 0.1
    sides = [x["x0"] > centre_x for x in labels if x["kind"] == "paper"]
    assert sides.count(True) - sides.count(False) in (0, 1)
    (tmp_path / "quantization.png").write_bytes(page.screenshot())
    assert page.errors() == []
    assert page.requests == [out.as_uri()]


def test_kg_viz_paper_on_iclr_labels_the_paper_and_its_related_papers(
        browser, iclr_corpus, tmp_path):
    from kg.analysis import find_paper, related

    out = tmp_path / "lq-lora.html"
    paper = find_paper(iclr_corpus, "LQ-LoRA")
    write_viz(iclr_corpus, out, paper=paper.id)
    page = open_graph(browser, out)
    labels = check_labels(page)
    shown = {page.evaluate(f"kgViz.data.papers[{x['id']}].id") for x in labels
             if x["kind"] == "paper"}
    assert shown == {paper.id} | {r.paper.id for r in related(iclr_corpus, paper.id, 20)}
    assert any(x["text"] == "LQ-LoRA" and x["px"] >= 15 for x in labels)
    (tmp_path / "paper.png").write_bytes(page.screenshot())
    assert page.errors() == []
    assert page.requests == [out.as_uri()]


# ---------------------------------------------------------------- the technique map (ICLR 2024)

ICLR = "openreview-2024/ICLR_cc_2024_Conference.tsv"


@pytest.fixture(scope="module")
def iclr_corpus(corpora_dir):
    """The whole ICLR 2024 file (2,260 papers; about 10 s to extract on two cores)."""
    from kg.pipeline import load_corpus

    return load_corpus([corpora_dir / ICLR])


@pytest.fixture(scope="module")
def iclr_map(iclr_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("map") / "graph.html"
    summary = write_viz(iclr_corpus, out)  # the default page: no --view
    return out, summary


@pytest.fixture(scope="module")
def iclr_page(browser, iclr_map):
    page = open_graph(browser, iclr_map[0])
    yield page
    page.evaluate("kgViz.reset()")


def boxes_overlap(a: dict, b: dict) -> bool:
    return (abs(a["x"] - b["x"]) < (a["w"] + b["w"]) / 2 - 1e-6
            and abs(a["y"] - b["y"]) < (a["h"] + b["h"]) / 2 - 1e-6)


def test_the_default_page_of_a_conference_is_a_map_with_labelled_clusters_and_no_pile_up(
        browser, iclr_page, iclr_map, tmp_path):
    page = iclr_page
    assert page.evaluate("kgViz.mode") == "map"
    assert page.evaluate("document.getElementById('kg-title').textContent") == (
        "Technique map of 2,260 papers")
    labels = page.evaluate("kgViz.labelsShown()")
    clusters = [x for x in labels if x["kind"] == "cluster"]
    assert len(clusters) >= 5 and all(" · " in c["text"] for c in clusters)
    # The biggest technique is always labelled; no two labels overlap in the first view.
    biggest = page.evaluate("kgViz.data.nodes.reduce((a, n) => n.n > a.n ? n : a).id")
    assert biggest in {x["id"] for x in labels if x["kind"] == "node"}
    assert not [(a["text"], b["text"]) for i, a in enumerate(labels) for b in labels[i + 1:]
                if boxes_overlap(a, b)]
    assert 15 <= len(labels) <= 120
    # Zooming in shows more labels (level of detail), still none overlapping.
    page.evaluate("kgViz.network.moveTo({scale: kgViz.network.getScale() * 3}); "
                  "kgViz.network.redraw()")
    browser.pump(0.2)
    zoomed = page.evaluate("kgViz.labelsShown()")
    assert {x["id"] for x in zoomed if x["kind"] == "node"} - {
        x["id"] for x in labels if x["kind"] == "node"}
    assert not [1 for i, a in enumerate(zoomed) for b in zoomed[i + 1:] if boxes_overlap(a, b)]
    page.evaluate("kgViz.reset()")
    (tmp_path / "map.png").write_bytes(page.screenshot())
    assert distinct_colours(page.screenshot(scale=0.5)) > 30
    assert page.errors() == []
    assert page.requests == [iclr_map[0].as_uri()]


def test_choosing_quantization_zooms_to_it_and_lists_exactly_what_kg_shared_lists(
        browser, iclr_page, iclr_corpus):
    from kg.analysis import shared

    page = iclr_page
    before = page.evaluate("[kgViz.network.getScale(), kgViz.network.getViewPosition()]")
    node = page.evaluate("kgViz.data.nodes.find(n => n.name === 'quantization').id")
    page.evaluate(f"""(() => {{ const s = document.getElementById('kg-technique');
        s.value = '{node}'; s.dispatchEvent(new Event('change')); }})()""")
    after = page.evaluate("[kgViz.network.getScale(), kgViz.network.getViewPosition()]")
    assert after[0] > before[0] * 1.5
    assert after[1] != before[1]
    listed = page.evaluate("[...document.querySelectorAll('#kg-uses li, #kg-mentions li')]"
                           ".map(li => li.dataset.paper)")
    everyone = [u.paper.id for u in shared(iclr_corpus, "quantization", include_mentions=True)]
    assert sorted(listed) == sorted(everyone) and len(listed) == len(set(listed))
    # The users are exactly what `kg shared quantization` lists; mention-only papers apart.
    uses = page.evaluate("[...document.querySelectorAll('#kg-uses li')]"
                         ".map(li => li.dataset.paper)")
    assert sorted(uses) == sorted(u.paper.id for u in shared(iclr_corpus, "quantization"))
    panel = page.evaluate("document.getElementById('kg-panel').textContent")
    assert "Most often combined with" in panel and "confidence" in panel
    first = shared(iclr_corpus, "quantization")[0]
    assert first.uses[0].evidence.text in panel
    # The chosen technique and its neighbours are labelled once zoomed.
    shown = {x["id"] for x in page.evaluate("kgViz.labelsShown()") if x["kind"] == "node"}
    assert node in shown
    assert page.errors() == []


def test_clicking_a_technique_on_the_canvas_opens_its_papers(browser, iclr_page):
    page = iclr_page
    page.evaluate("kgViz.reset()")
    node = page.evaluate("kgViz.data.nodes.reduce((a, n) => n.n > a.n ? n : a).id")
    click_node(page, node)
    page.wait_for("document.querySelectorAll('#kg-uses li').length > 0")
    uses = page.evaluate(f"kgViz.data.nodes[{node}].uses.length")
    assert page.evaluate("document.querySelectorAll('#kg-uses li').length") == uses


def test_choosing_a_paper_lists_the_papers_kg_related_ranks_first(
        browser, iclr_page, iclr_corpus, tmp_path):
    from kg.analysis import related

    page = iclr_page
    page.evaluate("""(() => { const s = document.getElementById('kg-search');
        s.value = 'quantization'; s.dispatchEvent(new Event('input')); })()""")
    page.wait_for("document.querySelectorAll('#kg-results a').length > 1")
    hits = page.evaluate("kgViz.search('quantization')")
    assert hits[0] == {"kind": "technique", "id": page.evaluate(
        "kgViz.data.nodes.find(n => n.name === 'quantization').id"), "text": "quantization",
        "rank": 0, "n": hits[0]["n"]}
    paper = next(h for h in hits if h["kind"] == "paper")
    page.evaluate(f"kgViz.choosePaper({paper['id']})")
    pid = page.evaluate(f"kgViz.data.papers[{paper['id']}].id")
    listed = page.evaluate("[...document.querySelectorAll('#kg-related li')]"
                           ".map(li => li.dataset.paper)")
    expected = related(iclr_corpus, pid, 5)
    assert listed == [r.paper.id for r in expected]
    panel = page.evaluate("document.getElementById('kg-panel').textContent")
    assert expected[0].shared[0].name in panel
    (tmp_path / "paper.png").write_bytes(page.screenshot())
    assert page.errors() == []


def test_the_venue_overlay_colours_and_filters_the_map(browser, iclr_page):
    page = iclr_page
    page.evaluate("kgViz.reset()")
    assert page.evaluate("kgViz.data.facets.map(f => f.name)") == ["venue"]
    page.evaluate("""(() => { const s = document.getElementById('kg-colour');
        s.value = 'venue'; s.dispatchEvent(new Event('change')); })()""")
    legend = page.evaluate("document.getElementById('kg-legend').textContent")
    assert "ICLR 2024 (2,260 papers)" in legend
    colours = page.evaluate("new Set(kgViz.network.body.data.nodes.get()"
                            ".filter(n => !n.hidden).map(n => n.color.background)).size")
    assert colours == 1  # one venue: every technique is "mostly ICLR 2024"
    page.evaluate("""(() => { const s = document.getElementById('kg-colour');
        s.value = 'cluster'; s.dispatchEvent(new Event('change')); })()""")
    assert page.errors() == []


def test_a_malicious_title_on_the_map_is_shown_as_text_and_never_runs(
        browser, tmp_path, seed_corpus):
    from kg.pipeline import load_corpus

    out = tmp_path / "evil-map.html"
    corpus = load_corpus([evil_inputs(tmp_path), SEED_TEXT])
    write_viz(corpus, out, view="map")
    page = open_graph(browser, out)
    assert page.evaluate("kgViz.mode") == "map"
    index = page.evaluate("kgViz.data.papers.findIndex(p => p.id === 'evil-1')")
    technique = page.evaluate(f"kgViz.data.papers[{index}].k[0]")
    page.evaluate(f"kgViz.chooseTechnique({technique})")
    assert EVIL_TITLE in page.evaluate("document.getElementById('kg-uses').textContent")
    page.evaluate(f"kgViz.choosePaper({index})")
    browser.pump(0.3)
    assert EVIL_TITLE in page.evaluate("document.getElementById('kg-panel').textContent")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.dialogs == []
    assert page.evaluate("document.querySelectorAll('img, b, #kg-panel script').length") == 0
    assert page.evaluate("document.scripts.length") == 3
    assert page.errors() == []
    assert page.requests == [out.as_uri()]


# ---------------------------------------------------------------- year filter, paper links (#26)

CORL = ("openreview-2024/CoRL_2024_Conference.tsv", "openreview-2024/CoRL_2025_Conference.tsv")


@pytest.fixture(scope="module")
def corl_two_years(corpora_dir, tmp_path_factory):
    """CoRL 2024 and 2025 (528 papers, read in place): the default page is the map."""
    from kg.pipeline import load_corpus

    corpus = load_corpus([corpora_dir / name for name in CORL])
    out = tmp_path_factory.mktemp("corl-map") / "graph.html"
    write_viz(corpus, out)
    return corpus, out


def choose_years(page, first: int, last: int) -> None:
    page.evaluate(f"""(() => {{
        const a = document.getElementById('kg-year-from');
        const b = document.getElementById('kg-year-to');
        a.value = '{first}'; b.value = '{last}'; b.dispatchEvent(new Event('change')); }})()""")


def test_the_year_filter_restricts_the_map_and_every_count_agrees(browser, corl_two_years):
    from kg.analysis import entity_users

    corpus, out = corl_two_years
    year_of = {r.paper.id: r.paper.year for r in corpus}
    assert sorted({y for y in year_of.values() if y}) == [2024, 2025]
    page = open_graph(browser, out)
    assert page.evaluate("kgViz.mode") == "map"
    assert not page.evaluate("document.getElementById('kg-years').hidden")
    choose_years(page, 2025, 2025)
    in_2025 = sum(1 for y in year_of.values() if y == 2025)
    assert page.evaluate("document.getElementById('kg-counts').textContent").startswith(
        f"{in_2025} papers in 2025 · ")
    users = entity_users(corpus)
    nodes = page.evaluate("kgViz.data.nodes.filter(n => !n.layer).map(n => [n.id, n.kg, n.n])")
    menu = dict(page.evaluate("[...document.getElementById('kg-technique').options]"
                              ".filter(o => o.value).map(o => [Number(o.value), o.text])"))
    hidden = set(page.evaluate("kgViz.network.body.data.nodes.get().filter(n => n.hidden)"
                               ".map(n => n.id)"))
    for node, eid, total in nodes:
        expected = sum(1 for pid in users[eid] if year_of[pid] == 2025)
        assert total == len(users[eid])
        assert page.evaluate(f"kgViz.count({node})") == expected
        if expected:
            assert menu[node].endswith(f"({expected})") and node not in hidden
        else:
            assert node not in menu and node in hidden
    # The panel lists exactly the year's users, and says how many.
    node, eid, _ = max(nodes, key=lambda t: (page.evaluate(f"kgViz.count({t[0]})"), -t[0]))
    page.evaluate(f"kgViz.chooseTechnique({node})")
    listed = page.evaluate("[...document.querySelectorAll('#kg-uses li')].map(li => "
                           "li.dataset.paper)")
    assert sorted(listed) == sorted(pid for pid in users[eid] if year_of[pid] == 2025)
    assert f"used by {len(listed)} papers in 2025" in page.evaluate(
        "document.getElementById('kg-panel').textContent")
    # "Most often combined with" counts the year's users of both.
    narrow = set(page.evaluate(f"kgViz.data.nodes[{node}].narrow"))
    year_users = {pid for pid in users[eid] if year_of[pid] == 2025}
    both = {name: len(year_users & set(users[kg])) for i, kg, name in page.evaluate(
        "kgViz.data.nodes.filter(n => !n.layer).map(n => [n.id, n.kg, n.name])")
        if i not in narrow}
    shown = page.evaluate("[...document.querySelectorAll('#kg-with li')].map(li => "
                          "[li.querySelector('a').title, li.textContent])")
    assert shown and shown[0][1].endswith(f"— {max(both.values())} papers")
    for name, text in shown:
        assert text.endswith(f"— {both[name]} papers" if both[name] != 1 else "— 1 paper")
    # The legend counts each cluster's papers of the year.
    legend = page.evaluate("document.getElementById('kg-legend').textContent")
    clusters = page.evaluate("kgViz.data.clusters.map(c => c.id)")
    for k in clusters[:3]:
        members = page.evaluate(f"kgViz.data.papers.filter(p => p.c === {k + 1}).map(p => p.id)")
        count = sum(1 for pid in members if year_of[pid] == 2025)
        assert f"({count} paper" in legend
    # Both years again: the whole map, every count as built.
    choose_years(page, 2024, 2025)
    assert page.evaluate("kgViz.data.nodes.every(n => kgViz.count(n.id) === n.n)")
    assert page.evaluate("document.getElementById('kg-counts').textContent").startswith(
        f"{len(corpus)} papers · ")
    assert page.errors() == []
    assert page.requests == [out.as_uri()]


def test_panels_link_the_paper_and_its_other_urls_and_only_http_ones(
        browser, tmp_path, seed_corpus):
    from dataclasses import replace

    from kg.model import Corpus

    first = seed_corpus.results[0]
    paper = replace(first.paper, url="https://openreview.net/forum?id=abc123",
                    links=("https://arxiv.org/abs/2401.00001", "javascript:alert(1)",
                           "data:text/html,<b>x</b>", "http://doi.org/10.1/x\"onclick=\"x"))
    corpus = Corpus((replace(first, paper=paper), *seed_corpus.results[1:]),
                    seed_corpus.entities)
    for view in ("graph", "map"):
        out = tmp_path / f"{view}.html"
        write_viz(corpus, out, view=view)
        page = open_graph(browser, out)
        if view == "graph":
            node = page.evaluate(f"Object.keys(kgViz.data.papers).find(k => "
                                 f"kgViz.data.papers[k].id === '{paper.id}')")
            page.evaluate(f"kgViz.select({node})")
        else:
            index = page.evaluate(f"kgViz.data.papers.findIndex(p => p.id === '{paper.id}')")
            page.evaluate(f"kgViz.choosePaper({index})")
        hrefs = page.evaluate("[...document.querySelectorAll('#kg-panel a.kg-out')]"
                              ".map(a => [a.getAttribute('href'), a.textContent])")
        assert hrefs == [["https://openreview.net/forum?id=abc123", "openreview.net ↗"],
                         ["https://arxiv.org/abs/2401.00001", "arxiv.org ↗"],
                         ['http://doi.org/10.1/x"onclick="x', "doi.org ↗"]], view
        assert page.evaluate("document.querySelectorAll('[onclick], b').length") == 0
        assert page.errors() == []


def test_the_map_search_finds_a_paper_by_its_openreview_forum_id(browser, corl_two_years):
    corpus, out = corl_two_years
    paper = corpus.results[5].paper
    forum = paper.id.rsplit("=", 1)[1]
    page = open_graph(browser, out)
    hits = page.evaluate(f"kgViz.search('{forum}')")
    assert [h["text"] for h in hits if h["kind"] == "paper"] == [paper.title]
    assert page.errors() == []
