"""Benchmark: `kg build` end to end on the 4,870 ICLR+ICML 2024 abstracts (target < 60 s).

    .venv/bin/python bench/build.py [--workers 2] [--corpora ../shared/corpora] [--twice]

Runs `kg build` as a user would (a subprocess, so start-up and imports count), prints the wall
time, peak memory, triple count and export sizes; with --twice runs it again under another
PYTHONHASHSEED and reports whether every export is byte-identical. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("ICLR_cc_2024_Conference.tsv", "ICML_cc_2024_Conference.tsv")
EXPORTS = ("graph.ttl", "graph.nt", "graph.jsonld", "graph.graphml", "nodes.csv", "edges.csv",
           "extraction.jsonl")


def build(paths: list[Path], out: Path, workers: int, seed: str) -> tuple[float, str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kg", "build", *map(str, paths), "-o", str(out),
                           "--workers", str(workers)], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"kg build failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed, proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "build")
    parser.add_argument("--twice", action="store_true",
                        help="build again with another PYTHONHASHSEED and compare the bytes")
    args = parser.parse_args()
    paths = [args.corpora / "openreview-2024" / name for name in FILES]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        sys.exit(f"missing corpus file(s): {', '.join(map(str, missing))}; pass --corpora DIR")

    elapsed, summary = build(paths, args.out, args.workers, seed="0")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(summary.rstrip())
    print(f"\nkg build, {args.workers} worker(s): {elapsed:.1f} s wall (target < 60 s), "
          f"peak RSS {peak:.0f} MB")
    for name in EXPORTS:
        size = (args.out / name).stat().st_size
        print(f"  {name:<17} {size / 1e6:8.1f} MB")
    if args.twice:
        again = args.out.with_name(args.out.name + "-again")
        elapsed2, _ = build(paths, again, args.workers, seed="4242")
        same = [n for n in EXPORTS if (args.out / n).read_bytes() == (again / n).read_bytes()]
        print(f"second build (PYTHONHASHSEED=4242): {elapsed2:.1f} s; byte-identical: "
              f"{len(same)}/{len(EXPORTS)}" + ("" if len(same) == len(EXPORTS) else
                                               f" (differ: {set(EXPORTS) - set(same)})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
