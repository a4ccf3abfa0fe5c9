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


def test_clicking_a_node_highlights_its_neighbourhood_and_shows_its_evidence(
        browser, seed_page_file, seed_corpus):
    page = open_graph(browser, seed_page_file)
    view = build_view(seed_corpus)
    node = max(view.nodes, key=lambda n: n["value"])["id"]
    x, y = page.evaluate(f"""(() => {{
        const p = kgViz.network.canvasToDOM(kgViz.network.getPosition({node}));
        const r = document.getElementById('kg-network').getBoundingClientRect();
        return [p.x + r.left, p.y + r.top]; }})()""")
    for kind in ("mousePressed", "mouseReleased"):
        page.send("Input.dispatchMouseEvent",
                  {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})
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
    tooltip = page.evaluate("document.querySelector('div.vis-tooltip').textContent")
    assert EVIL_TITLE in tooltip
    assert page.evaluate("document.querySelectorAll('img, b, #kg-panel script').length") == 0
    assert page.evaluate("document.scripts.length") == 3
    assert page.errors() == []
    assert page.requests == [out.as_uri()]  # the <img src=x> never loaded
