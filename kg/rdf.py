"""The Corpus as RDF under ``ontology/kg.ttl``: Turtle, sorted N-Triples and JSON-LD.

Papers, typed entities (linked to their SKOS concept, aliases as ``skos:altLabel``), the
vocabulary's ``skos:broader`` hierarchy for every concept used (and its ancestors), and each
extracted fact both asserted and reified as a ``kg:Assertion`` pointing at its evidence, a
``kg:Sentence`` node written once however many facts cite it (see the PROVENANCE note in
``ontology/kg.ttl``). No blank nodes are made and every writer
works from sorted triples, so exports are byte-identical across runs and ``PYTHONHASHSEED``s.

Triples are made as N-Triples terms, sorted once, and written by small streaming writers
(N-Triples, Turtle, JSON-LD); rdflib's Turtle serializer takes ~10x longer on the full corpus.

>>> from kg.pipeline import run
>>> nt = corpus_ntriples(run(["examples/iclr2025-seed.txt"]))
>>> f"<{paper_iri('p-32f6716951bc')}> <{ONTOLOGY_NS}proposes> <{ENTITY_NS}method/lotos> ." in nt
True
"""

from __future__ import annotations

import hashlib
import heapq
import json
import re
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from datetime import date
from decimal import Decimal
from pathlib import Path
from urllib.parse import quote

from kg.errors import InputError, KgError
from kg.model import ENTITY_TYPES, PREDICATES, Corpus, Entity, Paper, PaperResult, Relation, Span
from kg.vocab import BASE, CONCEPT_NS, ENTITY_NS, ONTOLOGY_NS, PAPER_NS, Vocabulary, load_vocabulary

RDF_NS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS_NS = "http://www.w3.org/2000/01/rdf-schema#"
XSD_NS = "http://www.w3.org/2001/XMLSchema#"
SKOS_NS = "http://www.w3.org/2004/02/skos/core#"
DCTERMS_NS = "http://purl.org/dc/terms/"
PROV_NS = "http://www.w3.org/ns/prov#"
SCHEMA_NS = "https://schema.org/"
ASSERTION_NS = BASE + "assertion/"
SENTENCE_NS = BASE + "sentence/"

# Prefixes written at the top of graph.ttl (sorted there). One per entity/concept type, since
# "entity:technique/x" is not a valid Turtle prefixed name.
PREFIXES: dict[str, str] = {
    "kg": ONTOLOGY_NS,
    "paper": PAPER_NS,
    "assertion": ASSERTION_NS,
    "sentence": SENTENCE_NS,
    "rdf": RDF_NS,
    "rdfs": RDFS_NS,
    "xsd": XSD_NS,
    "skos": SKOS_NS,
    "dcterms": DCTERMS_NS,
    "prov": PROV_NS,
    "schema": SCHEMA_NS,
    **{t.lower(): f"{ENTITY_NS}{t.lower()}/" for t in ENTITY_TYPES},
    **{f"c-{t.lower()}": f"{CONCEPT_NS}{t.lower()}/" for t in ENTITY_TYPES},
}

# SPARQL PREFIX lines for the same prefixes (used by kg sparql and the endpoint's page).
SPARQL_PREFIXES = "".join(f"PREFIX {k}: <{v}>\n" for k, v in sorted(PREFIXES.items()))

_IRI_BAD = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_TYPE = f"<{RDF_NS}type>"


def paper_iri(paper_id: str) -> str:
    """``PAPER_NS`` + the percent-encoded id (ids may be any string, even URLs).

    >>> paper_iri("https://openreview.net/forum?id=x")
    'https://w3id.org/mlkg/paper/https%3A%2F%2Fopenreview.net%2Fforum%3Fid%3Dx'
    """
    return PAPER_NS + quote(paper_id, safe="")


def entity_iri(entity_id: str) -> str:
    """``ENTITY_NS`` + the id; characters outside an IRI path segment are percent-encoded.

    Every export names entities by this (RDF, GraphML, CSV), so one id has one IRI.

    >>> entity_iri("technique/kv-cache"), entity_iri("method/a+b c")
    ('https://w3id.org/mlkg/entity/technique/kv-cache', 'https://w3id.org/mlkg/entity/method/a%2Bb%20c')
    """
    return ENTITY_NS + quote(entity_id, safe="/")


def assertion_iri(paper_id: str, relation: Relation) -> str:
    """A content hash of the fact and its evidence, so re-runs give the same IRI."""
    key = "\x1f".join((paper_id, relation.subject, relation.predicate, relation.object,
                       str(relation.evidence.start), str(relation.evidence.end), relation.rule))
    return ASSERTION_NS + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def sentence_iri(paper_id: str, start: int, end: int) -> str:
    """The evidence sentence ``text[start:end]`` of a paper, from the id and offsets alone.

    Nothing of the run goes in (no counter, no order of facts), so every run and worker count
    gives the same IRI, and all the facts one sentence supports share its node. The id is
    percent-encoded as in ``paper_iri``, which leaves "-" as it is: the offsets are the last two
    "-"-separated parts, so two sentences never share an IRI.

    >>> sentence_iri("p-32f6716951bc", 0, 57)
    'https://w3id.org/mlkg/sentence/p-32f6716951bc-0-57'
    """
    return f"{SENTENCE_NS}{quote(paper_id, safe='')}-{int(start)}-{int(end)}"


def _iri(value: str) -> str:
    if _IRI_BAD.search(value):
        raise KgError(f"{value!r} cannot be written as an IRI (it has spaces or <>\"{{}}|^` "
                      "characters); fix the vocabulary concept or id that produced it")
    return f"<{value}>"


_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r",
            0x22: '\\"', 0x5C: "\\\\"}
# N-Triples escaping as pyoxigraph writes it: named escapes; other C0 controls and DEL as \uXXXX.
_ESCAPE_TABLE = {**{c: f"\\u{c:04X}" for c in (*range(0x20), 0x7F)}, **_ESCAPES}
_UNESCAPE = re.compile(r'\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))')
_UNESCAPE_NAMED = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\",
                   "'": "'"}


def _lit(value: str, datatype: str | None = None, lang: str | None = None) -> str:
    escaped = value.translate(_ESCAPE_TABLE)
    if lang:
        return f'"{escaped}"@{lang}'
    if datatype:
        return f'"{escaped}"^^<{datatype}>'
    return f'"{escaped}"'


def _unescape(text: str) -> str:
    def one(match: re.Match) -> str:
        code = match.group(1) or match.group(2)
        return chr(int(code, 16)) if code else _UNESCAPE_NAMED[match.group(3)]

    return _UNESCAPE.sub(one, text) if "\\" in text else text


def _int(value: int) -> str:
    return f'"{int(value)}"^^<{XSD_NS}integer>'


def _confidence(value: float) -> str:
    # xsd:decimal from the shortest repr, so 0.85 is written as 0.85, not 0.8499999…
    text = format(Decimal(repr(round(float(value), 6))), "f")
    return f'"{text}"^^<{XSD_NS}decimal>'


def _kg(name: str) -> str:
    return f"<{ONTOLOGY_NS}{name}>"


def _paper_triples(paper: Paper) -> Iterator[tuple[str, str, str]]:
    s = _iri(paper_iri(paper.id))
    yield s, _TYPE, _kg("Paper")
    yield s, f"<{DCTERMS_NS}identifier>", _lit(paper.id)
    if paper.title:
        yield s, f"<{DCTERMS_NS}title>", _lit(paper.title)
    if paper.label:
        yield s, f"<{RDFS_NS}label>", _lit(paper.label)
    yield s, f"<{DCTERMS_NS}abstract>", _lit(paper.abstract)
    for author in paper.authors:
        yield s, f"<{DCTERMS_NS}creator>", _lit(author)
    for keyword in paper.keywords:
        yield s, f"<{DCTERMS_NS}subject>", _lit(keyword)
    yield from _metadata_triples(s, paper)


def _metadata_triples(s: str, paper: Paper) -> Iterator[tuple[str, str, str]]:
    """Where and when the paper appeared, its categories and its other ids."""
    for category in paper.categories:  # a subject too, but one a catalogue assigned
        yield s, f"<{DCTERMS_NS}subject>", _lit(category)
        yield s, _kg("category"), _lit(category)
    if paper.venue:
        yield s, _kg("venue"), _lit(paper.venue)
        yield s, f"<{SCHEMA_NS}isPartOf>", _lit(paper.venue)
    issued = _issued(paper)
    if issued is not None:
        yield s, f"<{DCTERMS_NS}issued>", issued
    if paper.url:
        yield s, f"<{SCHEMA_NS}url>", _lit(paper.url, f"{XSD_NS}anyURI")
    for link in paper.links:
        if _LINK.fullmatch(link):  # (a malformed link is left out, never written as an IRI)
            yield s, f"<{SCHEMA_NS}sameAs>", f"<{link}>"


_LINK = re.compile(r'https?://[^\x00-\x20<>"{}|^`\\]+')
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})(?:-([0-9]{2}))?")


def _issued(paper: Paper) -> str | None:
    """``dcterms:issued``, as precise as the paper says: an ``xsd:date`` for a full date, an
    ``xsd:gYearMonth`` for a month, else the year's ``xsd:gYear`` (None without either).

    >>> _issued(Paper("p", "a", year=2024, date="2024-05-01")).split("#")[-1]
    'date>'
    >>> _issued(Paper("p", "a", date="2024-05"))[:9], _issued(Paper("p", "a", year=2024))[:6]
    ('"2024-05"', '"2024"')
    """
    match = _DATE.fullmatch(paper.date or "")
    if match and 1 <= int(match[2]) <= 12:
        if match[3] is None:
            return _lit(paper.date, f"{XSD_NS}gYearMonth")
        try:
            date.fromisoformat(paper.date)
            return _lit(paper.date, f"{XSD_NS}date")
        except ValueError:  # "2024-02-30": keep what is sure, the month
            return _lit(paper.date[:7], f"{XSD_NS}gYearMonth")
    if paper.year is not None:
        return _lit(str(paper.year), f"{XSD_NS}gYear")
    return None


def _entity_triples(entity: Entity) -> Iterator[tuple[str, str, str]]:
    if entity.type not in ENTITY_TYPES:
        raise InputError(f"entity {entity.id} has type {entity.type!r}; expected one of "
                      f"{', '.join(ENTITY_TYPES)} (re-run `kg build` on the inputs)")
    s = _iri(entity_iri(entity.id))
    yield s, _TYPE, _kg(entity.type)
    yield s, _TYPE, _kg("Entity")
    yield s, f"<{DCTERMS_NS}identifier>", _lit(entity.id)
    yield s, f"<{RDFS_NS}label>", _lit(entity.name)
    yield s, f"<{SKOS_NS}prefLabel>", _lit(entity.name)
    for alias in entity.aliases:
        if alias != entity.name:
            yield s, f"<{SKOS_NS}altLabel>", _lit(alias)
    for label in {entity.name.lower(), *(a.lower() for a in entity.aliases)}:
        yield s, _kg("labelKey"), _lit(label)
    if entity.concept:
        yield s, _kg("concept"), _iri(entity.concept)


def _concept_triples(iri: str, vocabulary: Vocabulary) -> Iterator[tuple[str, str, str]]:
    s = _iri(iri)
    yield s, _TYPE, f"<{SKOS_NS}Concept>"
    concept = vocabulary.concepts.get(iri)
    if concept is None:  # an entity read back from JSONL names a concept the vocabulary lacks
        return
    yield s, f"<{SKOS_NS}inScheme>", _iri(f"{CONCEPT_NS}{concept.type.lower()}/")
    yield from scheme_triples(iri, vocabulary)
    yield s, f"<{SKOS_NS}prefLabel>", _lit(concept.pref_label, lang="en")
    for alt in concept.alt_labels:
        yield s, f"<{SKOS_NS}altLabel>", _lit(alt, lang="en")
    for label in {concept.pref_label.lower(), *(a.lower() for a in concept.alt_labels)}:
        yield s, _kg("labelKey"), _lit(label)
    for parent in concept.broader:
        yield s, f"<{SKOS_NS}broader>", _iri(parent)


def _relation_triples(paper: Paper, relation: Relation, entities: dict[str, Entity]
                      ) -> Iterator[tuple[str, str, str]]:
    paper_node = _iri(paper_iri(paper.id))
    if relation.subject == paper.id:
        subject = paper_node
    elif relation.subject in entities:
        subject = _iri(entity_iri(relation.subject))
    else:
        raise InputError(f"paper {paper.id}: relation subject {relation.subject!r} is neither the "
                      "paper nor a known entity; the extraction file is inconsistent — rebuild it")
    if relation.object not in entities:
        raise InputError(f"paper {paper.id}: relation object {relation.object!r} is not a known "
                      "entity; the extraction file is inconsistent — rebuild it")
    if relation.predicate not in PREDICATES:
        # Never paste an unknown predicate into an IRI: `a> <b` would inject a triple.
        raise InputError(f"paper {paper.id}: unknown predicate {relation.predicate!r}; expected "
                         f"one of {', '.join(PREDICATES)}")
    obj = _iri(entity_iri(relation.object))
    pred = _kg(relation.predicate)
    yield subject, pred, obj
    a = _iri(assertion_iri(paper.id, relation))
    yield a, _TYPE, _kg("Assertion")
    yield a, _TYPE, f"<{RDF_NS}Statement>"
    yield a, f"<{RDF_NS}subject>", subject
    yield a, f"<{RDF_NS}predicate>", pred
    yield a, f"<{RDF_NS}object>", obj
    yield a, _kg("evidence"), _iri(sentence_iri(paper.id, relation.evidence.start,
                                                relation.evidence.end))
    yield a, _kg("rule"), _lit(relation.rule)
    yield a, _kg("confidence"), _confidence(relation.confidence)
    yield a, f"<{PROV_NS}wasDerivedFrom>", paper_node


def _sentence_triples(paper: Paper, text: str, evidence: Span
                      ) -> Iterator[tuple[str, str, str]]:
    if text[evidence.start:evidence.end] != evidence.text:
        # The sentence's IRI is made from the offsets alone: a text that is not the paper's at
        # those offsets would give one sentence node two texts.
        raise InputError(f"paper {paper.id}: evidence {evidence.text[:40]!r} is not the paper's "
                         f"text at {evidence.start}-{evidence.end}; the extraction file is "
                         "inconsistent — rebuild it")
    s = _iri(sentence_iri(paper.id, evidence.start, evidence.end))
    yield s, _TYPE, _kg("Sentence")
    yield s, _kg("text"), _lit(evidence.text)
    yield s, _kg("start"), _int(evidence.start)
    yield s, _kg("end"), _int(evidence.end)
    # kg.project removes a paper with every node derived from it: its sentences go too.
    yield s, f"<{PROV_NS}wasDerivedFrom>", _iri(paper_iri(paper.id))


Triple = tuple[str, str, str]  # N-Triples terms: "<iri>" or a literal


def corpus_triples(corpus: Corpus, vocabulary: Vocabulary | None = None,
                   extra: Iterable[Triple] = ()) -> list[Triple]:
    """Every triple of the corpus graph as N-Triples terms, de-duplicated and sorted, with
    ``extra`` ones (a project adds its derived facts, ``kg.derived.derived_triples``).

    Sorting the (s, p, o) tuples gives the same order as sorting the N-Triples lines: IRIs end
    in ">" and cannot contain it, so no subject or predicate is a prefix of another.

    >>> from kg.model import Corpus
    >>> corpus_triples(Corpus(()))
    []
    """
    vocabulary = vocabulary or load_vocabulary()
    # Grouped by subject, so the sort is of ~100k subjects and small groups, not 800k triples
    # sharing long IRI prefixes; the result is the same as sorting all (s, p, o) tuples.
    graph: dict[str, set[tuple[str, str]]] = {}

    def add(triples: Iterable[Triple]) -> None:
        for s, p, o in triples:
            group = graph.get(s)
            if group is None:
                graph[s] = group = set()
            group.add((p, o))

    add(partial_triples(corpus, corpus.results, corpus.entities.values(),
                        concepts_described(corpus, vocabulary), vocabulary))
    add(extra)
    return [(s, p, o) for s in sorted(graph) for p, o in sorted(graph[s])]


def concepts_described(corpus: Corpus, vocabulary: Vocabulary) -> set[str]:
    """The concepts the graph describes: those of its entities and all their broader ones."""
    return vocabulary.closure(e.concept for e in corpus.entities.values() if e.concept)


def partial_triples(corpus: Corpus, results: Iterable[PaperResult], entities: Iterable[Entity],
                    concepts: Iterable[str], vocabulary: Vocabulary) -> list[Triple]:
    """The triples describing ``results``, ``entities`` and ``concepts`` (unsorted, possibly
    repeated): the whole graph when given all of them, a store's delta when given the changed
    ones (kg.project)."""
    out: list[Triple] = []
    mentions, uses = _kg("mentions"), _kg("uses")
    for result in results:
        out.extend(_paper_triples(result.paper))
        text = result.paper.text
        sentences: set[Span] = set()
        for relation in result.relations:
            out.extend(_relation_triples(result.paper, relation, corpus.entities))
            if relation.evidence not in sentences:  # each sentence once, not once per fact
                sentences.add(relation.evidence)
                out.extend(_sentence_triples(result.paper, text, relation.evidence))
        # kg:mentions is the super-property of every paper→entity predicate; it is written for
        # every entity the paper mentions so counting queries need one predicate, not ?p.
        paper_node = _iri(paper_iri(result.paper.id))
        out.extend((paper_node, mentions, _iri(entity_iri(eid)))
                   for eid, _spans in result.mentions if eid in corpus.entities)
        # kg:uses likewise for the entities the paper uses, not only mentions.
        out.extend((paper_node, uses, _iri(entity_iri(eid)))
                   for eid in result.used_ids if eid in corpus.entities)
    for entity in entities:
        out.extend(_entity_triples(entity))
    for iri in concepts:
        out.extend(_concept_triples(iri, vocabulary))
    return out


def scheme_triples(iri: str, vocabulary: Vocabulary) -> tuple[Triple, ...]:
    """The triples of the concept scheme ``iri`` belongs to (shared by all its concepts)."""
    concept = vocabulary.concepts.get(iri)
    if concept is None:
        return ()
    scheme = _iri(f"{CONCEPT_NS}{concept.type.lower()}/")
    return ((scheme, _TYPE, f"<{SKOS_NS}ConceptScheme>"),
            (scheme, _kg("entityType"), _kg(concept.type)))


def triples_to_ntriples(triples: list[Triple]) -> str:
    """N-Triples text, one line per (sorted) triple."""
    return "".join([f"{s} {p} {o} .\n" for s, p, o in triples])


class SortedNTriples:
    """Sorted, de-duplicated N-Triples for graphs too big to hold: triples come in any order
    (``add``), are sorted a run of ``run_lines`` at a time into files under ``scratch``, and
    ``write`` merges the runs. The bytes are those of ``corpus_ntriples`` on the same triples
    (UTF-8 byte order is code point order, and line order is tuple order). Memory: one run,
    then a 1 MB read buffer per run while merging (about 100 runs at 100,000 papers).

    >>> import tempfile
    >>> lines = SortedNTriples(Path(tempfile.mkdtemp()), run_lines=2)
    >>> lines.add([("<b>", "<p>", '"2"'), ("<a>", "<p>", "<c>")])
    >>> lines.add([("<a>", "<p>", "<c>"), ("<a>", "<p>", '"1"')])
    >>> out = Path(tempfile.mkdtemp()) / "g.nt"
    >>> lines.write(out), out.read_text()
    (3, '<a> <p> "1" .\\n<a> <p> <c> .\\n<b> <p> "2" .\\n')
    """

    def __init__(self, scratch: Path, run_lines: int = 250_000) -> None:
        self.scratch, self.run_lines = Path(scratch), run_lines
        self.lines: set[bytes] = set()
        self.runs: list[Path] = []

    def add(self, triples: Iterable[Triple]) -> None:
        for s, p, o in triples:
            self.lines.add(f"{s} {p} {o} .\n".encode())
            if len(self.lines) >= self.run_lines:
                self._spill()

    def _spill(self) -> None:
        self.scratch.mkdir(parents=True, exist_ok=True)
        run = self.scratch / f"run-{len(self.runs):06d}.nt"
        with run.open("wb") as fh:
            fh.writelines(sorted(self.lines))
        self.runs.append(run)
        self.lines = set()

    def write(self, path: Path) -> int:
        """Write the sorted lines to ``path`` (removing the runs); returns how many."""

        written = 0
        try:
            with path.open("wb") as out:
                if not self.runs:
                    out.writelines(sorted(self.lines))
                    return len(self.lines)
                self._spill()
                with ExitStack() as files:
                    runs = [files.enter_context(run.open("rb", buffering=1 << 20))
                            for run in self.runs]
                    last = None
                    for line in heapq.merge(*runs):
                        if line != last:  # a line in several runs is written once
                            out.write(line)
                            written += 1
                            last = line
            return written
        finally:
            for run in self.runs:
                run.unlink(missing_ok=True)
            if self.runs:
                self.scratch.rmdir()  # made by _spill, and empty now
            self.runs, self.lines = [], set()


def corpus_ntriples(corpus: Corpus, vocabulary: Vocabulary | None = None) -> str:
    """The corpus graph as N-Triples, lines sorted.

    >>> from kg.model import Corpus
    >>> corpus_ntriples(Corpus(()))
    ''
    """
    return triples_to_ntriples(corpus_triples(corpus, vocabulary))


# A prefixed name's local part we are sure Turtle accepts (PN_LOCAL, conservatively).
_LOCAL = re.compile(r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
                    r"(?:(?:[A-Za-z0-9_.\-]|%[0-9A-Fa-f]{2})*(?:[A-Za-z0-9_\-]|%[0-9A-Fa-f]{2}))?")
_NS_PREFIX = {ns: prefix for prefix, ns in PREFIXES.items()}
_NUMBER = {f"{XSD_NS}integer": re.compile(r"[+-]?[0-9]+"),
           f"{XSD_NS}decimal": re.compile(r"[+-]?[0-9]*\.[0-9]+")}


def _compact_iri(iri: str) -> str | None:
    cut = max(iri.rfind("/"), iri.rfind("#")) + 1
    prefix = _NS_PREFIX.get(iri[:cut])
    local = iri[cut:]
    if prefix is not None and (local == "" or _LOCAL.fullmatch(local)):
        return f"{prefix}:{local}"
    return None


def _turtle_term(term: str, cache: dict[str, str]) -> str:
    out = cache.get(term)
    if out is not None:
        return out
    if term.startswith("<"):
        out = _compact_iri(term[1:-1]) or term
        cache[term] = out
        return out
    if term.endswith(">") and '"^^<' in term:  # typed literal: compact the datatype
        body, _, datatype = term.rpartition("^^<")
        number = _NUMBER.get(datatype[:-1])
        if number and number.fullmatch(body[1:-1]):
            return body[1:-1]  # Turtle's bare integer / decimal syntax means the same literal
        short = _compact_iri(datatype[:-1])
        return f"{body}^^{short}" if short else term
    return term


def triples_to_turtle(triples: list[Triple]) -> str:
    """Turtle for sorted triples: sorted @prefix lines, then one block per subject.

    Written directly (not by rdflib, ~30x slower here, nor pyoxigraph, whose Python objects
    cost more than the writing) from the same sorted triples as graph.nt.
    """
    cache: dict[str, str] = {f"<{RDF_NS}type>": "a"}
    out = ["".join(f"@prefix {k}: <{v}> .\n" for k, v in sorted(PREFIXES.items()))]
    last_s = last_p = None
    for s, p, o in triples:
        obj = _turtle_term(o, cache)
        if s != last_s:
            if last_s is not None:
                out.append(" .\n")
            out.append(f"\n{_turtle_term(s, cache)} {_turtle_term(p, cache)} {obj}")
            last_s, last_p = s, p
        elif p != last_p:
            out.append(f" ;\n    {_turtle_term(p, cache)} {obj}")
            last_p = p
        else:
            out.append(f" ,\n        {obj}")
    if last_s is not None:
        out.append(" .\n")
    return "".join(out)


def _jsonld_value(term: str) -> dict[str, str]:
    if term.startswith("<"):
        return {"@id": term[1:-1]}
    close = term.rindex('"')
    value: dict[str, str] = {"@value": _unescape(term[1:close])}
    rest = term[close + 1:]
    if rest.startswith("@"):
        value["@language"] = rest[1:]
    elif rest.startswith("^^<"):
        value["@type"] = rest[3:-1]
    return value


def triples_to_jsonld(triples: list[Triple]) -> str:
    """JSON-LD: a ``@graph`` of node objects (absolute IRIs), one per line, in subject order."""
    nodes: list[str] = []
    node: dict[str, object] = {}
    last_s = None
    for s, p, o in triples:
        if s != last_s:
            if node:
                nodes.append(json.dumps(node, ensure_ascii=False))
            node = {"@id": s[1:-1]}
            last_s = s
        if p == _TYPE and o.startswith("<"):
            node.setdefault("@type", []).append(o[1:-1])  # type: ignore[union-attr]
        else:
            node.setdefault(p[1:-1], []).append(_jsonld_value(o))  # type: ignore[union-attr]
    if node:
        nodes.append(json.dumps(node, ensure_ascii=False))
    context = json.dumps(dict(sorted(PREFIXES.items())))
    return '{"@context": ' + context + ',\n "@graph": [\n' + ",\n".join(nodes) + "\n]}\n"


def write_rdf(corpus: Corpus, out_dir: Path, vocabulary: Vocabulary | None = None
              ) -> dict[str, Path]:
    """Write graph.ttl, graph.nt and graph.jsonld into ``out_dir``; returns the paths by format.

    >>> import tempfile
    >>> from kg.pipeline import run
    >>> paths = write_rdf(run(["examples/iclr2025-seed.txt"]), Path(tempfile.mkdtemp()))
    >>> sorted(paths)
    ['jsonld', 'nt', 'ttl']
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    triples = corpus_triples(corpus, vocabulary)
    paths = {"ttl": out_dir / "graph.ttl", "nt": out_dir / "graph.nt",
             "jsonld": out_dir / "graph.jsonld"}
    _write_text(paths["nt"], triples_to_ntriples(triples))
    _write_text(paths["ttl"], triples_to_turtle(triples))
    _write_text(paths["jsonld"], triples_to_jsonld(triples))
    return paths


def corpus_to_graph(corpus: Corpus, vocabulary: Vocabulary | None = None):
    """An rdflib Graph of the corpus (for pyshacl and tests; slow on large corpora)."""
    import rdflib  # (0.3 s: only for a caller that wants an rdflib Graph)

    graph = rdflib.Graph(bind_namespaces="none")
    for prefix, ns in PREFIXES.items():
        graph.bind(prefix, ns)
    graph.parse(data=corpus_ntriples(corpus, vocabulary), format="nt")
    return graph


def _write_text(path: Path, text: str) -> None:
    # newline="" so the bytes are the same on every platform.
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(text)
