"""kg.sparql: the SERVICE/LOAD vetting lexer, checked against what pyoxigraph really does.

Port 9 (discard) is one pyoxigraph's HTTP client refuses to dial, so "pyoxigraph tries to fetch
it" is observable as an OSError naming port 9, and no packet leaves the machine.
"""

from __future__ import annotations

import pyoxigraph as ox
import pytest

from kg.errors import InputError, QueryError
from kg.sparql import RefusedQueryError, execute_query, parse_binding, run_update, vet

PREFIXES = {"ex": "http://127.0.0.1:9/ex/", "": "http://127.0.0.1:9/e/",
            "service": "http://127.0.0.1:9/s/"}

# Each of these makes pyoxigraph send a request (it reads keywords without a word boundary).
FETCHING = [
    "SERVICE <http://127.0.0.1:9/> { ?s ?p ?o }",
    "service<http://127.0.0.1:9/>{?s ?p ?o}",
    "SERVICE:x{?s ?p ?o}",
    "SERVICEex:x{?s ?p ?o}",
    "SERVICE ex:x # a comment\n { ?s ?p ?o }",
    "service:x{?s ?p ?o}",
    "?s ?p ?o .SERVICE<http://127.0.0.1:9/>{?s ?p ?o}",
    # A PN_LOCAL escape is not a comment nor a string start:
    "OPTIONAL { ?s ex:a\\#b ?o } SERVICE <http://127.0.0.1:9/> { ?s ?p ?o }",
    "OPTIONAL { ?s ex:a\\'b ?o } SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } "
    "OPTIONAL { ?s ?p 'x' }",
]


def store() -> ox.Store:
    s = ox.Store()
    s.add(ox.Quad(ox.NamedNode("urn:a"), ox.NamedNode("urn:b"), ox.NamedNode("urn:c")))
    return s


@pytest.mark.parametrize("pattern", FETCHING)
def test_every_spelling_of_service_that_pyoxigraph_runs_is_refused(pattern):
    query = f"SELECT * WHERE {{ ?s ?p ?o . {pattern} }}"
    with pytest.raises(OSError, match="port 9"):  # pyoxigraph itself would dial out
        list(store().query(query, prefixes=PREFIXES))
    with pytest.raises(RefusedQueryError, match="refused"):
        vet(query, prefixes=PREFIXES)


@pytest.mark.parametrize("pattern", [
    "SeRvIcE SILENT <http://127.0.0.1:9/> { ?s ?p ?o }",  # SILENT: pyoxigraph hides the failure
    "SERVICESILENT<http://127.0.0.1:9/>{?s ?p ?o}",
    "FILTER EXISTS { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }",
    "MINUS { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }",
])
def test_service_is_refused_wherever_it_sits(pattern):
    with pytest.raises(RefusedQueryError):
        vet(f"SELECT * WHERE {{ ?s ?p ?o . {pattern} }}")


def test_a_prefix_declared_in_the_query_is_resolved_before_the_host_is_checked():
    query = "PREFIX r: <http://127.0.0.1:9/> SELECT * { SERVICE r:x { ?s ?p ?o } }"
    with pytest.raises(RefusedQueryError):
        vet(query)
    vet(query, allow_service=["127.0.0.1:9"])
    with pytest.raises(RefusedQueryError):  # the port is part of an allowed HOST:PORT
        vet(query, allow_service=["127.0.0.1:8080"])
    vet(query, allow_service=["127.0.0.1"])  # a bare host allows any port


def test_service_on_a_variable_is_always_refused():
    for query in ("SELECT * { SERVICE ?x { ?s ?p ?o } }",
                  "SELECT * { SERVICE SILENT $x { ?s ?p ?o } }", "SELECT * { SERVICE?x{?s ?p ?o}}"):
        with pytest.raises(RefusedQueryError, match="variable"):
            vet(query, allow_service=["127.0.0.1", "example.org"])


def test_relative_and_non_http_service_iris_are_refused_even_for_an_allowed_host():
    for iri in ("x", "//127.0.0.1/", "ftp://127.0.0.1/", "http://127.0.0.1@evil.example/"):
        with pytest.raises(RefusedQueryError):
            vet(f"BASE <http://127.0.0.1/> SELECT * {{ SERVICE <{iri}> {{ ?s ?p ?o }} }}",
                allow_service=["127.0.0.1"])


@pytest.mark.parametrize("query", [
    "SELECT ?service $SERVICE { ?service ex:service ?o }",
    'SELECT * { ?s ?p "SERVICE <http://127.0.0.1:9/> { ?s ?p ?o }" }',
    "SELECT * { ?s ?p '''it's a \"SERVICE\" ''' }",
    'SELECT * { ?s ?p """two "" quotes, SERVICE <http://127.0.0.1:9/> {}""" }',
    "SELECT * { ?s ?p ?o } # SERVICE <http://127.0.0.1:9/> { ?s ?p ?o }",
    "SELECT * { ?s <http://127.0.0.1:9/SERVICE> ?o }",
    "SELECT * { service:x ?p ?o }",  # a prefixed name starting with the word, not before a group
    "SELECT * { ?s ?p ?o FILTER(?o < 3 && ?s > 1) }",
])
def test_service_as_a_name_string_comment_or_iri_part_is_not_refused(query):
    vet(query, prefixes=PREFIXES)
    list(store().query(query, prefixes=PREFIXES))  # and pyoxigraph runs it without fetching


def test_load_is_refused_unless_file_or_an_allowed_host():
    for update in ("LOAD <http://127.0.0.1:9/x>", "load silent <http://127.0.0.1:9/x>",
                   "LOADSILENT<http://127.0.0.1:9/x>", "LOAD ex:x INTO GRAPH <urn:g>",
                   "INSERT DATA { <urn:a> <urn:b> <urn:c> } ; LOAD<https://127.0.0.1:9/x>"):
        with pytest.raises(RefusedQueryError, match="LOAD"):
            vet(update, update=True, prefixes=PREFIXES)
    vet("LOAD <file:///tmp/graph.nt>", update=True)
    vet("LOAD <http://data.example/x.nt>", update=True, allow_service=["data.example"])
    vet("INSERT DATA { <urn:a> <urn:b> loader:x }", update=True,
        prefixes={"loader": "urn:l:"})  # inside braces a word is data, not an operation


def test_the_library_path_refuses_service_and_load_before_pyoxigraph_sees_them():
    s = store()
    with pytest.raises(RefusedQueryError):
        execute_query(s, "SELECT * { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }")
    with pytest.raises(RefusedQueryError):
        run_update(s, "LOAD <http://127.0.0.1:9/x>")
    assert isinstance(RefusedQueryError("x"), QueryError)  # exit 5 in the CLI


def test_a_malformed_bound_value_is_bad_input():
    with pytest.raises(InputError):
        parse_binding('"unterminated')


def test_a_malformed_bind_exits_2_as_bad_input(seed_rdf_dir):
    import subprocess
    import sys

    query = "SELECT ?x WHERE { ?s ?p ?x }"
    for bind in ("no-equals-sign", 'x="unterminated', "x=<not an iri>"):
        proc = subprocess.run([sys.executable, "-m", "kg", "sparql", query, "--graph",
                               str(seed_rdf_dir), "--bind", bind],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == InputError.exit_code == 2, (bind, proc.stderr)
        assert "Traceback" not in proc.stderr and "bind" in proc.stderr


def test_rdf_sparql_and_server_import_in_one_direction_only():
    import ast
    from pathlib import Path

    import kg

    def imports(module: str) -> set[str]:
        base = Path(kg.__file__).parent
        files = sorted((base / module).glob("*.py")) or [base / f"{module}.py"]  # a package too
        found = set()
        for file in files:
            for node in ast.walk(ast.parse(file.read_text("utf-8"))):  # in functions too
                if isinstance(node, ast.ImportFrom) and node.module:
                    found.add(node.module)
                elif isinstance(node, ast.Import):
                    found.update(alias.name for alias in node.names)
        return found

    assert not imports("rdf") & {"kg.sparql", "kg.server"}
    assert not {m for m in imports("sparql") if m.startswith("kg.server")}
    assert "kg.sparql" in imports("server")
