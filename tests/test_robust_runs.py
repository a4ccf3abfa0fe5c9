"""Long runs that must not be lost to one record, as a user runs them (real subprocesses)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from neo4j_fixtures import neo4j_conn  # noqa: F401 - the fixture

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


@pytest.mark.slow
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
    # Past ingest's limit (a library caller builds Papers itself), the extractor refuses the text:
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
    assert "extraction failed (ValueError: the text has 1,280,000 characters" in skipped[0].reason


def run_on_a_terminal(*args: object) -> tuple[int, str]:
    """Run kg with stderr on a real pseudo-terminal; its return code and what the terminal got."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "kg", *map(str, args)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
def test_build_names_each_step_after_extraction_on_a_terminal(corpora_dir, tmp_path):
    lines = (corpora_dir / ICLR).read_text(encoding="utf-8").splitlines(keepends=True)[:300]
    papers = tmp_path / "iclr-300.tsv"
    papers.write_text("".join(lines), encoding="utf-8")
    code, seen = run_on_a_terminal("build", papers, "-o", tmp_path / "out", "--workers", "1")
    assert code == 0, seen
    steps = ["extracting 300/300 100% in", "resolving entities across 300 papers",
             "making rows, lines and triples of each paper",
             "making query index", "writing extraction.jsonl", "making derived facts",
             "making RDF triples", "writing graph.nt", "writing graph.ttl",
             "writing graph.jsonld", "writing graph.graphml", "writing nodes.csv, edges.csv",
             "writing graph.html", "writing build.json"]
    positions = [seen.find(step) for step in steps]
    assert -1 not in positions, seen
    assert positions == sorted(positions)
    # Not on a terminal: quiet.
    proc = kg("build", papers, "-o", tmp_path / "quiet", "--workers", "1", "--no-html")
    assert proc.returncode == 0 and "writing" not in proc.stderr and "extracting" not in proc.stderr


def test_the_eta_leaves_start_up_time_out_and_waits_for_a_measured_rate():
    import io

    from kg.progress import Progress

    now = [100.0]  # an injected clock: the test never sleeps, and load cannot bend it
    with Progress(100, "extracting", stream=io.StringIO(), clock=lambda: now[0]) as bar:
        now[0] += 2.0  # start-up: workers, matchers; counting it inflated the first ETA
        bar.update(10)
        assert bar.eta() is None  # one update is no rate yet
        now[0] += 0.5
        bar.update(5)
        assert bar.eta() is None  # measured for less than a second
        now[0] += 0.5
        bar.update(5)
        # 10 papers/s since the first update: 80 left is 8 s (counting start-up said 12 s).
        assert bar.eta() == pytest.approx(8.0)


def test_neo4j_load_checks_the_server_before_reading_any_input(tmp_path):
    from neo4j_fixtures import free_port

    port = free_port()
    started = time.monotonic()
    proc = kg("neo4j", "load", tmp_path / "missing.txt", "--uri", f"bolt://127.0.0.1:{port}")
    assert proc.returncode == 6, proc.stderr
    assert "cannot reach Neo4j" in proc.stderr and "missing.txt" not in proc.stderr
    assert time.monotonic() - started < 30


@pytest.mark.neo4j
def test_neo4j_load_checks_the_password_before_reading_any_input(neo4j_conn, tmp_path):  # noqa: F811
    proc = subprocess.run([sys.executable, "-m", "kg", "neo4j", "load", str(tmp_path / "no.txt"),
                           "--uri", neo4j_conn.uri, "--user", neo4j_conn.user], cwd=ROOT,
                          env={**os.environ, "NEO4J_PASSWORD": "not-the-password"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 6, proc.stderr
    assert "wrong user name or password" in proc.stderr and "no.txt" not in proc.stderr


K = "https://w3id.org/mlkg/ontology#"
XSD = "http://www.w3.org/2001/XMLSchema#"


def _break(lines: list[str], predicate: str, edit, nth: int = 0) -> None:
    """Apply ``edit`` to the ``nth`` line with ``predicate`` (None from ``edit`` deletes it)."""
    hits = [i for i, line in enumerate(lines) if line.split(" ", 2)[1] == f"<{predicate}>"]
    i = hits[nth]
    new = edit(lines[i])
    if new is None:
        del lines[i]
    else:
        lines[i] = new


def broken_graph(seed_rdf_dir: Path, tmp_path: Path) -> Path:
    """The demo graph with one break for each kind of constraint in ontology/shapes.ttl."""
    lines = (seed_rdf_dir / "graph.nt").read_text(encoding="utf-8").splitlines(keepends=True)
    dc, rdf = "http://purl.org/dc/terms/", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    _break(lines, f"{dc}abstract", lambda line: None)  # minCount
    _break(lines, f"{dc}identifier", lambda line: line.replace('" .', '-2" .') + line, 3)  # max
    _break(lines, f"{K}start",  # datatype
           lambda line: line.replace(f"^^<{XSD}integer>", ""))
    _break(lines, f"{K}start",  # lessThan
           lambda line: line.split('"')[0] + f'"99999"^^<{XSD}integer> .\n', 5)
    _break(lines, f"{K}confidence",  # maxInclusive
           lambda line: line.split('"')[0] + f'"1.5"^^<{XSD}decimal> .\n', 2)
    _break(lines, "http://www.w3.org/2000/01/rdf-schema#label",  # minLength
           lambda line: line.split('"')[0] + '"" .\n', 30)
    _break(lines, f"{rdf}predicate",  # sh:in
           lambda line: line.replace(f"<{K}mentions>", f"<{K}likes>"))
    _break(lines, f"{K}usesModel",  # sh:class, and the reified fact no longer asserted
           lambda line: line.rsplit(" <", 1)[0] + " <https://w3id.org/mlkg/entity/model/nope> .\n")
    _break(lines, f"{K}usesTechnique",  # sh:or
           lambda line: line.rsplit(" <", 1)[0] + " <https://w3id.org/mlkg/entity/x/nope> .\n")
    _break(lines, "http://www.w3.org/2004/02/skos/core#broader",  # class on a concept
           lambda line: line.rsplit(" <", 1)[0] + " <https://w3id.org/mlkg/concept/nope> .\n")
    _break(lines, f"{rdf}type",  # qualified count: an entity with two entity types
           lambda line: line + line.replace(f"<{K}Entity>", f"<{K}Dataset>"),
           next(i for i, line in enumerate(
               [x for x in lines if x.split(" ", 2)[1] == f"<{rdf}type>"])
               if f"<{K}Entity>" in line and "/entity/model/" in line))
    path = tmp_path / "broken.nt"
    path.write_text("".join(lines), encoding="utf-8")
    return path


# pyshacl's own calls into rdflib's deprecated Dataset API: ~29,000 warnings per run, none ours.
@pytest.mark.filterwarnings("ignore:Dataset.default_context is deprecated:DeprecationWarning",
                            "ignore:Dataset.identifier is deprecated:DeprecationWarning")
def test_fast_validation_reports_what_pyshacl_reports(seed_rdf_dir, tmp_path):
    from kg.shacl import validate_graph, validate_pyshacl
    from kg.vocab import ontology_dir

    path = broken_graph(seed_rdf_dir, tmp_path)
    fast = validate_graph(path)
    slow = validate_pyshacl(path, ontology_dir() / "shapes.ttl")
    assert len(slow) >= 11

    def key(v):
        return v.severity, v.focus, v.path, v.value

    assert sorted(set(map(key, fast))) == sorted(set(map(key, slow)))
    # Shapes with an sh:message say it, word for word, both ways.
    shaped = {(key(v), v.message) for v in slow if v.message[:4] not in ("Less", "More", "Valu",
                                                                         "Node", "Stri", "Focu")}
    assert shaped and shaped <= {(key(v), v.message) for v in fast}


@pytest.mark.slow
def test_validate_checks_a_large_graph_without_pyshacl_and_keeps_its_exit_codes(corpora_dir,
                                                                                tmp_path):
    out = tmp_path / "iclr"
    assert kg("build", corpora_dir / ICLR, "-o", out, "--formats", "all",
              "--no-html").returncode == 0
    # The shapes run as compiled SPARQL on pyoxigraph (pyshacl took 83 s on this graph,
    # kg.shacl ~6 s: bench figures, not asserted): the run never imports pyshacl.
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "kg", "validate", out],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "conforms" in proc.stdout
    assert not re.search(r"\|\s+pyshacl\b", proc.stderr)  # -X importtime: "| module"
    broken = broken_graph(out, tmp_path)
    proc = kg("validate", broken, "--limit", "3")
    assert proc.returncode == 1 and "SHACL violation(s)" in proc.stderr
    assert "… and" in proc.stdout
