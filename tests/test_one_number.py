"""One number, one function (issue 25, item 5): on a real conference file, the technique map's
menu and panels, `kg techniques`, `kg shared`, the saved SPARQL query and the saved Cypher
query give the same count of papers using a technique, and the map's clusters are the ones
`kg techniques` lists.

The numbers are read where a user reads them: the JSON embedded in the HTML page, the CLI's
``--format json``, `kg sparql` on the project's store and `kg cypher` on a real Neo4j.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from kg.cli import cli

pytest_plugins = ["neo4j_fixtures"]  # neo4j_db

ROOT = Path(__file__).resolve().parent.parent
CORL = "openreview-2024/CoRL_2024_Conference.tsv"
# Saved queries may grow pagination parameters; these values ask for every row.
ALL_ROWS = {"limit": "1000000", "offset": "0", "skip": "0", "page_size": "1000000",
            "page": "1"}


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def corl(corpora_dir, tmp_path_factory):
    """CoRL 2024 (265 papers) built into a project, read in place from the shared corpora."""
    out = tmp_path_factory.mktemp("corl") / "project"
    invoke("build", str(corpora_dir / CORL), "-o", str(out))
    return out


@pytest.fixture(scope="module")
def page_data(corl):
    """The data the map page embeds (what its menu, legend and panels show)."""
    html = corl.parent / "map.html"
    invoke("viz", str(corl), "--view", "map", "-o", str(html))
    text = html.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="kg-data">(.*?)</script>', text,
                      re.DOTALL)
    assert found, "the map page embeds its data"
    return json.loads(found.group(1))


@pytest.fixture(scope="module")
def techniques_json(corl):
    return json.loads(invoke("techniques", "--graph", str(corl), "-n", "100000",
                             "--format", "json"))


def shared_count(corl: Path, name: str, *extra: str) -> int:
    return len(json.loads(invoke("shared", name, "--graph", str(corl), "--format", "json",
                                 *extra))["papers"])


def chosen(page_data: dict) -> list[dict]:
    """A few techniques to ask every view about: the most used, and the broader ones whose
    count includes papers of narrower concepts (where the views used to disagree)."""
    nodes = [n for n in page_data["nodes"] if not n["layer"]]
    broader = [n for n in nodes if len(n["narrow"]) > 1]
    picked = {n["kg"]: n for n in nodes[:3] + broader[:4]}
    assert len(picked) >= 4 and any(len(n["narrow"]) > 1 for n in picked.values())
    return list(picked.values())


def test_the_map_menu_its_panel_and_kg_techniques_give_one_count(page_data, techniques_json):
    counts = {t["id"]: t["papers"] for t in techniques_json["techniques"]}
    for node in page_data["nodes"]:
        listed = node.get("usesTotal", len(node["uses"]))
        assert node["n"] == listed, node["name"]  # the menu says n, the panel lists them
        if not node["layer"]:
            assert counts[node["kg"]] == node["n"], node["name"]


def test_kg_shared_lists_as_many_papers_as_the_map_and_kg_techniques_count(
        corl, page_data, techniques_json):
    counts = {t["id"]: t["papers"] for t in techniques_json["techniques"]}
    for node in chosen(page_data):
        assert shared_count(corl, node["name"]) == node["n"] == counts[node["kg"]], node["name"]
        everyone = len(node["uses"]) + len(node["mentions"])
        assert shared_count(corl, node["name"], "--include-mentions") == everyone


def test_kg_techniques_include_mentions_counts_what_kg_shared_include_mentions_lists(corl):
    data = json.loads(invoke("techniques", "--graph", str(corl), "-n", "5", "--format", "json",
                             "--include-mentions"))
    plain = {t["id"]: t["papers"] for t in json.loads(invoke(
        "techniques", "--graph", str(corl), "-n", "100000", "--format", "json"))["techniques"]}
    for t in data["techniques"]:
        assert shared_count(corl, t["name"], "--include-mentions") == t["papers"]
        assert t["papers"] >= plain.get(t["id"], 0)


def test_the_map_shows_the_clusters_kg_techniques_lists(page_data, techniques_json):
    clusters = techniques_json["clusters"]
    assert len(page_data["clusters"]) == len(clusters) >= 3
    members: dict[int, set[str]] = defaultdict(set)
    for paper in page_data["papers"]:
        if paper.get("c"):
            members[paper["c"] - 1].add(paper["id"])
    for k, cluster in enumerate(clusters):
        assert page_data["clusters"][k]["papers"] == cluster["size"]
        assert members[k] == {p["id"] for p in cluster["papers"]}
        assert page_data["clusters"][k]["terms"] == [t["name"] for t in cluster["terms"]]
    # Each paper is in one cluster at most, so the legend never adds up past the corpus; it
    # says that a technique's papers may be in several.
    assert sum(c["papers"] for c in page_data["clusters"]) <= techniques_json["papers"]
    assert "several clusters" in page_data["clusterNote"]


def saved_text(folder: str, name: str) -> str:
    return next((ROOT / folder).glob(f"{name}.*")).read_text(encoding="utf-8")


def test_the_saved_sparql_query_counts_the_papers_kg_shared_lists(corl, page_data):
    query = saved_text("sparql", "papers-sharing-technique")
    paging = [f"{k}={v}" for k, v in ALL_ROWS.items() if re.search(rf"[?$]{k}\b", query)]
    for node in chosen(page_data):
        args = ["sparql", "papers-sharing-technique", "--graph", str(corl), "--format", "json",
                "--bind", f"technique={node['name']}"]
        for pair in paging:
            args += ["--bind", pair]
        rows = json.loads(invoke(*args))["results"]["bindings"]
        assert len({r["paper"]["value"] for r in rows}) == node["n"], node["name"]


@pytest.mark.neo4j
def test_the_saved_cypher_query_counts_the_papers_kg_shared_lists(corl, page_data, neo4j_db):
    from neo4j_fixtures import neo4j_env, run_kg

    from kg.neo4j.queries import query_params

    _, conn = neo4j_db
    env = neo4j_env(conn)
    loaded = run_kg("neo4j", "load", str(corl), env=env)
    assert loaded.returncode == 0, loaded.stderr
    params = query_params(saved_text("cypher", "papers-sharing-technique"))
    paging = [f"{k}={v}" for k, v in ALL_ROWS.items() if k in params]
    for node in chosen(page_data):
        args = ["cypher", "papers-sharing-technique", "--format", "json",
                "--param", f"technique={node['name']}"]
        for pair in paging:
            args += ["--param", pair]
        answer = run_kg(*args, env=env)
        assert answer.returncode == 0, answer.stderr
        rows = json.loads(answer.stdout)
        rows = rows["rows"] if isinstance(rows, dict) else rows
        assert len({r["paper"] for r in rows}) == node["n"], node["name"]


def test_the_map_a_build_draws_from_its_index_is_the_map_of_its_corpus(corl):
    """Above MAP_MIN_PAPERS a build draws graph.html from the index it just wrote, never
    holding every paper's result: the page must be the one drawn from the whole corpus."""
    from kg.pipeline import load_corpus
    from kg.project import open_project
    from kg.project.generation import stored_map_source
    from kg.viz import build_map, render_map_html

    stored = stored_map_source(open_project(corl).generation / "index.sqlite")
    assert len(stored) == 265
    assert render_map_html(build_map(stored)) == render_map_html(
        build_map(load_corpus([str(corl)])))
