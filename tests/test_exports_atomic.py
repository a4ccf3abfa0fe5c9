"""Exports are replaced whole, finished by build.json, and readers refuse anything else."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT, SEED

from kg.cli import cli
from kg.exports import RECORD, sha256_file

ICLR = "openreview-2024/ICLR_cc_2024_Conference.tsv"


def kg(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def invoke(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("built") / "exports"
    proc = kg("build", SEED, "-o", out, "--no-html")
    assert proc.returncode == 0, proc.stderr
    return out


def copy(built: Path, tmp_path: Path) -> Path:
    out = tmp_path / "exports"
    shutil.copytree(built, out)
    return out


# Every command that reads an export directory, as a user would call it on DIR.
READERS = [
    ("techniques", "--graph", "{dir}"),
    ("shared", "caching", "--graph", "{dir}"),
    ("related", "LOTOS", "--graph", "{dir}"),
    ("sparql", "ASK {{ ?s ?p ?o }}", "--graph", "{dir}"),
    ("validate", "{dir}"),
    ("viz", "{dir}", "-o", "{tmp}/v.html"),
    ("export", "{dir}", "--format", "cypher", "-o", "{tmp}/cy"),
    ("build", "{dir}", "-o", "{tmp}/again"),
    ("serve", "{dir}", "--port", "0"),
]


def run_reader(args: tuple[str, ...], directory: Path, tmp_path: Path):
    return invoke(*(a.format(dir=directory, tmp=tmp_path) for a in args))


def test_build_finishes_with_a_record_of_its_files_inputs_and_counts(built):
    record = json.loads((built / RECORD).read_text(encoding="utf-8"))
    assert record["counts"]["papers"] == 19 and record["counts"]["skipped"] == 0
    assert record["counts"]["entities"] > 0 and record["counts"]["relations"] > 0
    assert set(record["files"]) == {"graph.ttl", "graph.nt", "graph.jsonld", "graph.graphml",
                                    "nodes.csv", "edges.csv", "extraction.jsonl"}
    for name, meta in record["files"].items():
        assert meta == {"bytes": (built / name).stat().st_size,
                        "sha256": sha256_file(built / name)}, name
    (source,) = record["inputs"]
    assert source["sha256"] == sha256_file(SEED)
    assert not list(built.glob(".kg-tmp-*"))


@pytest.fixture(scope="module")
def older(tmp_path_factory) -> Path:
    """An export directory as kg wrote it before projects: files and build.json, no store."""
    from kg.exports import write_exports
    from kg.pipeline import run

    out = tmp_path_factory.mktemp("older") / "exports"
    write_exports(run([SEED]), out, html=False)
    return out


@pytest.mark.parametrize("args", READERS, ids=[r[0] for r in READERS])
def test_readers_of_an_older_export_directory_say_how_to_upgrade_it(older, tmp_path, args):
    result = run_reader(args, older, tmp_path)
    assert result.exit_code == 2, result.output
    assert "upgrade it with `kg build" in result.output


@pytest.mark.parametrize("args", READERS[:5], ids=[r[0] for r in READERS[:5]])
def test_readers_of_a_project_answer_from_its_store_whatever_happens_to_the_copies(
        built, tmp_path, args):
    out = copy(built, tmp_path)
    (out / RECORD).unlink()
    for name in ("graph.nt", "extraction.jsonl"):  # as a kill mid-write used to leave them
        data = (out / name).read_bytes()
        (out / name).write_bytes(data[: len(data) // 2])
    result = run_reader(args, out, tmp_path)
    assert result.exit_code == 0, result.output


def test_a_damaged_generation_file_is_refused_by_the_reader_that_needs_it(built, tmp_path):
    out = copy(built, tmp_path)
    gen = next(p for p in (out / ".kg").iterdir() if p.name.startswith("gen-"))
    data = bytearray((gen / "extraction.jsonl").read_bytes())
    data[-10] = ord("X") if data[-10] != ord("X") else ord("Y")
    (gen / "extraction.jsonl").write_bytes(bytes(data))
    result = invoke("viz", out, "-o", tmp_path / "v.html")
    assert result.exit_code == 2 and "content differs" in result.output


def test_an_empty_graph_file_is_never_served_as_an_empty_graph(tmp_path):
    empty = tmp_path / "graph.nt"
    empty.write_bytes(b"")
    result = invoke("sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--graph", empty)
    assert result.exit_code == 2 and "empty (0 bytes)" in result.output


def test_a_rebuild_removes_only_the_files_kg_recorded_and_nobody_changed(tmp_path):
    out = tmp_path / "exports"
    assert kg("build", SEED, "-o", out, "--formats", "jsonl,html,csv").returncode == 0
    with (out / "edges.csv").open("a", encoding="utf-8") as fh:  # recorded, changed in place
        fh.write("mine\n")
    (out / "nodes.csv").unlink()
    (out / "nodes.csv").write_text("mine", encoding="utf-8")  # recorded, replaced
    for name in ("graph.cypher", "graph.nt"):  # names kg writes, not recorded here
        (out / name).write_text("mine", encoding="utf-8")
    (out / ".kg-tmp-graph.nt.abc").write_text("old", encoding="utf-8")
    (out / "neo4j-admin").mkdir()
    (out / "neo4j-admin" / "papers.csv").write_text("old", encoding="utf-8")
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    proc = kg("build", SEED, "-o", out, "--formats", "jsonl")
    assert proc.returncode == 0, proc.stderr
    # graph.html was kg's and unchanged: gone; every file someone else wrote or changed stays.
    assert sorted(p.name for p in out.iterdir()) == [
        ".kg", RECORD, "edges.csv", "extraction.jsonl", "graph.cypher", "graph.nt",
        "nodes.csv", "notes.txt"]
    assert (out / "edges.csv").read_text(encoding="utf-8").endswith("mine\n")
    assert (out / "nodes.csv").read_text(encoding="utf-8") == "mine"


def test_a_graph_html_the_user_wrote_into_a_project_survives_the_next_remove(tmp_path):
    out = tmp_path / "p"
    assert kg("build", SEED, "-o", out, "--formats", "jsonl").returncode == 0
    assert kg("viz", out, "-o", out / "graph.html").returncode == 0
    before = (out / "graph.html").read_bytes()
    proc = kg("remove", out, "p-2b89004d8d01")
    assert proc.returncode == 0, proc.stderr
    assert (out / "graph.html").read_bytes() == before


def test_writes_replace_a_symlink_in_the_output_directory_instead_of_following_it(tmp_path):
    out = tmp_path / "exports"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    assert kg("build", SEED, "-o", out, "--no-html").returncode == 0
    for name in ("graph.nt", "extraction.jsonl"):
        (out / name).unlink()
        (out / name).symlink_to(victim)
    proc = kg("build", SEED, "-o", out, "--no-html")
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not (out / "graph.nt").is_symlink() and (out / "graph.nt").stat().st_size > 0


@pytest.mark.parametrize(("fmt", "name"), [("cypher", "graph.cypher"),
                                           ("neo4j-admin", "neo4j-admin/papers.csv")])
def test_kg_export_replaces_a_symlink_instead_of_following_it(tmp_path, fmt, name):
    out = tmp_path / "out"
    (out / "neo4j-admin").mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    (out / name).symlink_to(victim)
    proc = kg("export", SEED, "--format", fmt, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not (out / name).is_symlink() and (out / name).stat().st_size > 0
    assert not list(out.rglob(".kg-tmp-*"))


def test_extract_refuses_to_overwrite_its_own_input(tmp_path):
    papers = tmp_path / "papers.txt"
    shutil.copy(SEED, papers)
    before = papers.read_bytes()
    result = invoke("extract", papers, "-o", papers)
    assert result.exit_code == 2 and "is also an input" in result.output
    assert papers.read_bytes() == before


@pytest.mark.parametrize("command", ["build", "extract", "export"])
def test_an_unwritable_output_is_refused_before_any_extraction(tmp_path, command):
    # The input does not exist: had the inputs been read first, the message would be about them.
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    target = blocker / "out"
    extra = {"export": ["--format", "cypher"]}.get(command, [])
    proc = kg(command, tmp_path / "missing.txt", "-o", target, *extra)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "choose another -o" in proc.stderr and "missing.txt" not in proc.stderr


def _papers_sparql(directory: Path) -> subprocess.CompletedProcess:
    return kg("sparql", "SELECT (COUNT(?p) AS ?n) WHERE { ?p a kg:Paper }", "--graph",
              directory, "--format", "json")


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["first temporary file", "graph.nt replaced"])
def test_a_build_killed_mid_write_over_an_older_build_never_serves_a_mix(
        corpora_dir, built, tmp_path, moment):
    """Older build: the 19 demo papers. Newer: 300 ICLR 2024 papers, SIGKILLed while writing."""
    out = copy(built, tmp_path)
    lines = (corpora_dir / ICLR).read_text(encoding="utf-8").splitlines(keepends=True)[:300]
    newer = tmp_path / "iclr-300.tsv"
    newer.write_text("".join(lines), encoding="utf-8")
    old_nt = (out / "graph.nt").stat().st_ino

    def reached() -> bool:
        if moment == "first temporary file":
            return any(out.rglob(".kg-tmp-*"))
        try:
            return (out / "graph.nt").stat().st_ino != old_nt
        except FileNotFoundError:
            return False

    for _attempt in range(3):
        proc = subprocess.Popen([sys.executable, "-m", "kg", "build", newer, "-o", out,
                                 "--workers", "1"], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        while proc.poll() is None and not reached():
            time.sleep(0.002)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            break
        shutil.rmtree(out)  # finished before the moment came: start again from the older build
        out = copy(built, tmp_path)
    assert proc.returncode == -signal.SIGKILL, "the build always finished before the kill"

    # Queries answer from one complete generation: the older one, or the newer if it committed.
    count = json.loads(_papers_sparql(out).stdout)["results"]["bindings"][0]["n"]["value"]
    techniques = json.loads(kg("techniques", "--graph", out, "--format", "json").stdout)
    assert int(count) == techniques["papers"] and techniques["papers"] in (19, 300)

    # The next complete build answers, from the new generation only.
    proc = kg("build", newer, "-o", out, "--workers", "1", "--no-html")
    assert proc.returncode == 0, proc.stderr
    count = json.loads(_papers_sparql(out).stdout)["results"]["bindings"][0]["n"]["value"]
    techniques = json.loads(kg("techniques", "--graph", out, "--format", "json").stdout)
    assert int(count) == techniques["papers"] == 300
    assert not list(out.rglob(".kg-tmp-*"))


@pytest.fixture
def tiny_disk(tmp_path):
    """A real 200 KB tmpfs (needs mount rights, else the test skips)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()})")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_is_a_message_and_leaves_no_partial_files(tiny_disk):
    out = tiny_disk / "out"
    proc = kg("build", SEED, "-o", out)
    assert proc.returncode == 2, proc.stderr
    assert "No space left on device" in proc.stderr and "Traceback" not in proc.stderr
    # No temp file, no partial graph, no record, no generation: at most the extraction cache.
    assert [p.name for p in out.iterdir()] in ([], [".kg"])
    assert not (out / ".kg" / "CURRENT").exists() and not list(out.rglob(".kg-tmp-*"))


def test_no_command_writes_through_a_link_to_a_recorded_file(tmp_path):
    out, keep = tmp_path / "p", tmp_path / "keep"
    keep.mkdir()
    assert kg("build", SEED, "-o", out, "--formats", "all").returncode == 0
    names = sorted(p.name for p in out.iterdir() if p.is_file())
    for name in names:  # a user's second name for each file (a backup, a server's copy)
        os.link(out / name, keep / name)
    before = {name: (keep / name).read_bytes() for name in names}
    os.link(tmp_path / "keep" / "graph.nt", tmp_path / "lock-target")
    (out / ".kg" / "lock").unlink()
    os.link(tmp_path / "lock-target", out / ".kg" / "lock")
    proc = kg("remove", out, "p-2b89004d8d01")
    assert proc.returncode == 2 and "hard link" in proc.stderr, proc.stderr
    (out / ".kg" / "lock").unlink()
    for args in (("remove", out, "p-2b89004d8d01"), ("add", out, SEED),
                 ("viz", out, "-o", out / "graph.html"),
                 ("export", out, "--format", "cypher", "-o", out)):
        proc = kg(*args)
        assert proc.returncode == 0, (args, proc.stderr)
    assert {name: (keep / name).read_bytes() for name in names} == before
