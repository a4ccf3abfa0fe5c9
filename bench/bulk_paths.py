"""Benchmark the bulk paths out of a kg project (issue #12): what docs/scaling.md reports.

    .venv/bin/python bench/synth.py 20000 -o /tmp/synth-20k.jsonl
    .venv/bin/kg build /tmp/synth-20k.jsonl -o /tmp/p20k --formats jsonl,nt
    .venv/bin/python bench/bulk_paths.py /tmp/p20k --work /tmp/bulk-work

Measures, on the project's graph.nt and extraction.jsonl:

(a) pyoxigraph: the project's store dumped to N-Triples (``Store.dump``, N-Triples without
    ``--formats nt``); its bulk loader: graph.nt into a fresh on-disk ``Store(path)``, as one
    file and as line shards loaded one after the other (N-Triples splits at any line); then
    cold SPARQL queries (a fresh process opening the store read-only; the OS file cache is
    not dropped — the machine is shared) with two saved queries;
(b) ``kg export DIR --format neo4j-admin`` (the sharded project path) against the single-file
    export of the same extraction.jsonl (the whole corpus in memory), then the real
    ``neo4j-admin database import full`` of the shards (Neo4j 5.26 from Maven Central, the
    jars scripts/neo4j-test-server fetches) into WORK/neo4j-home;
(c) Apache Jena TDB2's ``tdb2.tdbloader`` on the same graph.nt and ``tdb2.tdbquery`` with the
    same queries (jena-cmds 5.6.0 resolved from Maven Central with mvn; --no-jena skips it);
    Virtuoso Open Source 7's bulk loader and its SPARQL endpoint, when Debian's
    virtuoso-opensource-7-bin is installed (--no-virtuoso skips it); every engine's answers
    are compared with pyoxigraph's, row by row.

Each step runs once as a child process: seconds (wall), peak RSS (``wait4``: the process and
the children it waited for) and disk (allocated blocks). Figures, not assertions; they also
go to WORK/bulk-paths.json. WORK is emptied first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARNESS_CLASSPATH = ROOT / "scripts" / "neo4j-harness" / "target" / "classpath.txt"
QUERIES = ("techniques-by-paper-count.rq", "concepts-by-paper-count.rq")
JENA_VERSION = "5.6.0"  # the newest that runs on Java 17
JENA_POM = f"""\
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kg.bench</groupId><artifactId>jena-tools</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.jena</groupId><artifactId>jena-cmds</artifactId>
      <version>{JENA_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId>
      <version>2.0.16</version></dependency>
  </dependencies>
</project>
"""

OX_LOAD = """\
import json, sys, time
import pyoxigraph as ox
store = ox.Store(sys.argv[1])
t0 = time.perf_counter()
for path in sys.argv[2:]:
    store.bulk_load(path=path, format=ox.RdfFormat.N_TRIPLES)
store.flush()
print(json.dumps({"load_s": time.perf_counter() - t0}))
"""

OX_DUMP = """\
import json, sys, time
import pyoxigraph as ox
t0 = time.perf_counter()
store = ox.Store.read_only(sys.argv[1])
store.dump(output=sys.argv[2], format=ox.RdfFormat.N_TRIPLES, from_graph=ox.DefaultGraph())
print(json.dumps({"dump_s": time.perf_counter() - t0}))
"""

OX_QUERY = """\
import json, sys, time
import pyoxigraph as ox
t0 = time.perf_counter()
store = ox.Store.read_only(sys.argv[1])
opened = time.perf_counter() - t0
out = {"open_s": opened, "queries": {}}
for path in sys.argv[3:]:
    name = path.rsplit("/", 1)[-1]
    t0 = time.perf_counter()
    answer = store.query(open(path, encoding="utf-8").read())
    data = answer.serialize(format=ox.QueryResultsFormat.JSON)
    out["queries"][name] = {"s": time.perf_counter() - t0}
    open(f"{sys.argv[2]}/pyoxigraph-{name}.json", "wb").write(data)
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_rss_mb: float
    output: str


def measure(cmd: list[str], log: Path, *, env: dict[str, str] | None = None,
            cwd: Path | None = None, stdout: Path | None = None) -> Run:
    """Run ``cmd`` once; wall seconds and the peak RSS of it and its waited-for children.
    Its output goes to ``log`` (standard output to ``stdout`` when given)."""
    with log.open("w", encoding="utf-8") as out, \
            (stdout or log).open("a", encoding="utf-8") as results:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=results if stdout else out,
                                stderr=subprocess.STDOUT if stdout is None else out,
                                env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    text = log.read_text(encoding="utf-8", errors="replace")
    if proc.returncode:
        sys.exit(f"{' '.join(cmd[:3])} … failed (exit {proc.returncode}); see {log}:\n"
                 + text[-2000:])
    return Run(seconds, usage.ru_maxrss / 1024, text)


def disk_mb(path: Path) -> float:
    """Allocated size of a file or directory tree, in MB."""
    if path.is_file():
        return path.stat().st_blocks * 512 / 2**20
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file()) / 2**20


def last_json(text: str) -> dict:
    return json.loads([line for line in text.splitlines() if line.startswith("{")][-1])


def answer_rows(path: Path) -> list[tuple[str, ...]]:
    """The rows of a SPARQL JSON result, each as its values in variable order (what the
    engines must agree on; a number's lexical form is compared as written)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    names = data["head"]["vars"]
    return [tuple(row.get(n, {}).get("value", "") for n in names)
            for row in data["results"]["bindings"]]


def split_lines(source: Path, out_dir: Path, parts: int) -> list[Path]:
    """``source`` cut at line boundaries into ``parts`` files of about equal size."""
    out_dir.mkdir(parents=True)
    size = source.stat().st_size
    paths: list[Path] = []
    with source.open("rb") as fh:
        for n in range(parts):
            path = out_dir / f"graph-{n + 1:03d}.nt"
            with path.open("wb") as out:
                limit = size * (n + 1) // parts
                while fh.tell() < limit or n == parts - 1:
                    line = fh.readline()
                    if not line:
                        break
                    out.write(line)
            paths.append(path)
    return paths


def replicate(nt: Path, out: Path, copies: int) -> Path:
    """``nt`` plus ``copies - 1`` copies whose papers, entities, sentences and assertions are
    renamed (vocabulary and ontology shared): ``copies`` times the triples, for a load and
    queries at a scale the machine cannot build in a session. Entities grow ``copies``-fold
    too, where a real corpus's grow more slowly."""
    instance = re.compile(rb"(<https://w3id\.org/mlkg/(?:assertion|paper|sentence|entity)/)")
    with nt.open("rb") as src, out.open("wb") as dst:
        for copy in range(copies):
            src.seek(0)
            if copy == 0:
                shutil.copyfileobj(src, dst, 2**24)
                continue
            tag = rb"\1c%d-" % copy
            for line in src:
                dst.write(instance.sub(tag, line))
    return out


def pyoxigraph_paths(project: Path, nt: Path, work: Path, triples: int, shards: int,
                     dump: bool = True) -> dict:
    py = sys.executable
    figures: dict = {}
    if dump:
        figures["dump"] = store_dump(project, work, triples)
    loads = [("whole", [nt])]
    if shards > 1:
        loads.append(("shards", split_lines(nt, work / "nt-shards", shards)))
    for name, files in loads:
        store = work / f"oxigraph-{name}"
        run = measure([py, "-c", OX_LOAD, str(store), *map(str, files)],
                      work / f"oxigraph-{name}.log")
        load_s = last_json(run.output)["load_s"]
        figures[name] = {"files": len(files), "seconds": run.seconds, "load_s": load_s,
                         "triples_per_s": triples / load_s, "peak_rss_mb": run.peak_rss_mb,
                         "disk_mb": disk_mb(store)}
        print(f"  pyoxigraph bulk_load ({name}: {len(files)} file(s)): {run.seconds:.1f} s "
              f"({load_s:.1f} s loading, {triples / load_s:,.0f} triples/s), peak RSS "
              f"{run.peak_rss_mb:,.0f} MB, store {disk_mb(store):,.0f} MB")
    queries = [str(ROOT / "sparql" / q) for q in QUERIES]
    run = measure([py, "-c", OX_QUERY, str(work / "oxigraph-whole"), str(work), *queries],
                  work / "oxigraph-query.log")
    result = last_json(run.output)
    figures["query"] = {"process_s": run.seconds, **result}
    for q, got in result["queries"].items():
        got["rows"] = len(answer_rows(work / f"pyoxigraph-{q}.json"))
        print(f"  pyoxigraph cold query {q}: {got['s']:.2f} s ({got['rows']} rows; store "
              f"opened in {result['open_s']:.2f} s, process {run.seconds:.1f} s)")
    return figures


def store_dump(project: Path, work: Path, triples: int) -> dict:
    """N-Triples without `--formats nt`: streamed out of the project's own store."""
    py = sys.executable
    current = (project / ".kg" / "CURRENT").read_text(encoding="utf-8").strip()
    dump = work / "store-dump.nt"
    run = measure([py, "-c", OX_DUMP, str(project / ".kg" / current / "store"), str(dump)],
                  work / "oxigraph-dump.log")
    with dump.open("rb") as fh:
        lines = sum(1 for _ in fh)
    figures = {"seconds": run.seconds, "peak_rss_mb": run.peak_rss_mb, "triples": lines,
               "disk_mb": disk_mb(dump)}
    print(f"  pyoxigraph Store.dump of the project store to N-Triples: {run.seconds:.1f} s, "
          f"peak RSS {run.peak_rss_mb:,.0f} MB, {lines:,} triples "
          f"({'the same number as' if lines == triples else 'NOT the number of'} graph.nt), "
          f"{disk_mb(dump):,.0f} MB")
    dump.unlink()
    return figures


def neo4j_paths(project: Path, work: Path, shard_papers: int, heap: str) -> dict:
    kg = [sys.executable, "-m", "kg", "export"]
    figures: dict = {}
    for name, source, extra in (
            ("sharded", project, ["--shard-papers", str(shard_papers)]),
            ("single-file", project / "extraction.jsonl", [])):
        out = work / f"neo4j-{name}"
        run = measure([*kg, str(source), "--format", "neo4j-admin", "-o", str(out), *extra],
                      work / f"export-{name}.log", cwd=ROOT)
        files = sorted((out / "neo4j-admin").iterdir())
        figures[f"export_{name}"] = {"seconds": run.seconds, "peak_rss_mb": run.peak_rss_mb,
                                     "files": len(files), "disk_mb": disk_mb(out)}
        print(f"  kg export --format neo4j-admin ({name}, from {source.name}): "
              f"{run.seconds:.1f} s, peak RSS {run.peak_rss_mb:,.0f} MB, {len(files)} files, "
              f"{disk_mb(out):,.0f} MB")
    if not HARNESS_CLASSPATH.is_file():
        print("  neo4j-admin import: not measured (run scripts/neo4j-test-server fetch)")
        return figures
    # import.sh calls `neo4j-admin`: this one is the Maven-built tool, as in
    # scripts/neo4j-test-server admin-import, but with a NEO4J_HOME that is kept (for du).
    home, bin_dir = work / "neo4j-home", work / "bin"
    for sub in ("conf", "data", "logs"):
        (home / sub).mkdir(parents=True)
    (home / "conf" / "neo4j.conf").write_text("", encoding="utf-8")
    bin_dir.mkdir()
    wrapper = bin_dir / "neo4j-admin"
    wrapper.write_text(
        "#!/usr/bin/env bash\n"
        f"NEO4J_HOME={home} NEO4J_CONF={home / 'conf'} exec java -Xmx{heap} "
        f"-cp \"$(cat {HARNESS_CLASSPATH})\" org.neo4j.cli.AdminTool \"$@\"\n", encoding="utf-8")
    wrapper.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    run = measure(["bash", str(work / "neo4j-sharded" / "neo4j-admin" / "import.sh"), "neo4j"],
                  work / "neo4j-admin-import.log", env=env)
    imported = re.search(r"Imported:\s+(\d+) nodes\s+(\d+) relationships\s+(\d+) properties",
                         run.output)
    done = re.search(r"IMPORT DONE in ([\dhms .]+?)\. ", run.output)
    nodes, rels, props = (int(imported[i]) for i in (1, 2, 3))
    store = home / "data" / "databases" / "neo4j"
    figures["import"] = {"seconds": run.seconds, "tool_reports": done[1] if done else None,
                         "peak_rss_mb": run.peak_rss_mb, "nodes": nodes,
                         "relationships": rels, "properties": props,
                         "disk_mb": disk_mb(home / "data"), "store_mb": disk_mb(store),
                         "heap": heap}
    print(f"  neo4j-admin database import full (shards, -Xmx{heap}): {run.seconds:.1f} s "
          f"(the tool: {done[1] if done else '?'}), peak RSS {run.peak_rss_mb:,.0f} MB; "
          f"{nodes:,} nodes, {rels:,} relationships, {props:,} properties; data "
          f"{disk_mb(home / 'data'):,.0f} MB")
    return figures


def jena_classpath(work: Path) -> str | None:
    if not shutil.which("mvn") or not shutil.which("java"):
        return None
    tools = work / "jena"
    tools.mkdir()
    (tools / "pom.xml").write_text(JENA_POM, encoding="utf-8")
    out = tools / "classpath.txt"
    done = subprocess.run(["mvn", "-B", "-q", "dependency:build-classpath",
                           f"-Dmdep.outputFile={out}"], cwd=tools, capture_output=True,
                          text=True, check=False)
    return out.read_text(encoding="utf-8").strip() if done.returncode == 0 else None


def jena_paths(nt: Path, work: Path, triples: int) -> dict:
    classpath = jena_classpath(work)
    if classpath is None:
        print("  Jena TDB2: not measured (mvn/java missing or jena-cmds not resolved)")
        return {}
    loc = work / "tdb2"
    java = ["java", "-cp", classpath]
    run = measure([*java, "tdb2.tdbloader", f"--loc={loc}", str(nt)], work / "tdb2-load.log")
    figures = {"version": JENA_VERSION, "load": {
        "seconds": run.seconds, "triples_per_s": triples / run.seconds,
        "peak_rss_mb": run.peak_rss_mb, "disk_mb": disk_mb(loc)}}
    print(f"  Jena {JENA_VERSION} tdb2.tdbloader (phased): {run.seconds:.1f} s "
          f"({triples / run.seconds:,.0f} triples/s, JVM start included), peak RSS "
          f"{run.peak_rss_mb:,.0f} MB, database {disk_mb(loc):,.0f} MB")
    figures["queries"] = {}
    for q in QUERIES:
        answer = work / f"jena-{q}.json"
        run = measure([*java, "tdb2.tdbquery", f"--loc={loc}", "--time", "--results=json",
                       f"--query={ROOT / 'sparql' / q}"], work / f"tdb2-{q}.log", stdout=answer)
        took = re.search(r"Time:\s*([\d.]+) sec", run.output)
        rows = len(answer_rows(answer))
        figures["queries"][q] = {"process_s": run.seconds,
                                 "s": float(took[1]) if took else None, "rows": rows}
        print(f"  Jena cold query {q}: {took[1] if took else '?'} s ({rows} rows; process "
              f"{run.seconds:.1f} s with JVM start)")
    return figures


VIRTUOSO_INI = """\
[Database]
DatabaseFile = {db}/virtuoso.db
ErrorLogFile = {db}/virtuoso.log
LockFile = {db}/virtuoso.lck
TransactionFile = {db}/virtuoso.trx
xa_persistent_file = {db}/virtuoso.pxa
[TempDatabase]
DatabaseFile = {db}/virtuoso-temp.db
TransactionFile = {db}/virtuoso-temp.trx
[Parameters]
ServerPort = {port}
DirsAllowed = ., {data}
; 340,000 8 KB buffers (2.7 GB): Virtuoso's setting for a machine with 4 GB to spare
NumberOfBuffers = 340000
MaxDirtyBuffers = 250000
[HTTPServer]
ServerPort = {http}
ServerRoot = {home}
[SPARQL]
ResultSetMaxRows = 1000000
MaxQueryExecutionTime = 3600
"""


def _virtuoso(home: Path, port: int, http: int) -> subprocess.Popen:
    """Start virtuoso-t on ``home``/virtuoso.ini; return once its HTTP endpoint answers."""
    log = (home / "server.log").open("a", encoding="utf-8")
    server = subprocess.Popen(["virtuoso-t", "+foreground", "+configfile",
                               str(home / "virtuoso.ini")], stdout=log, stderr=log)
    for _ in range(600):
        if server.poll() is not None:
            sys.exit(f"virtuoso-t exited; see {home / 'server.log'}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{http}/sparql?query=ASK%7B%7D", timeout=1)
            return server
        except OSError:
            time.sleep(0.2)
    sys.exit(f"virtuoso-t did not answer in 120 s; see {home / 'server.log'}")


def _stop_virtuoso(server: subprocess.Popen, port: int) -> float:
    """Shut the server down; its peak RSS in MB."""
    subprocess.run(["isql-vt", str(port), "dba", "dba", "exec=shutdown;"],
                   capture_output=True, check=False)
    _, _, usage = os.wait4(server.pid, 0)
    server.returncode = 0
    return usage.ru_maxrss / 1024


def _sparql_http(http: int, query: str, out: Path) -> float:
    request = urllib.request.Request(
        f"http://127.0.0.1:{http}/sparql", data=urllib.parse.urlencode({"query": query}).encode(),
        headers={"Accept": "application/sparql-results+json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=3600) as response:
        out.write_bytes(response.read())
    return time.perf_counter() - started


def virtuoso_paths(nt: Path, work: Path, triples: int, port: int = 11131,
                   http: int = 18931) -> dict:
    """Virtuoso Open Source 7 (Debian's virtuoso-opensource-7-bin): the bulk loader
    (``ld_dir`` + ``rdf_loader_run``) on graph.nt, then the queries over HTTP after a restart
    (a cold server; the OS file cache is not dropped)."""
    if not shutil.which("virtuoso-t") or not shutil.which("isql-vt"):
        print("  Virtuoso: not measured (apt-get install virtuoso-opensource-7-bin)")
        return {}
    home = work / "virtuoso"
    (home / "db").mkdir(parents=True)
    (home / "virtuoso.ini").write_text(VIRTUOSO_INI.format(
        db=home / "db", port=port, http=http, home=home, data=nt.parent), encoding="utf-8")
    isql = ["isql-vt", str(port), "dba", "dba"]
    server = _virtuoso(home, port, http)
    try:
        run = measure([*isql, f"exec=ld_dir('{nt.parent}', '{nt.name}', 'urn:kg:graph'); "
                       "rdf_loader_run(); checkpoint;"], work / "virtuoso-load.log")
        failed = subprocess.run([*isql, "exec=SELECT ll_file, ll_error FROM DB.DBA.LOAD_LIST "
                                 "WHERE ll_error IS NOT NULL;"], capture_output=True,
                                text=True, check=False).stdout
    finally:
        load_rss = _stop_virtuoso(server, port)
    if "0 Rows." not in failed:
        sys.exit(f"Virtuoso's loader reported errors:\n{failed[-2000:]}")
    figures = {"load": {"seconds": run.seconds, "triples_per_s": triples / run.seconds,
                        "server_peak_rss_mb": load_rss, "disk_mb": disk_mb(home / "db")}}
    print(f"  Virtuoso 7 bulk loader (ld_dir, rdf_loader_run, checkpoint): {run.seconds:.1f} s "
          f"({triples / run.seconds:,.0f} triples/s), server peak RSS {load_rss:,.0f} MB, "
          f"database {disk_mb(home / 'db'):,.0f} MB")
    server = _virtuoso(home, port, http)
    try:
        figures["queries"] = {}
        for q in QUERIES:
            answer = work / f"virtuoso-{q}.json"
            seconds = _sparql_http(http, (ROOT / "sparql" / q).read_text(encoding="utf-8"),
                                   answer)
            rows = len(answer_rows(answer))
            figures["queries"][q] = {"s": seconds, "rows": rows}
            print(f"  Virtuoso cold query {q}: {seconds:.2f} s ({rows} rows, over HTTP)")
    finally:
        figures["query_server_peak_rss_mb"] = _stop_virtuoso(server, port)
    return figures


def compare_answers(work: Path) -> dict[str, str]:
    """Whether every engine measured gave pyoxigraph's rows, query by query."""
    out = {}
    for q in QUERIES:
        reference = work / f"pyoxigraph-{q}.json"
        if not reference.is_file():
            continue
        expected = answer_rows(reference)
        verdicts = []
        for engine in ("jena", "virtuoso"):
            path = work / f"{engine}-{q}.json"
            if path.is_file():
                got = answer_rows(path)
                # ORDER BY leaves ties (the same count and label) in the engine's own order.
                verdicts.append(f"{engine} " + (
                    "same rows" if got == expected else "same rows, ties in another order"
                    if sorted(got) == sorted(expected) else "DIFFERENT rows"))
        if verdicts:
            out[q] = ", ".join(verdicts)
            print(f"  answers to {q} against pyoxigraph's: {out[q]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("project", type=Path, help="a `kg build` project with graph.nt and "
                    "extraction.jsonl (--formats jsonl,nt)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/kg-bulk-paths"),
                    help="scratch directory (emptied first)")
    ap.add_argument("--nt-shards", type=int, default=4,
                    help="line shards of graph.nt also loaded (0: not measured)")
    ap.add_argument("--replicate", type=int, default=1, metavar="K",
                    help="load and query graph.nt plus K-1 renamed copies (K times the "
                         "triples; the store dump and the Neo4j path are not measured then)")
    ap.add_argument("--shard-papers", type=int, default=5000)
    ap.add_argument("--neo4j-heap", default="1g", help="-Xmx of neo4j-admin")
    ap.add_argument("--no-oxigraph", action="store_true")
    ap.add_argument("--no-jena", action="store_true")
    ap.add_argument("--no-virtuoso", action="store_true")
    ap.add_argument("--no-neo4j", action="store_true")
    args = ap.parse_args()
    nt = args.project / "graph.nt"
    if not nt.is_file() or not (args.project / "extraction.jsonl").is_file():
        sys.exit(f"{args.project} lacks graph.nt or extraction.jsonl: build it with "
                 "`kg build INPUT -o DIR --formats jsonl,nt`")
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    if args.replicate > 1:
        nt = replicate(nt, args.work / f"graph-x{args.replicate}.nt", args.replicate)
        args.no_neo4j = True
    with nt.open("rb") as fh:
        triples = sum(1 for _ in fh)
    manifest = json.loads((args.project / "build.json").read_text(encoding="utf-8"))
    papers = manifest.get("counts", {}).get("papers")
    copies = f" × {args.replicate} (renamed copies)" if args.replicate > 1 else ""
    print(f"{args.project}: {papers:,} papers{copies}, {nt.name} {triples:,} triples, "
          f"{disk_mb(nt):,.0f} MB; {os.cpu_count()} cores")
    figures: dict = {"papers": papers, "replicate": args.replicate, "triples": triples,
                     "nt_mb": disk_mb(nt), "cores": os.cpu_count()}
    if not args.no_oxigraph:
        figures["pyoxigraph"] = pyoxigraph_paths(args.project, nt, args.work, triples,
                                                 args.nt_shards, dump=args.replicate == 1)
    if not args.no_neo4j:
        figures["neo4j"] = neo4j_paths(args.project, args.work, args.shard_papers,
                                       args.neo4j_heap)
    if not args.no_jena:
        figures["jena"] = jena_paths(nt, args.work, triples)
    if not args.no_virtuoso:
        figures["virtuoso"] = virtuoso_paths(nt, args.work, triples)
    figures["answers"] = compare_answers(args.work)
    (args.work / "bulk-paths.json").write_text(json.dumps(figures, indent=1) + "\n",
                                               encoding="utf-8")
    print(f"figures in {args.work / 'bulk-paths.json'}")


if __name__ == "__main__":
    main()
