"""``kg build``, ``kg validate`` and ``kg sparql`` as a user runs them (real subprocesses)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, ROOT, SEED

EXPORTS = ("graph.ttl", "graph.nt", "graph.jsonld", "graph.graphml", "nodes.csv", "edges.csv",
           "extraction.jsonl")


def kg(*args: str, seed: str = "0", cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return subprocess.run([sys.executable, "-m", "kg", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("build") / "exports"
    proc = kg("build", SEED, "-o", out, seed="0")
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_build_writes_every_export(built):
    out, _ = built
    for name in EXPORTS:
        assert (out / name).stat().st_size > 0, name


def test_build_is_byte_identical_across_runs_and_hash_seeds(built, tmp_path):
    out, _ = built
    again = tmp_path / "again"
    proc = kg("build", SEED, "-o", again, seed="12345")
    assert proc.returncode == 0, proc.stderr
    for name in EXPORTS:
        assert (out / name).read_bytes() == (again / name).read_bytes(), name


def test_build_prints_a_summary_of_papers_entities_relations_and_skips(built):
    out, proc = built
    lines = {line.split(":", 1)[0]: line.split(":", 1)[1].strip()
             for line in proc.stdout.splitlines() if ":" in line}
    assert lines["papers"] == "19"
    records = [json.loads(line) for line in (out / "extraction.jsonl").open(encoding="utf-8")]
    types = {e["type"] for r in records for e in r["entities"]}
    for type_ in types:
        assert f"{type_} " in lines["entities"]
    predicates = {rel["predicate"] for r in records for rel in r["relations"]}
    for predicate in predicates:
        assert f"{predicate} " in lines["relations"]
    assert "papers)" in lines["most shared techniques"]
    assert lines["skipped records"] == "0"


def test_build_counts_skipped_records_and_strict_makes_them_fatal(tmp_path):
    proc = kg("build", DATA / "inputs" / "bad.jsonl", "-o", tmp_path / "lenient")
    assert proc.returncode == 0, proc.stderr
    assert "skipped records: 3" in proc.stdout
    assert "bad.jsonl:4" in proc.stderr
    strict = kg("build", DATA / "inputs" / "bad.jsonl", "-o", tmp_path / "strict", "--strict")
    assert strict.returncode == 3
    assert "Traceback" not in strict.stderr
    assert not (tmp_path / "strict" / "graph.ttl").exists()


def test_build_from_its_own_extraction_file_reproduces_the_graph(built, tmp_path):
    out, _ = built
    proc = kg("build", out / "extraction.jsonl", "-o", tmp_path / "re")
    assert proc.returncode == 0, proc.stderr
    for name in ("graph.nt", "graph.ttl", "graph.jsonld"):
        assert (out / name).read_bytes() == (tmp_path / "re" / name).read_bytes(), name


def test_build_nodes_csv_lists_every_paper(built):
    out, _ = built
    with (out / "nodes.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sum(1 for r in rows if r.get("kind") == "paper") == 19


def test_validate_accepts_the_built_graph(built):
    out, _ = built
    proc = kg("validate", out / "graph.ttl")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 violations" in proc.stdout


def test_validate_rejects_a_broken_graph_with_a_non_zero_exit(built, tmp_path):
    out, _ = built
    text = (out / "graph.ttl").read_text(encoding="utf-8")
    broken = tmp_path / "broken.ttl"
    # Every confidence becomes 7 (outside 0..1): one violation per assertion.
    import re

    broken.write_text(re.sub(r"kg:confidence [0-9.]+", "kg:confidence 7.0", text),
                      encoding="utf-8")
    proc = kg("validate", broken, "--limit", "3")
    assert proc.returncode == 1
    assert "confidence must be one xsd:decimal between 0 and 1" in proc.stdout
    assert "SHACL violation" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_validate_names_a_file_that_is_not_rdf(tmp_path):
    bad = tmp_path / "bad.ttl"
    bad.write_text("this is not turtle", encoding="utf-8")
    proc = kg("validate", bad)
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "Traceback" not in proc.stderr


def test_sparql_runs_a_saved_query_file_with_a_binding_as_a_table(built):
    out, _ = built
    proc = kg("sparql", ROOT / "sparql" / "papers-sharing-technique.rq", "--graph", out,
              "--bind", "technique=model compression")
    assert proc.returncode == 0, proc.stderr
    assert "INT4 quantization" in proc.stdout
    assert proc.stdout.rstrip().endswith("rows)")


def test_sparql_prints_json_and_csv(built):
    out, _ = built
    query = "SELECT (COUNT(?p) AS ?n) WHERE { ?p a kg:Paper }"
    as_json = kg("sparql", query, "--graph", out, "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["results"]["bindings"][0]["n"]["value"] == "19"
    as_csv = kg("sparql", query, "--graph", out / "graph.ttl", "--format", "csv")
    assert as_csv.stdout.splitlines() == ["n", "19"]


def test_sparql_construct_prints_turtle(built):
    out, _ = built
    proc = kg("sparql", "CONSTRUCT { ?p a kg:Paper } WHERE { ?p a kg:Paper }", "--graph", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("a kg:Paper") == 19


def test_sparql_reports_a_malformed_query_without_a_traceback(built):
    out, _ = built
    proc = kg("sparql", "SELECT ?x WHERE { ?x ?y }", "--graph", out)
    assert proc.returncode == 5
    assert "malformed query" in proc.stderr and "Traceback" not in proc.stderr


def test_sparql_explains_a_missing_graph(tmp_path):
    proc = kg("sparql", "techniques-by-paper-count", "--graph", tmp_path)
    assert proc.returncode == 2
    assert "kg build" in proc.stderr


def test_build_writes_the_offline_html_view_unless_told_not_to(tmp_path):
    from click.testing import CliRunner

    from kg.cli import cli

    seed = Path(__file__).parent.parent / "examples" / "iclr2025-seed.txt"
    result = CliRunner().invoke(cli, ["build", str(seed), "-o", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "a" / "graph.html").read_text(encoding="utf-8")
    assert "<script src=" not in html and "LOTOS" in html
    result = CliRunner().invoke(cli, ["build", str(seed), "-o", str(tmp_path / "b"), "--no-html"])
    assert result.exit_code == 0 and not (tmp_path / "b" / "graph.html").exists()
