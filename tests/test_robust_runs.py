"""Long runs that must not be lost to one record, as a user runs them (real subprocesses)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

ICLR = "openreview-2024/ICLR_cc_2024_Conference.tsv"


def kg(*args: object, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.run([sys.executable, "-m", "kg", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def iclr_records(corpora_dir: Path, n: int) -> list[dict]:
    """The first ``n`` ICLR 2024 papers (title, abstract), read in place."""
    csv.field_size_limit(sys.maxsize)
    with (corpora_dir / ICLR).open(encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [{"id": f"iclr-{i}", "title": row[0], "abstract": row[-1]}
                for i, row in zip(range(n), rows, strict=False)]


@pytest.fixture(scope="module")
def with_giant(corpora_dir, tmp_path_factory) -> Path:
    """120 real papers (enough for the worker pool) and, on line 61, a 1.2M-character record."""
    records = iclr_records(corpora_dir, 120)
    giant = {"id": "giant", "title": "A whole book", "abstract": (
        "We propose a method that uses quantization on ImageNet with GPUs. " * 18_500)[:1_200_000]}
    records.insert(60, giant)
    path = tmp_path_factory.mktemp("giant") / "papers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_oversized_record_is_skipped_and_the_run_goes_on(with_giant, tmp_path, workers):
    out = tmp_path / "out"
    proc = kg("build", with_giant, "-o", out, "--workers", workers, "--no-html")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "papers: 120" in proc.stdout
    assert "skipped records: 1" in proc.stdout
    # The message names the record and the way out.
    assert f"{with_giant}:61: record has 1,200,012 characters" in proc.stderr
    assert "--max-chars" in proc.stderr
    lines = (out / "extraction.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 120
    assert "giant" not in {json.loads(line)["paper"]["id"] for line in lines}


def test_an_oversized_record_fails_a_strict_run_with_exit_3(with_giant, tmp_path):
    proc = kg("build", with_giant, "-o", tmp_path / "out", "--strict", "--no-html")
    assert proc.returncode == 3, proc.stderr
    assert f"{with_giant}:61" in proc.stderr and "Traceback" not in proc.stderr


def test_max_chars_sets_the_limit(tmp_path):
    path = tmp_path / "papers.jsonl"
    path.write_text(json.dumps({"id": "a", "abstract": "We propose caching. " * 10}) + "\n"
                    + json.dumps({"id": "b", "abstract": "We use quantization."}) + "\n",
                    encoding="utf-8")
    proc = kg("extract", path, "--max-chars", "100", "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["paper"]["id"] for line in proc.stdout.splitlines()] == ["b"]
    assert f"{path}:1: record has 199 characters" in proc.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_a_record_the_extractor_fails_on_is_skipped_not_fatal(corpora_dir, workers):
    # Past ingest's limit (a library caller builds Papers itself), spaCy refuses the text (E088):
    # that paper is reported, the others are extracted, in order.
    from kg.model import Paper
    from kg.pipeline import extract_all

    papers = [Paper(id=r["id"], abstract=r["abstract"], title=r["title"], source=r["id"])
              for r in iclr_records(corpora_dir, 120)]
    papers.insert(7, Paper(id="giant", abstract="We use caching. " * 80_000, source="big:1"))
    skipped: list = []
    out = extract_all(papers, workers=workers, skipped=skipped)
    assert [e.paper.id for e in out] == [p.id for p in papers if p.id != "giant"]
    assert [s.source for s in skipped] == ["big:1"]
    assert "extraction failed (ValueError: [E088]" in skipped[0].reason
