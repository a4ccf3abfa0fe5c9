"""Benchmark: `kg build` of a filtered dump — 1,000,000 arXiv-format records → ~100,000 papers.

    .venv/bin/python bench/dump_build.py                      # 1M records → ~100k papers
    .venv/bin/python bench/dump_build.py --records 200000     # a smaller run first (→ ~20k)
    .venv/bin/python bench/dump_build.py --records 200000 --kg /work/main   # another checkout

Writes (or reuses, when its line count is right) ``$TMPDIR/kg-bench-arxiv-N.json`` with
``bench/synth.py --format arxiv`` (derived from the unlicensed OpenReview files: never
committed), then runs, in a fresh process, ``kg build FILE --where category=cs.LG --since DATE
-o DIR --workers 2`` into a new DIR, with DATE chosen so about a tenth of the records is kept
(synth.py gives a record cs.LG with probability 0.2298 and dates 37 minutes apart). It prints
wall time, CPU time (the build and its worker processes), the peak RSS of the whole process
tree (the sum of PSS over the build and its workers, sampled every 0.2 s) over the whole build and
while its extraction pool is up (the part streaming changes), the
largest single process (``ru_maxrss``, exact), the build's summary (papers, skipped records,
what the filters dropped) and the load average, since the machine may be shared. ``--kg``
runs another checkout's kg on the same file (before/after). Figures, not assertions. Targets
(issue 26): < 15 min, < 3 GB.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
P_CS_LG = 1 - (0.875 + 0.875 ** 2 + 0.875 ** 3) / 3  # synth.py: 1-3 of 8 categories
EPOCH = datetime(2023, 1, 1, 9, 0, tzinfo=UTC)  # synth.py's first record; 37 minutes apart


def synth_file(n: int, corpora: Path) -> Path:
    """The arXiv-format file of ``n`` records (the same name bench/ingest.py uses)."""
    path = Path(tempfile.gettempdir()) / f"kg-bench-arxiv-{n}.json"
    if path.is_file() and _lines(path) == n:
        return path
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    subprocess.run([sys.executable, str(ROOT / "bench" / "synth.py"), str(n), "-o", str(tmp),
                    "--format", "arxiv", "--corpora", str(corpora)], check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.replace(tmp, path)
    return path


def _lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b""))


def since_for(n: int, keep: float) -> str:
    """The --since date that keeps about ``keep`` of ``n`` records together with cs.LG."""
    first = round(n * (1 - min(1.0, keep / P_CS_LG)))
    return f"{EPOCH + timedelta(minutes=37 * first):%Y-%m-%d}"


def tree_rss(pid: int) -> int:
    """Bytes resident in ``pid`` and every descendant (from /proc): their PSS, so a page a
    forked worker shares with its parent counts once, not once per process."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                total += next(int(line.split()[1]) * 1024 for line in fh
                              if line.startswith("Pss:"))
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError, StopIteration):
            continue  # (a worker that just ended)
    return total


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _children(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return fh.read().split()
    except OSError:
        return []


def measure(cmd: list[str], env: dict, workers: int) -> dict:
    """Run ``cmd``; wall and CPU seconds, peak RSS of its tree, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # (In the checkout's directory: `python -m` puts the working directory first on sys.path,
    # before PYTHONPATH, so run from another checkout it would measure that one's kg.)
    proc = subprocess.Popen(cmd, env=env, cwd=env["PYTHONPATH"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peak, extracting, main = [0], [0], [0]

    def sample() -> None:
        while proc.poll() is None:
            rss, children = tree_rss(proc.pid), _children(proc.pid)
            peak[0] = max(peak[0], rss)
            if len(children) >= workers:  # the extraction pool is up
                extracting[0] = max(extracting[0], rss)
                main[0] = max(main[0], _rss(proc.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"code": proc.returncode, "out": out, "err": err, "wall": wall,
            "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "tree_mb": peak[0] / 2**20, "extracting_mb": extracting[0] / 2**20,
            "main_mb": main[0] / 2**20,
            "max_process_mb": after.ru_maxrss / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keep", type=float, default=0.1, help="share of records to keep")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--kg", type=Path, default=ROOT,
                        help="the checkout whose kg is measured (default: this one)")
    parser.add_argument("--out", type=Path, default=None,
                        help="the project directory (default: a new one in the temp dir)")
    args = parser.parse_args()
    path = synth_file(args.records, args.corpora)
    since = since_for(args.records, args.keep)
    out = args.out or Path(tempfile.gettempdir()) / f"kg-bench-dump-build-{args.records}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "kg", "build", str(path), "--where", "category=cs.LG",
           "--since", since, "-o", str(out), "--workers", str(args.workers)]
    load = os.getloadavg()
    got = measure(cmd, {**os.environ, "PYTHONPATH": str(args.kg.resolve())}, args.workers)
    print(f"kg build of {args.records:,} records ({path.stat().st_size / 2**20:,.0f} MB), "
          f"--where category=cs.LG --since {since} --workers {args.workers}, kg from {args.kg}")
    print(f"  exit {got['code']}; wall {got['wall']:,.1f} s; CPU {got['cpu']:,.1f} s "
          f"(build + workers); peak RSS {got['tree_mb']:,.0f} MB (process tree PSS, sampled), "
          f"{got['max_process_mb']:,.0f} MB (largest process); while extracting "
          f"(while the worker pool is up) {got['extracting_mb']:,.0f} MB, "
          f"of which the build's own process {got['main_mb']:,.0f} MB (RSS)")
    print(f"  load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} before, "
          + "{:.2f} {:.2f} {:.2f} after".format(*os.getloadavg()))
    for line in got["out"].splitlines():
        if line.startswith(("papers:", "changes:", "skipped records:")):
            print(f"  {line}")
    for line in got["err"].splitlines():
        if "filtered out" in line or got["code"]:
            print(f"  {line}")
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)
    return got["code"]


if __name__ == "__main__":
    sys.exit(main())
