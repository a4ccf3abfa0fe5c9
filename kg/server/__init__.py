"""``kg serve``: the HTTP layer of a bounded SPARQL 1.1 Protocol endpoint over a kg graph.

Queries run in worker *processes* (:mod:`kg.server.pool`), each holding the graph in an
in-memory pyoxigraph Store (:mod:`kg.sparql` loads, vets and runs them). A pyoxigraph query
cannot be interrupted from Python, so the HTTP thread waits on the worker's pipe for at most
``timeout`` seconds; a worker still busy then is killed (the runaway query dies with it), the
client gets 503, and a fresh worker is started. Query variables can be bound RDF4J-style with
``$name=value`` parameters (passed to pyoxigraph as RDF terms, never spliced). Results are cut
at ``max_results`` rows/triples (header ``X-KG-Truncated``).

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
import contextlib
import hashlib
import html
import ipaddress
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kg.errors import InputError, ServiceError
from kg.server.pool import QueryPool, Reply, text_reply
from kg.sparql import execute_query, load_store, saved_queries, split_host

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


def _page(config: ServerConfig, pool: QueryPool) -> tuple[bytes, str]:
    """The query page (no external resources) and its Content-Security-Policy."""
    saved = json.dumps(saved_queries(), ensure_ascii=True).replace("</", "<\\/")
    title = html.escape(f"kg SPARQL — {Path(config.graph).name} ({pool.triples:,} triples)")
    served = pool.served
    generation = "" if served.generation is None else (
        f"<p id=\"generation\">Serving generation <code>{served.generation}</code>, built "
        f"{served.built}; a new build, add or remove is served within seconds of its "
        f"commit.{'' if not pool.notice else ' <strong>' + html.escape(pool.notice)}"
        f"{'' if not pool.notice else '</strong>'}</p>\n")
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{_PAGE_STYLE}</style></head><body>
<h1>{title}</h1>
{generation}<p>SPARQL 1.1 endpoint: <code>/sparql</code> (GET or POST <code>query=</code>,
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
        self._refuse(text_reply(421, f"Host {self.headers.get('Host')!r} is not this server: kg "
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
            self._refuse(text_reply(403, f"Origin {origin} may not use this endpoint; start kg "
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
            self._send(text_reply(404, f"{url.path}: not found; the endpoint is /sparql"))
            return
        params = parse_qs(url.query, keep_blank_values=True)
        if "update" in params:
            if not self.server.config.allow_update:
                self._send(_refused())
            else:
                self._send(text_reply(405, "updates must be sent with POST", Allow="POST"))
            return
        self._dispatch(params, None)

    def do_POST(self) -> None:
        if not self._guard():
            return
        url = urlsplit(self.path)
        if url.path not in ("/sparql", "/query", "/update"):
            self._refuse(text_reply(404, f"{url.path}: not found; the endpoint is /sparql"))
            return
        why = self._cross_site() if self.server.config.allow_update else None
        if why is not None:
            self._refuse(text_reply(403, f"cross-site POST refused ({why}): updates are on, so "
                                    "only this server's own page and --cors origins may POST"))
            return
        text = self._read_body()
        if text is None:
            return
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        params = parse_qs(url.query, keep_blank_values=True)
        if ctype == "application/x-www-form-urlencoded":
            for key, values in parse_qs(text, keep_blank_values=True).items():
                params.setdefault(key, []).extend(values)
            self._dispatch(params, None)
        elif ctype in ("application/sparql-query", "application/sparql-update"):
            self._dispatch(params, (ctype.removeprefix("application/sparql-"), text))
        else:
            self._send(text_reply(415, f"unsupported Content-Type {ctype!r}; send "
                                  "application/x-www-form-urlencoded, application/sparql-query "
                                  "or application/sparql-update"))

    def _read_body(self) -> str | None:
        """The request body as text, or None after answering why it cannot be read."""
        declared = self.headers.get("Content-Length", "0").strip()
        if not declared.isascii() or not declared.isdigit():
            self._refuse(text_reply(400, f"bad Content-Length {declared!r}: send the body's size "
                                    "in bytes as a non-negative integer"))
            return None
        length = int(declared)
        if length > MAX_BODY:
            self._refuse(text_reply(413, f"request body over {MAX_BODY} bytes"))
            return None
        raw = self.rfile.read(length) if length else b""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self._send(text_reply(400, "the request body is not UTF-8"))
            return None

    def _dispatch(self, params: dict[str, list[str]], direct: tuple[str, str] | None) -> None:
        if direct is not None:
            op, text = direct
        elif "update" in params:
            op, text = "update", params["update"][0]
        elif "query" in params:
            op, text = "query", params["query"][0]
        else:
            self._send(text_reply(400, "no query: pass query=… (or update=…), or POST a body with "
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
            self._send(text_reply(400, "more than one query= parameter"))
            return
        requested = next((params[k][0] for k in ("format", "output", "results") if k in params),
                         None)
        # RDF4J-style variable bindings: $name=value (an N-Triples term, <iri> or a string).
        bindings = {k[1:]: v[0] for k, v in params.items() if k.startswith("$") and len(k) > 1}
        self._send(self.server.pool.query(text, requested, self.headers.get("Accept"), bindings,
                                          client=self.client_address[0]))


def _refused() -> Reply:
    return text_reply(403, "updates are disabled: this endpoint is read-only (start it with "
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
        self._page: tuple[tuple, tuple[bytes, str]] | None = None
        self.allowed_host_names = {split_host(name)[0] for name in config.allow_hosts}
        super().__init__((config.host, config.port), _Handler)

    @property
    def page(self) -> tuple[bytes, str]:
        """The query page, rendered again when the generation served (or its notice) moved."""
        key = (self.pool.epoch, self.pool.notice)
        if self._page is None or self._page[0] != key:
            self._page = (key, _page(self.config, self.pool))
        return self._page[1]

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
    served = httpd.pool.served
    what = f", {served.generation} built {served.built}" if served.generation else ""
    print(f"kg: serving {config.graph} ({httpd.pool.triples:,} triples{what}) at {httpd.url} "
          f"— query page at {httpd.url.removesuffix('sparql')}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        httpd.pool.close()
