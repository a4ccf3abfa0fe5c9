"""The controlled vocabulary: SKOS concept schemes in ``ontology/vocab/*.ttl``.

Each file is one ``skos:ConceptScheme`` carrying ``kg:entityType`` (kg:Technique, kg:Model, …);
every concept has a ``skos:prefLabel``, ``skos:altLabel`` s and optional ``skos:broader``.
``kg:matchable false`` keeps a concept for the hierarchy (roll-ups) without matching its labels,
for words too generic to be evidence on their own ("robustness", "neural network").
The extractor's matcher is built from these files, so adding a term is a TTL edit.

>>> vocab = load_vocabulary()
>>> c = vocab.by_label("Technique", "KV cache")
>>> vocab.concepts[c].pref_label
'KV cache'
>>> any(vocab.concepts[a].pref_label == "caching" for a in vocab.ancestors(c))
True
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kg.data import data_dir
from kg.errors import KgError, VocabularyError
from kg.labels import LabelIndex
from kg.model import ENTITY_TYPES, Concept

BASE = "https://w3id.org/mlkg/"
ONTOLOGY_NS = BASE + "ontology#"
CONCEPT_NS = BASE + "concept/"
ENTITY_NS = BASE + "entity/"
PAPER_NS = BASE + "paper/"

_SKOS = "http://www.w3.org/2004/02/skos/core#"


def ontology_dir() -> Path:
    """Where ``kg.ttl`` and ``vocab/`` live (``kg.data.data_dir("ontology")``)."""
    try:
        folder = data_dir("ontology")
    except KgError as exc:
        raise VocabularyError(str(exc)) from exc
    if not (folder / "vocab").is_dir():
        raise VocabularyError(f"{folder} has no vocab/ folder; reinstall kg")
    return folder


@dataclass(frozen=True)
class Vocabulary:
    """All concepts by IRI, with label lookup and the ``broader`` hierarchy."""

    concepts: dict[str, Concept]

    @functools.cached_property
    def _by_label(self) -> dict[tuple[str, str], str]:
        index: dict[tuple[str, str], str] = {}
        # prefLabels win over altLabels when two concepts share a string.
        for concept in sorted(self.concepts.values(), key=lambda c: c.iri):
            for label in concept.alt_labels:
                index.setdefault((concept.type, label.casefold()), concept.iri)
        for concept in sorted(self.concepts.values(), key=lambda c: c.iri):
            index[(concept.type, concept.pref_label.casefold())] = concept.iri
        return index

    @functools.cached_property
    def _narrower(self) -> dict[str, tuple[str, ...]]:
        children: dict[str, list[str]] = {}
        for concept in self.concepts.values():
            for parent in concept.broader:
                children.setdefault(parent, []).append(concept.iri)
        return {k: tuple(sorted(v)) for k, v in children.items()}

    @functools.cached_property
    def label_index(self) -> LabelIndex:
        """The matcher's label index, built once (the extractor and resolver share it)."""
        return LabelIndex(self)

    def __getstate__(self) -> dict:
        # Not the label tables: a query index keeps its own, and a pickled vocabulary is read
        # by every query (they made it 0.35 MB bigger and `kg shared` 0.01-0.02 s slower).
        return {k: v for k, v in self.__dict__.items() if k != "_label_tables"}

    def label_tables(self) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
        """Every pref/alt label casefolded → as first written (by IRI), and → the IRIs of the
        concepts that have it; made once (a query index starts from them)."""
        return self._label_tables

    @functools.cached_property
    def _label_tables(self) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
        labels: dict[str, str] = {}
        iris: dict[str, set[str]] = {}
        for iri, concept in sorted(self.concepts.items()):
            for label in (concept.pref_label, *concept.alt_labels):
                labels.setdefault(label.casefold(), label)
                iris.setdefault(label.casefold(), set()).add(iri)
        return labels, {k: tuple(sorted(v)) for k, v in iris.items()}

    def by_label(self, type_: str, label: str) -> str | None:
        """The IRI of the concept of ``type_`` whose pref/alt label is ``label`` (any case)."""
        return self._by_label.get((type_, label.casefold()))

    def ancestors(self, iri: str) -> list[str]:
        """Every broader concept, nearest first, without repeats (cycles are tolerated)."""
        out: list[str] = []
        frontier = list(self.concepts[iri].broader) if iri in self.concepts else []
        while frontier:
            nxt = frontier.pop(0)
            if nxt not in out and nxt != iri:
                out.append(nxt)
                frontier.extend(self.concepts[nxt].broader if nxt in self.concepts else ())
        return out

    def closure(self, concepts: Iterable[str]) -> set[str]:
        """The concepts plus all their ancestors (the ones a graph must describe to roll
        facts up the hierarchy); an IRI the vocabulary does not hold is kept as given.

        >>> vocab = load_vocabulary()
        >>> kv = vocab.by_label("Technique", "KV cache")
        >>> sorted(vocab.concepts[c].pref_label for c in vocab.closure([kv]))[:3]
        ['KV cache', 'caching', 'computational efficiency']
        """
        out: set[str] = set()
        for iri in concepts:
            if iri not in out:
                out.add(iri)
                out.update(self.ancestors(iri))
        return out

    def descendants(self, iri: str) -> list[str]:
        """Every narrower concept (transitively), sorted."""
        seen: set[str] = set()
        frontier = [iri]
        while frontier:
            for child in self._narrower.get(frontier.pop(), ()):
                if child not in seen and child != iri:
                    seen.add(child)
                    frontier.append(child)
        return sorted(seen)

    def of_type(self, type_: str) -> list[Concept]:
        return sorted((c for c in self.concepts.values() if c.type == type_), key=lambda c: c.iri)


def parse_vocabulary(paths: Iterable[Path]) -> Vocabulary:
    """Read SKOS files into a Vocabulary; a concept's type comes from its scheme.

    Parsed with pyoxigraph (Rust): every command that loads the vocabulary pays ~50 ms, where
    rdflib's Turtle parser took over a second.
    """
    concepts: dict[str, Concept] = {}
    for path in sorted(paths):
        graph = _triples(path)
        schemes = _schemes(path, graph)
        for subject in sorted(s for s, props in graph.items()
                              if _SKOS + "Concept" in props.get(_RDF_TYPE, ())):
            concept = _concept(path, subject, graph[subject], schemes)
            if subject in concepts:
                raise VocabularyError(f"{path}: concept {subject} is defined twice")
            concepts[subject] = concept
    return Vocabulary(concepts)


_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def _triples(path: Path) -> dict[str, dict[str, set]]:
    """subject → predicate → objects (IRIs as strings; literals as (value, datatype)); sets,
    as a triple stated twice is one triple."""
    import pyoxigraph as ox  # only when the files are parsed: queries read a cached vocabulary

    graph: dict[str, dict[str, set]] = {}
    try:
        for t in ox.parse(path=str(path), format=ox.RdfFormat.TURTLE):
            value = (t.object.value, t.object.datatype.value) if isinstance(
                t.object, ox.Literal) else t.object.value
            graph.setdefault(t.subject.value, {}).setdefault(t.predicate.value, set()).add(value)
    except (SyntaxError, ValueError, OSError) as exc:
        raise VocabularyError(f"{path}: not valid Turtle ({exc}); fix the file") from exc
    return graph


def _schemes(path: Path, graph: dict[str, dict[str, set]]) -> dict[str, str]:
    """Each concept scheme of a file → its entity type."""
    schemes = {s: str(t).removeprefix(ONTOLOGY_NS)
               for s, props in graph.items() for t in props.get(ONTOLOGY_NS + "entityType", ())}
    for scheme, type_ in schemes.items():
        if type_ not in ENTITY_TYPES:
            raise VocabularyError(f"{path}: scheme {scheme} has kg:entityType {type_}; "
                                  f"use one of {', '.join(ENTITY_TYPES)}")
    return schemes


def _first(props: dict, predicate: str):
    values = sorted(props.get(predicate, ()), key=str)
    return values[0] if values else None


def _concept(path: Path, subject: str, props: dict, schemes: dict[str, str]) -> Concept:
    scheme = _first(props, _SKOS + "inScheme")
    if scheme is None or str(scheme) not in schemes:
        raise VocabularyError(
            f"{path}: concept {subject} has no skos:inScheme of a scheme with kg:entityType")
    pref = _first(props, _SKOS + "prefLabel")
    if pref is None:
        raise VocabularyError(f"{path}: concept {subject} has no skos:prefLabel")
    flag = _first(props, ONTOLOGY_NS + "matchable")
    return Concept(
        iri=subject,
        type=schemes[str(scheme)],
        pref_label=pref[0],
        alt_labels=tuple(sorted({v for v, _ in props.get(_SKOS + "altLabel", ())})),
        broader=tuple(sorted(props.get(_SKOS + "broader", ()))),
        matchable=flag is None or flag[0] in ("true", "1"),
    )


_LOADED: dict[Path, tuple[tuple, Vocabulary]] = {}  # directory → (its files' stamps, vocabulary)


def load_vocabulary(directory: Path | None = None) -> Vocabulary:
    """The project's vocabulary (``ontology/vocab/*.ttl``), parsed once per process and again
    when a file changes (a long-lived process that edits the vocabulary builds with the new
    one, as its pipeline version says).

    >>> load_vocabulary() is load_vocabulary()
    True
    """
    directory = Path(directory or ontology_dir() / "vocab")
    paths = sorted(directory.glob("*.ttl"))
    if not paths:
        raise VocabularyError(f"{directory}: no *.ttl vocabulary files found")
    stamps = tuple((path.name, stat.st_mtime_ns, stat.st_size)
                   for path in paths for stat in [path.stat()])
    loaded = _LOADED.get(directory)
    if loaded is None or loaded[0] != stamps:
        _LOADED[directory] = loaded = (stamps, parse_vocabulary(paths))
    return loaded[1]
