"""Benchmark: every saved Cypher query on a loaded project, unbound and bound (issue 25).

    scripts/neo4j-test-server start && . .neo4j/env
    kg build ICLR_cc_2024_Conference.tsv ICML_cc_2024_Conference.tsv -o bench/out/iclr-icml
    .venv/bin/python bench/neo4j_queries.py bench/out/iclr-icml [--cypher cypher] [--no-load]

Loads the project with `kg neo4j load`'s API (a full load the first time: the database at
NEO4J_URI must be a local test server), then runs each saved query once to warm the caches
and --runs more times, and prints the median milliseconds and the rows returned. "unbound"
passes only what a query requires; "bound" names one technique, paper or method as well.
Parameters a query does not declare are left out, so an older cypher/ folder (with the
older kg on PYTHONPATH) gives the figures before a change. Target: every query ≤ 200 ms.
Figures, not assertions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from kg.neo4j import Connection, bind_params, connect, load_project, query_params, run_query
from kg.project import open_project

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 200.0

# Sample values, found in the loaded graph (a popular technique, a paper using it, ...).
SAMPLES = """\
MATCH (t:Technique {name: 'quantization'})<-[:USES_TECHNIQUE]-(p:Paper)
WITH t, p ORDER BY p.id
WITH t, collect(p.id) AS papers
OPTIONAL MATCH (:Paper)-[:PROPOSES]->(m:Entity)<-[u]-(:Paper)
WHERE type(u) <> 'PROPOSES'
WITH t, papers, m, count(u) AS users ORDER BY users DESC, m.id LIMIT 1
RETURN t.name AS technique, papers[0] AS paper, papers[1] AS other, m.name AS method"""


def cases(text: str, sample: dict) -> dict[str, dict[str, str]]:
    """The unbound and bound parameters of a query (declared ones only)."""
    declared = query_params(text)
    values = {"technique": sample["technique"], "paper": sample["paper"], "a": sample["paper"],
              "b": sample["other"], "method": sample["method"]}
    required = {k: values[k] for k, p in declared.items() if p.required and k in values}
    bound = {**required, **{k: v for k, v in values.items() if k in declared}}
    out = {"unbound": required}
    if bound != required:
        out["bound"] = bound
    return out


def time_query(session, text: str, params: dict, runs: int) -> tuple[float, int]:
    rows = run_query(session, text, params)[1]  # warm-up (plan cache, page cache)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        rows = run_query(session, text, params)[1]
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), len(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("project", type=Path, help="a `kg build` project directory")
    parser.add_argument("--cypher", type=Path, default=ROOT / "cypher",
                        help="the folder of saved queries")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2, help="for the derived facts")
    parser.add_argument("--no-load", action="store_true", help="query what is loaded")
    args = parser.parse_args()
    conn = Connection.from_env()
    if urlparse(conn.uri).hostname not in ("127.0.0.1", "localhost", "::1"):
        print(f"refusing to load into {conn.uri}: a local test server only", file=sys.stderr)
        return 2
    if not args.no_load:
        try:
            report = load_project(open_project(args.project), conn, workers=args.workers)
        except TypeError:  # a kg from before the derived facts (no workers)
            report = load_project(open_project(args.project), conn)
        print(report.summary().splitlines()[0][:200], f"({report.load.seconds:.1f} s)")
    driver = connect(conn)
    slow = 0
    with driver.session(database=conn.database) as session:
        sample = session.run(SAMPLES).single().data()
        print("samples:", sample)
        for path in sorted(args.cypher.glob("*.cypher")):
            text = path.read_text(encoding="utf-8")
            for label, given in cases(text, sample).items():
                ms, n = time_query(session, text, bind_params(text, given, path.name),
                                   args.runs)
                slow += ms > TARGET_MS
                print(f"{path.stem:32} {label:8} {ms:9.1f} ms  {n:5} rows")
    driver.close()
    print(f"target (every query ≤ {TARGET_MS:.0f} ms):", "met" if not slow else
          f"NOT met by {slow}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
