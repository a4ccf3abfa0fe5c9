"""Benchmark: `kg trends` on a big project, cold (a new process each time, as a user runs it).

    .venv/bin/python bench/trends.py 100000 [--corpora ../shared/corpora] [--workers 2]
    .venv/bin/python bench/trends.py 100000 --keep /tmp/trends-100k   # keep the project
    .venv/bin/python bench/trends.py --project /tmp/trends-100k      # time queries only

Writes N papers with bench/synth.py, each given a year and a month spread over 2018-2025
(synth.py gives 2024 or 2025 only: a trend needs more periods; paper i gets year 2018 + i % 8
and month 1 + i // 8 % 12, deterministic), builds a project from them (timed), then runs each
`kg trends` query five times in a fresh process and prints the best and the median wall time
and the best CPU time (user + system: what the load of a shared machine does not inflate).
Start-up and imports count. Python's bytecode is cached (in a temporary PYTHONPYCACHEPREFIX,
after one run to fill it) as in an installed kg, even where PYTHONDONTWRITEBYTECODE is set:
compiling kg's modules again would add 0.1-0.15 s to every run. Figures, not assertions; the
target is < 0.5 s at 100,000 papers. The synthetic file is derived from unlicensed data: it is
written to a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUERIES = (
    ("two techniques by year", ("trends", "quantization", "caching")),
    ("two techniques by month", ("trends", "quantization", "caching", "--by", "month")),
    ("one technique by venue", ("trends", "reinforcement learning", "--by", "venue")),
    ("two by category", ("trends", "quantization", "caching", "--by", "category")),
    ("--rising --top 20", ("trends", "--rising", "--top", "20")),
    ("--rising, csv", ("trends", "--rising", "--format", "csv")),
)


def kg(*args: object, pycache: Path | None = None) -> tuple[float, float, str]:
    """Run ``kg ARGS`` in a new process: wall and CPU seconds, and stdout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kg", *map(str, args)], env=env,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"kg {' '.join(map(str, args))} failed:\n{done.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return elapsed, cpu, done.stdout


def write_papers(n: int, corpora: Path, path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from synth import synthesize

    with path.open("w", encoding="utf-8") as out:
        for i, paper in enumerate(synthesize(n, corpora)):
            year, month = 2018 + i % 8, 1 + i // 8 % 12
            paper.update(year=year, date=f"{year}-{month:02d}")
            out.write(json.dumps(paper, ensure_ascii=False) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int, nargs="?", default=100_000)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--project", type=Path, default=None,
                        help="a project built before (by --keep): time the queries only")
    parser.add_argument("--keep", type=Path, default=None,
                        help="build the project here and keep it")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kg-bench-trends-"))
    try:
        out = args.project or args.keep or work / "project"
        if args.project is None:
            papers = work / "synth.jsonl"
            write_papers(args.n, args.corpora, papers)
            elapsed, _, _ = kg("build", papers, "-o", out, "--workers", args.workers,
                               "--formats", "jsonl")
            print(f"build of {args.n:,} papers: {elapsed:.0f} s")
        pycache = work / "pycache"
        kg("trends", "--help", pycache=pycache)  # (fills the bytecode cache)
        print(f"{os.getloadavg()[0]:.1f} load average; wall best / median of 5, CPU best")
        for label, query in QUERIES:
            runs = sorted(kg(*query, "--graph", out, pycache=pycache) for _ in range(5))
            said = runs[0][2]
            print(f"{label:<26} wall {runs[0][0]:5.2f} / {runs[2][0]:5.2f} s, CPU "
                  f"{min(r[1] for r in runs):5.2f} s (target < 0.5 s)")
        print(said.splitlines()[0] if said else "")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
