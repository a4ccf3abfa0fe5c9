"""A generation's RDF store (pyoxigraph, RocksDB): loaded batch by batch on a first build,
else the previous generation's store checkpointed and brought up to date by a delta.

The delta leaves the store holding exactly what a full load of the new corpus would
(``tests/test_project.py`` compares them): the triples of papers gone or changed are deleted,
those of the papers changed or new loaded, and entities, concepts and entity → entity links
are replaced where their digests changed. The derived facts (``kg.derived``: counts, ranks,
co-occurrences, relatedness weights) depend on the whole corpus: every build computes them from
its new index (``derived_rdf``) and ``update_derived`` writes only the triples that changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from kg import rdf
from kg.derived import DERIVED_NS, DERIVED_PREDICATES, derived_facts, derived_triples
from kg.fs import fsync_tree
from kg.model import Corpus
from kg.project import Manifest
from kg.vocab import Vocabulary

_RELATION_PREDICATES = frozenset(ox.NamedNode(rdf.ONTOLOGY_NS + p) for p in rdf.PREDICATES)


class NewStore:
    """A new on-disk store bulk-loaded a batch of triples at a time (``add``); ``close``
    flushes it and gives its size."""

    def __init__(self, path: Path) -> None:
        self.store, self.path = ox.Store(str(path)), path

    def add(self, triples: Iterable[tuple[str, str, str]]) -> None:
        text = "".join(f"{s} {p} {o} .\n" for s, p, o in triples).encode("utf-8")
        if text:
            self.store.bulk_load(text, format=ox.RdfFormat.N_TRIPLES)

    def close(self, sync: bool = True) -> int:
        self.store.flush()
        size = len(self.store)
        del self.store
        if sync:  # (not after a failure: the first error is the one to tell)
            fsync_tree(self.path)
        return size


def delete_papers(store: ox.Store, papers: Sequence[str]) -> int:
    """Delete the triples of ``papers`` and of their relations' assertions (derived from
    them) from ``store``; returns how many. Matched and deleted in the store, not read into
    Python one quad at a time: 2-3 times faster."""
    removed = 0
    for start in range(0, len(papers), 500):
        chunk = papers[start:start + 500]
        nodes = " ".join(f"<{rdf.paper_iri(pid)}>" for pid in chunk)
        where = (f"{{ VALUES ?s {{ {nodes} }} ?s ?p ?o }} UNION {{ VALUES ?paper {{ {nodes} }} "
                 f"?s <{rdf.PROV_NS}wasDerivedFrom> ?paper . ?s ?p ?o }}")
        (row,) = store.query("SELECT (COUNT(*) AS ?n) WHERE { SELECT DISTINCT ?s ?p ?o "
                             f"WHERE {{ {where} }} }}")
        removed += int(row["n"].value)
        store.update(f"DELETE {{ ?s ?p ?o }} WHERE {{ {where} }}")
    return removed


def store_without(previous: Path, path: Path, papers: Sequence[str]) -> int:
    """Checkpoint the store at ``previous`` into ``path`` without the triples of ``papers``
    (``delete_papers``); returns how many it dropped. ``store_delta`` syncs it later."""
    ox.Store.read_only(str(previous)).backup(str(path))
    store = ox.Store(str(path))
    removed = delete_papers(store, papers)
    store.flush()
    del store
    return removed


def _changed(before: Mapping[str, str], now: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The keys whose digest is gone or changed, and those new or changed."""
    return ([k for k, d in before.items() if now.get(k) != d],
            [k for k, d in now.items() if before.get(k) != d])


def _doomed_links(store: ox.Store, links: tuple[tuple[str, str, str], ...],
                  current: Manifest) -> tuple[list, set[tuple[str, str, str]]]:
    """Entity → entity relations ("A outperforms B") may be asserted by several papers: the
    store keeps exactly those some paper of the new corpus asserts. The quads to delete, and
    the links to add."""
    def iris(found):
        return {(rdf.entity_iri(s), p, rdf.entity_iri(o)) for s, p, o in found}

    wanted = iris(links)
    if current.links is not None:
        had = iris(current.links)
        return ([ox.Quad(ox.NamedNode(s), ox.NamedNode(rdf.ONTOLOGY_NS + p), ox.NamedNode(o))
                 for s, p, o in sorted(had - wanted)], wanted - had)
    doomed = []  # an older manifest: find them in the store
    for predicate in sorted(_RELATION_PREDICATES, key=str):
        for q in store.quads_for_pattern(None, predicate, None, None):
            if (q.subject.value.startswith(rdf.ENTITY_NS) and
                    (q.subject.value, predicate.value.removeprefix(rdf.ONTOLOGY_NS),
                     q.object.value) not in wanted):
                doomed.append(q)
    return doomed, wanted


def _remove(store: ox.Store, doomed: Iterable) -> int:
    """Remove the quads ``doomed`` the store holds; returns how many."""
    removed = 0
    for quad in {ox.Quad(q.subject, q.predicate, q.object) for q in doomed}:
        if quad in store:
            store.remove(quad)
            removed += 1
    return removed


def _insert(store: ox.Store, triples: list[tuple[str, str, str]]) -> int:
    """Add ``triples``; returns how many the store did not hold."""
    # The nodes of the papers changed (each paper, its assertions and sentences) are new: all
    # their triples were deleted before. Their lines are loaded as they are, each once (the
    # store parses and inserts them without a Python object per quad: 0.03 s, not 0.1 s).
    own = tuple(f"<{ns}" for ns in (rdf.PAPER_NS, rdf.ASSERTION_NS, rdf.SENTENCE_NS))
    fresh = {f"{s} {p} {o} .\n" for s, p, o in triples if s.startswith(own)}
    added = 0
    if fresh:
        store.load(input="".join(fresh).encode("utf-8"), format=ox.RdfFormat.N_TRIPLES)
        added += len(fresh)
    rest = [f"{s} {p} {o} .\n" for s, p, o in triples if not s.startswith(own)]
    if rest:  # these may be in the store already
        new = [q for q in {q for q in ox.parse(input="".join(rest).encode("utf-8"),
                                               format=ox.RdfFormat.N_TRIPLES)}
               if q not in store]
        store.extend(new)
        added += len(new)
    return added


def store_delta(path: Path, early: frozenset[str], entities: dict,
                results: Mapping[str, Any], vocab: Vocabulary, current: Manifest,
                paper_digests: dict[str, str], entity_digests: dict[str, str],
                concepts: tuple[str, ...], links: tuple[tuple[str, str, str], ...]) -> int:
    """Bring the checkpoint of the previous store at ``path`` (``store_without`` dropped the
    papers ``early``) to what a full load of the new corpus would hold: the changed papers,
    entities and concepts replaced. ``results`` hold (at least) every paper whose digest
    changed. Returns how many triples it added less how many it deleted."""
    store = ox.Store(str(path))
    gone_papers, new_papers = _changed(current.paper_digests, paper_digests)
    gone_entities, new_entities = _changed(current.entity_digests, entity_digests)
    # The size is counted as it changes (len() of a store scans it: 0.17 s at 4,870 papers).
    # The papers' and their relations' own nodes are the subjects of what delete_papers
    # deletes, so nothing is counted again below.
    size = -delete_papers(store, [p for p in gone_papers if p not in early])
    doomed: list = []
    for eid in gone_entities:  # its own description; relations it is the subject of below
        node = ox.NamedNode(rdf.entity_iri(eid))
        doomed.extend(q for q in store.quads_for_pattern(node, None, None, None)
                      if q.predicate not in _RELATION_PREDICATES)
    for iri in sorted(set(current.concepts) - set(concepts)):
        doomed.extend(store.quads_for_pattern(ox.NamedNode(iri), None, None, None))
    unlinked, wanted = _doomed_links(store, links, current)
    doomed.extend(unlinked)
    schemes = {iri: rdf.scheme_triples(iri, vocab) for iri in {*current.concepts, *concepts}}
    old_schemes = {t for iri in current.concepts for t in schemes[iri]}
    new_schemes = {t for iri in concepts for t in schemes[iri]}
    lines = [f"{s} {p} {o} .\n" for s, p, o in old_schemes - new_schemes]
    if lines:
        doomed.extend(ox.parse(input="".join(lines).encode(), format=ox.RdfFormat.N_TRIPLES))
    size -= _remove(store, doomed)
    triples = rdf.partial_triples(
        Corpus((), entities), [results[p] for p in new_papers],
        [entities[e] for e in new_entities], sorted(set(concepts) - set(current.concepts)),
        vocab)
    triples.extend(sorted(new_schemes - old_schemes))
    triples.extend(sorted((f"<{s}>", f"<{rdf.ONTOLOGY_NS}{p}>", f"<{o}>")
                          for s, p, o in wanted))
    size += _insert(store, triples)
    store.flush()
    del store
    fsync_tree(path)  # here, often beside other work, rather than at the commit
    return size


def derived_rdf(index) -> list[tuple[str, str, str]]:
    """The derived facts of a generation, from its stored query index (``stored_index``), as
    sorted N-Triples terms (computed from the index, as the CLI's answers are)."""
    return sorted(set(derived_triples(derived_facts(index, k=0))))


_DERIVED_NOW = f"""CONSTRUCT {{ ?s ?p ?o }} WHERE {{
  {{ VALUES ?p {{ {" ".join(f"<{p}>" for p in DERIVED_PREDICATES)} }} ?s ?p ?o }}
  UNION {{ VALUES ?c {{ <{rdf.ONTOLOGY_NS}Cooccurrence> <{rdf.ONTOLOGY_NS}Relatedness> }}
           ?s a ?c ; ?p ?o . FILTER(STRSTARTS(STR(?s), "{DERIVED_NS}")) }} }}"""


def derived_held(path: Path) -> set[str]:
    """The derived facts the store at ``path`` holds, as N-Triples lines (0.4 s at 4,870
    papers: an incremental build reads them once its delta is done, while the index is
    still being written)."""
    store = ox.Store(str(path))
    return set(store.query(_DERIVED_NOW).serialize(format=ox.RdfFormat.N_TRIPLES)
               .decode("utf-8").splitlines(keepends=True))


# What ``keep_derived_held`` read, by store path, for the ``update_derived`` that follows in
# the same process (the build's worker runs what it is given in turn): kept here, not sent to
# the build process and back (5 MB at 4,870 papers, ~100 MB each way at 100,000).
_HELD: dict[str, set[str]] = {}


def keep_derived_held(path: Path) -> None:
    """Read the derived facts the store at ``path`` holds now (``derived_held``) for the next
    ``update_derived`` of it in this process."""
    _HELD[str(path)] = derived_held(path)


def update_derived(path: Path, triples: list[tuple[str, str, str]]) -> int:
    """Make the derived facts of the store at ``path`` exactly ``triples`` (``derived_rdf``):
    the ones no longer true are removed and the new ones added, so a fact that did not change
    costs nothing. Those it holds are what ``keep_derived_held`` read, else read now. Returns
    how many triples it added less how many it removed."""
    held = _HELD.pop(str(path), None)
    if held is None:
        held = derived_held(path)
    store = ox.Store(str(path))
    wanted = {f"{s} {p} {o} .\n" for s, p, o in triples}
    gone, new = held - wanted, wanted - held
    # One update per 5,000 lines, not a transaction per quad (store.remove): most facts
    # change on every build (IDF weights, ranks, positions), 20,000 lines at 4,870 papers.
    gone_lines = sorted(gone)
    for start in range(0, len(gone_lines), 5000):
        store.update("DELETE DATA { " + "".join(gone_lines[start:start + 5000]) + " }")
    if new:  # (bulk_load: no transaction to build, 0.07 s of 0.26 s; the generation is new)
        store.bulk_load(input="".join(sorted(new)).encode("utf-8"),
                        format=ox.RdfFormat.N_TRIPLES)
    store.flush()
    del store
    fsync_tree(path)
    return len(new) - len(gone)
