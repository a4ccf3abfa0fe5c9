"""A project remembers the span model it was built with (`--model`): `kg add`, `kg build` and
`kg remove` without --model keep extracting with it; another --model extracts every paper
again and says so. With the real shipped kg-span model on 20 real ICLR 2024 abstracts, six of
which it changes (on the 19 seed papers it changes none, so they cannot tell the two apart).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kg import project
from kg.cli import cli
from kg.ingest import IngestOptions, read_inputs

ICLR = "openreview-2024/ICLR_cc_2024_Conference.tsv"
# Entities only the model finds in the first 20 ICLR 2024 papers (one in the added ones).
MODEL_ONLY = "method/min-k-prob"


@pytest.fixture(scope="module")
def inputs(corpora_dir, tmp_path_factory) -> tuple[Path, Path, Path]:
    """The first 20 ICLR 2024 papers as JSON Lines: the first 12, the 8 after, all 20."""
    papers = read_inputs([corpora_dir / ICLR], IngestOptions()).papers[:20]
    assert len(papers) == 20
    out = tmp_path_factory.mktemp("inputs")
    files = (out / "first.jsonl", out / "more.jsonl", out / "all.jsonl")
    for path, part in zip(files, (papers[:12], papers[12:], papers), strict=True):
        path.write_text("".join(json.dumps(p.metadata(), ensure_ascii=False) + "\n"
                                for p in part), encoding="utf-8")
    return files


def kg(*args: object):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def entity_ids(directory: Path) -> set[str]:
    lines = (directory / "extraction.jsonl").read_text(encoding="utf-8").splitlines()
    return {e["id"] for line in lines for e in json.loads(line)["entities"]}


def test_add_build_and_remove_without_model_keep_the_model_the_project_was_built_with(
        inputs, tmp_path):
    first, more, every = inputs
    out = tmp_path / "p"
    built = kg("build", first, "-o", out, "--model", "kg-span", "--formats", "jsonl")
    assert "model: kg-span" in built.output
    added = kg("add", out, more)
    assert "8 added, 0 changed" in added.output
    assert "; 8 extracted" in added.output  # only the new papers, with the model
    assert "model: kg-span" in added.output
    assert project.open_project(out).manifest.model == "kg-span"
    # the same bytes as a fresh build of all 20 with the model, not without it
    fresh = tmp_path / "fresh"
    kg("build", every, "-o", fresh, "--model", "kg-span", "--formats", "jsonl")
    assert (out / "extraction.jsonl").read_bytes() == (fresh / "extraction.jsonl").read_bytes()
    assert MODEL_ONLY in entity_ids(out)
    again = kg("build", every, "-o", out)
    assert "up to date" in again.output and "model: kg-span" in again.output
    paper = json.loads(first.read_text(encoding="utf-8").splitlines()[0])["id"]
    removed = kg("remove", out, paper)
    assert "; 0 extracted" in removed.output and "model: kg-span" in removed.output


def test_another_model_extracts_every_paper_again_and_says_so(inputs, tmp_path):
    first, more, _ = inputs
    out = tmp_path / "p"
    kg("build", first, "-o", out, "--model", "kg-span", "--formats", "jsonl")
    switched = kg("add", out, more, "--model", "none")
    assert (f"{out} was built with --model kg-span; --model none extracts every paper again"
            in switched.output)
    assert "; 20 extracted" in switched.output and "model: none" in switched.output
    assert project.open_project(out).model is None
    assert MODEL_ONLY not in entity_ids(out)
    # ...and the rules-only project now keeps the rules only
    assert "model: none" in kg("build", first, more, "-o", out).output


def test_the_python_api_keeps_the_recorded_model_unless_another_is_asked(inputs, tmp_path):
    papers = read_inputs([inputs[2]], IngestOptions()).papers
    out = tmp_path / "p"
    project.build(out, papers[:12], trained_model="kg-span", formats=["jsonl"])
    assert project.add(out, papers[12:]).extracted == 8
    assert project.built_with(out) == "kg-span"
    assert project.build(out, papers, trained_model="none").extracted == 20
    assert project.built_with(out) == "none"
    assert project.built_with(tmp_path / "nothing") is None


def test_a_manifest_from_before_the_model_was_written_names_it_from_its_pipeline(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({
        "format": "kg-project", "version": 1, "generation": 2,
        "pipeline": "0.1.0+bd1e785814905513+kg-span-8d0779de4832", "formats": ["auto"],
        "written": [], "counts": {}, "papers": {"p1": "k"}, "paper_digests": {},
        "entity_digests": {}, "concepts": []}), encoding="utf-8")
    assert project.read_manifest(manifest).model == "kg-span"
    assert project.manifest_head(manifest)["generation"] == 2
    assert "papers" not in project.manifest_head(manifest)
