"""A project directory: builds, adds and removes equal a fresh build; faults are safe."""

from __future__ import annotations

import importlib
import json
import os
import pickle
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT, SEED

from kg import project
from kg.cli import cli
from kg.exports import sha256_file
from kg.ingest import IngestOptions, read_inputs
from kg.io import result_line
from kg.pipeline import read_papers
from kg.project import generation

builder = importlib.import_module("kg.project.builder")
ICLR = "openreview-2024/ICLR_cc_2024_Conference.tsv"
ALL = ["all"]


def seed_papers():
    return list(read_papers([SEED])[0])


def iclr_papers(corpora: Path, n: int):
    papers = read_inputs([corpora / ICLR], IngestOptions()).papers
    return list(papers[:n])


def exports(directory: Path) -> dict[str, bytes]:
    """Every export file (build.json aside: it records this run's inputs) and the store."""
    out = {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))
           if (directory / name).is_file() and name != "build.json"}
    store = project.open_project(directory).store()
    out["store"] = "".join(sorted(f"{q.subject} {q.predicate} {q.object} .\n"
                                  for q in store)).encode()
    record = json.loads((directory / "build.json").read_text(encoding="utf-8"))
    out["counts"] = json.dumps(record["counts"], sort_keys=True).encode()
    out.update(index_tables(directory))
    # The related papers a build that drew the technique map kept for Neo4j loads.
    out["related"] = json.dumps(project.open_project(directory).related()).encode()
    return out


def index_tables(directory: Path) -> dict[str, object]:
    """Every row of the query index (values unpickled, in row order): an incremental build
    copies rows of unchanged papers, and must end with what a fresh build writes."""
    generation = project.open_project(directory).generation
    db = sqlite3.connect(generation / "index.sqlite")
    try:
        names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {f"index:{name}": [(k, pickle.loads(v)) for k, v in db.execute(
                    f'SELECT k, v FROM "{name}" ORDER BY k') if k != "vocab"]
                for name in sorted(names)}
    finally:
        db.close()


def fresh(papers, tmp_path: Path, formats=ALL) -> dict[str, bytes]:
    out = tmp_path / f"fresh-{len(list(tmp_path.iterdir()))}"
    project.build(out, papers, formats=formats)
    return exports(out)


def kg(*args: object, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, **kwargs)


def invoke(*args: object):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.mark.parametrize("formats", [ALL, ["jsonl"]], ids=["all", "jsonl"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_sequence_of_builds_adds_and_removes_equals_a_fresh_build(tmp_path, seed, formats):
    rng = random.Random(seed)
    papers = seed_papers()
    out = tmp_path / "project"
    held: dict[str, object] = {}
    for step in range(4):
        action = rng.choice(["build", "add", "remove"] if held else ["build", "add"])
        if action == "build":
            chosen = rng.sample(papers, rng.randint(3, len(papers)))
            project.build(out, chosen, formats=formats)
            held = {p.id: p for p in chosen}
        elif action == "add":
            chosen = rng.sample(papers, rng.randint(1, 6))
            project.add(out, chosen, formats=formats)
            held.update((p.id, p) for p in chosen)
        elif len(held) > 1:
            gone = rng.sample(sorted(held), rng.randint(1, len(held) - 1))
            project.remove(out, gone)
            for pid in gone:
                del held[pid]
        assert exports(out) == fresh(list(held.values()), tmp_path, formats), (seed, step,
                                                                                action)


@pytest.mark.slow
@pytest.mark.parametrize("formats", [["nt", "jsonl", "csv"], ["jsonl"]], ids=["nt", "jsonl"])
def test_adds_and_removes_on_500_iclr_papers_equal_a_fresh_build(tmp_path, corpora_dir,
                                                                 formats):
    papers = iclr_papers(corpora_dir, 560)
    rng = random.Random(7)
    rng.shuffle(papers)
    base, extra = papers[:500], papers[500:]
    out = tmp_path / "project"
    project.build(out, base[:450] + extra[:10], formats=formats)
    outcome = project.add(out, base[450:] + extra[10:])
    assert outcome.extracted == len(base[450:] + extra[10:])
    gone = [p.id for p in extra]
    outcome = project.remove(out, gone)
    assert outcome.extracted == 0 and sorted(outcome.removed) == sorted(gone)
    assert exports(out) == fresh(base, tmp_path, formats)


def test_graph_nt_streamed_in_sorted_runs_equals_the_graph_held_whole(tmp_path, monkeypatch):
    from kg import rdf

    monkeypatch.setattr(generation, "NT_RUN_LINES", 400)  # the seed's 5,900 lines: many runs
    spills = []
    spill = rdf.SortedNTriples._spill
    monkeypatch.setattr(rdf.SortedNTriples, "_spill", lambda self: spills.append(spill(self)))

    def held_whole(*args):
        raise AssertionError("every triple held at once")

    monkeypatch.setattr(rdf, "corpus_triples", held_whole)
    papers = seed_papers()
    streamed, whole = tmp_path / "streamed", tmp_path / "whole"
    project.build(streamed, papers[:12], formats=["jsonl", "nt"])
    project.add(streamed, papers[12:])  # reused papers' triples are streamed too
    assert len(spills) > 10
    monkeypatch.undo()
    project.build(whole, papers, formats=["nt", "ttl"])  # Turtle needs every triple at once
    assert (streamed / "graph.nt").read_bytes() == (whole / "graph.nt").read_bytes()
    lines = (streamed / "graph.nt").read_bytes().count(b"\n")
    assert lines == json.loads((streamed / "build.json").read_text())["counts"]["triples"]
    assert not list(project.open_project(streamed).generation.glob("nt.runs*"))


def test_an_unchanged_rebuild_extracts_and_writes_nothing(tmp_path):
    papers = seed_papers()
    out = tmp_path / "p"
    project.build(out, papers, formats=["jsonl"])
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    outcome = project.build(out, list(reversed(papers)))
    assert outcome.noop and outcome.extracted == 0
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()
            and p.name != "lock"} == {p: t for p, t in before.items() if p.name != "lock"}


def test_a_build_with_the_span_model_reextracts_what_the_rules_alone_extracted(tmp_path):
    # Extractions with and without kg-span never share a cache entry (else a --model kg-span
    # build of a rules-only project would be "up to date", and an add would mix the two).
    papers = seed_papers()
    out = tmp_path / "p"
    project.build(out, papers, formats=["jsonl"])
    outcome = project.build(out, papers, trained_model="kg-span")
    assert not outcome.noop and outcome.extracted == len(papers)


def test_the_cycle_collector_is_off_during_a_local_build_and_restored_after(tmp_path):
    import gc

    during: list[bool] = []
    gc.set_threshold(700, 10, 10)
    try:
        project.build(tmp_path / "p", seed_papers()[:4], formats=["jsonl"],
                      on_step=lambda name: during.append(gc.isenabled()))
        assert during and not any(during)
        assert gc.isenabled() and gc.get_threshold() == (700, 10, 10)
        gc.disable()  # a caller that had it off keeps it off
        project.remove(tmp_path / "p", [seed_papers()[0].id])
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.set_threshold(700, 10, 10)


def test_a_changed_abstract_is_re_extracted_alone(tmp_path):
    from dataclasses import replace

    papers = seed_papers()
    out = tmp_path / "p"
    project.build(out, papers, formats=["jsonl"])
    changed = [replace(p, abstract=p.abstract + " We also use quantization.") if i == 3 else p
               for i, p in enumerate(papers)]
    outcome = project.build(out, changed)
    assert outcome.extracted == 1 and outcome.changed == (papers[3].id,)
    assert exports(out) == fresh(changed, tmp_path, ["jsonl"])


@pytest.mark.parametrize("formats", [ALL, ["jsonl"]], ids=["all", "jsonl"])
def test_a_paper_whose_entities_change_with_the_corpus_is_rebuilt(tmp_path, formats):
    # A term the extractor leaves pending in one paper is kept once another paper uses it:
    # the first paper's result changes although its text did not.
    from kg.model import Paper

    first = Paper(id="a", abstract="We study sparse kernel regularization in robots.")
    second = Paper(id="b", abstract="We use sparse kernel regularization for quantization.")
    out = tmp_path / "p"
    project.build(out, [first], formats=formats)
    assert exports(out)["index:state"][0][1].mentioned == ()
    outcome = project.add(out, [second])
    assert outcome.extracted == 1
    result = exports(out)
    assert result["index:state"][0][1].mentioned == ("technique/sparse-kernel-regularization",)
    assert result == fresh([first, second], tmp_path, formats)


def test_a_pipeline_change_re_extracts_every_paper(tmp_path, monkeypatch):
    papers = seed_papers()
    out = tmp_path / "p"
    project.build(out, papers, formats=["jsonl"])
    # What a vocabulary edit or a new kg version does to the pipeline version.
    monkeypatch.setattr(builder, "pipeline_version", lambda model=None: "0-changed")
    outcome = project.build(out, papers)
    assert outcome.extracted == len(papers) and not outcome.noop


def test_a_removed_paper_takes_the_entities_only_it_supported(tmp_path):
    papers = seed_papers()
    out = tmp_path / "p"
    project.build(out, papers, formats=["jsonl"])
    before = project.open_project(out).corpus()

    def own_of(victim):
        return {eid for eid in victim.entity_ids
                if not any(eid in r.entity_ids for r in before.results if r is not victim)}

    victim = next(r for r in before.results  # a paper with entities of its own and shared ones
                  if own_of(r) and set(r.entity_ids) - own_of(r))
    own = own_of(victim)
    shared = set(victim.entity_ids) - own
    project.remove(out, [victim.paper.id])
    store = project.open_project(out).store()
    after = project.open_project(out).corpus()
    assert not own & set(after.entities) and shared <= set(after.entities)
    from kg.rdf import entity_iri, paper_iri

    text = "\n".join(str(q) for q in store)
    assert paper_iri(victim.paper.id) not in text
    assert not any(entity_iri(eid) + ">" in text for eid in own)
    assert all(entity_iri(eid) + ">" in text for eid in shared)


def test_remove_refuses_unknown_ids_and_keeps_the_project(tmp_path):
    out = tmp_path / "p"
    project.build(out, seed_papers(), formats=["jsonl"])
    result = invoke("remove", out, "no-such-paper")
    assert result.exit_code == 2 and "no-such-paper" in result.output
    assert project.open_project(out).manifest.counts["papers"] == 19


def test_commands_in_their_own_processes_equal_a_fresh_build(tmp_path):
    """Each `kg` command in its own process: a removal and an addition checkpoint the store
    and apply its delta in a worker process, a few papers are extracted in this one."""
    papers = seed_papers()
    lines = [json.dumps({"id": p.id, "title": p.title, "abstract": p.abstract}) + "\n"
             for p in papers]
    first, rest = tmp_path / "first.jsonl", tmp_path / "rest.jsonl"
    first.write_text("".join(lines[:15]), encoding="utf-8")
    rest.write_text("".join(lines[15:]), encoding="utf-8")
    out = tmp_path / "p"
    for args in (("build", first, "-o", out, "--formats", "jsonl,nt"),
                 ("remove", out, papers[0].id, papers[3].id),
                 ("add", out, rest)):
        proc = kg(*args)
        assert proc.returncode == 0, proc.stderr
    kept = [p for i, p in enumerate(papers) if i not in (0, 3)]
    assert exports(out) == fresh(kept, tmp_path, ["jsonl", "nt"])
    record = json.loads((out / "build.json").read_text(encoding="utf-8"))
    assert {name: meta["sha256"] for name, meta in record["files"].items()} == {
        name: sha256_file(out / name) for name in ("extraction.jsonl", "graph.nt")}


def prebuilt(out: Path) -> dict[str, tuple[str, bytes]]:
    """The project's pickled extractor and vocabulary: name → (pipeline, pickle)."""
    db = sqlite3.connect(out / ".kg" / "cache.sqlite")
    try:
        return {name: (pipeline, data) for name, pipeline, data
                in db.execute("SELECT name, pipeline, v FROM prebuilt")}
    finally:
        db.close()


def set_prebuilt(out: Path, pipeline: str, data: bytes) -> None:
    db = sqlite3.connect(out / ".kg" / "cache.sqlite")
    with db:
        db.execute("UPDATE prebuilt SET pipeline = ?, v = ?", (pipeline, data))
    db.close()


def test_a_few_new_papers_are_added_with_the_projects_cached_vocabulary(tmp_path):
    from kg import vocab

    papers = seed_papers()
    out = tmp_path / "p"
    project.build(out, papers[:13], formats=["jsonl"])
    current = project.pipeline_version()
    assert {name: p for name, (p, _) in prebuilt(out).items()} == {"vocabulary": current}

    project.add(out, papers[13:15])
    # Damaged copies, or another pipeline's, are parsed again (and replaced), never used.
    set_prebuilt(out, current, b"not a pickle")
    project.add(out, papers[15:17])
    assert {name: p for name, (p, _) in prebuilt(out).items()} == {"vocabulary": current}
    set_prebuilt(out, "0.0.0+another", pickle.dumps("not a vocabulary"))
    project.add(out, papers[17:])
    assert exports(out) == fresh(papers, tmp_path, ["jsonl"])
    kept = prebuilt(out)
    assert kept["vocabulary"][0] == current
    assert pickle.loads(kept["vocabulary"][1]) == vocab.load_vocabulary()


def test_cli_build_add_remove_and_queries_read_the_store(tmp_path):
    out = tmp_path / "p"
    first = tmp_path / "first.jsonl"
    papers = seed_papers()
    with first.open("w", encoding="utf-8") as fh:
        for p in papers[:12]:
            fh.write(json.dumps({"id": p.id, "title": p.title, "abstract": p.abstract}) + "\n")
    rest = tmp_path / "rest.jsonl"
    with rest.open("w", encoding="utf-8") as fh:
        for p in papers[12:]:
            fh.write(json.dumps({"id": p.id, "title": p.title, "abstract": p.abstract}) + "\n")
    result = invoke("build", first, "-o", out, "--formats", "jsonl")
    assert result.exit_code == 0, result.output
    assert "12 added" in result.output and not (out / "graph.nt").exists()
    result = invoke("add", out, rest)
    assert result.exit_code == 0 and "7 added" in result.output, result.output
    result = invoke("sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?p a kg:Paper }", "--graph", out,
                    "--format", "json")
    assert result.exit_code == 0 and '"19"' in result.output, result.output
    result = invoke("shared", "caching", "--graph", out)
    assert result.exit_code == 0 and "FasterCache" in result.output
    result = invoke("remove", out, papers[0].id)
    assert result.exit_code == 0 and "1 removed" in result.output, result.output
    result = invoke("build", first, rest, "-o", out)
    assert result.exit_code == 0 and "1 added" in result.output, result.output
    result = invoke("build", first, rest, "-o", out)
    assert result.exit_code == 0 and "up to date" in result.output, result.output


def test_an_older_export_directory_gets_an_upgrade_message(tmp_path):
    from kg.exports import write_exports
    from kg.pipeline import run

    old = tmp_path / "old"
    write_exports(run([SEED]), old, html=False)  # what kg before projects wrote
    for args in (("shared", "caching", "--graph", old), ("sparql", "ASK { ?s ?p ?o }",
                                                         "--graph", old)):
        result = invoke(*args)
        assert result.exit_code == 2 and "upgrade it with `kg build" in result.output
    result = invoke("build", old / "extraction.jsonl", "-o", old)  # the upgrade, in place
    assert result.exit_code == 0, result.output
    assert invoke("shared", "caching", "--graph", old).exit_code == 0


def test_a_foreign_or_damaged_directory_is_refused_and_left_alone(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "graph.ttl").write_text("mine", encoding="utf-8")
    result = invoke("build", SEED, "-o", foreign)
    assert result.exit_code == 2 and "not kg's to replace" in result.output
    assert (foreign / "graph.ttl").read_text(encoding="utf-8") == "mine"
    assert not (foreign / ".kg").exists()

    damaged = tmp_path / "damaged"
    project.build(damaged, seed_papers(), formats=["jsonl"])
    manifest = project.open_project(damaged).generation / "manifest.json"
    manifest.write_text("{not json", encoding="utf-8")
    for args in (("build", SEED, "-o", damaged), ("shared", "caching", "--graph", damaged)):
        result = invoke(*args)
        assert result.exit_code == 2 and "damaged" in result.output, result.output
    assert manifest.read_text(encoding="utf-8") == "{not json"

    other = tmp_path / "other"
    project.build(other, seed_papers(), formats=["jsonl"])
    (other / ".kg" / "project.json").write_text('{"format": "x", "version": 9}', "utf-8")
    result = invoke("build", SEED, "-o", other)
    assert result.exit_code == 2 and "version 9" in result.output


def test_a_build_that_fails_leaves_no_generation_and_the_next_one_lands(tmp_path, monkeypatch):
    papers = seed_papers()
    out = tmp_path / "p"
    project.build(out, papers[:10], formats=["jsonl"])

    def fail(*args, **kwargs) -> None:
        raise RuntimeError("failed while extracting")

    monkeypatch.setattr(builder, "extract_few", fail)
    with pytest.raises(RuntimeError, match="while extracting"):
        project.add(out, papers[10:])
    assert sorted(p.name for p in (out / ".kg").glob("gen-*")) == ["gen-000001"]
    monkeypatch.undo()
    assert project.add(out, papers[10:]).extracted == len(papers[10:])


def test_a_delta_that_fails_after_its_store_child_started_reaps_it(tmp_path):
    """The store delta is applied by a worker process started before the index is written;
    a failure after that waits for it (no worker is left), and the next remove in the same
    process lands."""
    out = tmp_path / "p"
    assert kg("build", SEED, "-o", out, "--formats", "jsonl").returncode == 0
    script = f"""
import multiprocessing
from kg import project
from kg.analysis import stored
from kg.pipeline import read_papers
papers = list(read_papers([{str(SEED)!r}])[0])
def fail(*args, **kwargs):
    raise RuntimeError("failed after the store child started")
kept, stored.assemble_index = stored.assemble_index, fail
try:
    project.remove({str(out)!r}, [papers[0].id])
except RuntimeError as exc:
    print(exc)
print("a child is left" if multiprocessing.active_children() else "no child left")
stored.assemble_index = kept
print(project.remove({str(out)!r}, [papers[0].id]).removed)
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["failed after the store child started",
                                        "no child left", repr((seed_papers()[0].id,))]


def test_a_second_build_on_the_same_directory_is_refused(tmp_path):
    out = tmp_path / "p"
    project.build(out, seed_papers(), formats=["jsonl"])
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from kg.project.builder import locked\n"
         f"with locked(Path({str(out)!r})):\n    print('held', flush=True); time.sleep(60)"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = kg("build", SEED, "-o", out)
        assert proc.returncode == 1
        assert f"{out} is being built by process {holder.pid}" in proc.stderr
        proc = kg("shared", "caching", "--graph", out)  # readers are not blocked
        assert proc.returncode == 0 and "FasterCache" in proc.stdout
    finally:
        holder.kill()
        holder.wait()
    assert kg("build", SEED, "-o", out).returncode == 0  # the lock died with its holder


@pytest.mark.slow
def test_a_build_killed_at_any_moment_leaves_the_previous_state_answering(tmp_path,
                                                                          corpora_dir):
    out = tmp_path / "p"
    small = tmp_path / "small.jsonl"
    papers = iclr_papers(corpora_dir, 300)
    with small.open("w", encoding="utf-8") as fh:
        for p in papers[:20]:
            fh.write(json.dumps({"id": p.id, "title": p.title, "abstract": p.abstract}) + "\n")
    big = tmp_path / "big.jsonl"
    with big.open("w", encoding="utf-8") as fh:
        for p in papers:
            fh.write(json.dumps({"id": p.id, "title": p.title, "abstract": p.abstract}) + "\n")
    # Kills spread over the time a build takes here (fixed delays all came after the end
    # once builds got faster).
    started = time.perf_counter()
    assert kg("build", big, "-o", tmp_path / "timed", "--workers", "1").returncode == 0
    took = time.perf_counter() - started
    assert kg("build", small, "-o", out, "--workers", "1").returncode == 0
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?p a kg:Paper }"
    killed = 0
    for delay in (took * share for share in (0.2, 0.35, 0.5, 0.65, 0.8)):
        proc = subprocess.Popen([sys.executable, "-m", "kg", "build", big, "-o", out,
                                 "--workers", "1"], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed += 1
        proc.wait()
        answer = kg("sparql", count, "--graph", out, "--format", "csv")
        assert answer.returncode == 0, answer.stderr
        n = int(answer.stdout.split()[-1])
        if proc.returncode == -signal.SIGKILL:
            assert n in (20, 300)  # the previous state, or the new one if it had committed
        else:
            assert n == 300
        if n == 20:
            assert invoke("shared", "caching", "--graph", out).exit_code in (0, 2)
            assert project.open_project(out).manifest.counts["papers"] == 20
        if n == 300:  # committed: start again from the small state to kill the next one
            assert kg("build", small, "-o", out, "--workers", "1").returncode == 0
    assert killed >= 2, "the builds always finished before the kill"
    proc = kg("build", big, "-o", out, "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    assert exports(out) == fresh(list(read_papers([big])[0]), tmp_path, ["auto"])
    assert not [p for p in (out / ".kg").iterdir() if p.name.startswith("gen-")][2:]


def test_a_project_gives_papers_results_lines_and_batches_as_its_exports_hold_them(tmp_path):
    papers = seed_papers()
    out = tmp_path / "p"
    project.build(out, papers, formats=["jsonl"])
    opened = project.open_project(out)
    corpus = opened.corpus()  # read back from extraction.jsonl
    ids = sorted(r.paper.id for r in corpus.results)
    some = ids[::4]
    by_id = {r.paper.id: r for r in corpus.results}

    def records(results):  # what extraction.jsonl holds of each (not where it was read)
        return [result_line(r, corpus.entities) for r in results]

    assert records(opened.results(reversed(some))) == records(by_id[p] for p in reversed(some))
    batches = list(opened.batches(7))
    assert [len(b.results) for b in batches] == [7, 7, 5]
    assert records(r for b in batches for r in b.results) == records(by_id[p] for p in ids)
    assert {e: x for b in batches for e, x in b.entities.items()} == corpus.entities
    written = (out / "extraction.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    wanted = {pid: written[ids.index(pid)] for pid in some}
    assert opened.lines([*some, "no-such-paper"]) == wanted
    (opened.generation / "lines.idx").unlink()  # a generation without its line index
    assert opened.lines(some) == wanted
    (opened.generation / "lines.idx").write_bytes(b"")  # one that does not fit: scanned
    assert opened.lines(some) == wanted
    project.build(out, papers, formats=["nt"])
    with pytest.raises(project.ProjectError, match=r"did not write extraction\.jsonl"):
        project.open_project(out).lines(some)


# ------------------------------------------------------------------ damage: found and repaired

COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?p a kg:Paper }"


def damage_cases():
    def store_deleted(out: Path) -> str:
        import shutil

        shutil.rmtree(project.open_project(out).generation / "store")
        return "store/"

    def index_truncated(out: Path) -> str:
        index = project.open_project(out).generation / "index.sqlite"
        os.truncate(index, index.stat().st_size // 2)
        return "index.sqlite"

    def export_edited_in_place(out: Path) -> str:
        with (out / "extraction.jsonl").open("a", encoding="utf-8") as fh:  # via the link
            fh.write("\n")
        return "extraction.jsonl"

    return [store_deleted, index_truncated, export_edited_in_place]


@pytest.mark.parametrize("spoil", damage_cases(), ids=lambda f: f.__name__)
def test_a_damaged_generation_is_named_by_every_reader_and_repaired_by_the_same_build(
        tmp_path, spoil):
    out = tmp_path / "p"
    invoke("build", SEED, "-o", out, "--formats", "jsonl")
    before = (out / "extraction.jsonl").read_bytes()
    what = spoil(out)
    for args in (("sparql", COUNT, "--graph", out), ("validate", out),
                 ("shared", "caching", "--graph", out), ("related", "p-2b89004d8d01",
                                                         "--graph", out)):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "changed outside kg" in result.output and what in result.output, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
    result = invoke("build", SEED, "-o", out, "--formats", "jsonl")
    assert result.exit_code == 0 and "repaired" in result.output and what in result.output
    assert (out / "extraction.jsonl").read_bytes() == before
    result = invoke("sparql", COUNT, "--graph", out, "--format", "csv")
    assert result.exit_code == 0 and result.output.split() == ["n", "19"], result.output
    assert "up to date" in invoke("build", SEED, "-o", out, "--formats", "jsonl").output


def test_current_naming_another_projects_generation_is_refused(tmp_path):
    mine, other = tmp_path / "mine", tmp_path / "other"
    for out in (mine, other):
        project.build(out, seed_papers()[:5 if out == mine else 8], formats=["jsonl"])
    foreign = project.open_project(other).generation
    for how in ("copied", "linked", "path"):
        import shutil

        name = "gen-000009"
        shutil.rmtree(mine / ".kg" / name, ignore_errors=True)
        (mine / ".kg" / name).unlink(missing_ok=True)
        if how == "copied":
            shutil.copytree(foreign, mine / ".kg" / name)
        elif how == "linked":
            (mine / ".kg" / name).symlink_to(foreign)
        else:
            name = os.path.relpath(foreign, mine / ".kg")
        (mine / ".kg" / "CURRENT").write_text(name + "\n", encoding="utf-8")
        for args in (("shared", "caching", "--graph", mine), ("build", SEED, "-o", mine)):
            result = invoke(*args)
            assert result.exit_code == 2 and "not this project's state" in result.output, (
                how, result.output)
    assert project.open_project(other).manifest.counts["papers"] == 8


def test_a_lock_kg_cannot_open_is_a_message_not_a_traceback(tmp_path):
    out = tmp_path / "p"
    project.build(out, seed_papers()[:3], formats=["jsonl"])
    (out / ".kg" / "lock").unlink()
    (out / ".kg" / "lock").mkdir()  # (root ignores permission bits: a directory fails for all)
    result = invoke("build", SEED, "-o", out)
    assert result.exit_code == 2 and ".kg/lock: cannot open it" in result.output, result.output


def test_add_after_the_cache_was_truncated_re_extracts_from_the_current_generation(tmp_path):
    papers = seed_papers()
    out = tmp_path / "p"
    project.build(out, papers[:12], formats=["jsonl"])
    cache = out / ".kg" / "cache.sqlite"
    os.truncate(cache, cache.stat().st_size // 2)
    outcome = project.add(out, papers[12:])
    assert outcome.extracted == len(papers), outcome
    assert any("re-extracted 12 paper(s)" in n for n in outcome.notices), outcome.notices
    assert (out / ".kg" / "cache.sqlite.damaged").is_file()
    assert exports(out) == fresh(papers, tmp_path, formats=["jsonl"])


def test_above_the_size_for_every_format_a_build_still_writes_the_technique_map(
        tmp_path, monkeypatch):
    import kg.viz

    monkeypatch.setattr(builder, "AUTO_ALL_PAPERS", 5)  # (a conference: 2,000 and 300)
    monkeypatch.setattr(kg.viz, "MAP_MIN_PAPERS", 5)
    out = tmp_path / "p"
    outcome = project.build(out, seed_papers())
    assert outcome.written == ("extraction.jsonl", "graph.html")
    page = (out / "graph.html").read_text(encoding="utf-8")
    assert '"facets"' in page and '"clusters"' in page  # the map's payload, not the graph's


def test_remove_takes_a_paper_by_the_words_of_its_label(tmp_path):
    out = tmp_path / "p"
    project.build(out, seed_papers(), formats=["jsonl"])
    victim = next(p for p in seed_papers()
                  if "we present \\textbf{\\textit{FasterCache" in p.abstract)
    result = invoke("remove", out, "FasterCache")
    assert result.exit_code == 0, result.output
    kept = project.open_project(out)
    assert kept.manifest.counts["papers"] == 18 and victim.id not in kept.index().papers


@pytest.mark.parametrize("formats", [["jsonl", "html"], ALL])
def test_a_map_drawn_beside_the_store_delta_is_the_map_of_a_fresh_build(
        tmp_path, monkeypatch, formats):
    """Above MAP_MIN_PAPERS a remove has the store worker rank the map's related papers and
    update the derived facts while this process draws the rest of the map: every file and
    the store's size must still be a fresh build's."""
    import kg.viz

    monkeypatch.setattr(generation, "MAP_MIN_PAPERS", 5)  # (a conference: 300)
    monkeypatch.setattr(kg.viz, "MAP_MIN_PAPERS", 5)
    papers = seed_papers()
    out = tmp_path / "p"
    project.build(out, papers, formats=formats)
    gone = {papers[3].id, papers[11].id}
    project.remove(out, sorted(gone))
    kept = [p for p in papers if p.id not in gone]
    assert exports(out) == fresh(kept, tmp_path, formats=formats)
    record = json.loads((out / "build.json").read_text(encoding="utf-8"))
    again = json.loads((tmp_path / "fresh-1" / "build.json").read_text(encoding="utf-8"))
    assert record["counts"] == again["counts"]
    assert project.open_project(out).related() is not None  # (kept by the worker's ranking)


def test_the_related_papers_ranked_for_the_map_are_kept_for_neo4j_and_kg_viz(
        tmp_path, monkeypatch):
    """A build that draws the technique map keeps every paper's ranked related papers beside
    its index: a Neo4j load writes what it would rank itself, and the map drawn from them (as
    `kg viz DIR` draws it) is the map ranked anew, five related papers per paper."""
    import kg.viz
    from kg.analysis.related_all import related_all
    from kg.derived import RELATED_K
    from kg.neo4j.derived import derived_facts
    from kg.viz.map import build_map, render_map_html

    monkeypatch.setattr(generation, "MAP_MIN_PAPERS", 5)
    monkeypatch.setattr(kg.viz, "MAP_MIN_PAPERS", 5)
    out = tmp_path / "p"
    project.build(out, seed_papers(), formats=["jsonl", "html"])
    built = project.open_project(out)
    kept = built.related()
    index = built.index()
    assert kept == related_all(index, RELATED_K)
    assert max(len(v) for v in kept.values()) == RELATED_K
    assert derived_facts(index, kept) == derived_facts(index)
    anew = project.stored_map_source(built.generation / "index.sqlite")  # (ranks itself)
    assert (render_map_html(build_map(built.map_source()))
            == render_map_html(build_map(anew)))
    (built.generation / project.RELATED).write_bytes(b"junk")  # (damaged: ranked again)
    assert project.open_project(out, check=False).related() is None
    (built.generation / project.RELATED).unlink()  # (a generation of an older kg)
    assert project.open_project(out, check=False).related() is None
