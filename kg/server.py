"""A bounded, read-only SPARQL 1.1 Protocol endpoint over a kg graph (``kg serve``).

Queries run in worker *processes*, each holding the graph in an in-memory pyoxigraph Store.
A pyoxigraph query cannot be interrupted from Python, so the HTTP thread waits on the worker's
pipe for at most ``timeout`` seconds; a worker still busy then is killed (the runaway query dies
with it), the client gets 503, and a fresh worker is started. Query variables can be bound
RDF4J-style with ``$name=value`` parameters (passed to pyoxigraph as RDF terms, never spliced).
Results are cut at ``max_results`` rows/triples (header ``X-KG-Truncated``). Updates are
refused with 403 unless ``allow_update``; when allowed they are applied to every worker and
logged, so a replacement worker replays them and all workers keep the same data.

>>> server = start_server(ServerConfig(graph=Path("exports"), port=0))  # doctest: +SKIP
>>> server.url  # doctest: +SKIP
'http://127.0.0.1:40123/sparql'
"""

from __future__ import annotations

import base64
import collections
import contextlib
import hashlib
import html
import itertools
import json
import queue
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kg.errors import InputError, QueryError, ServiceError

MAX_BODY = 1 << 20  # bytes of query/update text we accept

# name -> (media type sent, pyoxigraph format attribute name, kind) ; kind: "results" | "graph"
FORMATS: dict[str, tuple[str, str, str]] = {
    "json": ("application/sparql-results+json", "JSON", "results"),
    "xml": ("application/sparql-results+xml", "XML", "results"),
    "csv": ("text/csv; charset=utf-8", "CSV", "results"),
    "tsv": ("text/tab-separated-values; charset=utf-8", "TSV", "results"),
    "turtle": ("text/turtle; charset=utf-8", "TURTLE", "graph"),
    "ntriples": ("application/n-triples", "N_TRIPLES", "graph"),
    "jsonld": ("application/ld+json", "JSON_LD", "graph"),
    "rdfxml": ("application/rdf+xml", "RDF_XML", "graph"),
}
DEFAULT_FORMAT = {"results": "json", "graph": "turtle"}

# Media types (and the short names SPARQLWrapper and people put in ?format=) to our names.
_MEDIA: dict[str, str] = {
    "application/sparql-results+json": "json", "application/json": "json", "json": "json",
    "application/sparql-results+xml": "xml", "application/xml": "xml", "text/xml": "xml",
    "xml": "xml", "text/csv": "csv", "csv": "csv", "text/tab-separated-values": "tsv",
    "tsv": "tsv", "text/turtle": "turtle", "application/x-turtle": "turtle", "turtle": "turtle",
    "ttl": "turtle", "application/n-triples": "ntriples", "text/plain": "ntriples",
    "ntriples": "ntriples", "nt": "ntriples", "n-triples": "ntriples",
    "application/ld+json": "jsonld", "json-ld": "jsonld", "jsonld": "jsonld",
    "application/rdf+xml": "rdfxml", "rdf+xml": "rdfxml", "rdfxml": "rdfxml",
}


def choose_format(kind: str, requested: str | None, accept: str | None) -> str | None:
    """The output format for a result ``kind`` ("results" or "graph").

    An explicit ``format``/``output`` parameter wins when it suits the kind; then the Accept
    header by q-value; ``*/*`` or nothing gives the default. ``None`` means 406.

    >>> choose_format("results", None, "text/csv, */*;q=0.1")
    'csv'
    >>> choose_format("graph", "json", "application/ld+json")
    'jsonld'
    >>> choose_format("graph", None, "application/sparql-results+json") is None
    True
    """
    if requested:
        name = _MEDIA.get(requested.strip().lower())
        if name and FORMATS[name][2] == kind:
            return name
    if not accept:
        return DEFAULT_FORMAT[kind]
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate(accept.split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        if q > 0:
            ranked.append((-q, index, media.lower()))
    for _, _, media in sorted(ranked):
        if media in ("*/*", "application/*", "text/*"):
            return DEFAULT_FORMAT[kind]
        name = _MEDIA.get(media)
        if name and FORMATS[name][2] == kind:
            return name
    return None


# ---------------------------------------------------------------- query execution (any process)

def _term_json(term: Any) -> dict[str, Any]:
    import pyoxigraph as ox

    if isinstance(term, ox.NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, ox.BlankNode):
        return {"type": "bnode", "value": term.value}
    if isinstance(term, ox.Literal):
        out: dict[str, Any] = {"type": "literal", "value": term.value}
        if term.language:
            out["xml:lang"] = term.language
        elif term.datatype.value != "http://www.w3.org/2001/XMLSchema#string":
            out["datatype"] = term.datatype.value
        return out
    if isinstance(term, ox.Triple):  # RDF-star / RDF 1.2 triple terms
        return {"type": "triple", "value": {"subject": _term_json(term.subject),
                                            "predicate": _term_json(term.predicate),
                                            "object": _term_json(term.object)}}
    raise TypeError(f"unexpected term {term!r}")


@dataclass
class QueryOutput:
    """A serialised result: bytes, its media type, the result kind and whether it was cut."""

    body: bytes
    media_type: str
    kind: str  # "results" | "graph"
    rows: int
    truncated: bool = False


def execute_query(store: Any, text: str, *, requested: str | None = None,
                  accept: str | None = None, max_results: int = 10_000,
                  substitutions: dict | None = None) -> QueryOutput:
    """Run ``text`` on a pyoxigraph ``store`` and serialise the result.

    Raises SyntaxError (bad query), LookupError (no acceptable format) or OSError/RuntimeError.

    >>> import pyoxigraph as ox
    >>> out = execute_query(ox.Store(), "ASK { ?s ?p ?o }")
    >>> out.body, out.media_type
    (b'{"head":{},"boolean":false}', 'application/sparql-results+json')
    """
    import pyoxigraph as ox

    from kg.rdf import PREFIXES

    result = store.query(text, prefixes=PREFIXES, substitutions=substitutions)
    kind = "graph" if isinstance(result, ox.QueryTriples) else "results"
    name = choose_format(kind, requested, accept)
    if name is None:
        raise LookupError(f"no acceptable format for a {'graph' if kind == 'graph' else 'results'}"
                          f" answer; ask for one of " + ", ".join(
                              FORMATS[n][0] for n in FORMATS if FORMATS[n][2] == kind))
    media, attr, _ = FORMATS[name]
    if isinstance(result, ox.QueryBoolean):
        return QueryOutput(result.serialize(format=getattr(ox.QueryResultsFormat, attr)),
                           media, kind, 1)
    if isinstance(result, ox.QueryTriples):
        triples, truncated = _first(result, max_results)
        prefixes = PREFIXES if name == "turtle" else None
        body = ox.serialize(triples, format=getattr(ox.RdfFormat, attr), prefixes=prefixes)
        return QueryOutput(body or b"", media, kind, len(triples), truncated)
    variables = [v.value for v in result.variables]
    solutions, truncated = _first(result, max_results)
    bindings = [{var: _term_json(solution[var]) for var in variables
                 if solution[var] is not None} for solution in solutions]
    doc = {"head": {"vars": variables}, "results": {"bindings": bindings}}
    body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if name != "json":  # pyoxigraph writes the other results formats from our JSON
        parsed = ox.parse_query_results(body, format=ox.QueryResultsFormat.JSON)
        body = parsed.serialize(format=getattr(ox.QueryResultsFormat, attr))
    return QueryOutput(body, media, kind, len(bindings), truncated)


def _first(results: Any, limit: int) -> tuple[list, bool]:
    """At most ``limit`` items of a lazy result, and whether more were left."""
    items = list(itertools.islice(results, limit + 1))
    return items[:limit], len(items) > limit


def graph_file(path: str | Path) -> Path:
    """The file to load for ``path``: itself, or graph.nt / graph.ttl inside a directory."""
    from kg.exports import check_export_dir, check_export_file

    path = Path(path)
    if path.is_dir():
        for name in ("graph.nt", "graph.ttl", "graph.jsonld"):
            if (path / name).is_file():
                check_export_dir(path, reading=name)  # refuse a half-written or mixed build
                return path / name
        raise InputError(f"{path}: no graph.nt, graph.ttl or graph.jsonld here; "
                         f"run `kg build INPUT... -o {path}` first")
    if not path.is_file():
        raise InputError(f"{path}: no such graph file; pass a .ttl/.nt/.jsonld file or the "
                         "directory `kg build -o` wrote")
    return check_export_file(path)


def load_store(path: str | Path) -> Any:
    """An in-memory pyoxigraph Store holding the graph at ``path`` (file or export dir)."""
    import pyoxigraph as ox

    file = graph_file(path)
    suffix = file.suffix.lower().lstrip(".")
    fmt = ox.RdfFormat.from_extension(suffix) or (
        ox.RdfFormat.JSON_LD if suffix in ("jsonld", "json") else None)
    if fmt is None:
        raise InputError(f"{file}: unknown RDF format {file.suffix!r}; use .ttl, .nt, .nq, "
                         ".trig, .jsonld or .rdf")
    store = ox.Store()
    try:
        store.bulk_load(path=str(file), format=fmt)
    except SyntaxError as exc:
        raise InputError(f"{file}: not valid {fmt.name} ({exc}); rebuild it with `kg build`"
                         ) from exc
    return store


# ---------------------------------------------------------------- worker processes

def _worker_main(conn_in: Any, conn_out: Any) -> None:
    """Loop in a worker process: load the graph, replay updates, then answer requests."""
    graph, updates = conn_in.recv()
    try:
        store = load_store(graph)
        for update in updates:
            store.update(update)
    except Exception as exc:  # reported to the parent, which raises ServiceError
        conn_out.send(("fail", str(exc)))
        return
    conn_out.send(("ready", len(store)))
    while True:
        try:
            op, text, requested, accept, max_results, bindings = conn_in.recv()
        except (EOFError, OSError):
            return
        try:
            if op == "update":
                store.update(text)
                conn_out.send(("ok", None))
            else:
                substitutions = _substitutions(bindings)
                conn_out.send(("ok", execute_query(store, text, requested=requested,
                                                   accept=accept, max_results=max_results,
                                                   substitutions=substitutions)))
        except (SyntaxError, QueryError) as exc:
            conn_out.send(("bad", str(exc)))
        except RuntimeError as exc:  # e.g. a binding for a variable the query does not project
            conn_out.send(("bad", str(exc)))
        except LookupError as exc:
            conn_out.send(("unacceptable", str(exc)))
        except Exception as exc:  # evaluation errors: report, keep serving
            conn_out.send(("error", f"{type(exc).__name__}: {exc}"))


def _substitutions(bindings: dict[str, str]) -> dict | None:
    """``$name=value`` request parameters as pyoxigraph substitutions (terms, never text)."""
    if not bindings:
        return None
    import pyoxigraph as ox

    from kg.rdf import parse_binding

    return {ox.Variable(name): parse_binding(value) for name, value in bindings.items()}


def _worker_entry() -> None:
    """Entry point of ``python -c 'from kg.server import _worker_entry; _worker_entry()'``.

    The protocol runs over stdin/stdout; stdout is moved aside first so a stray print cannot
    corrupt it.
    """
    import os
    from multiprocessing.connection import Connection

    out_fd = os.dup(1)
    os.dup2(2, 1)
    # The server going away (shutdown, or the pool killing us) is not worth a traceback.
    with contextlib.suppress(BrokenPipeError, EOFError, KeyboardInterrupt):
        _worker_main(Connection(0, writable=False), Connection(out_fd, readable=False))


class _Worker:
    """One worker: a plain subprocess (not multiprocessing, so the caller's __main__ is never
    re-imported) speaking multiprocessing's Connection protocol over its stdin/stdout."""

    def __init__(self, graph: str, updates: list[str]) -> None:
        import os
        import subprocess
        import sys
        from multiprocessing.connection import Connection

        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                    else "")
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from kg.server import _worker_entry; _worker_entry()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert self.process.stdin is not None and self.process.stdout is not None
        self._send = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self._recv = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()
        self._send.send((graph, list(updates)))

    def send(self, message: tuple) -> None:
        self._send.send(message)

    def poll(self, timeout: float) -> bool:
        return self._recv.poll(timeout)

    def recv(self) -> Any:
        return self._recv.recv()

    def wait_ready(self, timeout: float) -> int:
        if not self.poll(timeout):
            self.kill()
            raise ServiceError(f"the SPARQL worker did not load the graph within {timeout:.0f} s")
        try:
            status, value = self.recv()
        except EOFError as exc:
            self.kill()
            raise ServiceError("the SPARQL worker exited while loading the graph") from exc
        if status != "ready":
            self.kill()
            raise ServiceError(f"cannot load the graph: {value}")
        return value

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(5)
        self._send.close()
        self._recv.close()


@dataclass
class Reply:
    status: int
    body: bytes
    media_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


def _text(status: int, message: str, **headers: str) -> Reply:
    return Reply(status, (message.rstrip() + "\n").encode("utf-8"), headers=headers)


class QueryPool:
    """Worker processes with the graph loaded; a runaway query costs a worker, not the server."""

    def __init__(self, graph: str | Path, *, workers: int = 2, timeout: float = 10.0,
                 max_results: int = 10_000, load_timeout: float = 300.0,
                 cache_entries: int = 256) -> None:
        self.graph = str(graph_file(graph))
        self.timeout = timeout
        self.max_results = max_results
        self.load_timeout = load_timeout
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._updates: list[str] = []
        self._update_lock = threading.Lock()
        self._size = max(1, workers)
        self._closed = False
        self.triples = 0
        # The graph only changes through update(), which clears this: identical queries (saved
        # queries behind a dashboard, say) are answered from memory. Least recently used first out.
        self._cache: collections.OrderedDict[tuple, Reply] = collections.OrderedDict()
        self.cache_entries = cache_entries
        self._cache_lock = threading.Lock()
        started = [_Worker(self.graph, []) for _ in range(self._size)]
        try:
            for worker in started:
                self.triples = worker.wait_ready(load_timeout)
        except ServiceError:
            for worker in started:
                worker.kill()
            raise
        for worker in started:
            self._idle.put(worker)

    @property
    def idle_workers(self) -> int:
        """Workers ready for a query right now (a replaced worker counts once it has loaded)."""
        return self._idle.qsize()

    def wait_idle(self, count: int | None = None, timeout: float = 60.0) -> bool:
        """Wait until ``count`` (default: all) workers are idle; False on timeout."""
        deadline = time.monotonic() + timeout
        while self._idle.qsize() < (count or self._size):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def _acquire(self) -> _Worker | None:
        try:
            return self._idle.get(timeout=self.timeout)
        except queue.Empty:
            return None

    def _replace(self, worker: _Worker) -> None:
        """Kill ``worker`` and start a replacement in the background (replaying updates)."""
        worker.kill()

        def start() -> None:
            while not self._closed:
                with self._update_lock:  # no update may slip between snapshot and ready
                    fresh = _Worker(self.graph, self._updates)
                    try:
                        fresh.wait_ready(self.load_timeout)
                    except ServiceError:
                        time.sleep(1)
                        continue
                if self._closed:
                    fresh.kill()
                else:
                    self._idle.put(fresh)
                return

        threading.Thread(target=start, daemon=True, name="kg-sparql-respawn").start()

    def _call(self, worker: _Worker, message: tuple) -> tuple[str, Any] | None:
        """Send ``message``; the reply, or None after killing a worker that timed out."""
        try:
            worker.send(message)
            if worker.poll(self.timeout):
                return worker.recv()
        except (EOFError, OSError, BrokenPipeError):
            pass
        self._replace(worker)
        return None

    CACHE_MAX_BODY = 8 * 1024 * 1024

    def query(self, text: str, requested: str | None, accept: str | None,
              bindings: dict[str, str] | None = None) -> Reply:
        key = (text, requested, accept, tuple(sorted((bindings or {}).items())))
        with self._cache_lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return Reply(cached.status, cached.body, cached.media_type,
                             {**cached.headers, "X-KG-Cache": "hit"})
        reply = self._query(text, requested, accept, bindings)
        if reply.status == 200 and self.cache_entries and len(reply.body) <= self.CACHE_MAX_BODY:
            with self._cache_lock:
                self._cache[key] = reply
                while len(self._cache) > self.cache_entries:
                    self._cache.popitem(last=False)
        return reply

    def _query(self, text: str, requested: str | None, accept: str | None,
               bindings: dict[str, str] | None = None) -> Reply:
        worker = self._acquire()
        if worker is None:
            return _text(503, f"server busy: no query worker became free within {self.timeout:g} s;"
                         " retry later", **{"Retry-After": "1"})
        started = time.monotonic()
        reply = self._call(worker, ("query", text, requested, accept, self.max_results,
                                    bindings or {}))
        if reply is None:
            return _text(503, f"query stopped: it ran longer than the {self.timeout:g} s timeout "
                         "(kg serve --timeout); narrow it or add a LIMIT")
        self._idle.put(worker)
        status, value = reply
        if status == "bad":
            return _text(400, f"malformed query: {value}")
        if status == "unacceptable":
            return _text(406, value)
        if status == "error":
            return _text(500, f"query failed: {value}")
        out: QueryOutput = value
        headers = {"X-KG-Results": str(out.rows),
                   "X-KG-Elapsed-Ms": f"{(time.monotonic() - started) * 1000:.1f}"}
        if out.truncated:
            headers["X-KG-Truncated"] = f"results cut at --max-results {self.max_results}"
        return Reply(200, out.body, out.media_type, headers)

    def update(self, text: str) -> Reply:
        """Apply an update to every worker (serialised); 400 if the first rejects it."""
        with self._update_lock:
            taken: list[_Worker] = []
            deadline = time.monotonic() + self.timeout
            while len(taken) < self._size:
                try:
                    taken.append(self._idle.get(timeout=max(0.01, deadline - time.monotonic())))
                except queue.Empty:
                    for worker in taken:
                        self._idle.put(worker)
                    return _text(503, "server busy: could not pause the query workers within "
                                 f"{self.timeout:g} s to apply the update; retry later")
            result: Reply | None = None
            for index, worker in enumerate(taken):
                reply = self._call(worker, ("update", text, None, None, 0, {}))
                if reply is None:
                    taken[index] = None  # type: ignore[call-overload]  # being replaced
                    if index == 0:
                        result = _text(503, f"update stopped after the {self.timeout:g} s "
                                       "timeout; nothing was changed")
                        break
                    continue
                status, value = reply
                if status != "ok":
                    # The first worker rejected it (transactional: nothing changed); stop here.
                    result = _text(400 if status == "bad" else 500, f"update failed: {value}")
                    break
                if index == 0:
                    self._updates.append(text)
                    with self._cache_lock:
                        self._cache.clear()
            for worker in taken:
                if worker is not None:
                    self._idle.put(worker)
            return result or Reply(204, b"")

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().kill()
            except queue.Empty:
                break


# ---------------------------------------------------------------- HTTP

@dataclass
class ServerConfig:
    """``kg serve`` options."""

    graph: Path
    host: str = "127.0.0.1"
    port: int = 7878
    timeout: float = 10.0
    max_results: int = 10_000
    allow_update: bool = False
    workers: int = 2
    cache_entries: int = 256  # identical queries answered from memory; 0 turns the cache off


def saved_queries() -> dict[str, str]:
    """The saved queries shipped in sparql/*.rq, by file stem."""
    here = Path(__file__).resolve().parent
    for folder in (here / "_data" / "sparql", here.parent / "sparql"):
        if folder.is_dir():
            return {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.rq"))}
    return {}


_PAGE_SCRIPT = """
const saved = JSON.parse(document.getElementById('saved').textContent);
const pick = document.getElementById('pick'), box = document.getElementById('q');
for (const name of Object.keys(saved)) {
  const o = document.createElement('option'); o.value = name; o.textContent = name; pick.append(o);
}
pick.addEventListener('change', () => { if (saved[pick.value]) box.value = saved[pick.value]; });
const names = Object.keys(saved);
if (names.length) { pick.value = names[0]; box.value = saved[names[0]]; }
function cell(b) {
  if (!b) return '';
  return b.type === 'literal' && b['xml:lang'] ? b.value + ' @' + b['xml:lang'] : b.value;
}
document.getElementById('f').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const out = document.getElementById('out'), st = document.getElementById('status');
  out.replaceChildren(); st.textContent = 'running…';
  const t0 = performance.now();
  try {
    const r = await fetch('sparql', {method: 'POST', body: new URLSearchParams({query: box.value}),
      headers: {'Accept': 'application/sparql-results+json, text/turtle;q=0.9'}});
    const ms = (performance.now() - t0).toFixed(0);
    const type = r.headers.get('Content-Type') || '';
    if (!r.ok) { st.textContent = r.status + ' ' + (await r.text()); return; }
    if (!type.includes('sparql-results+json')) {
      const pre = document.createElement('pre'); pre.textContent = await r.text(); out.append(pre);
      st.textContent = 'graph result, ' + ms + ' ms'; return;
    }
    const data = await r.json();
    if ('boolean' in data) { st.textContent = 'ASK: ' + data.boolean + ' (' + ms + ' ms)'; return; }
    const table = document.createElement('table'), head = table.insertRow();
    for (const v of data.head.vars) {
      const th = document.createElement('th'); th.textContent = v; head.append(th);
    }
    for (const row of data.results.bindings) {
      const tr = table.insertRow();
      for (const v of data.head.vars) tr.insertCell().textContent = cell(row[v]);
    }
    out.append(table);
    const cut = r.headers.get('X-KG-Truncated');
    const n = data.results.bindings.length;
    st.textContent = n + ' rows, ' + ms + ' ms' + (cut ? ' — ' + cut : '');
  } catch (e) { st.textContent = 'request failed: ' + e; }
});
"""

_PAGE_STYLE = """
body { font: 14px system-ui, sans-serif; margin: 1.5em; max-width: 75em; }
textarea { width: 100%; height: 16em; font: 13px monospace; }
table { border-collapse: collapse; margin-top: 1em; } td, th { border: 1px solid #ccc;
padding: 2px 6px; text-align: left; vertical-align: top; } th { background: #eee; }
#status { margin-top: .6em; color: #444; white-space: pre-wrap; } pre { white-space: pre-wrap; }
"""


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _page(config: ServerConfig, triples: int) -> tuple[bytes, str]:
    """The query page (no external resources) and its Content-Security-Policy."""
    saved = json.dumps(saved_queries(), ensure_ascii=True).replace("</", "<\\/")
    title = html.escape(f"kg SPARQL — {Path(config.graph).name} ({triples:,} triples)")
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{_PAGE_STYLE}</style></head><body>
<h1>{title}</h1>
<p>SPARQL 1.1 endpoint: <code>/sparql</code> (GET or POST <code>query=</code>,
<code>application/sparql-query</code>). Read-only{'' if not config.allow_update else
' — updates allowed'}; queries stop after {config.timeout:g} s and return at most
{config.max_results:,} rows.</p>
<form id="f"><label>Saved query: <select id="pick"></select></label>
<textarea id="q" name="query" spellcheck="false"></textarea>
<button type="submit">Run</button></form>
<div id="status"></div><div id="out"></div>
<script type="application/json" id="saved">{saved}</script>
<script>{_PAGE_SCRIPT}</script>
</body></html>
"""
    csp = (f"default-src 'none'; script-src {_csp_hash(_PAGE_SCRIPT)}; "
           f"style-src {_csp_hash(_PAGE_STYLE)}; connect-src 'self'; form-action 'self'; "
           "base-uri 'none'; frame-ancestors 'none'")
    return body.encode("utf-8"), csp


class _Handler(BaseHTTPRequestHandler):
    server: KgHTTPServer
    protocol_version = "HTTP/1.1"
    timeout = 60  # a client that stops sending cannot hold a thread forever

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.media_type)
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("X-Content-Type-Options", "nosniff")
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_OPTIONS(self) -> None:
        self._send(Reply(204, b"", headers={
            "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
            "Access-Control-Allow-Headers": "Content-Type, Accept"}))

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path in ("/", "/index.html"):
            body, csp = self.server.page
            self._send(Reply(200, body, "text/html; charset=utf-8",
                             {"Content-Security-Policy": csp}))
            return
        if url.path not in ("/sparql", "/query"):
            self._send(_text(404, f"{url.path}: not found; the endpoint is /sparql"))
            return
        params = parse_qs(url.query, keep_blank_values=True)
        if "update" in params:
            if not self.server.config.allow_update:
                self._send(_refused())
            else:
                self._send(_text(405, "updates must be sent with POST", Allow="POST"))
            return
        self._dispatch(params, None)

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if url.path not in ("/sparql", "/query", "/update"):
            self._send(_text(404, f"{url.path}: not found; the endpoint is /sparql"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            self._send(_text(413, f"request body over {MAX_BODY} bytes"))
            return
        raw = self.rfile.read(length) if length else b""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        params = parse_qs(url.query, keep_blank_values=True)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._send(_text(400, "the request body is not UTF-8"))
            return
        if ctype == "application/x-www-form-urlencoded":
            for key, values in parse_qs(text, keep_blank_values=True).items():
                params.setdefault(key, []).extend(values)
            self._dispatch(params, None)
        elif ctype == "application/sparql-query":
            self._dispatch(params, ("query", text))
        elif ctype == "application/sparql-update":
            self._dispatch(params, ("update", text))
        else:
            self._send(_text(415, f"unsupported Content-Type {ctype!r}; send "
                             "application/x-www-form-urlencoded, application/sparql-query or "
                             "application/sparql-update"))

    def _dispatch(self, params: dict[str, list[str]], direct: tuple[str, str] | None) -> None:
        if direct is not None:
            op, text = direct
        elif "update" in params:
            op, text = "update", params["update"][0]
        elif "query" in params:
            op, text = "query", params["query"][0]
        else:
            self._send(_text(400, "no query: pass query=… (or update=…), or POST a body with "
                             "Content-Type application/sparql-query"))
            return
        if op == "update":
            if not self.server.config.allow_update:
                self._send(_refused())
                return
            self._send(self.server.pool.update(text))
            return
        if len(params.get("query", [])) > 1:
            self._send(_text(400, "more than one query= parameter"))
            return
        requested = next((params[k][0] for k in ("format", "output", "results") if k in params),
                         None)
        # RDF4J-style variable bindings: $name=value (an N-Triples term, <iri> or a string).
        bindings = {k[1:]: v[0] for k, v in params.items() if k.startswith("$") and len(k) > 1}
        self._send(self.server.pool.query(text, requested, self.headers.get("Accept"), bindings))


def _refused() -> Reply:
    return _text(403, "updates are disabled: this endpoint is read-only (start it with "
                 "`kg serve --allow-update` to allow SPARQL UPDATE)")


class KgHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer carrying the pool, the config and the pre-rendered page."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # socketserver's default of 5 resets bursts of concurrent clients

    def __init__(self, config: ServerConfig, pool: QueryPool, verbose: bool = False) -> None:
        self.config = config
        self.pool = pool
        self.verbose = verbose
        self.page = _page(config, pool.triples)
        super().__init__((config.host, config.port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}/sparql"


class RunningServer:
    """A server on a background thread (tests, benchmarks); ``stop()`` ends it and its workers."""

    def __init__(self, httpd: KgHTTPServer) -> None:
        self.httpd = httpd
        self.url = httpd.url
        self._thread = threading.Thread(target=httpd.serve_forever, daemon=True,
                                        name="kg-sparql-http")
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.httpd.pool.close()
        self._thread.join(5)


def make_server(config: ServerConfig, verbose: bool = False) -> KgHTTPServer:
    """Load the graph into the workers and bind the socket (raises KgError on failure)."""
    if config.timeout <= 0 or config.max_results <= 0:
        raise QueryError("--timeout and --max-results must be positive")
    pool = QueryPool(config.graph, workers=config.workers, timeout=config.timeout,
                     max_results=config.max_results, cache_entries=config.cache_entries)
    try:
        return KgHTTPServer(config, pool, verbose)
    except OSError as exc:
        pool.close()
        raise ServiceError(f"cannot listen on {config.host}:{config.port} ({exc.strerror}); "
                           "pick another --port") from exc


def start_server(config: ServerConfig) -> RunningServer:
    """Start in-process on a background thread; ``port=0`` picks a free port."""
    return RunningServer(make_server(config))


def serve(config: ServerConfig) -> None:
    """Serve until interrupted (Ctrl-C)."""
    httpd = make_server(config, verbose=True)
    print(f"kg: serving {config.graph} ({httpd.pool.triples:,} triples) at {httpd.url} "
          f"— query page at {httpd.url.removesuffix('sparql')}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        httpd.pool.close()
