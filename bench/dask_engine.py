"""Benchmark: `kg build` with the local engine vs `--engine dask` (a LocalCluster of 2 worker
processes) on the same synthetic corpus (issue #12's target: within 1.3× at 20,000 papers).

    .venv/bin/python bench/dask_engine.py [N] [--workers 2] [--corpora ../shared/corpora]

Makes N synthetic papers with bench/synth.py (default 20,000; in a temporary folder, removed
afterwards), then runs `kg` as a user would (subprocesses: start-up, imports and, for Dask, the
cluster's start and stop count): a fresh build with each engine, and checks that both wrote the
same extraction.jsonl. Prints the wall times and their ratio: figures, not assertions.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def kg(*args: object) -> float:
    """Wall seconds of one `kg` process."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kg", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"kg {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, nargs="?", default=20_000)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    try:
        import distributed  # noqa: F401
    except ImportError:
        sys.exit("needs Dask: pip install -e '.[dask]'")
    work = Path(tempfile.mkdtemp(prefix="kg-bench-dask-"))
    try:
        papers = work / f"synth-{args.n}.jsonl"
        subprocess.run([sys.executable, str(ROOT / "bench" / "synth.py"), str(args.n), "-o",
                        str(papers), "--corpora", str(args.corpora)], check=True,
                       stdout=subprocess.DEVNULL)
        workers = ["--workers", args.workers]
        local = kg("build", papers, "-o", work / "local", *workers)
        print(f"local engine ({args.workers} processes):        {local:7.1f} s "
              f"({args.n / local:,.0f} papers/s)")
        dask = kg("build", papers, "-o", work / "dask", *workers, "--engine", "dask")
        print(f"dask engine (LocalCluster, {args.workers} workers): {dask:7.1f} s "
              f"({args.n / dask:,.0f} papers/s)")
        same = ((work / "local" / "extraction.jsonl").read_bytes()
                == (work / "dask" / "extraction.jsonl").read_bytes())
        print(f"dask / local: {dask / local:.2f}× (target ≤ 1.3×) on {args.n:,} papers; "
              f"extraction.jsonl identical: {same}")
        return 0 if same else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
