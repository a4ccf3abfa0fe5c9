"""Benchmark: extraction throughput and peak memory on the ICLR+ICML 2024 abstracts.

    .venv/bin/python bench/extract.py [--workers 2] [--corpora ../shared/corpora]

Prints the Extractor's construction time in fresh processes (importing spaCy, then building
kg's pipeline: vocabulary, its phrases indexed for the PhraseMatcher; what every `kg build`
process and worker pays before its first paper), abstracts per second (wall) and per
CPU-second for 1 worker and for --workers N (and the ratio), plus peak RSS. Figures, not
assertions.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from kg.ingest import read_inputs
from kg.pipeline import extract_all
from kg.resolve import resolve

ROOT = Path(__file__).resolve().parent.parent
FILES = ("ICLR_cc_2024_Conference.tsv", "ICML_cc_2024_Conference.tsv")


def peak_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def fresh_build_seconds(model: str) -> tuple[float, float]:
    """(importing spaCy, building the Extractor) in a fresh process, seconds."""
    code = ("import time; t = time.perf_counter(); import spacy; u = time.perf_counter(); "
            "from kg.extract import Extractor; "
            f"Extractor(model={model!r}); print(u - t, time.perf_counter() - u)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    spacy_s, build_s = out.stdout.split()
    return float(spacy_s), float(build_s)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--model", choices=["none", "kg-span"], default="none")
    args = parser.parse_args()
    paths = [args.corpora / "openreview-2024" / name for name in FILES]
    papers = read_inputs(paths).papers
    if args.limit:
        papers = papers[: args.limit]
    print(f"{len(papers)} abstracts from {', '.join(FILES)}")

    builds = [fresh_build_seconds(args.model) for _ in range(3)]
    print("in a fresh process: import spacy, then Extractor() (vocabulary, PhraseMatcher): "
          f"median {statistics.median(b[0] for b in builds):.2f} s + "
          f"{statistics.median(b[1] for b in builds):.2f} s of "
          + ", ".join(f"{a:.2f} + {b:.2f}" for a, b in builds))

    from kg.extract import Extractor

    model = None if args.model == "none" else args.model
    t0 = time.perf_counter()
    Extractor(model=args.model)  # built before the throughput runs, as in a long build
    print(f"Extractor() in this process: {time.perf_counter() - t0:.2f} s")

    t0, c0 = time.perf_counter(), time.process_time()
    extractions = extract_all(papers, workers=1, trained_model=model)
    single, cpu = time.perf_counter() - t0, time.process_time() - c0
    rate1 = len(papers) / single
    print(f"1 worker:  {single:6.2f} s  {rate1:7.1f} abstracts/s  "
          f"({len(papers) / cpu:.1f} per CPU-second)")

    t0 = time.perf_counter()
    corpus = resolve(extractions)
    print(f"resolve:   {time.perf_counter() - t0:6.2f} s  ({len(corpus.entities)} entities, "
          f"{sum(len(r.relations) for r in corpus.results)} relations)")

    if args.workers > 1:
        t0 = time.perf_counter()
        extract_all(papers, workers=args.workers, trained_model=model)
        multi = time.perf_counter() - t0
        rate_n = len(papers) / multi
        print(f"{args.workers} workers: {multi:6.2f} s  {rate_n:7.1f} abstracts/s  "
              f"(x{rate_n / rate1:.2f} of one worker)")
    print(f"peak memory (max RSS of this process or a worker): {peak_mb():.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
