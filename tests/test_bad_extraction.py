"""A tampered or foreign extraction JSONL is refused the same way by every sink (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.register_assert_rewrite("neo4j_fixtures")

from conftest import ROOT  # noqa: E402
from neo4j_fixtures import neo4j_env, run_kg  # noqa: E402

from kg.errors import InputError  # noqa: E402
from kg.io import read_jsonl, write_jsonl  # noqa: E402

pytest_plugins = ["neo4j_fixtures"]  # neo4j_conn


@pytest.fixture(scope="module")
def good_jsonl(seed_corpus, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("extraction") / "extraction.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        write_jsonl(seed_corpus, fh)
    return path


def _tamper(good: Path, out: Path, change) -> Path:
    lines = good.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[2])
    change(record)
    lines[2] = json.dumps(record)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _predicate(value):
    def change(record):
        record["relations"][0]["predicate"] = value
    return change


def _entity_type(record):
    record["entities"][0]["type"] = "Spell"


def _concept(record):
    record["entities"][0]["concept"] = "https://x.example/a> <b"


def _object(record):
    record["relations"][0]["object"] = "technique/not-listed"


def _kg(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg", *args], capture_output=True, text=True,
                          cwd=ROOT)


CASES = {
    "injected predicate": (_predicate('usesTechnique> <https://evil.example/x'),
                           "unknown predicate 'usesTechnique> <https://evil.example/x'"),
    "unknown predicate": (_predicate("inspiredBy"), "unknown predicate 'inspiredBy'"),
    "unknown entity type": (_entity_type, "unknown type 'Spell'"),
    "concept that is not an IRI": (_concept, "concept that is not an IRI"),
    "relation to an unlisted entity": (_object, "'technique/not-listed' is not a listed entity"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_extraction_record_is_refused_naming_file_and_line(case, good_jsonl, tmp_path):
    change, message = CASES[case]
    bad = _tamper(good_jsonl, tmp_path / "bad.jsonl", change)
    with pytest.raises(InputError) as info:
        read_jsonl(bad)
    assert f"{bad}:3: " in str(info.value) and message in str(info.value)


@pytest.mark.parametrize("case", ["injected predicate", "unknown entity type"])
def test_rdf_build_and_neo4j_exports_refuse_the_same_bad_file_with_exit_2(case, good_jsonl,
                                                                          tmp_path):
    change, message = CASES[case]
    bad = _tamper(good_jsonl, tmp_path / "bad.jsonl", change)
    runs = [_kg("build", str(bad), "-o", str(tmp_path / "out")),
            *(_kg("export", str(bad), "--format", fmt, "-o", str(tmp_path / fmt))
              for fmt in ("cypher", "neo4j-admin"))]
    for out in runs:
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr
        assert f"{bad}:3: " in out.stderr and message in out.stderr
    assert not (tmp_path / "out" / "graph.nt").exists()
    assert not (tmp_path / "cypher" / "graph.cypher").exists()


@pytest.mark.neo4j
def test_neo4j_load_refuses_the_bad_file_with_exit_2(neo4j_conn, good_jsonl, tmp_path):
    bad = _tamper(good_jsonl, tmp_path / "bad.jsonl", _predicate("inspiredBy"))
    out = run_kg("neo4j", "load", str(bad), env=neo4j_env(neo4j_conn))
    assert out.returncode == 2, out.stderr
    assert f"{bad}:3: unknown predicate 'inspiredBy'" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_neo4j_loader_refuses_an_unknown_predicate_in_a_corpus_built_in_code(tmp_path):
    from kg.model import Corpus, Entity, Paper, PaperResult, Relation, Span
    from kg.neo4j import plan_batches, write_admin_csvs

    paper = Paper(id="p1", abstract="We use magic.")
    entity = Entity("technique/magic", "Technique", "magic")
    relation = Relation("p1", "inspiredBy", entity.id, Span("We", 0, 2), "r", 0.5)
    corpus = Corpus((PaperResult(paper, ((entity.id, (Span("magic", 7, 12),)),), (relation,)),),
                    {entity.id: entity})
    with pytest.raises(InputError, match="unknown predicate 'inspiredBy'"):
        plan_batches(corpus)
    with pytest.raises(InputError, match="unknown predicate 'inspiredBy'"):
        write_admin_csvs(corpus, tmp_path)
