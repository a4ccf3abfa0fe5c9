"""The SPARQL endpoint (kg.server) over real HTTP, driven by SPARQLWrapper and urllib.

The server runs in-process on an ephemeral port with its real worker processes.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
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
    running = start_server(ServerConfig(graph=graph_dir / "graph.ttl", port=0, timeout=TIMEOUT,
                                        max_results=MAX_RESULTS, workers=2))
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


def test_the_server_binds_loopback_by_default():
    assert ServerConfig(graph=Path("x")).host == "127.0.0.1"


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


def test_a_query_past_its_timeout_is_stopped_with_503_and_the_server_keeps_answering(server):
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(http, f"{server.url}?{urllib.parse.urlencode({'query': SLOW})}")
        # While one worker is stuck, the other still answers.
        assert count_papers(client(server)) == 19
        status, _, body = slow.result()
    assert status == 503
    assert b"timeout" in body
    assert server.httpd.pool.wait_idle()  # the killed worker is replaced
    for _ in range(4):  # idle workers are taken in turn, so this reaches the new one too
        assert count_papers(client(server)) == 19


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
