"""Benchmark: reading + filtering an arXiv snapshot, records per second and peak memory.

    .venv/bin/python bench/ingest.py [--sizes 100000 1000000] [--corpora ../shared/corpora]
    .venv/bin/python bench/ingest.py --kg /work/main      # the same, with another checkout's kg

Writes arXiv-format files with bench/synth.py (cached in the temp dir; derived from the
unlicensed OpenReview data, never committed), then, in a fresh process per run, streams each
through ``kg.ingest.stream_papers`` with ``--where category=cs.LG --since 2024`` (the papers are
counted, not kept) and prints records/s (wall, and per CPU-second: the machine may be shared)
and the process's peak RSS. A reader that streams has
the same peak RSS for 100k and 1M records. ``--kg`` points at another checkout (no streaming
API or filters there: its ``read_inputs`` reads the file as generic JSON Lines, unfiltered).
Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STREAM = """
import json, resource, sys, time
from kg.ingest import IngestOptions, PaperFilter, Tally, stream_papers
opts = IngestOptions(where=PaperFilter.parse(("category=cs.LG",), since="2024"))
tally = Tally()
start, cpu = time.perf_counter(), time.process_time()
kept = sum(1 for _ in stream_papers([sys.argv[1]], opts, tally))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"kept": kept, "filtered": sum(tally.filtered.values()),
                  "skipped": len(tally.skipped), "seconds": seconds, "cpu": cpu,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# Another checkout's kg (before this change): read_inputs, all papers kept in memory.
COLLECT = """
import json, resource, sys, time
from kg.ingest import IngestOptions, read_inputs
start, cpu = time.perf_counter(), time.process_time()
result = read_inputs([sys.argv[1]], IngestOptions(format="jsonl"))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"kept": len(result.papers), "filtered": 0, "skipped": len(result.skipped),
                  "seconds": seconds, "cpu": cpu,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def synth_file(n: int, corpora: Path) -> Path:
    path = Path(tempfile.gettempdir()) / f"kg-bench-arxiv-{n}.json"
    if not path.is_file():
        subprocess.run([sys.executable, str(ROOT / "bench" / "synth.py"), str(n), "-o",
                        str(path), "--format", "arxiv", "--corpora", str(corpora)], check=True,
                       env={"PYTHONPATH": str(ROOT)})
    return path


def run(code: str, path: Path, kg: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(kg)})
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--kg", type=Path, default=ROOT,
                        help="the checkout whose kg is measured (default: this one)")
    args = parser.parse_args()
    code = STREAM if args.kg.resolve() == ROOT else COLLECT
    for n in args.sizes:
        path = synth_file(n, args.corpora)
        got = run(code, path, args.kg)
        print(f"{n:>9,} records ({path.stat().st_size / 2**20:,.0f} MB): "
              f"{n / got['seconds']:,.0f} records/s read+filtered (wall), "
              f"{n / got['cpu']:,.0f} per CPU-second; {got['kept']:,} kept, "
              f"{got['filtered']:,} filtered out, "
              f"{got['skipped']:,} skipped, peak RSS {got['peak_mb']:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
