"""Benchmark: the SPARQL endpoint on the ICLR+ICML 2024 project (issue 25: every saved query,
bound and unbound, p50 <= 200 ms; 50 concurrent clients without errors).

    kg build ICLR_cc_2024_Conference.tsv ICML_cc_2024_Conference.tsv -o /tmp/iclr-icml
    .venv/bin/python bench/server.py --graph /tmp/iclr-icml [--repeat 30] [--clients 50]

--graph is a project directory, so the endpoint reads the project's on-disk store: the path
`kg serve DIR` takes. Starts the server in-process on an ephemeral loopback port (its real
worker processes and HTTP), then
1. runs every saved query (sparql/*.rq) --repeat times, one at a time, unbound and bound (a
   ?paper_id, a ?technique, a page ?offset/?limit, as the query takes them, through the
   endpoint's $name= parameters), and prints p50/p95; each request differs by a comment, so
   the answer cache never answers it (--queries-only stops after this part);
2. runs --clients threads at once, each sending --per-client mixed saved queries, and prints
   errors, throughput and latency percentiles (the clients share one address, so the server's
   per-client bound is set to --clients);
3. fairness: --runaway threads loop a query that never finishes in time while one light client
   sends saved queries (each made distinct, so none comes from the cache) for --fair-seconds,
   and prints the light client's p50/max and status counts. All traffic goes to 127.0.0.1 and
   is bounded.
Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kg.server import ServerConfig, saved_queries, start_server  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def post(url: str, query: str, binds: dict[str, str] | None = None) -> tuple[int, float, int]:
    """(status, seconds, rows) for one POSTed query ($name=value parameters bind variables)."""
    data = urllib.parse.urlencode({"query": query, **{f"${k}": v for k, v in (binds or {}).items()}}
                                  ).encode()
    request = urllib.request.Request(url, data=data, headers={
        "Accept": "application/sparql-results+json"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            body = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        exc.read()
        return exc.code, time.perf_counter() - t0, 0
    elapsed = time.perf_counter() - t0
    rows = len(json.loads(body).get("results", {}).get("bindings", []))
    return status, elapsed, rows


def busiest_paper(url: str) -> str:
    query = ("PREFIX kg: <https://w3id.org/mlkg/ontology#> "
             "PREFIX dcterms: <http://purl.org/dc/terms/> "
             "SELECT ?id (COUNT(?e) AS ?n) WHERE { ?p a kg:Paper ; dcterms:identifier ?id ; "
             "kg:mentions ?e } GROUP BY ?id ORDER BY DESC(?n) ?id LIMIT 1")
    data = urllib.parse.urlencode({"query": query}).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=60) as r:
        return json.loads(r.read())["results"]["bindings"][0]["id"]["value"]


def variants(text: str, paper: str) -> list[tuple[str, dict[str, str]]]:
    """The ways a saved query is run: unbound, and bound by each parameter it documents."""
    out: list[tuple[str, dict[str, str]]] = [("unbound", {})]
    if "Parameter ?paper_id" in text:
        out.append(("paper_id", {"paper_id": paper}))
    if "Parameter ?technique" in text:
        out.append(("technique=large language model", {"technique": "large language model"}))
    if "?limit" in text:
        out.append(("page 5 (offset 200, limit 50)", {"offset": "200", "limit": "50"}))
    elif "?offset" in text:
        out.append(("offset 200", {"offset": "200"}))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", type=Path, required=True, help="a project directory")
    parser.add_argument("--queries-only", action="store_true", help="part 1 only")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--per-client", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--runaway", type=int, default=2, help="runaway-query loops in part 3")
    parser.add_argument("--fair-seconds", type=float, default=15.0)
    parser.add_argument("--cache-entries", type=int, default=256,
                        help="the server's answer cache (0: every request runs the query)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run only this saved query (repeatable)")
    parser.add_argument("--queries", type=Path, metavar="DIR",
                        help="read the saved queries from DIR/*.rq (e.g. an older version's, "
                             "to compare on one server) instead of sparql/")
    args = parser.parse_args()
    print(f"answer cache: {args.cache_entries} entries"
          + (" (off: every request is evaluated)" if not args.cache_entries else
             " (repeats of a query after the first are answered from it)"))

    t0 = time.perf_counter()
    server = start_server(ServerConfig(graph=args.graph, port=0, workers=args.workers,
                                       timeout=args.timeout, cache_entries=args.cache_entries,
                                       max_per_client=args.clients + args.runaway + 1))
    print(f"server up in {time.perf_counter() - t0:.1f} s: {server.httpd.pool.triples:,} "
          f"triples, {args.workers} workers, {server.url}")
    try:
        paper = busiest_paper(server.url)
        queries = {}
        saved = ({p.stem: p.read_text(encoding="utf-8") for p in sorted(args.queries.glob("*.rq"))}
                 if args.queries else saved_queries())
        for name, text in saved.items():
            if args.only and name not in args.only:
                continue
            for label, binds in variants(text, paper):
                queries[f"{name} {label}"] = (text, binds)

        print(f"\n1) each saved query x{args.repeat}, sequential, never from the answer cache "
              f"(paper_id = {paper})")
        print(f"   {'query':<46} {'rows':>6} {'p50 ms':>8} {'p95 ms':>8}")
        p50s = []
        for name, (text, binds) in queries.items():
            runs = [post(server.url, f"{text}\n# run {i}", binds) for i in range(args.repeat)]
            bad = [s for s, _, _ in runs if s != 200]
            times = [t * 1000 for _, t, _ in runs]
            p50s.append(statistics.median(times))
            print(f"   {name:<46} {runs[0][2]:>6} {statistics.median(times):>8.1f} "
                  f"{percentile(times, 0.95):>8.1f}" + (f"  ERRORS {len(bad)}" if bad else ""))
        print(f"   median of the per-query p50s: {statistics.median(p50s):.1f} ms; "
              f"max p50: {max(p50s):.1f} ms (target <= 200 ms)")
        if args.queries_only:
            return 0

        print(f"\n2) {args.clients} concurrent clients x {args.per_client} requests")
        names = list(queries)
        lock = threading.Lock()
        results: list[tuple[int, float]] = []

        def client(i: int) -> None:
            for j in range(args.per_client):
                text, binds = queries[names[(i + j) % len(names)]]
                status, elapsed, _ = post(server.url, text, binds)
                with lock:
                    results.append((status, elapsed))

        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(client, range(args.clients)))
        wall = time.perf_counter() - t0
        errors = sum(1 for s, _ in results if s != 200)
        times = [t * 1000 for _, t in results]
        print(f"   {len(results)} requests in {wall:.1f} s ({len(results) / wall:.0f} req/s), "
              f"errors: {errors}; latency p50 {statistics.median(times):.0f} ms, "
              f"p95 {percentile(times, 0.95):.0f} ms, max {max(times):.0f} ms")

        print(f"\n3) fairness: {args.runaway} loops of a runaway query, one light client, "
              f"{args.fair_seconds:g} s")
        runaway = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
        deadline = time.monotonic() + args.fair_seconds
        heavy: list[int] = []

        def loop() -> None:
            while time.monotonic() < deadline:
                status, _, _ = post(server.url, runaway)
                with lock:
                    heavy.append(status)

        loops = [threading.Thread(target=loop) for _ in range(args.runaway)]
        for thread in loops:
            thread.start()
        light: list[tuple[int, float]] = []
        n = 0
        while time.monotonic() < deadline:
            text, binds = queries[names[n % len(names)]]
            status, elapsed, _ = post(server.url, f"{text}\n# light {n}", binds)
            light.append((status, elapsed))
            n += 1
            time.sleep(0.1)
        for thread in loops:
            thread.join()
        times = [t * 1000 for _, t in light]
        statuses = Counter(s for s, _ in light)
        print(f"   light client: {len(light)} queries, p50 {statistics.median(times):.0f} ms, "
              f"max {max(times):.0f} ms, statuses {dict(sorted(statuses.items()))}; "
              f"runaway answers {dict(sorted(Counter(heavy).items()))}")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
