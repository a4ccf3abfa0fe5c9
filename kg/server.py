"""``kg serve``: the HTTP layer of a bounded SPARQL 1.1 Protocol endpoint over a kg graph.

Queries run in worker *processes*, each holding the graph in an in-memory pyoxigraph Store
(:mod:`kg.sparql` loads, vets and runs them). A pyoxigraph query cannot be interrupted from
Python, so the HTTP thread waits on the worker's pipe for at most ``timeout`` seconds; a worker
still busy then is killed (the runaway query dies with it), the client gets 503, and a fresh
worker is started. Query variables can be bound RDF4J-style with ``$name=value`` parameters
(passed to pyoxigraph as RDF terms, never spliced). Results are cut at ``max_results``
rows/triples (header ``X-KG-Truncated``).

What a client may do, by default: read-only queries from this machine. ``SERVICE`` (and, with
updates on, ``LOAD`` over the network) is refused unless ``allow_service`` names the host; no
``Access-Control-Allow-Origin`` is sent unless ``cors`` names the origin; a request whose Host
header is not the bound address, a loopback name or an ``allow_hosts`` name is refused (DNS
rebinding); with ``allow_update`` a cross-site POST is refused. Updates are refused with 403
unless ``allow_update``; when allowed they are applied to every worker and logged, so a
replacement worker replays them and all workers keep the same data.

Fairness: each client address may have ``max_per_client`` queries waiting or running (429
beyond); a query that once timed out or ran long may hold at most ``workers - 1`` workers, so
one worker stays free for the rest; every 503 and 429 says when to retry (``Retry-After``).

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
import ipaddress
import json
import math
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kg.errors import InputError, QueryError, ServiceError
from kg.project import is_project, open_project
from kg.rdf import graph_file
from kg.sparql import (
    NotAcceptableError,
    QueryOutput,
    RefusedQueryError,
    execute_query,
    load_store,
    normalise,
    run_update,
    saved_queries,
    split_host,
    substitutions,
    writable,
)

__all__ = [
    "QueryPool",
    "RunningServer",
    "ServerConfig",
    "execute_query",
    "load_store",
    "make_server",
    "saved_queries",
    "serve",
    "start_server",
]

MAX_BODY = 1 << 20  # bytes of query/update text we accept


# ---------------------------------------------------------------- worker processes

def _worker_main(conn_in: Any, conn_out: Any) -> None:
    """Loop in a worker process: load the graph, replay updates, then answer requests."""
    graph, updates, allow_service = conn_in.recv()
    try:
        store = load_store(graph)
        copied = bool(updates)
        if updates:
            store = writable(store, graph)
        for update in updates:
            run_update(store, update, allow_service=allow_service)
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
                if not copied:
                    store, copied = writable(store, graph), True
                run_update(store, text, allow_service=allow_service)
                conn_out.send(("ok", None))
            else:
                conn_out.send(("ok", execute_query(
                    store, text, requested=requested, accept=accept, max_results=max_results,
                    substitutions=substitutions(bindings), allow_service=allow_service)))
        except RefusedQueryError as exc:
            conn_out.send(("refused", str(exc)))
        except NotAcceptableError as exc:
            conn_out.send(("unacceptable", str(exc)))
        except (QueryError, InputError) as exc:
            conn_out.send(("bad", str(exc)))
        except Exception as exc:  # anything else: report, keep serving
            conn_out.send(("error", f"{type(exc).__name__}: {exc}"))


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

    def __init__(self, graph: str, updates: list[str], allow_service: tuple[str, ...]) -> None:
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
        self._send.send((graph, list(updates), tuple(allow_service)))

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
        if self.process.returncode is not None:
            return
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
    """Worker processes with the graph loaded; a runaway query costs a worker, not the server.

    Cheap queries keep a lane: a query remembered as heavy (it timed out, or ran for more than
    half the timeout) may hold at most ``workers - 1`` workers, counting a killed worker until
    its replacement has loaded. Each client address may have ``max_per_client`` queries
    waiting or running. Answers are cached (least recently used out) up to ``cache_entries``
    entries and ``cache_bytes`` bytes of answers and query text.
    """

    HEAVY_MEMORY = 4096  # normalised query texts remembered as heavy

    def __init__(self, graph: str | Path, *, workers: int = 2, timeout: float = 10.0,
                 max_results: int = 10_000, load_timeout: float = 300.0,
                 cache_entries: int = 256, cache_bytes: int = 64 << 20,
                 max_per_client: int = 16, allow_service: tuple[str, ...] = ()) -> None:
        if Path(graph).is_dir() and not is_project(graph):
            open_project(graph)  # raises, saying how to upgrade an older export directory
        self.graph = str(graph if is_project(graph) else graph_file(graph))
        self.timeout = timeout
        self.max_results = max_results
        self.load_timeout = load_timeout
        self.allow_service = tuple(allow_service)
        self.retry_after = str(max(1, math.ceil(timeout)))
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._updates: list[str] = []
        self._update_lock = threading.Lock()
        self._size = max(1, workers)
        self._closed = False
        self.triples = 0
        # Heavy queries share workers-1 slots (all of them with a single worker).
        self._heavy_slots = threading.BoundedSemaphore(max(1, self._size - 1))
        self._heavy: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.max_per_client = max_per_client
        self._per_client: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()  # guards _heavy and _per_client
        # The graph only changes through update(), which clears this: identical queries (saved
        # queries behind a dashboard, say) are answered from memory. Least recently used first out.
        self._cache: collections.OrderedDict[tuple, tuple[Reply, int]] = collections.OrderedDict()
        self.cache_entries = cache_entries
        self.cache_bytes = cache_bytes
        self.cached_bytes = 0
        self._cache_lock = threading.Lock()
        self._live: set[_Worker] = set()  # every worker not yet killed, busy or idle
        started = [self._spawn([]) for _ in range(self._size)]
        try:
            for worker in started:
                self.triples = worker.wait_ready(load_timeout)
        except ServiceError:
            for worker in started:
                worker.kill()
            raise
        for worker in started:
            self._idle.put(worker)

    def _spawn(self, updates: list[str]) -> _Worker:
        worker = _Worker(self.graph, updates, self.allow_service)
        with self._lock:
            self._live.add(worker)
        return worker

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

    @staticmethod
    def _heavy_key(text: str) -> str:
        # Lexing costs the HTTP thread ~5 µs a token: past 64 KB the raw text is the key.
        return normalise(text) if len(text) <= 65536 else text

    def is_heavy(self, text: str) -> bool:
        """Whether this query (comments and spacing aside) once timed out or ran long."""
        key = self._heavy_key(text)
        with self._lock:
            return key in self._heavy

    def _mark_heavy(self, key: str) -> None:
        with self._lock:
            self._heavy[key] = None
            self._heavy.move_to_end(key)
            while len(self._heavy) > self.HEAVY_MEMORY:
                self._heavy.popitem(last=False)

    def _acquire(self) -> _Worker | None:
        try:
            return self._idle.get(timeout=self.timeout)
        except queue.Empty:
            return None

    def _replace(self, worker: _Worker, then: Callable[[], None] | None = None) -> None:
        """Kill ``worker`` and start a replacement in the background (replaying updates);
        ``then`` runs once the replacement is ready (or the pool closes)."""
        worker.kill()
        with self._lock:
            self._live.discard(worker)

        def start() -> None:
            try:
                while not self._closed:
                    with self._update_lock:  # no update may slip between snapshot and ready
                        fresh = self._spawn(self._updates)
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
            finally:
                if then is not None:
                    then()

        threading.Thread(target=start, daemon=True, name="kg-sparql-respawn").start()

    def _call(self, worker: _Worker, message: tuple,
              then: Callable[[], None] | None = None) -> tuple[str, Any] | None:
        """Send ``message``; the reply, or None after killing a worker that timed out (``then``
        runs when its replacement is ready)."""
        try:
            worker.send(message)
            if worker.poll(self.timeout):
                return worker.recv()
        except (EOFError, OSError, BrokenPipeError):
            pass
        self._replace(worker, then)
        return None

    CACHE_MAX_BODY = 8 * 1024 * 1024

    def query(self, text: str, requested: str | None, accept: str | None,
              bindings: dict[str, str] | None = None, client: str = "") -> Reply:
        """Answer a query: from the cache, or on a worker (429 past the client's bound)."""
        key = (text, requested, accept, tuple(sorted((bindings or {}).items())))
        with self._cache_lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                cached = hit[0]
                return Reply(cached.status, cached.body, cached.media_type,
                             {**cached.headers, "X-KG-Cache": "hit"})
        with self._lock:
            if self.max_per_client and self._per_client[client] >= self.max_per_client:
                return _text(429, f"too many queries at once from {client or 'this client'}: "
                             f"at most {self.max_per_client} may wait or run "
                             "(kg serve --max-per-client); retry when one has finished",
                             **{"Retry-After": "1"})
            self._per_client[client] += 1
        try:
            reply = self._query(text, requested, accept, bindings)
        finally:
            with self._lock:
                self._per_client[client] -= 1
                if not self._per_client[client]:
                    del self._per_client[client]
        if reply.status == 200:
            self._remember(key, reply)
        return reply

    def _remember(self, key: tuple, reply: Reply) -> None:
        cost = len(reply.body) + len(key[0]) + sum(len(v) for _, v in key[3])
        if not self.cache_entries or cost > min(self.CACHE_MAX_BODY, self.cache_bytes):
            return
        with self._cache_lock:
            if key in self._cache:
                return
            self._cache[key] = (reply, cost)
            self.cached_bytes += cost
            while len(self._cache) > self.cache_entries or self.cached_bytes > self.cache_bytes:
                _, (_, freed) = self._cache.popitem(last=False)
                self.cached_bytes -= freed

    def _query(self, text: str, requested: str | None, accept: str | None,
               bindings: dict[str, str] | None = None) -> Reply:
        heavy_key = self._heavy_key(text)
        with self._lock:
            heavy = heavy_key in self._heavy
        retry = {"Retry-After": self.retry_after}
        if heavy and not self._heavy_slots.acquire(timeout=self.timeout):
            return _text(503, "server busy: this query ran long before, so it may use only "
                         "the workers not kept for quick queries, and they stayed busy for "
                         f"{self.timeout:g} s; retry later, or narrow it", **retry)
        release = self._heavy_slots.release if heavy else None
        try:
            worker = self._acquire()
            if worker is None:
                return _text(503, "server busy: no query worker became free within "
                             f"{self.timeout:g} s; retry later", **retry)
            started = time.monotonic()
            reply = self._call(worker, ("query", text, requested, accept, self.max_results,
                                        bindings or {}), then=release)
            if reply is None:
                release = None  # handed to the respawn: the slot frees once the worker is back
                self._mark_heavy(heavy_key)
                return _text(503, f"query stopped: it ran longer than the {self.timeout:g} s "
                             "timeout (kg serve --timeout); narrow it or add a LIMIT", **retry)
            elapsed = time.monotonic() - started
            self._idle.put(worker)
        finally:
            if release is not None:
                release()
        if elapsed > self.timeout / 2:
            self._mark_heavy(heavy_key)
        status, value = reply
        if status == "bad":
            return _text(400, value)
        if status == "refused":
            return _text(403, value)
        if status == "unacceptable":
            return _text(406, value)
        if status == "error":
            return _text(500, f"query failed: {value}")
        out: QueryOutput = value
        headers = {"X-KG-Results": str(out.rows), "X-KG-Elapsed-Ms": f"{elapsed * 1000:.1f}"}
        if out.truncated:
            headers["X-KG-Truncated"] = f"results cut at --max-results {self.max_results}"
        return Reply(200, out.body, out.media_type, headers)

    def update(self, text: str) -> Reply:
        """Apply an update to every worker (serialised); 400 if the first rejects it."""
        retry = {"Retry-After": self.retry_after}
        with self._update_lock:
            taken: list[_Worker | None] = []
            deadline = time.monotonic() + self.timeout
            while len(taken) < self._size:
                try:
                    taken.append(self._idle.get(timeout=max(0.01, deadline - time.monotonic())))
                except queue.Empty:
                    for worker in taken:
                        if worker is not None:
                            self._idle.put(worker)
                    return _text(503, "server busy: could not pause the query workers within "
                                 f"{self.timeout:g} s to apply the update; retry later", **retry)
            result: Reply | None = None
            for index, worker in enumerate(taken):
                assert worker is not None
                reply = self._call(worker, ("update", text, None, None, 0, {}))
                if reply is None:
                    taken[index] = None  # being replaced
                    if index == 0:
                        result = _text(503, f"update stopped after the {self.timeout:g} s "
                                       "timeout; nothing was changed", **retry)
                        break
                    continue
                status, value = reply
                if status != "ok":
                    # The first worker rejected it (transactional: nothing changed); stop here.
                    code = {"bad": 400, "refused": 403}.get(status, 500)
                    result = _text(code, value if code != 500 else f"update failed: {value}")
                    break
                if index == 0:
                    self._updates.append(text)
                    with self._cache_lock:
                        self._cache.clear()
                        self.cached_bytes = 0
            for worker in taken:
                if worker is not None:
                    self._idle.put(worker)
            return result or Reply(204, b"")

    def close(self) -> None:
        """Kill every worker, busy ones too: a runaway query must not outlive the server."""
        self._closed = True
        with self._lock:
            live, self._live = list(self._live), set()
        for worker in live:
            worker.kill()


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
    cache_bytes: int = 64 << 20  # and at most this many bytes of answers and query text
    max_per_client: int = 16 # queries one client address may have waiting or running; 0: any
    allow_service: tuple[str, ...] = ()  # hosts (HOST or HOST:PORT) SERVICE and LOAD may reach
    cors: tuple[str, ...] = ()  # origins (scheme://host[:port]) whose pages may read answers
    allow_hosts: tuple[str, ...] = ()  # extra Host header names accepted (a reverse proxy, say)


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


_LOOPBACK = ("localhost", "127.0.0.1", "::1")


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
        origin = self.headers.get("Origin")
        if self.server.config.cors:
            # Only listed origins may read answers; caches must key on the Origin.
            self.send_header("Vary", "Origin")
            if origin in self.server.config.cors:
                self.send_header("Access-Control-Allow-Origin", origin)
        self.send_header("X-Content-Type-Options", "nosniff")
        for key, value in reply.headers.items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    def _refuse(self, reply: Reply) -> None:
        """Answer without reading the body, so the connection cannot be reused."""
        self.close_connection = True
        self._send(reply)

    def _host_ok(self) -> bool:
        """Whether the Host header names this server (a DNS-rebinding page sends its own)."""
        header = self.headers.get("Host")
        if header is None:  # HTTP/1.0 clients; browsers always send Host
            return True
        try:
            host, port = split_host(header)
        except InputError:
            host, port = "", None
        bound_host, bound_port = self.server.server_address[:2]
        bound_host = str(bound_host).lower()
        if host in self.server.allowed_host_names:
            return True
        if (port or 80) != bound_port:
            return False
        if host in (bound_host, *_LOOPBACK):
            return True
        if bound_host in ("0.0.0.0", "::"):  # any address of this machine, as an IP literal
            with contextlib.suppress(ValueError):
                ipaddress.ip_address(host)
                return True
        return False

    def _cross_site(self) -> str | None:
        """Why a POST is cross-site (refused with --allow-update), or None."""
        origin = self.headers.get("Origin")
        allowed = self.server.config.cors
        same = f"http://{self.headers.get('Host', '')}".lower()
        if origin is not None and origin not in allowed and origin.lower() != same:
            return f"Origin {origin}"
        if (self.headers.get("Sec-Fetch-Site") or "").lower() == "cross-site" and (
                origin is None or origin not in allowed):
            return "Sec-Fetch-Site: cross-site"
        return None

    def _guard(self) -> bool:
        """Refuse a request for another host; True when it may go on."""
        if self._host_ok():
            return True
        self._refuse(_text(421, f"Host {self.headers.get('Host')!r} is not this server: kg "
                           f"serve answers requests for {self.server.url_host} and loopback "
                           "names only (a guard against DNS rebinding); start it with "
                           "--allow-host NAME to accept another name"))
        return False

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_OPTIONS(self) -> None:
        if not self._guard():
            return
        origin = self.headers.get("Origin")
        if origin is None:
            self._send(Reply(204, b"", headers={"Allow": "GET, HEAD, POST, OPTIONS"}))
        elif origin in self.server.config.cors:
            self._send(Reply(204, b"", headers={
                "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
                "Access-Control-Allow-Headers": "Content-Type, Accept",
                "Access-Control-Max-Age": "600"}))
        else:
            self._refuse(_text(403, f"Origin {origin} may not use this endpoint; start kg "
                               f"serve with --cors {origin} to allow it"))

    def do_GET(self) -> None:
        if not self._guard():
            return
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
        if not self._guard():
            return
        url = urlsplit(self.path)
        if url.path not in ("/sparql", "/query", "/update"):
            self._refuse(_text(404, f"{url.path}: not found; the endpoint is /sparql"))
            return
        if self.server.config.allow_update:
            why = self._cross_site()
            if why is not None:
                self._refuse(_text(403, f"cross-site POST refused ({why}): updates are on, so "
                                   "only this server's own page and --cors origins may POST"))
                return
        declared = self.headers.get("Content-Length", "0").strip()
        if not declared.isascii() or not declared.isdigit():
            self._refuse(_text(400, f"bad Content-Length {declared!r}: send the body's size in "
                               "bytes as a non-negative integer"))
            return
        length = int(declared)
        if length > MAX_BODY:
            self._refuse(_text(413, f"request body over {MAX_BODY} bytes"))
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
        config = self.server.config
        if op == "update" and not config.allow_update:
            self._send(_refused())
            return
        if op == "update":
            self._send(self.server.pool.update(text))
            return
        if len(params.get("query", [])) > 1:
            self._send(_text(400, "more than one query= parameter"))
            return
        requested = next((params[k][0] for k in ("format", "output", "results") if k in params),
                         None)
        # RDF4J-style variable bindings: $name=value (an N-Triples term, <iri> or a string).
        bindings = {k[1:]: v[0] for k, v in params.items() if k.startswith("$") and len(k) > 1}
        self._send(self.server.pool.query(text, requested, self.headers.get("Accept"), bindings,
                                          client=self.client_address[0]))


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
        self.allowed_host_names = {split_host(name)[0] for name in config.allow_hosts}
        super().__init__((config.host, config.port), _Handler)

    @property
    def url_host(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"{host}:{port}"

    @property
    def url(self) -> str:
        return f"http://{self.url_host}/sparql"


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
        raise InputError("--timeout and --max-results must be positive")
    for name in (*config.allow_service, *config.allow_hosts):
        split_host(name)  # InputError now rather than a surprise later
    for origin in config.cors:
        url = urlsplit(origin)
        if url.scheme not in ("http", "https") or not url.netloc or url.path or url.query:
            raise InputError(f"--cors {origin!r}: give an origin, scheme://host[:port], like "
                             "http://localhost:3000")
    pool = QueryPool(config.graph, workers=config.workers, timeout=config.timeout,
                     max_results=config.max_results, cache_entries=config.cache_entries,
                     cache_bytes=config.cache_bytes, max_per_client=config.max_per_client,
                     allow_service=tuple(config.allow_service))
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
