"""The SPARQL endpoint (kg.server) over real HTTP, driven by SPARQLWrapper and urllib.

The server runs in-process on an ephemeral port with its real worker processes.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import rdflib
from SPARQLWrapper import CSV, JSON, JSONLD, POST, POSTDIRECTLY, TSV, TURTLE, XML, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import QueryBadFormed

from kg.server import ServerConfig, saved_queries, start_server

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:rdflib.*")

PAPERS = ("PREFIX kg: <https://w3id.org/mlkg/ontology#> "
          "SELECT (COUNT(?p) AS ?n) WHERE { ?p a kg:Paper }")
SLOW = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"  # ~10^11 rows
TIMEOUT = 3.0
MAX_RESULTS = 100


@pytest.fixture(scope="module")
def graph_dir(seed_rdf_dir) -> Path:
    return seed_rdf_dir


@pytest.fixture(scope="module")
def server(graph_dir):
    # The concurrency tests' 20 clients all come from 127.0.0.1, one address: let them all wait.
    running = start_server(ServerConfig(graph=graph_dir / "graph.ttl", port=0, timeout=TIMEOUT,
                                        max_results=MAX_RESULTS, workers=2, max_per_client=32))
    yield running
    running.stop()


def client(server, fmt=JSON, method=None, request_method=None) -> SPARQLWrapper:
    sw = SPARQLWrapper(server.url)
    sw.setReturnFormat(fmt)
    if method:
        sw.setMethod(method)
    if request_method:
        sw.setRequestMethod(request_method)
    return sw


def count_papers(sw: SPARQLWrapper) -> int:
    sw.setQuery(PAPERS)
    return int(sw.query().convert()["results"]["bindings"][0]["n"]["value"])


def http(url: str, data: bytes | None = None, headers: dict | None = None):
    """(status, headers, body) without raising on 4xx/5xx."""
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def outward_address() -> str | None:
    """This machine's IPv4 address on its route out (not loopback), or None without one.

    Connecting a UDP socket sends nothing; it only picks the interface a packet would use.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never routed anywhere real
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if ipaddress.ip_address(address).is_loopback else address


def test_the_server_listens_on_loopback_only_by_default(graph_dir):
    assert ServerConfig(graph=Path("x")).host == "127.0.0.1"
    running = start_server(ServerConfig(graph=graph_dir / "graph.ttl", port=0, workers=1))
    try:
        host, port = running.httpd.socket.getsockname()[:2]
        assert host == "127.0.0.1"
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            assert conn.getsockname()[0] == "127.0.0.1"
            conn.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                         "Connection: close\r\n\r\n".encode())
            with conn.makefile("rb") as answer:
                assert answer.read().startswith(b"HTTP/1.1 200")
        outward = outward_address()
        if outward is None:
            pytest.skip("this machine has no non-loopback address to try")
        with pytest.raises(ConnectionRefusedError):  # nothing listens there on that port
            socket.create_connection((outward, port), timeout=30).close()
    finally:
        running.stop()


def test_select_returns_sparql_json_over_get(server):
    assert count_papers(client(server)) == 19


def test_select_over_form_post_and_direct_post(server):
    assert count_papers(client(server, method=POST)) == 19
    assert count_papers(client(server, method=POST, request_method=POSTDIRECTLY)) == 19


def test_select_as_xml_csv_and_tsv(server):
    sw = client(server, XML)
    sw.setQuery(PAPERS)
    doc = sw.query().convert()  # an xml.dom Document
    assert doc.getElementsByTagName("literal")[0].firstChild.data == "19"
    for fmt in (CSV, TSV):
        sw = client(server, fmt)
        sw.setQuery(PAPERS)
        body = sw.query().convert().decode("utf-8")
        assert body.splitlines()[1].split("^^")[0].strip('"') == "19"


def test_ask_answers_a_boolean(server):
    sw = client(server)
    sw.setQuery("ASK { ?p a <https://w3id.org/mlkg/ontology#Paper> }")
    assert sw.query().convert()["boolean"] is True


def test_construct_returns_turtle(server):
    sw = client(server, TURTLE)
    sw.setQuery("PREFIX kg: <https://w3id.org/mlkg/ontology#> "
                "CONSTRUCT { ?p a kg:Paper } WHERE { ?p a kg:Paper }")
    result = sw.query()
    assert result.response.headers["Content-Type"].startswith("text/turtle")
    graph = rdflib.Graph().parse(data=result.convert(), format="turtle")
    assert len(graph) == 19


def test_construct_returns_json_ld_and_n_triples_by_content_negotiation(server):
    sw = client(server, JSONLD)
    sw.setQuery("DESCRIBE <https://w3id.org/mlkg/entity/technique/quantization>")
    graph = sw.query().convert()  # SPARQLWrapper parses JSON-LD into an rdflib Graph
    assert len(graph) > 0
    query = urllib.parse.urlencode({"query": "CONSTRUCT WHERE { ?s a ?t } LIMIT 5"})
    status, headers, body = http(f"{server.url}?{query}",
                                 headers={"Accept": "application/n-triples"})
    assert status == 200 and headers["Content-Type"] == "application/n-triples"
    assert len(rdflib.Graph().parse(data=body, format="nt")) == 5


def test_saved_queries_answer_over_http(server):
    for name, text in saved_queries().items():
        sw = client(server, method=POST)
        sw.setQuery(text)
        doc = sw.query().convert()
        assert "results" in doc, name


def test_twenty_concurrent_clients_all_get_correct_answers(server):
    queries = list(saved_queries().values())

    def one(i: int) -> int:
        sw = client(server, method=POST if i % 2 else None)
        if i % 3 == 0:
            return count_papers(sw)
        sw.setQuery(queries[i % len(queries)])
        sw.query().convert()
        return 19

    with ThreadPoolExecutor(20) as pool:
        assert list(pool.map(one, range(60))) == [19] * 60


def test_a_malformed_query_answers_400_with_the_parser_message(server):
    sw = client(server)
    sw.setQuery("SELECT ?x WHERE { ?x ?y }")
    with pytest.raises(QueryBadFormed) as info:
        sw.query()
    assert "malformed query" in str(info.value)
    status, _, body = http(f"{server.url}?query=SELEKT")
    assert status == 400 and b"malformed query: " in body


def test_an_update_is_refused_with_403_and_changes_nothing(server):
    sw = client(server, method=POST)
    sw.setQuery("PREFIX kg: <https://w3id.org/mlkg/ontology#> "
                "INSERT DATA { <urn:x> a kg:Paper }")
    with pytest.raises(urllib.error.HTTPError) as info:
        sw.query()
    assert info.value.code == 403
    status, _, body = http(server.url, b"DELETE WHERE { ?s ?p ?o }",
                           {"Content-Type": "application/sparql-update"})
    assert status == 403 and b"read-only" in body
    status, _, _ = http(f"{server.url}?update=CLEAR%20ALL")
    assert status == 403
    assert count_papers(client(server)) == 19


@pytest.fixture(scope="module")
def uncached(graph_dir):
    # No answer cache: every answer below must come from a worker, or the test proves nothing.
    running = start_server(ServerConfig(graph=graph_dir, port=0, timeout=TIMEOUT, workers=2,
                                        cache_entries=0))
    yield running
    running.stop()


def count_from_a_worker(running) -> int:
    status, headers, body = http(f"{running.url}?{urllib.parse.urlencode({'query': PAPERS})}")
    assert status == 200 and "X-KG-Cache" not in headers
    return int(json.loads(body)["results"]["bindings"][0]["n"]["value"])


def test_a_query_past_its_timeout_is_stopped_with_503_and_the_server_keeps_answering(uncached):
    pool = uncached.httpd.pool
    with ThreadPoolExecutor(2) as threads:
        started = time.monotonic()
        slow = threads.submit(http, f"{uncached.url}?{urllib.parse.urlencode({'query': SLOW})}")
        # While one worker is stuck, the other still answers.
        assert count_from_a_worker(uncached) == 19
        status, headers, body = slow.result()
        waited = time.monotonic() - started
    assert status == 503 and b"timeout" in body and headers["Retry-After"]
    assert TIMEOUT <= waited < TIMEOUT + 30  # stopped at the timeout, not left to run
    assert pool.wait_idle()  # the killed worker is replaced...
    # ...and both workers answer: a stuck worker put back would hang one of these.
    with ThreadPoolExecutor(2) as threads:
        assert list(threads.map(lambda _: count_from_a_worker(uncached), range(6))) == [19] * 6


def test_variables_can_be_bound_with_dollar_parameters_as_terms(server, seed_corpus):
    query = saved_queries()["papers-sharing-technique"]
    def ids(**binds):
        params = {"query": query, **{f"${k}": v for k, v in binds.items()}}
        status, _, body = http(server.url, urllib.parse.urlencode(params).encode(),
                               {"Content-Type": "application/x-www-form-urlencoded"})
        assert status == 200, body
        return {b["id"]["value"] for b in json.loads(body)["results"]["bindings"]}

    compressed, int4 = ids(technique="model compression"), ids(technique="INT4 quantization")
    assert int4 and int4 < compressed
    assert ids(technique='x") } } SELECT * { ?s ?p ?o } #') == set()


def test_results_are_cut_at_max_results_and_say_so(server):
    query = urllib.parse.urlencode({"query": "SELECT * WHERE { ?s ?p ?o }"})
    status, headers, body = http(f"{server.url}?{query}")
    assert status == 200
    assert len(json.loads(body)["results"]["bindings"]) == MAX_RESULTS
    assert "max-results" in headers["X-KG-Truncated"]


def test_the_query_page_is_self_contained(server):
    status, headers, body = http(server.url.removesuffix("sparql"))
    page = body.decode("utf-8")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "<textarea" in page and "papers-sharing-technique" in page
    assert "<script src" not in page and "<link" not in page and "@import" not in page
    assert "default-src 'none'" in headers["Content-Security-Policy"]


def test_protocol_errors_are_explained(server):
    base = server.url
    assert http(base)[0] == 400  # no query
    assert http(base.replace("/sparql", "/nope"))[0] == 404
    assert http(base, b"query=ASK{}", {"Content-Type": "text/plain"})[0] == 415
    query = urllib.parse.urlencode({"query": "ASK {}"})
    assert http(f"{base}?{query}", headers={"Accept": "image/png"})[0] == 406


@pytest.fixture
def writable(graph_dir):
    # No response cache here: every count must come from a worker, to see each one's state.
    running = start_server(ServerConfig(graph=graph_dir, port=0, timeout=TIMEOUT,
                                        allow_update=True, workers=2, cache_entries=0))
    yield running
    running.stop()


def test_allowed_updates_reach_every_worker_and_survive_a_worker_restart(writable, graph_dir):
    before = (graph_dir / "graph.nt").read_bytes()
    sw = client(writable, method=POST)
    sw.setQuery("PREFIX kg: <https://w3id.org/mlkg/ontology#> "
                "INSERT DATA { <urn:new-paper> a kg:Paper }")
    sw.query()
    assert {count_papers(client(writable)) for _ in range(6)} == {20}
    status, _, _ = http(f"{writable.url}?{urllib.parse.urlencode({'query': SLOW})}")
    assert status == 503  # one worker killed and replaced; it replays the update
    assert writable.httpd.pool.wait_idle()
    assert {count_papers(client(writable)) for _ in range(6)} == {20}
    bad = http(writable.url, b"INSERT DATA { <urn:x> }",
               {"Content-Type": "application/sparql-update"})
    assert bad[0] == 400
    assert (graph_dir / "graph.nt").read_bytes() == before  # the file is never written


def test_repeated_queries_come_from_the_cache_until_an_update_clears_it(graph_dir):
    running = start_server(ServerConfig(graph=graph_dir, port=0, timeout=TIMEOUT,
                                        allow_update=True, workers=1))
    try:
        query = urllib.parse.urlencode({"query": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"})
        first = http(f"{running.url}?{query}")
        second = http(f"{running.url}?{query}")
        assert first[0] == second[0] == 200 and first[2] == second[2]
        assert "X-KG-Cache" not in first[1] and second[1]["X-KG-Cache"] == "hit"
        update = http(running.url, b"INSERT DATA { <urn:a> <urn:b> <urn:c> }",
                      {"Content-Type": "application/sparql-update"})
        assert update[0] == 204
        third = http(f"{running.url}?{query}")
        assert "X-KG-Cache" not in third[1] and third[2] != first[2]
    finally:
        running.stop()


# ---------------------------------------------------------------- SSRF, CORS, Host, Origin

class _Recorder(BaseHTTPRequestHandler):
    """A stand-in for any host the endpoint's machine can reach: it records every request."""

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def _answer(self) -> None:
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        body = (b'{"head":{"vars":["s"]},"results":{"bindings":'
                b'[{"s":{"type":"uri","value":"urn:from-the-remote-host"}}]}}')
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def remote():
    """(base URL, list of request paths it received) of a second local HTTP server."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    httpd.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/sparql", httpd.requests
    httpd.shutdown()
    httpd.server_close()


def service_query(url: str) -> str:
    return f"SELECT ?s WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}"


def test_a_service_query_is_refused_and_the_other_host_receives_nothing(server, remote):
    url, requests = remote
    query = service_query(url)
    for status, _, body in (
            http(f"{server.url}?{urllib.parse.urlencode({'query': query})}"),
            http(server.url, urllib.parse.urlencode({"query": query}).encode(),
                 {"Content-Type": "application/x-www-form-urlencoded"}),
            http(server.url, query.replace("SERVICE", "service").encode(),
                 {"Content-Type": "application/sparql-query"})):
        assert status == 403
        assert b"refused" in body and b"--allow-service" in body
    bound = {"query": "SELECT * WHERE { SERVICE ?where { ?s ?p ?o } }", "$where": f"<{url}>"}
    status, _, body = http(f"{server.url}?{urllib.parse.urlencode(bound)}")
    assert status == 403 and b"variable" in body
    time.sleep(0.2)  # nothing is in flight: a request, had one been sent, would be logged by now
    assert requests == []


def test_allow_service_lets_a_named_host_through(graph_dir, remote):
    url, requests = remote
    running = start_server(ServerConfig(graph=graph_dir, port=0, timeout=TIMEOUT, workers=1,
                                        allow_service=("127.0.0.1",)))
    try:
        status, _, body = http(f"{running.url}?"
                               f"{urllib.parse.urlencode({'query': service_query(url)})}")
        assert status == 200, body
        assert json.loads(body)["results"]["bindings"][0]["s"]["value"] == \
            "urn:from-the-remote-host"
        assert len(requests) >= 1
        other = service_query("http://localhost.invalid:1/sparql")
        assert http(f"{running.url}?{urllib.parse.urlencode({'query': other})}")[0] == 403
    finally:
        running.stop()


def test_kg_sparql_refuses_service_too_and_sends_nothing(graph_dir, remote):
    url, requests = remote
    proc = subprocess.run([sys.executable, "-m", "kg", "sparql", service_query(url), "--graph",
                           str(graph_dir)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 5, proc.stderr
    assert "SERVICE" in proc.stderr and "refused" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert requests == []


def test_no_cross_origin_page_may_read_answers_by_default(server):
    query = urllib.parse.urlencode({"query": PAPERS})
    status, headers, _ = http(f"{server.url}?{query}", headers={"Origin": "http://evil.example"})
    assert status == 200  # the query runs (a form could send it), but the page cannot read it
    assert "Access-Control-Allow-Origin" not in headers
    status, headers, _ = http(server.url, headers={"Origin": "http://evil.example",
                                                   "Access-Control-Request-Method": "POST"})
    assert "Access-Control-Allow-Origin" not in headers


def test_cors_echoes_only_a_listed_origin_and_answers_its_preflight(graph_dir):
    running = start_server(ServerConfig(graph=graph_dir, port=0, timeout=TIMEOUT, workers=1,
                                        cors=("http://localhost:3000",)))
    try:
        query = urllib.parse.urlencode({"query": PAPERS})
        _, headers, _ = http(f"{running.url}?{query}",
                             headers={"Origin": "http://localhost:3000"})
        assert headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
        assert headers["Vary"] == "Origin"
        _, headers, _ = http(f"{running.url}?{query}", headers={"Origin": "http://evil.example"})
        assert "Access-Control-Allow-Origin" not in headers and headers["Vary"] == "Origin"

        def preflight(origin):
            request = urllib.request.Request(running.url, method="OPTIONS", headers={
                "Origin": origin, "Access-Control-Request-Method": "POST"})
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return response.status, response.headers
            except urllib.error.HTTPError as exc:
                return exc.code, exc.headers

        status, headers = preflight("http://localhost:3000")
        assert status == 204 and "POST" in headers["Access-Control-Allow-Methods"]
        assert headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
        status, headers = preflight("http://evil.example")
        assert status == 403 and "Access-Control-Allow-Origin" not in headers
    finally:
        running.stop()


def test_a_request_for_another_host_name_is_refused(server):
    port = server.httpd.server_address[1]
    query = f"{server.url}?{urllib.parse.urlencode({'query': PAPERS})}"
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}",
                 f"localhost.evil.example:{port}"):
        status, _, body = http(query, headers={"Host": host})
        assert status == 421, host
        assert b"DNS rebinding" in body and b"--allow-host" in body
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
        assert http(query, headers={"Host": host})[0] == 200, host


def test_allow_host_accepts_a_named_host(graph_dir):
    running = start_server(ServerConfig(graph=graph_dir, port=0, timeout=TIMEOUT, workers=1,
                                        allow_hosts=("kg.example.org",)))
    try:
        query = f"{running.url}?{urllib.parse.urlencode({'query': PAPERS})}"
        assert http(query, headers={"Host": "kg.example.org"})[0] == 200
        assert http(query, headers={"Host": "other.example.org"})[0] == 421
    finally:
        running.stop()


def test_with_updates_on_cross_site_posts_and_remote_loads_are_refused(writable, remote):
    url, requests = remote
    port = writable.httpd.server_address[1]
    insert = b"INSERT DATA { <urn:cross> <urn:site> <urn:post> }"
    form = urllib.parse.urlencode({"update": insert.decode()}).encode()
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                    {"Sec-Fetch-Site": "cross-site"},
                    {"Origin": f"http://localhost:{port + 1}", "Sec-Fetch-Site": "same-site"}):
        status, _, body = http(writable.url, form,
                               {"Content-Type": "application/x-www-form-urlencoded", **headers})
        assert status == 403 and b"cross-site" in body, headers
    ask = urllib.parse.urlencode({"query": "ASK { <urn:cross> ?p ?o }"})
    assert json.loads(http(f"{writable.url}?{ask}")[2])["boolean"] is False
    same = {"Content-Type": "application/sparql-update", "Origin": f"http://127.0.0.1:{port}",
            "Sec-Fetch-Site": "same-origin"}
    assert http(writable.url, insert, same)[0] == 204  # the query page's own POST
    status, _, body = http(writable.url, f"LOAD <{url}>".encode(), same)
    assert status == 403 and b"LOAD" in body
    assert requests == []


def test_a_bad_content_length_is_answered_400_not_a_traceback(server):
    url = urllib.parse.urlsplit(server.url)
    for value in ("abc", "-5", "1e3", " "):
        conn = HTTPConnection(url.hostname, url.port, timeout=30)
        conn.putrequest("POST", url.path)
        conn.putheader("Content-Type", "application/sparql-query")
        conn.putheader("Content-Length", value)
        conn.endheaders()
        response = conn.getresponse()
        body = response.read()
        conn.close()
        assert response.status == 400, value
        assert b"Content-Length" in body
    assert count_papers(client(server)) == 19


# ---------------------------------------------------------------- fairness and memory

def test_cheap_queries_keep_a_worker_while_runaway_queries_loop(graph_dir):
    timeout = 2.0
    running = start_server(ServerConfig(graph=graph_dir, port=0, timeout=timeout, workers=2,
                                        cache_entries=0))
    pool = running.httpd.pool
    slow = f"{running.url}?{urllib.parse.urlencode({'query': SLOW})}"
    # Count, not time: when each cheap query asks for a worker, how many are idle. Heavy
    # queries may hold only workers - 1, so one is always idle for it; without that lane the
    # runaway loops hold both and a cheap query waits for one of them to time out.
    cheap = threading.local()
    idle_when_asked: list[int] = []
    query, acquire = pool._query, pool._acquire

    def watched_query(text, *args):
        cheap.now = text.startswith("ASK")
        return query(text, *args)

    def watched_acquire():
        if getattr(cheap, "now", False):
            idle_when_asked.append(pool.idle_workers)
        return acquire()

    pool._query, pool._acquire = watched_query, watched_acquire
    try:
        assert http(slow)[0] == 503  # it runs past the timeout once: now it is known heavy
        assert pool.is_heavy(SLOW + "  # same query, other spacing")
        assert pool.wait_idle()
        stop = threading.Event()
        answers: list[tuple[int, str | None]] = []

        def loop() -> None:
            for _ in range(4):  # bounded, whatever happens
                if stop.is_set():
                    return
                status, headers, _ = http(slow)
                answers.append((status, headers.get("Retry-After")))

        loops = [threading.Thread(target=loop) for _ in range(3)]
        for thread in loops:
            thread.start()
        time.sleep(0.5)  # the loops hold whatever workers they may (more time only helps them)
        statuses = []
        for n in range(5):
            query_text = urllib.parse.urlencode({"query": f"ASK {{ ?s ?p {n} }}"})
            statuses.append(http(f"{running.url}?{query_text}")[0])
        stop.set()
        for thread in loops:
            thread.join(60)
        assert statuses == [200] * 5
        assert len(idle_when_asked) == 5 and min(idle_when_asked) >= 1, idle_when_asked
        assert answers and all(status == 503 and retry for status, retry in answers)
    finally:
        running.stop()


def test_one_client_past_its_bound_gets_429_with_retry_after(graph_dir):
    running = start_server(ServerConfig(graph=graph_dir, port=0, timeout=2.0, workers=2,
                                        cache_entries=0, max_per_client=1))
    try:
        with ThreadPoolExecutor(1) as threads:
            slow = threads.submit(http, f"{running.url}?{urllib.parse.urlencode({'query': SLOW})}")
            time.sleep(0.5)
            status, headers, body = http(f"{running.url}?"
                                         f"{urllib.parse.urlencode({'query': PAPERS})}")
            assert status == 429 and headers["Retry-After"] and b"--max-per-client" in body
            assert slow.result()[0] == 503
        assert running.httpd.pool.wait_idle()
        assert http(f"{running.url}?{urllib.parse.urlencode({'query': PAPERS})}")[0] == 200
    finally:
        running.stop()


@pytest.mark.slow
def test_the_answer_cache_is_bounded_in_bytes(graph_dir):
    running = start_server(ServerConfig(graph=graph_dir, port=0, timeout=TIMEOUT, workers=1,
                                        cache_entries=1000, cache_bytes=40_000))
    pool = running.httpd.pool

    def ask(n: int):
        query = f"SELECT ?s ?p ?o WHERE {{ ?s ?p ?o }} ORDER BY ?s ?p ?o LIMIT {n}"
        return http(f"{running.url}?{urllib.parse.urlencode({'query': query})}")

    try:
        sizes = []
        for n in range(40, 60):  # answers of ~10 KB each: far more than 40 KB in all
            status, headers, body = ask(n)
            assert status == 200 and "X-KG-Cache" not in headers
            sizes.append(len(body))
            assert pool.cached_bytes <= 40_000
        assert sum(sizes) > 4 * 40_000
        assert "X-KG-Cache" not in ask(40)[1]  # the oldest answers were let go...
        assert ask(59)[1]["X-KG-Cache"] == "hit"  # ...the newest kept
        big = "SELECT * WHERE { ?s ?p ?o } LIMIT 2000"  # one answer over the whole bound
        for _ in range(2):
            status, headers, _ = http(f"{running.url}?{urllib.parse.urlencode({'query': big})}")
            assert status == 200 and "X-KG-Cache" not in headers
    finally:
        running.stop()


def test_stopping_the_server_kills_a_worker_busy_with_a_runaway_query(graph_dir):
    running = start_server(ServerConfig(graph=graph_dir, port=0, timeout=60.0, workers=1,
                                        cache_entries=0))
    worker = running.httpd.pool._idle.queue[0]  # the only worker
    threading.Thread(target=http, daemon=True,
                     args=(f"{running.url}?{urllib.parse.urlencode({'query': SLOW})}",)).start()
    time.sleep(1.0)  # the query is running in the worker
    assert worker.process.poll() is None
    running.stop()
    assert worker.process.wait(10) is not None  # not left burning a core after the server


# ------------------------------------------------------------------ a project, followed


def answer(url: str, query: str) -> tuple[int, str | None, int | None]:
    """(status, X-KG-Generation, papers counted) of ``query`` (a COUNT of papers)."""
    status, headers, body = http(url + "?" + urllib.parse.urlencode({"query": query}),
                                 headers={"Accept": "application/sparql-results+json"})
    if status != 200:
        return status, None, None
    n = json.loads(body)["results"]["bindings"][0]["n"]["value"]
    return status, headers.get("X-KG-Generation"), int(n)


def test_serve_follows_the_project_and_never_mixes_generations(tmp_path):
    from conftest import SEED

    from kg import project
    from kg.pipeline import read_papers

    papers = list(read_papers([SEED])[0])
    out = tmp_path / "p"
    project.build(out, papers[:10], formats=["jsonl"])
    running = start_server(ServerConfig(graph=out, port=0, timeout=TIMEOUT, workers=2))
    try:
        assert answer(running.url, PAPERS) == (200, "gen-000001", 10)
        http(running.url + "?" + urllib.parse.urlencode({"query": SLOW}))  # a worker replaced
        assert running.httpd.pool.wait_idle(timeout=60)
        project.add(out, papers[10:])
        seen = []
        deadline = time.monotonic() + 30
        while (not seen or seen[-1] != 19) and time.monotonic() < deadline:
            seen.append(answer(running.url, f"{PAPERS} # {len(seen)}")[2])  # (not cached)
        assert seen[-1] == 19, seen
        http(running.url + "?" + urllib.parse.urlencode({"query": SLOW + " # again"}))
        after = [answer(running.url, f"{PAPERS} # after {i}") for i in range(40)]
        assert {a for a in after if a[0] == 200} == {(200, "gen-000002", 19)}, after
        page = http(running.url.removesuffix("sparql"))[2].decode()
        assert "gen-000002" in page and "built 20" in page
    finally:
        running.stop()


def test_a_query_nested_past_what_the_engine_survives_is_refused_400(server):
    deep_filter = "SELECT * WHERE { ?s ?p ?o FILTER(" + "(" * 5000 + "1" + ")" * 5000 + ") }"
    deep_optional = ("SELECT * WHERE { ?s ?p ?o " + "OPTIONAL { ?s ?p ?o " * 3000 + "}" * 3000
                     + " }")
    for query in (deep_filter, deep_optional):
        status, _, body = http(server.url, urllib.parse.urlencode({"query": query}).encode())
        assert status == 400 and b"nests" in body, (status, body[:200])
    assert server.httpd.pool.idle_workers == 2  # no worker died
    assert count_papers(client(server)) > 0


def test_kg_sparql_refuses_a_query_nested_too_deep_with_exit_5(graph_dir):
    from click.testing import CliRunner

    from kg.cli import cli

    query = "ASK { " + "OPTIONAL { " * 3000 + "}" * 3000 + " }"
    result = CliRunner().invoke(cli, ["sparql", query, "--graph", str(graph_dir / "graph.ttl")])
    assert result.exit_code == 5 and "nests" in result.output, result.output


def test_a_worker_that_crashes_is_reported_as_a_crash_not_a_timeout(graph_dir):
    import os
    import signal

    running = start_server(ServerConfig(graph=graph_dir / "graph.ttl", port=0, timeout=60,
                                        workers=1, cache_entries=0))
    try:
        pool = running.httpd.pool
        (pid,) = pool.pids
        with ThreadPoolExecutor(1) as ex:
            reply = ex.submit(http, running.url + "?" + urllib.parse.urlencode({"query": SLOW}))
            time.sleep(1.0)  # the worker is busy with it
            os.kill(pid, signal.SIGSEGV)  # as a query crashing the engine does
            status, _, body = reply.result(timeout=30)
        assert status == 500 and b"crashed" in body and b"SIGSEGV" in body, (status, body)
        assert b"timeout" not in body
        assert pool.wait_idle(timeout=60) and count_papers(client(running)) > 0
    finally:
        running.stop()


def test_a_worker_killed_while_it_loads_is_a_service_error_not_a_closed_handle(graph_dir):
    """The pool closing kills a replacement that is still loading (its respawn thread then
    waits on a closed connection): that is told as a ServiceError, which ends the thread."""
    from kg.errors import ServiceError
    from kg.server.pool import _Worker

    worker = _Worker(str(graph_dir / "graph.ttl"), None, [], ())
    worker.kill()
    with pytest.raises(ServiceError, match="exited while loading"):
        worker.wait_ready(5)
