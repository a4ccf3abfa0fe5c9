"""Benchmark: load the ICLR+ICML 2024 graph (4,870 abstracts) into Neo4j, then re-load it.

    scripts/neo4j-test-server start && . .neo4j/env
    .venv/bin/python bench/neo4j_load.py [--corpora ../shared/corpora] [--batch-size 250]
    .venv/bin/python bench/neo4j_load.py --delta [--papers 50]

Targets: load < 30 s and re-load < 30 s (``load`` of a corpus: no derived facts). Prints
seconds, nodes/s and relationships/s for each, and checks that the counts in Neo4j equal the
Corpus's. The extraction is cached in
bench/out/openreview-2024.jsonl (delete it to re-extract). The database at NEO4J_URI is WIPED
first, so the script only talks to a server on this machine (127.0.0.1 / localhost).
One run each; figures, not assertions.

``--delta`` times `kg neo4j load DIR` on a project instead (issue #10): a full load of the
project (bench/out/openreview-2024-project, built once with kg.project.build), a load with
nothing to do, then ``kg remove`` of --papers papers and a load, ``kg add`` of them back and a
load — through the API, then again through the CLI (a process: what a user waits for). Target:
each delta load ≤ 10% of the full load's time. Each project load computes the derived facts
(kg.neo4j.derived) and writes them (a delta only what changed), printed apart.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from kg import project
from kg.io import read_jsonl, write_jsonl
from kg.neo4j import (
    Connection,
    connect,
    corpus_counts,
    db_counts,
    graph_counts,
    load,
    load_project,
)
from kg.pipeline import read_papers, run

ROOT = Path(__file__).resolve().parent.parent
FILES = ("ICLR_cc_2024_Conference.tsv", "ICML_cc_2024_Conference.tsv")
CACHE = ROOT / "bench" / "out" / "openreview-2024.jsonl"
PROJECT = ROOT / "bench" / "out" / "openreview-2024-project"


def get_corpus(corpora: Path, workers: int):
    if CACHE.is_file():
        print(f"reading the cached extraction {CACHE.relative_to(ROOT)}")
        return read_jsonl(CACHE)
    paths = [corpora / "openreview-2024" / name for name in FILES]
    t0 = time.perf_counter()
    corpus = run(paths, workers=workers)
    print(f"extracted {len(corpus)} abstracts in {time.perf_counter() - t0:.1f} s")
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    with CACHE.open("w", encoding="utf-8") as fh:
        write_jsonl(corpus, fh)
    return corpus


def wipe(driver, conn) -> None:
    with driver.session(database=conn.database) as session:
        session.run("MATCH (n) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
                    ).consume()


def bench_full(args, conn) -> int:
    corpus = get_corpus(args.corpora, args.workers)
    expected = corpus_counts(corpus)
    print(f"{expected['papers']} papers, {len(corpus.entities)} entities, "
          f"{sum(expected['relations'].values())} relations")

    driver = connect(conn)
    wipe(driver, conn)
    results = []
    for name in ("load", "re-load"):
        report = load(corpus, conn, papers_per_batch=args.batch_size, driver=driver)
        nodes = report.papers + report.entities + report.concepts
        rels = report.relations  # plus HAS_CONCEPT / BROADER, which are small
        print(f"{name:8} {report.seconds:6.1f} s  {nodes / report.seconds:8.0f} nodes/s  "
              f"{rels / report.seconds:8.0f} relationships/s  (created {report.nodes_created} "
              f"nodes, {report.relationships_created} relationships; "
              f"{report.batches} batches of {args.batch_size} papers)")
        results.append(report)
    with driver.session(database=conn.database) as session:
        got = graph_counts(session)
    driver.close()
    print("counts in Neo4j equal the Corpus:", "yes" if got == expected else f"NO: {got}")
    ok = got == expected and all(r.seconds < 30 for r in results)
    print("targets (< 30 s each):", "met" if ok else "NOT met")
    return 0 if got == expected else 1


def get_project(corpora: Path, workers: int):
    paths = [corpora / "openreview-2024" / name for name in FILES]
    papers = sorted(read_papers(paths)[0], key=lambda p: p.id)
    if not project.is_project(PROJECT):
        t0 = time.perf_counter()
        project.build(PROJECT, papers, workers=workers)
        print(f"built the project {PROJECT.relative_to(ROOT)} in "
              f"{time.perf_counter() - t0:.1f} s")
    else:
        project.build(PROJECT, papers, workers=workers)  # back to every paper, if a run died
    return papers


def cli_load(conn) -> tuple[float, str]:
    """`kg neo4j load PROJECT` in a process: wall seconds and its output."""
    env = {**os.environ, "NEO4J_URI": conn.uri, "NEO4J_USER": conn.user,
           "NEO4J_PASSWORD": conn.password, "NEO4J_DATABASE": conn.database}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kg", "neo4j", "load", str(PROJECT)],
                          capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - t0, done.stdout.strip()


def bench_delta(args, conn) -> int:
    papers = get_project(args.corpora, args.workers)
    step = max(1, len(papers) // args.papers)
    chosen = papers[::step][:args.papers]  # spread over the id order
    driver = connect(conn)
    wipe(driver, conn)
    timings: dict[str, float] = {}

    def api(name: str) -> None:
        report = load_project(project.open_project(PROJECT), conn,
                              papers_per_batch=args.batch_size, driver=driver)
        timings[name] = report.load.seconds
        print(f"{name:22} {report.load.seconds:6.2f} s  (derived facts "
              f"{report.derived_seconds:.1f} s)  {report.summary().splitlines()[0][:120]}")
        if getattr(report, "derived", None):  # (what of them was written; kg ≥ issue 25)
            print(f"{'':22} {report.derived.summary()}")

    def cli(name: str) -> None:
        seconds, out = cli_load(conn)
        timings[name] = seconds
        print(f"{name:22} {seconds:6.2f} s  {out.splitlines()[0][:150]}")

    def change(what: str) -> None:
        t0 = time.perf_counter()
        if what == "remove":
            project.remove(PROJECT, [p.id for p in chosen])
        else:
            project.add(PROJECT, chosen, workers=args.workers)
        print(f"  (kg {what} {len(chosen)} papers: {time.perf_counter() - t0:.1f} s)")

    api("full load (API)")
    with driver.session(database=conn.database) as session:
        after_full = db_counts(session)
    api("nothing to do (API)")
    change("remove")
    api(f"-{len(chosen)} papers (API)")
    change("add")
    api(f"+{len(chosen)} papers (API)")
    change("remove")
    cli(f"-{len(chosen)} papers (CLI)")
    change("add")
    cli(f"+{len(chosen)} papers (CLI)")
    cli("nothing to do (CLI)")
    wipe(driver, conn)
    cli("full load (CLI)")
    with driver.session(database=conn.database) as session:
        got, final = graph_counts(session), db_counts(session)
    driver.close()
    expected = corpus_counts(project.open_project(PROJECT).corpus())
    same = got == expected and final == after_full
    print("counts in Neo4j equal the Corpus's and the first full load's:",
          "yes" if same else f"NO: {got}, {final} (after the full load: {after_full})")
    for kind in ("API", "CLI"):
        full = timings[f"full load ({kind})"]
        shares = [f"{timings[k] / full:.0%}" for k in timings
                  if k.endswith(f"papers ({kind})")]
        print(f"{kind}: deltas take {', '.join(shares)} of a full load's {full:.1f} s")
    ok = same and all(timings[k] <= 0.1 * timings[f"full load ({k[-4:-1]})"]
                      for k in timings if "papers" in k)
    print("target (each delta ≤ 10% of a full load):", "met" if ok else "NOT met")
    return 0 if same else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--batch-size", type=int, default=250, help="papers per transaction")
    parser.add_argument("--workers", type=int, default=2, help="extraction workers")
    parser.add_argument("--delta", action="store_true",
                        help="time delta loads of a project against a full load")
    parser.add_argument("--papers", type=int, default=50, help="papers in each delta")
    args = parser.parse_args()

    conn = Connection.from_env()
    if urlparse(conn.uri).hostname not in ("127.0.0.1", "localhost", "::1"):
        print(f"refusing to wipe {conn.uri}: the bench only runs against a local test server",
              file=sys.stderr)
        return 2
    return bench_delta(args, conn) if args.delta else bench_full(args, conn)


if __name__ == "__main__":
    sys.exit(main())
