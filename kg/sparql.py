"""SPARQL over a kg graph: load it into pyoxigraph, vet a query, run it, serialise the answer.

The library under ``kg sparql`` and the ``kg serve`` workers. Every failure is a ``kg.errors``
exception: ``QueryError`` for a malformed or failing query, ``RefusedQueryError`` for one that
asks kg to fetch a URL (``SERVICE``, ``LOAD``), ``InputError`` for a bad graph file or bound
value. pyoxigraph runs ``SERVICE`` and ``LOAD`` by sending an HTTP request and has no switch to
turn that off, so :func:`vet` reads the query text first (a small SPARQL lexer) and refuses
them unless the target host is allowed.

>>> import pyoxigraph as ox
>>> execute_query(ox.Store(), "ASK { ?s ?p ?o }").body
b'{"head":{},"boolean":false}'
>>> execute_query(ox.Store(), "SELECT * { SERVICE <http://127.0.0.1/x> { ?s ?p ?o } }")
... # doctest: +ELLIPSIS
Traceback (most recent call last):
...
kg.errors.RefusedQueryError: SERVICE <http://127.0.0.1/x> refused: ...
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyoxigraph as ox

from kg.data import data_dir
from kg.errors import InputError, NotAcceptableError, QueryError, RefusedQueryError
from kg.exports import graph_file
from kg.project import is_project, open_generation, open_project
from kg.rdf import PREFIXES

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
    for media in _by_preference(accept):
        if media in ("*/*", "application/*", "text/*"):
            return DEFAULT_FORMAT[kind]
        name = _MEDIA.get(media)
        if name and FORMATS[name][2] == kind:
            return name
    return None


def _by_preference(accept: str) -> list[str]:
    """An Accept header's media types, highest q-value first (ties in header order); those
    with q=0 (or a q that is not a number) left out.

    >>> _by_preference("text/csv;q=0.5, application/json, text/plain;q=0")
    ['application/json', 'text/csv']
    """
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
    return [media for _, _, media in sorted(ranked)]


# ---------------------------------------------------------------- vetting (a SPARQL lexer)

# One token per match, tried in this order. Only what can hide code matters for vetting:
# comments, strings (short and triple-quoted, backslash escapes) and IRIREFs as the SPARQL
# grammar defines them; a word swallows PN_LOCAL escapes (``ex:a\#b``, ``ex:a\'b``) so that
# neither starts a comment or a string. Anything this lexer reads as code that pyoxigraph
# reads otherwise is a syntax error there, so vetting errs only towards refusing.
_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\r\n]*)
  | (?P<string>\"\"\"(?:[^"\\]++|\\.|"(?!""))*+\"\"\"|'''(?:[^'\\]++|\\.|'(?!''))*+'''
              |"(?:[^"\\\r\n]++|\\.)*+"|'(?:[^'\\\r\n]++|\\.)*+')
  | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
  | (?P<var>[?$][\w\u00b7\u0300-\u036f\u203f\u2040]+)
  | (?P<word>(?:[\w:]|[^\x00-\x7f])(?:[\w:.%-]++|\\.|[^\x00-\x7f]++)*+)
  | (?P<punct>.)
""", re.VERBOSE | re.DOTALL)


def tokens(text: str) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` for each token of a SPARQL query or update, comments and spaces dropped.

    Kinds: string, iri, var, word (keywords, prefixed names, numbers) and punct.

    >>> [t for _, t in tokens('SELECT ?service { ex:service <x> "SERVICE" } # SERVICE')]
    ['SELECT', '?service', '{', 'ex:service', '<x>', '"SERVICE"', '}']
    """
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind not in ("space", "comment"):
            yield kind, match.group()  # type: ignore[misc]


def normalise(text: str) -> str:
    """The query with comments dropped and spacing collapsed (a key for "this query again").

    >>> normalise("SELECT *  # all\\n WHERE {?s ?p ?o}")
    'SELECT * WHERE { ?s ?p ?o }'
    """
    return " ".join(t for _, t in tokens(text))


def _host_allowed(iri: str, allowed: Iterable[str]) -> bool:
    """Whether ``iri`` is http(s) on a host (or host:port) in ``allowed``."""
    try:
        url = urlsplit(iri)
        host, port = url.hostname, url.port or {"http": 80, "https": 443}.get(url.scheme)
    except ValueError:
        return False
    if url.scheme not in ("http", "https") or not host:
        return False
    for entry in allowed:
        want_host, want_port = split_host(entry)
        if want_host == host and want_port in (None, port):
            return True
    return False


def split_host(entry: str) -> tuple[str, int | None]:
    """``HOST`` or ``HOST:PORT`` (IPv6 in brackets, or bare without a port) → (host, port).

    >>> split_host("Example.org"), split_host("[::1]:8080"), split_host("::1")
    (('example.org', None), ('::1', 8080), ('::1', None))
    """
    entry = entry.strip().lower()
    if entry.count(":") > 1 and not entry.startswith("["):
        return entry, None
    url = urlsplit("//" + entry)
    try:
        port = url.port
    except ValueError as exc:
        raise InputError(f"{entry!r}: not HOST or HOST:PORT ({exc})") from exc
    if not url.hostname:
        raise InputError(f"{entry!r}: not HOST or HOST:PORT")
    return url.hostname, port


# Deeper than this, a query is refused before pyoxigraph parses it: its parser recurses once
# a level and overflows the stack (a segmentation fault, not an error) at about 5,000 nested
# parentheses, 3,000 nested group patterns or 10,000 chained "!"; real queries nest a dozen.
MAX_NESTING = 200


def check_nesting(text: str) -> None:
    """QueryError (exit 5, HTTP 400) when brackets nest, or unary operators chain, deeper
    than ``MAX_NESTING``: such a query would crash the query engine, not just fail.

    >>> check_nesting("SELECT * { ?s ?p ?o FILTER((1)) }")
    >>> check_nesting("ASK {" + "OPTIONAL {" * 300 + "}" * 301)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    kg.errors.QueryError: query refused: it nests 301 levels deep ...
    """
    if sum(text.count(c) for c in "({[!+-") <= MAX_NESTING:
        return  # (too few brackets and operators to nest that deep: no need to lex)
    depth = deepest = run = 0
    for kind, tok in tokens(text):
        if kind != "punct":
            run = 0
            continue
        if tok in "({[":
            depth += 1
        elif tok in ")}]":
            depth -= 1
        run = run + 1 if tok in "!+-" else 0
        deepest = max(deepest, depth + run)
    if deepest > MAX_NESTING:
        raise QueryError(f"query refused: it nests {deepest} levels deep (brackets and "
                         f"chained operators), more than the {MAX_NESTING} the query engine "
                         "is kept to (deeper crashes it); flatten it")


def vet(text: str, *, allow_service: Iterable[str] = (), update: bool = False,
        prefixes: dict[str, str] | None = None) -> None:
    """Refuse ``text`` if running it would make kg fetch a URL from a host not allowed.

    A query nested too deep for the engine is refused first (``check_nesting``, a QueryError).
    ``SERVICE <iri>`` and (in an update) ``LOAD <iri>`` send an HTTP request from this machine,
    so a query could reach hosts only this machine can reach. Allowed: a ``SERVICE`` whose
    absolute http(s) IRI names a host (or host:port) in ``allow_service``, and a ``LOAD`` from a
    ``file:`` IRI or such a host. ``SERVICE ?var`` is always refused. pyoxigraph reads keywords
    without a word boundary (``SERVICEex:x{`` is a SERVICE to ``ex:x``), so any word that starts
    with the keyword counts. Raises :class:`RefusedQueryError`.

    >>> vet('SELECT ?service { ?service ex:service "SERVICE <http://x/>" } # SERVICE')
    >>> vet("SELECT * { SERVICE <http://h:8000/q> { ?s ?p ?o } }", allow_service=["h"])
    >>> vet("SELECT * { SERVICE ?where { ?s ?p ?o } }", allow_service=["h"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    kg.errors.RefusedQueryError: SERVICE ?where refused: ...
    """
    check_nesting(text)
    lowered = text.lower()
    if "service" not in lowered and not (update and "load" in lowered):
        return  # the keyword is spelled out in ASCII or pyoxigraph does not read it
    allow_service = list(allow_service)
    toks = list(tokens(text))
    declared = _declared(toks, PREFIXES if prefixes is None else prefixes)
    depth = 0
    for i, (kind, tok) in enumerate(toks):
        if kind == "punct":
            depth += {"{": 1, "}": -1}.get(tok, 0)
        elif kind == "word" and tok.upper().startswith("SERVICE"):
            _vet_service(toks, i, declared, allow_service)
        elif kind == "word" and update and depth == 0 and tok.upper().startswith("LOAD"):
            _vet_load(toks, i, declared, allow_service)


def _declared(toks: list[tuple[str, str]], prefixes: dict[str, str]) -> dict[str, set[str]]:
    """Every IRI each prefix may stand for: kg's (or the given) prefixes and the query's own
    ``PREFIX`` declarations (a name declared twice may be either)."""
    declared: dict[str, set[str]] = {}
    for name, iri in prefixes.items():
        declared.setdefault(name, set()).add(iri)
    for i, (kind, tok) in enumerate(toks):
        if kind != "word" or not tok.upper().startswith("PREFIX"):
            continue
        rest = tok[6:] or (toks[i + 1][1] if i + 1 < len(toks) else "")
        after = i + (1 if tok[6:] else 2)
        if rest.endswith(":") and after < len(toks) and toks[after][0] == "iri":
            declared.setdefault(rest[:-1], set()).add(toks[after][1][1:-1])
    return declared


def _targets(toks: list[tuple[str, str]], i: int, keyword: str) -> tuple[list[str], int]:
    """The IRIs (every reading) the keyword-led word ``toks[i]`` points at, and the index of
    the token after them."""
    rest = toks[i][1][len(keyword):]
    readings = [rest]
    if rest.upper().startswith("SILENT"):
        readings.append(rest[6:])
    nxt = i + 1
    out: list[str] = []
    for reading in readings:
        if reading:
            out.append(reading)
        elif nxt < len(toks):
            follow = toks[nxt][1]
            if toks[nxt][0] == "word" and follow.upper() == "SILENT":
                nxt += 1
                follow = toks[nxt][1] if nxt < len(toks) else ""
            out.append(follow)
            nxt += 1
        else:
            out.append("")
    return out, nxt


def _resolve(target: str, declared: dict[str, set[str]]) -> list[str | None]:
    """The IRIs ``target`` may stand for (a relative one is refused: it is checked as is,
    not against a BASE); None where it is not an IRI this lexer reads."""
    if target.startswith("<") and target.endswith(">"):
        return [target[1:-1]]
    if ":" in target and not target.startswith(("?", "$")):
        prefix, _, local = target.rstrip(".").partition(":")
        return [ns + local for ns in sorted(declared.get(prefix, ()))] or [None]
    return [None]


def _vet_service(toks: list[tuple[str, str]], i: int, declared: dict[str, set[str]],
                 allow_service: list[str]) -> None:
    """Refuse the SERVICE at ``toks[i]`` unless every reading of its target is allowed."""
    found, nxt = _targets(toks, i, "SERVICE")
    if toks[i][1].upper() != "SERVICE" and not (nxt < len(toks) and toks[nxt][1] == "{"):
        return  # a longer word (e.g. a ``services:`` prefixed name) not before a group
    for target in found:
        if target.startswith(("?", "$")):
            raise RefusedQueryError(
                f"SERVICE {target} refused: a SERVICE whose address is a variable "
                "could reach any host; name the endpoint as an IRI")
        for iri in _resolve(target, declared):
            if iri is None or not _host_allowed(iri, allow_service):
                raise RefusedQueryError(
                    f"SERVICE {target} refused: this endpoint does not send requests to "
                    "other hosts (federated queries are off); "
                    + ("allowed hosts: " + ", ".join(allow_service) if allow_service
                       else "start `kg serve` with --allow-service HOST to allow one"))


def _vet_load(toks: list[tuple[str, str]], i: int, declared: dict[str, set[str]],
              allow_service: list[str]) -> None:
    """Refuse the LOAD at ``toks[i]`` unless it reads a file: IRI or an allowed host."""
    found, _ = _targets(toks, i, "LOAD")
    for target in found:
        for iri in _resolve(target, declared):
            if iri is None or not (iri.lower().startswith("file:")
                                   or _host_allowed(iri, allow_service)):
                raise RefusedQueryError(
                    f"LOAD {target} refused: this endpoint loads only file: IRIs and "
                    "hosts named by --allow-service")


# ---------------------------------------------------------------- running queries

def _term_json(term: Any) -> dict[str, Any]:
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
                  substitutions: dict | None = None,
                  allow_service: Iterable[str] = ()) -> QueryOutput:
    """Vet ``text`` (:func:`vet`), run it on a pyoxigraph ``store`` and serialise the result.

    Raises RefusedQueryError, NotAcceptableError (no acceptable format) or QueryError.

    >>> import pyoxigraph as ox
    >>> out = execute_query(ox.Store(), "ASK { ?s ?p ?o }")
    >>> out.body, out.media_type
    (b'{"head":{},"boolean":false}', 'application/sparql-results+json')
    """
    vet(text, allow_service=allow_service)
    try:
        result = store.query(text, prefixes=PREFIXES, substitutions=substitutions)
        return _serialise(result, requested, accept, max_results)
    except SyntaxError as exc:
        raise QueryError(f"malformed query: {exc}") from exc
    except RuntimeError as exc:  # pyoxigraph: e.g. a bound variable the query does not project
        raise QueryError(f"malformed query: {exc}"
                         + ("; a bound variable must appear in the SELECT clause"
                            if "projection" in str(exc) else "")) from exc
    except (OSError, ValueError) as exc:  # evaluation errors
        raise QueryError(f"query failed: {exc}") from exc


def _serialise(result: Any, requested: str | None, accept: str | None,
               max_results: int) -> QueryOutput:
    kind = "graph" if isinstance(result, ox.QueryTriples) else "results"
    name = choose_format(kind, requested, accept)
    if name is None:
        raise NotAcceptableError(
            f"no acceptable format for a {kind} answer; ask for one of "
            + ", ".join(FORMATS[n][0] for n in FORMATS if FORMATS[n][2] == kind))
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


def run_update(store: Any, text: str, *, allow_service: Iterable[str] = ()) -> None:
    """Vet and apply a SPARQL UPDATE to ``store``; QueryError if it is malformed or fails.

    >>> import pyoxigraph as ox
    >>> store = ox.Store()
    >>> run_update(store, "INSERT DATA { <urn:a> <urn:b> <urn:c> }")
    >>> len(store)
    1
    """
    vet(text, allow_service=allow_service, update=True)
    try:
        store.update(text, prefixes=PREFIXES)
    except SyntaxError as exc:
        raise QueryError(f"malformed update: {exc}") from exc
    except (OSError, RuntimeError, ValueError) as exc:
        raise QueryError(f"update failed: {exc}") from exc


def _first(results: Any, limit: int) -> tuple[list, bool]:
    """At most ``limit`` items of a lazy result, and whether more were left."""
    items = list(itertools.islice(results, limit + 1))
    return items[:limit], len(items) > limit


def load_store(path: str | Path, generation: str | None = None) -> Any:
    """A pyoxigraph Store of the graph at ``path``: a project's on-disk store (read-only,
    opened in milliseconds: the current generation's, or ``generation``'s), or a graph file
    loaded into memory."""
    if Path(path).is_dir():
        if is_project(path):
            return (open_project(path) if generation is None
                    else open_generation(path, generation)).store()
        open_project(path)  # raises, saying how to upgrade an older export directory
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


def writable(store: Any, graph: str | Path) -> Any:
    """``store`` itself when it takes updates, else an in-memory copy: a project's store is
    read-only, so `kg serve --allow-update` changes its own copy, never the project."""
    if not is_project(graph):
        return store
    copy = ox.Store()
    copy.bulk_extend(store.quads_for_pattern(None, None, None, None))
    return copy


def parse_binding(value: str) -> Any:
    """A bound value as a pyoxigraph term — parsed as data, never spliced into a query.

    ``<iri>`` → IRI; ``prefix:name`` with one of kg's prefixes → IRI; an N-Triples literal
    (``"5"^^<…#integer>``, ``"x"@en``; ``^^xsd:…`` allowed) → that literal; anything else →
    a plain string. A malformed value raises InputError.

    >>> parse_binding("quantization")
    <Literal value=quantization datatype=<NamedNode value=http://www.w3.org/2001/XMLSchema#string>>
    >>> parse_binding("kg:Technique")
    <NamedNode value=https://w3id.org/mlkg/ontology#Technique>
    >>> parse_binding('"3"^^xsd:integer').value
    '3'
    """
    text = value.strip()
    if text.startswith("<") and text.endswith(">"):
        try:
            return ox.NamedNode(text[1:-1])
        except ValueError as exc:
            raise InputError(f"bound value {value!r} is not a valid IRI ({exc})") from exc
    prefix, sep, local = text.partition(":")
    if sep and prefix in PREFIXES and local and not local.startswith("//"):
        return ox.NamedNode(PREFIXES[prefix] + local)
    if text.startswith('"'):
        # Let the N-Triples parser read the literal: one triple must come out, or it is refused.
        for name, ns in PREFIXES.items():
            text = text.replace(f"^^{name}:", f"^^<{ns}") if f"^^{name}:" in text else text
        if "^^<" in text and not text.endswith(">"):
            text += ">"
        try:
            triples = list(ox.parse(f"<urn:s> <urn:p> {text} .\n".encode(),
                                    format=ox.RdfFormat.N_TRIPLES))
        except SyntaxError as exc:
            raise InputError(f"bound value {value!r} is not an N-Triples literal ({exc}); "
                             "drop the quotes to pass a plain string") from exc
        if len(triples) != 1 or not isinstance(triples[0].object, ox.Literal):
            raise InputError(f"bound value {value!r} is not a single literal")
        return triples[0].object
    return ox.Literal(value)


def substitutions(bindings: dict[str, str]) -> dict | None:
    """``{name: value}`` (``$name=value`` parameters, ``--bind``) as pyoxigraph substitutions."""
    if not bindings:
        return None
    return {ox.Variable(name): parse_binding(value) for name, value in bindings.items()}


def saved_queries() -> dict[str, str]:
    """The saved queries shipped in sparql/*.rq, by file stem."""
    folder = data_dir("sparql")
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.rq"))}
