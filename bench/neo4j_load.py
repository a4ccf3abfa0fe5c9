"""Benchmark: load the ICLR+ICML 2024 graph (4,870 abstracts) into Neo4j, then re-load it.

    scripts/neo4j-test-server start && . .neo4j/env
    .venv/bin/python bench/neo4j_load.py [--corpora ../shared/corpora] [--batch-size 250]

Targets: load < 30 s and re-load < 30 s. Prints seconds, nodes/s and relationships/s for each,
and checks that the counts in Neo4j equal the Corpus's. The extraction is cached in
bench/out/openreview-2024.jsonl (delete it to re-extract). The database at NEO4J_URI is WIPED
first, so the script only talks to a server on this machine (127.0.0.1 / localhost).
One run each; figures, not assertions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from kg.io import read_jsonl, write_jsonl
from kg.neo4j_store import Connection, connect, corpus_counts, graph_counts, load
from kg.pipeline import run

ROOT = Path(__file__).resolve().parent.parent
FILES = ("ICLR_cc_2024_Conference.tsv", "ICML_cc_2024_Conference.tsv")
CACHE = ROOT / "bench" / "out" / "openreview-2024.jsonl"


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--batch-size", type=int, default=250, help="papers per transaction")
    parser.add_argument("--workers", type=int, default=2, help="extraction workers")
    args = parser.parse_args()

    conn = Connection.from_env()
    if urlparse(conn.uri).hostname not in ("127.0.0.1", "localhost", "::1"):
        print(f"refusing to wipe {conn.uri}: the bench only runs against a local test server",
              file=sys.stderr)
        return 2
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


if __name__ == "__main__":
    sys.exit(main())
