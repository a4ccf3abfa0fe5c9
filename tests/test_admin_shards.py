"""neo4j-admin CSVs of a project, written a shard of papers at a time (issue #12).

The shards must hold exactly the rows of the single-file export of the same corpus (every
entity once), name themselves in import.sh, re-run byte for byte, and import into the real
Neo4j with the same counts.
"""

from __future__ import annotations

import csv
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SEED

from kg import project as kg_project
from kg.errors import InputError
from kg.neo4j import (
    project_id,
    write_admin_csvs,
    write_admin_shards,
    write_project_admin_csvs,
)
from kg.neo4j.admin import ADMIN_FILES, ADMIN_HEADERS, SHARDED, jsonl_batches
from kg.pipeline import read_papers
from kg.project import open_project


@pytest.fixture(scope="module")
def seed_project(tmp_path_factory) -> Path:
    """The demo corpus as a `kg build` project (extraction.jsonl written)."""
    out = tmp_path_factory.mktemp("project")
    kg_project.build(out, read_papers([SEED])[0], formats=["jsonl", "nt"])
    return out


def _rows(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def _groups(directory: Path) -> dict[str, list[str]]:
    """import.sh's file groups, by table: {"papers.csv": ["papers.header.csv", …], …}."""
    script = (directory / "import.sh").read_text(encoding="utf-8")
    command = script[script.index("neo4j-admin database import full"):]
    groups = {}
    for word in shlex.split(command.replace("\\\n", " ")):
        if word.startswith(("--nodes=", "--relationships=")):
            files = word.split("=", 1)[1].split(",")
            table = re.sub(r"(\.header|-\d{6})?\.csv$", ".csv", files[0])
            groups[table] = files
    return groups


def _tables(directory: Path) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Each table's header and rows, read through import.sh's groups (a group is one file to
    neo4j-admin: the first line of its first file is the header)."""
    out = {}
    for table, files in _groups(directory).items():
        rows = [row for name in files for row in _rows(directory / name)]
        out[table] = (rows[0], rows[1:])
    return out


def test_project_shards_hold_the_rows_of_the_single_file_export(seed_project, tmp_path):
    project = open_project(seed_project)
    write_admin_csvs(project.corpus(), tmp_path / "whole", project=project_id(seed_project))
    written = write_project_admin_csvs(project, tmp_path / "shards", papers_per_shard=4)
    whole, shards = _tables(tmp_path / "whole"), _tables(tmp_path / "shards")
    assert set(whole) == set(shards) == set(ADMIN_FILES)
    for table in ADMIN_FILES:
        assert shards[table][0] == whole[table][0] == ADMIN_HEADERS[table], table
        # As multisets: every row once, an entity in exactly one shard.
        assert sorted(shards[table][1]) == sorted(whole[table][1]), table
    assert len({row[0] for row in shards["entities.csv"][1]}) == len(project.corpus().entities)
    # 19 papers, 4 a shard: five paper shards, and the entities spread over several.
    names = {p.name for p in written}
    assert {f"papers-00000{n}.csv" for n in range(1, 6)} <= names
    assert "papers-000006.csv" not in names
    assert sum(name.startswith("entities-") for name in names) > 1
    # Every file written is named by import.sh, and nothing else is in the directory.
    listed = {name for files in _groups(tmp_path / "shards").values() for name in files}
    assert listed | {"import.sh"} == names == {p.name for p in (tmp_path / "shards").iterdir()}


def test_each_entity_goes_in_the_shard_of_the_first_paper_using_it(seed_project, tmp_path):
    project = open_project(seed_project)
    write_project_admin_csvs(project, tmp_path, papers_per_shard=1)
    first_use: dict[str, int] = {}
    for number, result in enumerate(project.corpus().results, start=1):
        for eid in result.entity_ids:
            first_use.setdefault(eid, number)
    placed = {row[0]: int(re.search(r"-(\d{6})\.csv$", path.name)[1])
              for path in tmp_path.glob("entities-*.csv") for row in _rows(path)}
    assert placed == first_use


def test_a_project_without_extraction_jsonl_is_read_from_its_cache(seed_project, tmp_path):
    nt_only = tmp_path / "nt-only"
    kg_project.build(nt_only, read_papers([SEED])[0], formats=["nt"])
    assert "extraction.jsonl" not in open_project(nt_only).manifest.written
    write_project_admin_csvs(open_project(seed_project), tmp_path / "a", papers_per_shard=5)
    write_project_admin_csvs(open_project(nt_only), tmp_path / "b", papers_per_shard=5)
    for path in sorted((tmp_path / "a").iterdir()):
        # The same rows, each in its project's scope.
        theirs = (tmp_path / "b" / path.name).read_bytes().replace(
            project_id(nt_only).encode(), project_id(seed_project).encode())
        assert path.read_bytes() == theirs, path.name
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(
        p.name for p in (tmp_path / "b").iterdir())


def test_kg_export_of_a_project_writes_shards_byte_identically_and_removes_stale_files(
        seed_project, tmp_path):
    def export(*args: str) -> dict[str, bytes]:
        done = subprocess.run(
            [sys.executable, "-m", "kg", "export", str(seed_project), "--format", "neo4j-admin",
             "-o", str(tmp_path), *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return {p.name: p.read_bytes() for p in sorted((tmp_path / "neo4j-admin").iterdir())}

    first = export("--shard-papers", "3")
    assert "papers-000007.csv" in first and "papers.header.csv" in first
    (tmp_path / "neo4j-admin" / "notes.txt").write_text("mine", encoding="utf-8")
    assert export("--shard-papers", "3") == {**first, "notes.txt": b"mine"}
    # Fewer, larger shards: the old shards go (import.sh would not name them; a reader might
    # take them for data), the user's file stays.
    fewer = export()
    assert sorted(fewer) == sorted(
        ["concepts.csv", "broader.csv", "import.sh", "notes.txt",
         *(f"{t.removesuffix('.csv')}{end}" for t in SHARDED
           for end in (".header.csv", "-000001.csv"))])
    # The single-file layout (a plain input) replaces the shards the same way.
    done = subprocess.run([sys.executable, "-m", "kg", "export", str(SEED), "--format",
                           "neo4j-admin", "-o", str(tmp_path)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "neo4j-admin").iterdir()) == sorted(
        [*ADMIN_FILES, "import.sh", "notes.txt"])


def test_a_bad_line_is_refused_naming_the_file_and_its_line_not_the_batch(seed_project,
                                                                         tmp_path):
    lines = (open_project(seed_project).generation / "extraction.jsonl").read_text(
        encoding="utf-8").splitlines(keepends=True)
    lines[12] = lines[12].replace('"predicate": "', '"predicate": "inspired', 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(lines), encoding="utf-8")
    write_project_admin_csvs(open_project(seed_project), tmp_path / "out")
    with pytest.raises(InputError, match=rf"^{re.escape(str(bad))}:13: unknown predicate"):
        write_admin_shards(jsonl_batches(bad, 5), tmp_path / "out")
    # The shards of the batches before it are new, those after it old: no import.sh now.
    assert not (tmp_path / "out" / "import.sh").exists()


def _admin_import(directory: Path, state: Path) -> tuple[int, int, int]:
    """Nodes, relationships and properties the real `neo4j-admin database import` reports."""
    if not (ROOT / "scripts" / "neo4j-harness" / "target" / "classpath.txt").is_file():
        reason = "the Neo4j tools are not fetched (scripts/neo4j-test-server fetch)"
        if os.environ.get("KG_REQUIRE_SERVICES") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    done = subprocess.run([str(ROOT / "scripts" / "neo4j-test-server"), "admin-import",
                           str(directory)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "KG_NEO4J_STATE": str(state)}, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    match = re.search(r"Imported:\s+(\d+) nodes\s+(\d+) relationships\s+(\d+) properties",
                      done.stdout)
    assert match, done.stdout[-2000:]
    return int(match[1]), int(match[2]), int(match[3])


@pytest.mark.neo4j
def test_the_real_neo4j_admin_import_of_the_shards_matches_the_single_files(seed_project,
                                                                          tmp_path):
    project = open_project(seed_project)
    corpus = project.corpus()
    write_admin_csvs(corpus, tmp_path / "whole")
    write_project_admin_csvs(project, tmp_path / "shards", papers_per_shard=4)
    whole = _admin_import(tmp_path / "whole", tmp_path / "state")
    shards = _admin_import(tmp_path / "shards", tmp_path / "state")
    assert shards == whole
    relations = sum(len(r.relations) for r in corpus.results)
    assert whole[0] > len(corpus) + len(corpus.entities) and whole[1] > relations


def test_a_rebuild_of_the_project_removes_shards_exported_into_it(tmp_path):
    papers = read_papers([SEED])[0]
    kg_project.build(tmp_path, papers[:10], formats=["jsonl"])
    done = subprocess.run([sys.executable, "-m", "kg", "export", str(tmp_path), "--format",
                           "neo4j-admin", "-o", str(tmp_path), "--shard-papers", "4"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    admin = tmp_path / "neo4j-admin"
    assert (admin / "papers-000003.csv").is_file()
    (admin / "papers-mine.csv").write_text("mine", encoding="utf-8")
    # The export described the 10-paper project; once it holds 19 papers the shards are stale.
    kg_project.build(tmp_path, papers, formats=["jsonl"])
    assert sorted(p.name for p in admin.iterdir()) == ["papers-mine.csv"]
