"""``kg related``, ``kg shared`` and ``kg techniques`` through the real click group."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from conftest import SEED, paper_with

from kg.analysis import AmbiguousPaperError, NotFoundError
from kg.cli import COMMANDS, cli


@pytest.fixture(autouse=True)
def analysis_commands(monkeypatch):
    """Route the three commands to kg.cli.analysis_cmds (what kg/cli/__init__.py should say)."""
    for name in ("related", "shared", "techniques"):
        monkeypatch.setitem(COMMANDS, name, (f"kg.cli.analysis_cmds:{name}", COMMANDS[name][1]))


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    """A project directory as `kg build` writes it (the queries read its store and index)."""
    from kg import project
    from kg.pipeline import read_papers

    out = tmp_path_factory.mktemp("exports")
    project.build(out, read_papers([SEED])[0], formats=["all", "-html"])
    return out


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_related_table_names_the_shared_entity_and_both_sentences(seed_corpus, export_dir):
    folding = paper_with(seed_corpus, "We introduce model folding").paper
    result = invoke("related", "Rotated Runtime Smooth", "--graph", str(export_dir))
    assert result.exit_code == 0, result.output
    first = result.output.split("\n 2.")[0]
    assert folding.id in first
    assert "Model LLaMA" in first
    assert "LLaMA and Qwen" in first and "LLaMA-7B" in first


def test_related_json_has_scores_shared_entities_and_evidence(seed_corpus, export_dir):
    rrs = paper_with(seed_corpus, "Rotated Runtime Smooth").paper
    folding = paper_with(seed_corpus, "We introduce model folding").paper
    result = invoke("related", rrs.id[:9], "--graph", str(export_dir), "--format", "json",
                    "-n", "3")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["paper"]["id"] == rrs.id
    assert len(data["related"]) <= 3
    top = data["related"][0]
    assert top["id"] == folding.id and top["score"] > 0
    llama = next(s for s in top["shared"] if s["key"] == "model/llama")
    assert rrs.text[llama["evidence"]["start"]:llama["evidence"]["end"]] == \
        llama["evidence"]["text"]


def test_related_reads_raw_input_files_too(seed_corpus):
    folding = paper_with(seed_corpus, "We introduce model folding").paper
    result = invoke("related", "rotated runtime smooth", str(SEED), "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["related"][0]["id"] == folding.id


def test_ambiguous_paper_exits_with_the_candidates(export_dir):
    result = invoke("related", "large", "--graph", str(export_dir))
    assert result.exit_code == AmbiguousPaperError.exit_code != 0
    assert "matches" in result.stderr and "p-" in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_unknown_paper_exits_with_a_clear_error(export_dir):
    result = invoke("related", "no such paper at all", "--graph", str(export_dir))
    assert result.exit_code == NotFoundError.exit_code != 0
    assert "no paper matches 'no such paper at all'" in result.stderr


def test_no_graph_and_no_inputs_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("shared", "caching")
    assert result.exit_code == 2
    assert "--graph" in result.stderr


def test_default_graph_is_the_exports_directory(seed_corpus, export_dir, tmp_path, monkeypatch):
    shutil.copytree(export_dir, tmp_path / "exports")
    monkeypatch.chdir(tmp_path)
    result = invoke("shared", "LLaMA", "--format", "json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)["papers"]) == 2


def test_shared_lists_fastercache_for_caching(seed_corpus, export_dir):
    faster = paper_with(seed_corpus, "FasterCache").paper
    result = invoke("shared", "Caching", "--graph", str(export_dir))
    assert result.exit_code == 0, result.output
    assert faster.id in result.output
    data = json.loads(invoke("shared", "caching", "--graph", str(export_dir),
                             "--format", "json").output)
    (paper,) = [p for p in data["papers"] if p["id"] == faster.id]
    assert any(u["name"] == "caching" and u["direct"] for u in paper["uses"])


def test_shared_unknown_technique_suggests_and_fails(export_dir):
    result = invoke("shared", "cachng", "--graph", str(export_dir))
    assert result.exit_code == NotFoundError.exit_code != 0
    assert "did you mean" in result.stderr and "caching" in result.stderr


def test_techniques_json_lists_counts_pairs_and_clusters(export_dir):
    result = invoke("techniques", "--graph", str(export_dir), "-n", "5", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["papers"] == 19
    assert 0 < len(data["techniques"]) <= 5
    counts = [t["papers"] for t in data["techniques"]]
    assert counts == sorted(counts, reverse=True)
    assert all(c["size"] >= 2 and c["terms"] for c in data["clusters"])
    again = invoke("techniques", "--graph", str(export_dir), "-n", "5", "--format", "json")
    assert again.output == result.output


def test_techniques_table_has_three_sections(export_dir):
    result = invoke("techniques", "--graph", str(export_dir))
    assert result.exit_code == 0, result.output
    for heading in ("Techniques by paper count (19 papers)", "Top co-occurring pairs",
                    "Clusters of papers (Louvain, seed 0)"):
        assert heading in result.output


LONG_SENTENCE = (
    "Across a wide range of carefully controlled experiments with many baselines, ablations, "
    "hyper-parameter sweeps, random seeds, prompts and evaluation protocols spanning several "
    "domains and languages, we find that our approach works best with instruction-tuned LLaMA "
    "models.")


def test_shared_evidence_is_cut_around_the_matched_name_and_marks_the_cut(tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text(json.dumps({"id": "a", "title": "Sweeps", "abstract": LONG_SENTENCE})
                      + "\n", encoding="utf-8")
    result = invoke("shared", "llama", str(papers))
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.output.splitlines() if "Model LLaMA [" in line]
    evidence = line.split("]: ", 1)[1]
    assert evidence.startswith("…") and len(evidence) <= 160
    assert "instruction-tuned LLaMA models." in evidence
    assert evidence[1:] in " ".join(LONG_SENTENCE.split())


def test_cypher_table_cells_are_shortened_with_a_visible_mark():
    from kg.cli.neo4j_cmds import TABLE_CELL, format_rows

    table = format_rows(["evidence"], [{"evidence": LONG_SENTENCE}], "table")
    cell = table.splitlines()[2]
    assert cell.endswith("…") and len(cell) <= TABLE_CELL
    assert LONG_SENTENCE in format_rows(["evidence"], [{"evidence": LONG_SENTENCE}], "csv")


NEGATED = [
    {"id": "uses", "title": "Fast serving",
     "abstract": "We use KV caching and INT4 quantization to serve LLaMA models quickly."},
    {"id": "negates", "title": "Cache-free serving",
     "abstract": "Our method requires neither caching past activations nor INT4 quantization, "
                 "and serves LLaMA models quickly."},
    {"id": "other", "title": "Graphs",
     "abstract": "We train graph neural networks on molecules with contrastive learning."},
]


def test_shared_lists_papers_that_use_it_and_mentions_only_on_request(tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in NEGATED), encoding="utf-8")
    used = json.loads(invoke("shared", "caching", str(papers), "--format", "json").output)
    assert [p["id"] for p in used["papers"]] == ["uses"]
    both = invoke("shared", "caching", str(papers), "--include-mentions")
    assert both.exit_code == 0, both.output
    assert "negates" in both.output and "(mentions only)" in both.output
    strict = json.loads(invoke("shared", "caching", str(papers), "--min-confidence", "0.95",
                               "--format", "json").output)
    assert strict["papers"] == []
    assert all(u["confidence"] >= 0.5 for p in used["papers"] for u in p["uses"])


def test_related_does_not_link_papers_through_what_one_only_mentions(tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in NEGATED), encoding="utf-8")
    out = json.loads(invoke("related", "uses", str(papers), "--format", "json").output)
    shared = {s["name"] for r in out["related"] for s in r["shared"]}
    assert "LLaMA" in shared and "KV caching" not in shared and "caching" not in shared
    assert not {"INT4 quantization", "quantization"} & shared
    both = json.loads(invoke("related", "uses", str(papers), "--format", "json",
                             "--include-mentions").output)
    assert {"INT4 quantization"} <= {s["name"] for r in both["related"] for s in r["shared"]}


# ---------------------------------------------------------------- ids a person can type


@pytest.fixture(scope="module")
def corl_dir(corpora_dir, tmp_path_factory):
    """A project of the first 12 CoRL 2024 papers, whose ids are OpenReview forum URLs."""
    from kg import project
    from kg.pipeline import read_papers

    src = corpora_dir / "openreview-2024" / "CoRL_2024_Conference.tsv"
    out = tmp_path_factory.mktemp("corl")
    head = out / "head.tsv"
    head.write_text("".join(src.read_text(encoding="utf-8").splitlines(keepends=True)[:12]),
                    encoding="utf-8")
    project.build(out / "project", read_papers([head])[0], formats=["all", "-html"])
    return out / "project"


def corl_papers(corl_dir):
    from kg.project import open_project

    index = open_project(corl_dir).index()
    return index, [index.papers[pid].paper for pid in index.papers]


def test_related_takes_a_paper_by_id_url_forum_id_or_title_start_and_shows_short_ids(
        corl_dir):
    _, papers = corl_papers(corl_dir)
    paper = next(p for p in papers if p.title and p.id.startswith("https://openreview.net/"))
    forum = paper.id.rsplit("=", 1)[1]
    for ref in (paper.id, paper.id.replace("https://", "http://"), forum,
                f"https://openreview.net/pdf?id={forum}", paper.title[:30].upper()):
        result = invoke("related", ref, "--graph", str(corl_dir), "--format", "json")
        assert result.exit_code == 0, (ref, result.output)
        assert json.loads(result.stdout)["paper"]["id"] == paper.id, ref
    text = invoke("related", forum, "--graph", str(corl_dir)).stdout
    assert text.startswith(f"Related to {forum}  ")
    assert "openreview.net/forum" not in text  # every paper by its short id


def test_resolve_papers_names_each_reference_and_refuses_an_ambiguous_title_start(corl_dir):
    from kg.analysis import resolve_papers, short_id

    index, papers = corl_papers(corl_dir)
    first, second = papers[0], papers[1]
    assert resolve_papers(index, [short_id(first.id), second.id, first.id]) == [
        first.id, second.id]
    starts = [p.title.split()[0] for p in papers if p.title]
    common = max(set(starts), key=starts.count)
    assert starts.count(common) >= 2, "two titles begin with the same word"
    with pytest.raises(AmbiguousPaperError) as err:
        resolve_papers(index, [first.id, common])
    listed = str(err.value)
    assert all(short_id(p.id) in listed for p in err.value.candidates)
    assert "forum?id=" not in listed
    with pytest.raises(NotFoundError, match="no paper matches 'zz-no-such'"):
        resolve_papers(index, ["zz-no-such"])
