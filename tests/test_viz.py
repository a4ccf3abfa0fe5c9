"""kg viz: the HTML file itself — offline, escaped, deterministic — and the views it offers.

The pages are opened in a real browser in test_viz_browser.py; these tests read the file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from kg.analysis import related
from kg.cli import cli
from kg.errors import InputError, KgError
from kg.io import write_jsonl
from kg.viz import build_view, render_html, write_viz

SEED = Path(__file__).resolve().parent.parent / "examples" / "iclr2025-seed.txt"
EVIL_TITLE = '<img src=x onerror="window.__pwned=1">Evil & "quoted" title'
EVIL_ABSTRACT = ("We propose EvilNet <script>window.__pwned=2</script>, a method that fine-tunes "
                 "LLaMA with LoRA and is evaluated on ImageNet and CIFAR-10 </script><b>bold</b>.")


@pytest.fixture(scope="module")
def seed_html(seed_corpus) -> str:
    return render_html(build_view(seed_corpus))


def evil_inputs(directory: Path) -> Path:
    """A JSONL input whose title and abstract carry markup that must never run."""
    path = directory / "evil.jsonl"
    records = [
        {"id": "evil-1", "title": EVIL_TITLE, "abstract": EVIL_ABSTRACT},
        {"id": "plain-2", "title": "A plain paper",
         "abstract": "We fine-tune LLaMA with LoRA and report results on ImageNet."},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def evidence_text(view, ev: list) -> str:
    """The sentence an edge's evidence entry [paper node, start, end] points at."""
    paper = view.papers[str(ev[0])]
    text = f"{paper['title']}\n{paper['abstract']}" if paper["title"] else paper["abstract"]
    return text[ev[1]:ev[2]]


class _Resources(HTMLParser):
    """Every URL-bearing attribute and every tag name in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "action", "data", "poster", "srcset") and value:
                self.urls.append((tag, name, value))


def test_the_page_references_no_external_resource(seed_html):
    parser = _Resources()
    parser.feed(seed_html)
    assert parser.urls == [("link", "href", "data:,")]  # only the empty favicon
    assert "script" in parser.tags and "link" in parser.tags
    # No @import or url() to a host in the inlined CSS, no CDN host names anywhere.
    assert not re.search(r"@import|url\(\s*['\"]?(https?:)?//", seed_html)
    for host in ("cdnjs", "jsdelivr", "unpkg", "bootstrap", "googleapis"):
        assert host not in seed_html.lower()


def test_vis_network_comes_inlined_from_the_pyvis_package(seed_html):
    import pyvis

    lib = Path(pyvis.__file__).parent / "templates" / "lib" / "vis-9.1.2"
    assert (lib / "vis-network.min.js").read_text(encoding="utf-8") in seed_html
    assert "<script src" not in seed_html


def test_every_paper_with_an_entity_and_every_entity_becomes_a_node(seed_corpus):
    view = build_view(seed_corpus)
    with_entities = [r for r in seed_corpus if r.mentions]
    assert view.counts()["papers"] == len(with_entities)
    assert view.counts()["entities"] == len(seed_corpus.entities)
    pairs = sum(len(r.mentions) for r in seed_corpus)
    between = {(r.subject, r.predicate, r.object) for r in seed_corpus.relations()
               if r.subject in seed_corpus.entities}
    assert view.counts()["edges"] == pairs + len(between)
    # Sizes follow degree; every node has a position.
    degree = {}
    for e in view.edges:
        for end in (e["from"], e["to"]):
            degree[end] = degree.get(end, 0) + 1
    assert all(n["value"] == degree.get(n["id"], 0) for n in view.nodes)
    assert all(isinstance(n["x"], int) and isinstance(n["y"], int) for n in view.nodes)


def test_edges_carry_the_evidence_sentences_of_their_relations(seed_corpus):
    view = build_view(seed_corpus)
    result = next(r for r in seed_corpus if any(x.predicate == "proposes" for x in r.relations))
    rel = next(x for x in result.relations if x.predicate == "proposes")
    paper_node = next(int(k) for k, p in view.papers.items() if p["id"] == result.paper.id)
    entity_node = next(int(k) for k, e in view.entities.items() if e["id"] == rel.object)
    (edge,) = [e for e in view.edges if (e["from"], e["to"]) == (paper_node, entity_node)]
    assert "proposes" in edge["predicates"]
    assert [paper_node, rel.evidence.start, rel.evidence.end] in edge["evidence"]
    assert rel.evidence.text in [evidence_text(view, ev) for ev in edge["evidence"]]


def test_rerunning_writes_a_byte_identical_file_even_across_processes(tmp_path, seed_corpus):
    graph = tmp_path / "corpus.jsonl"
    with graph.open("w", encoding="utf-8") as fh:
        write_jsonl(seed_corpus, fh)
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"graph-{seed}.html"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-m", "kg", "viz", str(graph), "-o", str(out)],
                       check=True, env=env, capture_output=True)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0] == render_html(build_view(seed_corpus)).encode("utf-8")


def test_the_map_is_byte_identical_across_processes_whatever_the_hash_seed(
        tmp_path, corpora_dir):
    # The first 100 ICLR 2024 abstracts: the map's connected core is under half of its
    # techniques, where networkx's subgraph view iterates a set of names (hash-seed order).
    from kg.pipeline import run

    lines = (corpora_dir / "openreview-2024" / "ICLR_cc_2024_Conference.tsv").read_text(
        encoding="utf-8").splitlines(keepends=True)[:100]
    (tmp_path / "iclr-100.tsv").write_text("".join(lines), encoding="utf-8")
    graph = tmp_path / "corpus.jsonl"
    with graph.open("w", encoding="utf-8") as fh:
        write_jsonl(run([tmp_path / "iclr-100.tsv"]), fh)
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"map-{seed}.html"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-m", "kg", "viz", str(graph), "--view", "map",
                        "-o", str(out)], check=True, env=env, capture_output=True)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_markup_in_titles_and_abstracts_never_reaches_the_file_as_markup(tmp_path):
    from kg.pipeline import load_corpus

    html = render_html(build_view(load_corpus([evil_inputs(tmp_path)])))
    assert "<script>window.__pwned" not in html
    assert "<img src=x" not in html
    assert "<b>bold" not in html
    # The text is still there, as JSON with <, > and & escaped.
    assert "\\u003cscript\\u003ewindow.__pwned=2\\u003c/script\\u003e" in html
    assert "Evil \\u0026 \\\"quoted\\\" title" in html
    assert html.count("</script>") == 3  # the data block, vis-network, the page script


def test_only_the_most_frequent_entities_are_kept_and_the_notice_says_how_many_were_left_out(
        seed_corpus):
    view = build_view(seed_corpus, max_entities=5)
    assert view.counts()["entities"] == 5
    counts = {}
    for r in seed_corpus:
        for eid in set(r.entity_ids):
            counts[eid] = counts.get(eid, 0) + 1
    kept = {e["id"] for e in view.entities.values()}
    assert min(counts[e] for e in kept) >= max(c for e, c in counts.items() if e not in kept)
    total = len(seed_corpus.entities)
    assert f"Showing the 5 most frequent entities (by paper count) of {total}" in view.notice
    assert f"{total - 5} entities are left out" in view.notice
    left = len(seed_corpus) - view.counts()["papers"]
    assert f"{left} of {len(seed_corpus)} papers are left out" in view.notice
    assert "--max-entities" in view.notice


def test_the_whole_graph_has_no_notice_when_nothing_is_left_out(tmp_path):
    from kg.pipeline import load_corpus

    view = build_view(load_corpus([evil_inputs(tmp_path)]))
    assert view.notice == ""


def test_the_technique_view_holds_papers_using_a_narrower_concept(seed_corpus):
    from kg.vocab import load_vocabulary

    vocab = load_vocabulary()
    narrower = next(e for e in sorted(seed_corpus.entities.values(), key=lambda e: e.id)
                    if e.type == "Technique" and e.concept and vocab.ancestors(e.concept))
    broader = vocab.concepts[vocab.ancestors(narrower.concept)[0]].pref_label
    view = build_view(seed_corpus, technique=broader)
    assert view.view == "technique"
    assert narrower.id in {e["id"] for e in view.entities.values()}
    users = {r.paper.id for r in seed_corpus if narrower.id in r.entity_ids}
    assert users <= {p["id"] for p in view.papers.values()}
    # The filter menu offers the broader concept, with the narrower entity as a member.
    option = next(o for o in view.techniques if o["label"] == broader)
    assert any(view.entities[str(m)]["id"] == narrower.id for m in option["members"])


def test_the_paper_view_shows_the_paper_and_its_related_papers(seed_corpus):
    center = next(r.paper for r in seed_corpus if related(seed_corpus, r.paper.id, 3))
    view = build_view(seed_corpus, paper=center.id, related=3)
    shown = [p["id"] for p in view.papers.values()]
    assert shown == [center.id] + [r.paper.id for r in related(seed_corpus, center.id, 3)]
    assert view.papers[str(view.focus)]["id"] == center.id
    center_entities = {e for r in seed_corpus if r.paper.id == center.id for e in r.entity_ids}
    assert center_entities <= {e["id"] for e in view.entities.values()}


def test_unknown_names_and_conflicting_views_are_clear_errors(seed_corpus):
    with pytest.raises(KgError, match="did you mean"):
        build_view(seed_corpus, technique="quantisatio")
    with pytest.raises(KgError, match="no paper matches"):
        build_view(seed_corpus, paper="no-such-paper-anywhere")
    with pytest.raises(InputError, match="pass only one"):
        build_view(seed_corpus, paper="x", technique="y")
    with pytest.raises(InputError, match="at least 1"):
        build_view(seed_corpus, max_entities=0)


def test_kg_viz_writes_the_file_and_reports_what_it_wrote(tmp_path):
    out = tmp_path / "sub" / "graph.html"
    result = CliRunner().invoke(cli, ["viz", str(SEED), "-o", str(out), "--max-entities", "10"])
    assert result.exit_code == 0, result.output
    assert out.is_file() and out.stat().st_size > 100_000
    assert f"wrote {out}:" in result.output
    assert "note: Showing the 10 most frequent entities" in result.output


def test_kg_viz_with_an_unknown_technique_exits_with_a_message_not_a_traceback(tmp_path):
    result = CliRunner().invoke(cli, ["viz", str(SEED), "--technique", "quantisatio",
                                      "-o", str(tmp_path / "g.html")])
    assert result.exit_code != 0
    assert "did you mean" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "g.html").exists()


def test_writing_to_an_unwritable_place_names_the_file(tmp_path, seed_corpus):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="cannot write the graph HTML"):
        write_viz(seed_corpus, blocker / "graph.html")


def test_writing_over_a_hard_linked_file_leaves_the_other_name_untouched(tmp_path, seed_corpus):
    # A project's exports/graph.html is a hard link into its recorded generation: kg viz -o
    # that name must replace the name, not write through the link (issue 25).
    recorded = tmp_path / "recorded.html"
    recorded.write_text("the project's own page")
    target = tmp_path / "graph.html"
    os.link(recorded, target)
    write_viz(seed_corpus, target)
    assert recorded.read_text() == "the project's own page"
    assert "<html" in target.read_text()
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no temporary left


def test_the_map_is_the_default_above_the_threshold_and_kg_viz_view_chooses(
        tmp_path, seed_corpus, monkeypatch):
    import kg.viz

    graph_page = tmp_path / "graph.html"
    write_viz(seed_corpus, graph_page)
    assert '"view":"corpus"' in graph_page.read_text(encoding="utf-8")
    # Lower the threshold below the 19 seed papers: the same call now writes the map.
    monkeypatch.setattr(kg.viz, "MAP_MIN_PAPERS", 10)
    map_page = tmp_path / "map.html"
    write_viz(seed_corpus, map_page)
    assert '"view":"map"' in map_page.read_text(encoding="utf-8")
    out = tmp_path / "cli.html"
    result = CliRunner().invoke(cli, ["viz", str(SEED), "--view", "map", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert '"view":"map"' in out.read_text(encoding="utf-8")
    bad = CliRunner().invoke(cli, ["viz", str(SEED), "--view", "hairball", "-o", str(out)])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_the_map_file_is_byte_identical_on_rerun_and_lists_what_kg_shared_lists(
        tmp_path, seed_corpus):
    from kg.analysis import shared
    from kg.viz.map import build_map

    a, b = tmp_path / "a.html", tmp_path / "b.html"
    write_viz(seed_corpus, a, view="map")
    write_viz(seed_corpus, b, view="map")
    assert a.read_bytes() == b.read_bytes()
    view = build_map(seed_corpus)
    for node in view.nodes:
        users = [view.papers[row[0]]["id"] for row in node["uses"]]
        assert sorted(users) == sorted(u.paper.id for u in shared(seed_corpus, node["name"]))
        everyone = users + [view.papers[row[0]]["id"] for row in node["mentions"]]
        assert sorted(everyone) == sorted(u.paper.id for u in shared(
            seed_corpus, node["name"], include_mentions=True))


def test_markup_in_titles_never_reaches_the_map_file_as_markup(tmp_path):
    from kg.pipeline import load_corpus

    out = tmp_path / "evil-map.html"
    write_viz(load_corpus([evil_inputs(tmp_path), SEED]), out, view="map")
    text = out.read_text(encoding="utf-8")
    payload = text.split('<script type="application/json" id="kg-data">')[1].split("</script>")[0]
    assert "<" not in payload and ">" not in payload and "&" not in payload
    assert "\\u003cimg src=x" in payload  # the title is there, escaped


def test_a_very_large_map_points_to_kg_related_and_kg_shared_instead_of_listing_all(
        seed_corpus, monkeypatch):
    import kg.viz.map as map_module

    assert all("r" in row for row in map_module.build_map(seed_corpus).papers)
    full = {n["kg"]: len(n["uses"]) for n in map_module.build_map(seed_corpus).nodes}
    monkeypatch.setattr(map_module, "RELATED_MAX_PAPERS", 5)
    monkeypatch.setattr(map_module, "LIST_MAX", 1)
    view = map_module.build_map(seed_corpus)
    assert view.papers and all("r" not in row for row in view.papers)
    # A technique used by more papers than LIST_MAX lists one and says how many there are.
    busy = [n for n in view.nodes if full[n["kg"]] > 1]
    assert busy and all(len(n["uses"]) == 1 and n["usesTotal"] == full[n["kg"]]
                        for n in busy)
    script = (Path(map_module.__file__).parent / "templates" / "map.js").read_text()
    assert "kg related " in script and "if (!p.r)" in script


def test_the_technique_view_shows_papers_that_only_mention_it_on_request(tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in [
        {"id": "uses", "title": "Fast serving with caches",
         "abstract": "We use KV caching to serve LLaMA models quickly."},
        {"id": "negates", "title": "Serving without memory",
         "abstract": "Our method requires neither caching past activations nor pruning."},
    ]), encoding="utf-8")
    pages = {}
    for flag in ((), ("--include-mentions",)):
        out = tmp_path / f"view{len(flag)}.html"
        result = CliRunner().invoke(cli, ["viz", str(papers), "--technique", "caching",
                                          "-o", str(out), *flag])
        assert result.exit_code == 0, result.output
        pages[bool(flag)] = out.read_text(encoding="utf-8")
    assert "Fast serving with caches" in pages[False]
    assert "Serving without memory" not in pages[False]
    assert "Serving without memory" in pages[True]


def test_a_projects_technique_map_after_adds_and_removes_equals_a_fresh_builds(
        tmp_path, monkeypatch):
    """Above the size for every format a build writes extraction.jsonl and the map (the
    default formats): an add or remove splices the one and rebuilds the other, and both must
    be byte for byte what a fresh build of the same papers writes."""
    import importlib

    import kg.viz
    from kg import project
    from kg.pipeline import read_papers

    builder = importlib.import_module("kg.project.builder")
    monkeypatch.setattr(builder, "AUTO_ALL_PAPERS", 5)  # (a conference: 2,000 and 300)
    monkeypatch.setattr(kg.viz, "MAP_MIN_PAPERS", 5)
    papers = list(read_papers([SEED])[0])
    out = tmp_path / "p"
    project.build(out, papers[:12])
    project.add(out, papers[12:])
    gone = [papers[3].id, papers[14].id]
    outcome = project.remove(out, gone)
    assert outcome.written == ("extraction.jsonl", "graph.html")
    project.build(tmp_path / "fresh", [p for p in papers if p.id not in gone])
    for name in outcome.written:
        assert (out / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes(), name
    assert '"facets"' in (out / "graph.html").read_text(encoding="utf-8")  # the map
