"""Evidence sentences are nodes of their own: stored once per sentence, however many facts
cite them, under an IRI made from the paper id and offsets (kg.rdf.sentence_iri)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyoxigraph as ox
import pytest
from conftest import ROOT, SEED

from kg import project, rdf
from kg.errors import InputError
from kg.model import Corpus, Entity, Paper, PaperResult, Relation, Span
from kg.pipeline import read_papers
from kg.sparql import execute_query, parse_binding, saved_queries

ICLR = "openreview-2024/ICLR_cc_2024_Conference.tsv"
TEXT = f"<{rdf.ONTOLOGY_NS}text>"
EVIDENCE = f"<{rdf.ONTOLOGY_NS}evidence>"


def shared_sentence(corpus) -> tuple[PaperResult, Span, int]:
    """The evidence sentence of the demo corpus that the most facts cite."""
    counts = Counter((result.paper.id, r.evidence) for result in corpus.results
                     for r in result.relations)
    (pid, span), n = counts.most_common(1)[0]
    return next(r for r in corpus.results if r.paper.id == pid), span, n


def test_a_sentence_cited_by_many_facts_is_stored_once(seed_corpus, seed_rdf_dir):
    result, span, n = shared_sentence(seed_corpus)
    assert n >= 3, "the demo corpus should have a sentence behind several facts"
    lines = (seed_rdf_dir / "graph.nt").read_text(encoding="utf-8").splitlines()
    literal = rdf._lit(span.text)
    holding = [line for line in lines if line.endswith(f" {literal} .")]
    node = f"<{rdf.sentence_iri(result.paper.id, span.start, span.end)}>"
    assert holding == [f"{node} {TEXT} {literal} ."]
    citing = [line for line in lines if line.endswith(f" {EVIDENCE} {node} .")]
    assert len(citing) == n
    # One kg:Sentence per distinct (paper, offsets), far fewer than facts.
    sentences = [line for line in lines if line.endswith(f"<{rdf.ONTOLOGY_NS}Sentence> .")]
    spans = {(r.paper.id, rel.evidence) for r in seed_corpus.results for rel in r.relations}
    assert len(sentences) == len(spans) < sum(len(r.relations) for r in seed_corpus.results)


def test_the_evidence_query_gives_text_and_offsets_of_facts_sharing_a_sentence(
        seed_corpus, seed_rdf_dir):
    result, span, n = shared_sentence(seed_corpus)
    store = project.open_project(seed_rdf_dir).store()
    subs = {ox.Variable("paper_id"): parse_binding(result.paper.id)}
    body = execute_query(store, saved_queries()["evidence"], substitutions=subs).body
    rows = [{k: v["value"] for k, v in row.items()}
            for row in json.loads(body)["results"]["bindings"]]
    assert len(rows) == len(result.relations)
    at_span = [row for row in rows if (int(row["start"]), int(row["end"])) == (span.start,
                                                                               span.end)]
    assert len(at_span) == n
    assert {row["evidence"] for row in at_span} == {span.text}
    for row in rows:
        assert result.paper.text[int(row["start"]):int(row["end"])] == row["evidence"]


def _build(directory: Path, lines: str, workers: int, seed: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "kg", "build", "-", "--input-format", "tsv", "-o", str(directory),
         "--formats", "nt,jsonl", "--workers", str(workers)], input=lines, cwd=ROOT,
        capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONHASHSEED": seed})
    assert proc.returncode == 0, proc.stderr
    return (directory / "graph.nt").read_text(encoding="utf-8")


def test_sentence_iris_are_the_same_across_runs_and_worker_counts(corpora_dir, tmp_path):
    with (corpora_dir / ICLR).open(encoding="utf-8") as fh:  # read in place, never copied
        lines = "".join(next(fh) for _ in range(150))  # enough for two worker processes
    one = _build(tmp_path / "one", lines, 1, "1")
    two = _build(tmp_path / "two", lines, 2, "2")

    def sentences(nt: str) -> list[str]:
        return [line for line in nt.splitlines() if line.startswith(f"<{rdf.SENTENCE_NS}")]

    assert sentences(one) and sentences(one) == sentences(two)
    # Each IRI is the paper id and offsets of the evidence, nothing else.
    expected = set()
    for line in (tmp_path / "one" / "extraction.jsonl").open(encoding="utf-8"):
        record = json.loads(line)
        for r in record["relations"]:
            expected.add(f"<{rdf.sentence_iri(record['paper']['id'], r['evidence']['start'], r['evidence']['end'])}>")  # noqa: E501
    assert {line.split(" ", 1)[0] for line in sentences(one)} == expected


def test_removing_a_paper_removes_its_sentences(tmp_path):
    papers = list(read_papers([SEED])[0])
    out = tmp_path / "project"
    project.build(out, papers, formats=["nt"])
    gone = papers[0].id
    prefix = rdf.sentence_iri(gone, 0, 0).rsplit("-", 2)[0] + "-"

    def subjects() -> set[str]:
        return {q.subject.value for q in project.open_project(out).store()}

    assert any(s.startswith(prefix) for s in subjects())
    project.remove(out, [gone], formats=["nt"])
    assert not any(s.startswith(prefix) for s in subjects())
    assert prefix not in (out / "graph.nt").read_text(encoding="utf-8")


def test_evidence_that_is_not_the_papers_text_there_is_refused(tmp_path):
    paper = Paper(id="p1", abstract="We use magic. It works.")
    entity = Entity("technique/magic", "Technique", "magic")
    good = Relation("p1", "usesTechnique", entity.id, Span("We use magic.", 0, 13), "r", 0.5)
    forged = Relation("p1", "mentions", entity.id, Span("We use sorcery", 0, 13), "r", 0.5)
    for relations in ((forged,), (good, forged)):
        corpus = Corpus((PaperResult(paper, ((entity.id, (Span("magic", 7, 12),)),),
                                     relations),), {entity.id: entity})
        with pytest.raises(InputError, match="not the paper's text at 0-13"):
            rdf.write_rdf(corpus, tmp_path)
