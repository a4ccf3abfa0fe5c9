"""Benchmark: `related` / `shared` latency after load on the ICLR+ICML 2024 abstracts.

    .venv/bin/python bench/analysis.py [--corpora ../shared/corpora] [--workers 2]
    .venv/bin/python bench/analysis.py --graph /tmp/or2024     # reuse a saved extraction
    .venv/bin/python bench/analysis.py --save /tmp/or2024      # keep extraction.jsonl there

Runs kg.pipeline.run on the two TSVs (or reads --graph), builds the analysis index once, then
times `related` for 200 papers (seeded sample; half by id, half by title words) and `shared`
for the 40 most used techniques plus a few vocabulary labels, and prints median / p95 / max in
ms. Also times clusters and the GraphML/CSV writers. One run each; figures, not assertions.
The loaded corpus is gc.freeze()-d first (--no-freeze to see the garbage-collector pauses).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("ICLR_cc_2024_Conference.tsv", "ICML_cc_2024_Conference.tsv")
VOCAB_QUERIES = ("caching", "quantization", "transformer", "reinforcement learning", "LLaMA",
                 "pruning", "diffusion model", "ImageNet")


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (f"median {statistics.median(ordered) * 1000:6.2f} ms  p95 {p95 * 1000:6.2f} ms  "
            f"max {ordered[-1] * 1000:6.2f} ms  (n={len(ordered)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--graph", type=Path, default=None,
                        help="an export dir / extraction JSONL to read instead of extracting")
    parser.add_argument("--save", type=Path, default=None,
                        help="write extraction.jsonl into this directory for later --graph")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-freeze", action="store_true",
                        help="do not gc.freeze() the loaded corpus (see below)")
    args = parser.parse_args()

    from kg import analysis
    from kg.errors import KgError
    from kg.exports import write_csv, write_graphml
    from kg.pipeline import load_corpus, run

    t0 = time.perf_counter()
    if args.graph:
        corpus = load_corpus([args.graph])
        how = f"read {args.graph}"
    else:
        paths = [args.corpora / "openreview-2024" / name for name in FILES]
        corpus = run(paths, workers=args.workers)
        how = f"kg.pipeline.run on {', '.join(FILES)} ({args.workers} workers)"
    print(f"{len(corpus)} papers, {len(corpus.entities)} entities: {how} "
          f"in {time.perf_counter() - t0:.1f} s")
    if args.save:
        from kg.io import write_jsonl

        args.save.mkdir(parents=True, exist_ok=True)
        with (args.save / "extraction.jsonl").open("w", encoding="utf-8") as fh:
            write_jsonl(corpus, fh)

    t0 = time.perf_counter()
    index = analysis.analysis_index(corpus)
    print(f"index build (once, includes vocabulary): {time.perf_counter() - t0:.2f} s  "
          f"({len(index.postings)} features)")
    if not args.no_freeze:
        # Millions of long-lived objects make each full (gen-2) collection take ~0.5-2 s, and
        # one can land inside any call; a long-running process freezes them after loading.
        gc.collect()
        gc.freeze()
        print(f"gc.freeze(): {gc.get_freeze_count()} objects moved out of collection")

    rng = random.Random(0)
    sample = rng.sample(sorted(index.papers), min(200, len(index.papers)))
    by_id, by_title = [], []
    found = 0
    for i, pid in enumerate(sample):
        paper = index.papers[pid].paper
        words = (paper.title or paper.label or "").strip()
        ref = pid if i % 2 == 0 or not words else words
        t0 = time.perf_counter()
        # A title shared by two papers is ambiguous: that error is an answer too.
        with contextlib.suppress(KgError):
            found += bool(analysis.related(corpus, ref, n=10))
        (by_id if ref == pid else by_title).append(time.perf_counter() - t0)
    print(f"related by id:    {_ms(by_id)}")
    print(f"related by title: {_ms(by_title)}")
    print(f"  {found}/{len(sample)} sampled papers have at least one related paper")

    names = [e.name for e, _ in analysis.technique_counts(corpus)[:40]]
    times, hits = [], 0
    for query in (*names, *VOCAB_QUERIES):
        t0 = time.perf_counter()
        with contextlib.suppress(KgError):
            hits += len(analysis.shared(corpus, query))
        times.append(time.perf_counter() - t0)
    print(f"shared:           {_ms(times)}  ({hits} paper uses found)")

    t0 = time.perf_counter()
    groups = analysis.clusters(corpus, seed=0)
    print(f"clusters: {time.perf_counter() - t0:.2f} s, {len(groups)} clusters of >= 2 papers, "
          f"largest {max((len(g.papers) for g in groups), default=0)}")
    t0 = time.perf_counter()
    pairs = analysis.cooccurrence(corpus)
    print(f"cooccurrence: {time.perf_counter() - t0:.2f} s, {len(pairs)} pairs")

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        write_graphml(corpus, Path(tmp) / "graph.graphml")
        t1 = time.perf_counter()
        write_csv(corpus, Path(tmp) / "nodes.csv", Path(tmp) / "edges.csv")
        t2 = time.perf_counter()
        size = (Path(tmp) / "graph.graphml").stat().st_size / 1e6
        print(f"write_graphml: {t1 - t0:.2f} s ({size:.1f} MB); write_csv: {t2 - t1:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
