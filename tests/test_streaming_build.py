"""`kg build` extracts as it reads: the input is a stream, never held whole before extraction."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, SEED

from kg import project
from kg.pipeline import PaperStream, read_papers

builder = importlib.import_module("kg.project.builder")


def variants(n: int):
    """``n`` distinct papers made from the demo's abstracts (each id and text its own)."""
    seed = read_papers([SEED]).papers
    for i in range(n):
        p = seed[i % len(seed)]
        yield dataclasses.replace(p, id=f"{p.id}-{i}", title=f"{p.title} ({i})",
                                  source=f"variants:{i + 1}")


def exports(directory: Path) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))
            if (directory / name).is_file() and name != "build.json"}


def kg(*args: object, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, **kwargs)


def test_a_build_reads_its_input_only_a_bounded_way_ahead_of_extraction(tmp_path):
    # The old build gathered every Paper first: at the 800th paper read, none was extracted.
    n, extracted, ahead, progress = 800, [0], [], []

    def on_progress(done: int, total: int) -> None:
        extracted[0] = done
        progress.append((done, total))

    def papers():
        for i, paper in enumerate(variants(n)):
            ahead.append(i - extracted[0])  # read, not yet extracted
            yield paper

    outcome = project.build(tmp_path / "p", papers(), workers=2, on_progress=on_progress,
                            formats=["jsonl"])
    assert outcome.extracted == n and outcome.counts["papers"] == n
    # Keying batch (100) + the few held back (100) + the window of 2 * 2 + 1 chunks of 50.
    assert max(ahead) <= 100 + 100 + 5 * 50 < n
    assert progress[-1] == (n, n)  # the bar ends full, its total grown as the input was read
    assert all(done <= total for done, total in progress)


# The writer is another process, as with `kg build <(zcat dump.json.gz)`: a thread's end of the
# FIFO would be inherited by the forked workers, and the input would never end.
WRITER = """
import json, os, sys, time
lines, started = json.load(sys.stdin), sys.argv[2]
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    for line in lines[:450]:
        fh.write(line + "\\n")
    fh.flush()
    deadline = time.monotonic() + 120  # the rest waits until extraction is under way
    while not os.path.exists(started) and time.monotonic() < deadline:
        time.sleep(0.05)
    print(os.path.exists(started))
    for line in lines[450:]:
        fh.write(line + "\\n")
"""


def test_extraction_starts_before_a_fifo_input_ends(tmp_path):
    fifo, started = tmp_path / "papers.jsonl", tmp_path / "started"
    os.mkfifo(fifo)
    lines = [json.dumps({"id": p.id, "title": p.title, "abstract": p.abstract})
             for p in variants(600)]
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(fifo), str(started)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    writer.stdin.write(json.dumps(lines))
    writer.stdin.close()
    try:
        outcome = project.build(tmp_path / "p", PaperStream([fifo]), workers=2,
                                on_progress=lambda done, total: started.touch(),
                                formats=["jsonl"])
    finally:
        started.touch()
        early = writer.stdout.read().strip()
        writer.wait(60)
    assert early == "True"  # extraction reported progress while the FIFO was still open
    assert outcome.counts["papers"] == 600


def test_bad_records_mid_stream_are_skipped_counted_and_named(tmp_path):
    path = tmp_path / "papers.jsonl"
    good = [json.dumps({"id": p.id, "title": p.title, "abstract": p.abstract}).encode()
            for p in variants(150)]
    bad = [b'{"id": "broken", "abstract": ', b'{"id": "no-abstract", "title": "T"}',
           b'{"id": "bad-byte", "title": "\xff", "abstract": "We use LoRA."}']
    path.write_bytes(b"\n".join([*good[:70], *bad, *good[70:]]) + b"\n")
    proc = kg("build", path, "-o", tmp_path / "p", "--workers", "2", "--formats", "jsonl")
    assert proc.returncode == 0, proc.stderr
    assert "papers: 150" in proc.stdout and "skipped records: 3" in proc.stdout
    assert "Traceback" not in proc.stderr
    for line in (71, 72, 73):
        assert f"papers.jsonl:{line}:" in proc.stderr
    ids = project.open_project(tmp_path / "p").manifest.papers
    assert len(ids) == 150 and "bad-byte" not in ids

    strict = kg("build", path, "-o", tmp_path / "strict", "--strict", "--formats", "jsonl")
    assert strict.returncode == 3 and "3 record(s) skipped (--strict)" in strict.stderr
    assert not (tmp_path / "strict" / "extraction.jsonl").exists()


def test_a_streamed_build_writes_the_bytes_of_a_build_from_a_list(tmp_path, monkeypatch):
    listed = tmp_path / "listed"
    project.build(listed, read_papers([SEED]).papers, formats=["all"])  # in-process extraction
    monkeypatch.setattr(builder, "FEW_PAPERS", 1)  # the demo's 19 papers: extracted as read
    streamed = tmp_path / "streamed"
    outcome = project.build(streamed, PaperStream([SEED]), workers=2, formats=["all"])
    assert outcome.extracted == 19
    assert exports(streamed) == exports(listed)
    # and the stream's incremental path: adding what is already there extracts nothing
    again = project.add(streamed, PaperStream([SEED]), workers=2)
    assert again.noop and again.extracted == 0
