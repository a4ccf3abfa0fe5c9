"""Benchmark: the corpus-level plan in one process (``kg.resolve.plan``) and on a Dask cluster
(``kg.distributed.plan_on_cluster``, a LocalCluster of worker processes on 127.0.0.1).

    .venv/bin/python bench/dask_plan.py [--synth 20000] [--against REV] [--workers 2]
                                        [--corpora ../shared/corpora]

Extracts the 4,870 ICLR+ICML 2024 abstracts (and, with ``--synth N``, N synthetic papers made
by bench/synth.py in a temporary folder) on the cluster, makes their Preps in paper-id order
as a project does, then prints the time of ``plan`` (fastest and median of 5) and of
``plan_on_cluster`` (a first and a second call) and whether both plans are equal.
``--against REV`` also times ``plan`` of kg/resolve.py at git revision REV on the same Preps.
Figures, not assertions.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("ICLR_cc_2024_Conference.tsv", "ICML_cc_2024_Conference.tsv")


def preps_of(inputs: list[Path], scheduler: str) -> list:
    from kg.distributed import extract_each
    from kg.pipeline import read_papers
    from kg.resolve import prepare

    papers = sorted(read_papers(inputs)[0], key=lambda p: p.id)
    return [prepare(e) for e in extract_each(papers, scheduler=scheduler)
            if not isinstance(e, str)]


def plan_at(revision: str):
    """``plan`` of kg/resolve.py at git ``revision``, loaded as a module of its own."""
    source = subprocess.run(["git", "show", f"{revision}:kg/resolve.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader(f"resolve_at_{revision}", loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    exec(compile(source, f"{revision}:kg/resolve.py", "exec"), module.__dict__)
    return module.plan


def seconds(fn, *args, **kwargs) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - t0, out


def bench(name: str, preps: list, client, against) -> None:
    from kg.distributed import plan_on_cluster
    from kg.resolve import plan
    from kg.vocab import load_vocabulary

    vocab = load_vocabulary()
    rivals = {"plan": plan, **({f"plan at {against[0]}": against[1]} if against else {})}
    times: dict[str, list[float]] = {label: [] for label in rivals}
    for _ in range(5):  # interleaved, so a busy moment of the machine hits both alike
        for label, fn in rivals.items():
            times[label].append(seconds(fn, preps, vocab)[0])
    want = plan(preps, vocab)
    print(f"{name}: {len(preps):,} papers, {len(want.entities):,} entities, "
          f"{sum(map(len, want.entity_ids)):,} candidates")
    for label, found in times.items():
        print(f"  {label + ':':24} {min(found):6.3f} s fastest, "
              f"{statistics.median(found):6.3f} s median of 5")
    for call in ("first", "second"):
        took, got = seconds(plan_on_cluster, preps, client)
        same = got == want and list(got.entities.items()) == list(want.entities.items())
        print(f"  plan_on_cluster ({call}): {took:6.3f} s; equal to plan: {same}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--synth", type=int, default=0, metavar="N")
    parser.add_argument("--against", metavar="REV")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        sys.exit("needs Dask: pip install -e '.[dask]'")
    inputs = [args.corpora / "openreview-2024" / name for name in FILES]
    if not all(p.is_file() for p in inputs):
        sys.exit("missing corpus files; pass --corpora DIR")
    against = (args.against, plan_at(args.against)) if args.against else None
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=None) as cluster, \
            Client(cluster) as client, tempfile.TemporaryDirectory() as work:
        address = cluster.scheduler_address
        print(f"LocalCluster of {args.workers} worker processes at {address}")
        bench("ICLR+ICML 2024", preps_of(inputs, address), client, against)
        if args.synth:
            synth = Path(work) / f"synth-{args.synth}.jsonl"
            subprocess.run([sys.executable, str(ROOT / "bench" / "synth.py"), str(args.synth),
                            "-o", str(synth), "--corpora", str(args.corpora)], check=True,
                           stdout=subprocess.DEVNULL)
            bench(f"synthetic {args.synth:,}", preps_of([synth], address), client, against)
    return 0


if __name__ == "__main__":
    sys.exit(main())
