"""Benchmark: a project directory on the 4,870 ICLR+ICML 2024 abstracts (issues 24 and 25's
targets: add 50 and remove 50 each at most 15% of a full build; no-op rebuild under 1 s).

    .venv/bin/python bench/project.py [--workers 2] [--corpora ../shared/corpora]

Runs `kg` as a user would (subprocesses: start-up and imports count, kg byte-compiled as an
installed package is) and prints one run each of:
the full build (wall time, peak RSS), a no-op rebuild, removing 50 papers, a rebuild that brings
them back (their extractions are cached), `kg add` of 50 papers never seen (CoRL 2024 records,
written to a temporary file: extraction counts), and cold queries (a fresh `kg shared`,
`kg related`, `kg techniques`, saved `kg sparql`). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
FILES = ("ICLR_cc_2024_Conference.tsv", "ICML_cc_2024_Conference.tsv")
CORL = "CoRL_2024_Conference.tsv"


class Run(NamedTuple):
    wall: float  # seconds
    cpu: float  # user + system seconds of the process and the children it waited for
    peak: float  # MB
    out: str


def kg(*args: object) -> Run:
    """One `kg` process: its wall and CPU seconds, peak RSS and stdout. CPU seconds say what
    a step costs when other work shares the machine (wall time then grows with the load).

    The previous step's files are written back to disk first (not timed): its background
    writeback would otherwise queue before this step's own fsyncs (0.1-0.2 s), a cost a user
    who adds papers minutes after a build never sees. Each step's own fsyncs are timed."""
    os.sync()
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", sys.executable, "-m", "kg",
                           *map(str, args)], capture_output=True, text=True, cwd=ROOT)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"kg {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr}")
    peak, user, system = proc.stderr.strip().splitlines()[-1].split()
    return Run(elapsed, float(user) + float(system), int(peak) / 1024, proc.stdout)


def share(label: str, run: Run, full: Run, target: str = "") -> None:
    print(f"{label} {run.wall:6.2f} s = {run.wall / full.wall:.0%} of the full build "
          f"({run.cpu:.2f} s CPU = {run.cpu / full.cpu:.0%}) {target}".rstrip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    inputs = [args.corpora / "openreview-2024" / name for name in FILES]
    if not all(p.is_file() for p in inputs):
        sys.exit("missing corpus files; pass --corpora DIR")
    # kg byte-compiled first (untimed), as a package installed from a wheel is: where
    # PYTHONDONTWRITEBYTECODE is set (this machine sets it), every `kg` process would compile
    # kg's modules again, 0.08 s of each small command.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kg")], check=True)
    work = Path(tempfile.mkdtemp(prefix="kg-bench-project-"))
    out = work / "ml24"
    try:
        full = kg("build", *inputs, "-o", out, "--workers", args.workers)
        print(f"full build:        {full.wall:6.1f} s ({full.cpu:.1f} s CPU), "
              f"peak RSS {full.peak:.0f} MB")
        noop = kg("build", *inputs, "-o", out, "--workers", args.workers)
        assert "up to date" in noop.out, noop.out
        print(f"no-op rebuild:     {noop.wall:6.2f} s (target < 1 s)")
        current = (out / ".kg" / "CURRENT").read_text().strip()
        manifest = json.loads((out / ".kg" / current / "manifest.json").read_text())
        ids = sorted(manifest["papers"])[::97][:50]
        share("remove 50 papers: ", kg("remove", out, *ids), full, "(target ≤ 15%)")
        share("50 back (cached): ", kg("build", *inputs, "-o", out, "--workers", args.workers),
              full)
        corl = (args.corpora / "openreview-2024" / CORL).read_text(encoding="utf-8")
        new = work / "corl50.tsv"  # 50 records never extracted, in the corpus's own layout
        new.write_text("".join(corl.splitlines(keepends=True)[::5][:50]), encoding="utf-8")
        added = kg("add", out, new, "--workers", args.workers)
        assert "50 added" in added.out, added.out
        share("add 50 new papers:", added, full, "(target ≤ 15%)")
        some = ids[0]
        for label, query, target in (
                ("kg shared quantization", ("shared", "quantization", "--graph", out), 0.3),
                ("kg related PAPER", ("related", some, "--graph", out), 0.5),
                ("kg techniques", ("techniques", "--graph", out), 0.5),
                ("kg sparql (saved)", ("sparql", "techniques-by-paper-count", "--graph", out,
                                       "--max-results", "20"), 0.5)):
            run = kg(*query)
            print(f"{label:<24} {run.wall:5.2f} s, {run.peak:4.0f} MB (target < {target} s)")
        size = sum(p.stat().st_size for p in (out / ".kg").rglob("*") if p.is_file())
        print(f"DIR/.kg on disk: {size / 1e6:.0f} MB ({os.cpu_count()} cores)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
