"""Writing one generation of a project: each paper's index rows, state, extraction.jsonl line
and triples, then the corpus-wide index, the store and the exports.

Papers flow through in batches: each result becomes its index rows, its state, its
extraction.jsonl line and (for a new store, and a streamed graph.nt) its triples, then is
dropped, so a build never holds every result (unless a file other than extraction.jsonl and
graph.nt needs them all). A paper whose result is unchanged since the current generation
(same digest) is not rebuilt at all: its index rows are copied, its line reused
(re-rendered when one of its entities changed).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field, fields, replace
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple

from kg import io, rdf
from kg.analysis.index import (
    PaperPart,
    ancestor_depths,
    concept_entities,
    paper_features,
    paper_part,
)
from kg.analysis.related_all import related_all
from kg.analysis.stored import IndexWriter, clusters_rows
from kg.derived import RELATED_K
from kg.errors import KgError, ProjectError
from kg.exports import RDF_FILES, write_exports
from kg.fs import write_json
from kg.model import Corpus, Entity, Paper, PaperResult
from kg.project import (
    JSONL,
    LINE_INDEX,
    RELATED,
    Manifest,
    line_spans,
    stored_index,
    stored_map_source,
)
from kg.project.beside import wait
from kg.project.cache import Resolved, chunked
from kg.project.store import (
    NewStore,
    derived_rdf,
    keep_derived_held,
    store_delta,
    update_derived,
)
from kg.viz.map import MAP_MIN_PAPERS, RELATED_MAX_PAPERS

# Lines of graph.nt sorted in memory at a time when it is streamed (about 60 MB of them).
NT_RUN_LINES = 250_000


def digest(value: object) -> str:
    # repr of the frozen dataclasses is complete and deterministic (fields in order).
    return hashlib.sha1(repr(value).encode("utf-8")).hexdigest()[:20]


class State(NamedTuple):
    """What a generation keeps of one paper beyond the index rows, so the next build reuses
    it while the paper's result is unchanged (plain tuples: fast to read back)."""

    paper: tuple  # the Paper's fields, as resolved (with its label; no abstract if titled)
    counted: tuple[str, ...]  # entity ids it counts for (kg.analysis.PaperPart.counted)
    links: tuple[tuple[str, str, str], ...]  # entity → entity relations it asserts
    predicates: tuple[tuple[str, int], ...]  # its relations per predicate
    mentioned: tuple[str, ...]  # entity ids its extraction.jsonl line describes
    features: dict  # its index features (kg.analysis.paper_features), as last computed


_PAPER_FIELDS = tuple(f.name for f in fields(Paper))


def state_of(result: PaperResult, part: PaperPart, features: dict) -> State:
    # The corpus-wide steps read a paper's title and label (the abstract only names an
    # untitled, unlabelled paper): a state without it is a fifth of the size.
    paper = part.paper if not (part.paper.title or part.paper.label) else replace(
        part.paper, abstract="")
    return State(tuple(getattr(paper, f) for f in _PAPER_FIELDS), part.counted,
                 links_of(result),
                 tuple(sorted(Counter(r.predicate for r in result.relations).items())),
                 result.entity_ids, features)


def links_of(result: PaperResult) -> tuple[tuple[str, str, str], ...]:
    """The entity → entity relations a paper's result asserts."""
    return tuple(sorted({(r.subject, r.predicate, r.object) for r in result.relations
                         if r.subject != result.paper.id}))


class Previous:
    """The previous generation's per-paper states, and where each paper's extraction.jsonl
    line lies in its file (reused lines are copied by byte range, never read into memory)."""

    def __init__(self, gen: Path, manifest: Manifest) -> None:
        self.gen, self.manifest = gen, manifest
        self.states: dict[str, State] = {}
        self.spans: dict[str, tuple[int, int]] = {}
        try:
            db = sqlite3.connect(f"file:{gen / 'index.sqlite'}?mode=ro", uri=True)
            try:
                self.states = {k: pickle.loads(v) for k, v in db.execute("SELECT k, v FROM state")}
            finally:
                db.close()
        except sqlite3.Error:  # a generation from before states were kept: nothing reused
            return
        if JSONL in manifest.written:
            self.spans = line_spans(gen, manifest)

    def _concepts_before(self, changed: set[str]) -> tuple[dict, dict[str, str | None]]:
        """The previous concept → entity table, and the concept of each entity ``changed``."""
        db = sqlite3.connect(f"file:{self.gen / 'index.sqlite'}?mode=ro", uri=True)
        try:
            (blob,) = db.execute("SELECT v FROM meta WHERE k = 'table:concept_entity'"
                                 ).fetchone()
            before: dict[str, str | None] = {}
            for chunk in chunked(sorted(changed), 500):
                before.update((k, pickle.loads(v).concept) for k, v in db.execute(
                    f"SELECT k, v FROM entities WHERE k IN ({','.join('?' * len(chunk))})",
                    chunk))
            return pickle.loads(blob), before
        finally:
            db.close()

    def stale_features(self, entities: dict, renamed: set[str], concept_entity: dict[str, str],
                       vocab, depths: dict[str, dict[str, int]]
                       ) -> Callable[[Sequence[str]], bool]:
        """A test of a reused paper's counted entities: True when its stored features may
        differ today (an entity's concept changed, or which entity stands for one of their
        broader concepts). ``renamed``: the entities new or changed since this generation."""
        # Only the entities new, changed or gone may have another concept: theirs are read,
        # not all 7,000 of a conference.
        changed = renamed | (self.manifest.entity_digests.keys() - entities.keys())
        was, before = self._concepts_before(changed)
        moved = {iri for iri in was.keys() | concept_entity.keys()
                 if was.get(iri) != concept_entity.get(iri)}
        hit: dict[str, bool] = {}

        def moved_above(concept: str) -> bool:
            if concept not in hit:
                if concept not in depths:
                    depths[concept] = ancestor_depths(vocab, concept)
                hit[concept] = not moved.isdisjoint(depths[concept])
            return hit[concept]

        def stale(counted: Sequence[str]) -> bool:
            for eid in counted:
                concept = entities[eid].concept if eid in entities else None
                if eid in changed and before.get(eid) != concept:
                    return True
                if concept and moved_above(concept):
                    return True
            return False

        return stale

    def reusable(self, pid: str, digest: str, need_line: bool) -> bool:
        return (pid in self.states and self.manifest.paper_digests.get(pid) == digest
                and (pid in self.spans or not need_line))


class Lines:
    """extraction.jsonl of a generation: rebuilt papers' lines appended to a scratch file as
    they come (``add``), then the whole file assembled in id order by copying byte ranges
    from the scratch file and the previous generation's file (``assemble``)."""

    def __init__(self, path: Path) -> None:
        self.path, self.fh = path, path.open("wb")
        self.spans: dict[str, tuple[int, int]] = {}
        self.size = 0

    def add(self, pid: str, line: bytes) -> None:
        self.spans[pid] = (self.size, len(line))
        self.fh.write(line)
        self.size += len(line)

    def assemble(self, target: Path, order: Sequence[str], previous: Previous | None,
                 as_is: Callable[[str], bool], entities: dict) -> None:
        """Write ``target`` with the line of each paper of ``order``: its new line, else its
        previous line (re-rendered by ``io.renamed_line`` unless ``as_is(pid)``). Writes
        ``lines.idx`` beside it (each line's end offset), which the next build reads."""
        self.fh.close()
        try:
            if list(self.spans) == list(order):  # every line is new, in order: the file is it
                os.replace(self.path, target)
                ends = list(_ends(length for _, length in self.spans.values()))
            else:
                ends = self._splice(target, order, previous, as_is, entities)
        finally:
            self.path.unlink(missing_ok=True)
        io.write_offsets(target.parent / LINE_INDEX, ends)

    def _splice(self, target: Path, order: Sequence[str], previous: Previous | None,
                as_is: Callable[[str], bool], entities: dict) -> list[int]:
        old = (previous.gen / JSONL) if previous else None
        # Written in place: nobody reads the generation before its commit, which syncs it
        # (the caller starts that sooner).
        with target.open("wb") as out, self.path.open("rb") as new, \
                (old.open("rb") if old else contextlib.nullcontext()) as was:
            # [source, offset, length] with contiguous ranges merged, or [None, the
            # re-rendered line, its length]
            runs: list[list] = []
            lengths = []
            for pid in order:
                if pid in self.spans:
                    source, (offset, length) = new, self.spans[pid]
                elif as_is(pid):
                    source, (offset, length) = was, previous.spans[pid]
                else:
                    offset, length = previous.spans[pid]
                    line = io.renamed_line(os.pread(was.fileno(), length, offset), entities)
                    source, offset, length = None, line, len(line)
                lengths.append(length)
                if (source is not None and runs and runs[-1][0] is source
                        and sum(runs[-1][1:]) == offset):
                    runs[-1][2] += length
                else:
                    runs.append([source, offset, length])
            for source, offset, length in runs:
                if source is None:
                    out.write(offset)
                else:
                    _copy_range(source, out, offset, length)
        return list(_ends(lengths))


def _ends(lengths: Iterable[int]) -> Iterable[int]:
    total = 0
    for length in lengths:
        total += length
        yield total


def _copy_range(source, out, offset: int, length: int) -> None:
    """Append ``length`` bytes of ``source`` from ``offset`` to ``out`` (in the kernel when it
    can: no copy through Python)."""
    out.flush()
    while length > 0:
        try:
            n = os.copy_file_range(source.fileno(), out.fileno(), length, offset)
        except (AttributeError, OSError):  # no copy_file_range here, or across file systems
            n = out.write(os.pread(source.fileno(), min(length, 1 << 24), offset))
            out.flush()
        if n == 0:
            raise ProjectError(f"{source.name}: shorter than its index says; run `kg build` "
                               "again with all the inputs")
        offset += n
        length -= n


def stored_related(index_path: Path) -> dict[str, list]:
    """Each paper's first ``kg.derived.RELATED_K`` related papers as ``kg related`` ranks them
    (``kg.analysis.related_all``) over a generation's stored index, kept beside the index
    (``RELATED``): the technique map lists the first five, a Neo4j load writes them all
    (``Project.related``; ranking them again took 1.6 s of every load at 4,870 papers)."""
    ranked = related_all(stored_index(index_path), RELATED_K)
    with (index_path.parent / RELATED).open("wb") as fh:
        pickle.dump((RELATED_K, ranked), fh, protocol=pickle.HIGHEST_PROTOCOL)
    return ranked


# ------------------------------------------------------------------ one generation


@dataclass(frozen=True)
class Job:
    """What generation ``number`` is to hold, and where it goes. ``previous`` is the current
    generation when its store can take a delta (the same pipeline)."""

    gen: Path
    number: int
    pipeline: str
    keys: dict[str, str]
    asked: tuple[str, ...]
    chosen: tuple[str, ...]
    current: Manifest | None
    previous: Previous | None
    inputs: Sequence[str | Path] = ()
    step: Callable[[str], None] = lambda name: None


@dataclass
class _Tally:
    """What the corpus-wide steps need of each paper, not its whole state: a build holds
    these for every paper (the states themselves go to the index as they come)."""

    light: dict[str, PaperPart] = field(default_factory=dict)
    features: dict[str, dict] = field(default_factory=dict)
    links: set[tuple[str, str, str]] = field(default_factory=set)
    predicates: dict[str, int] = field(default_factory=dict)

    def keep(self, pid: str, state: State, links: bool) -> None:
        self.light[pid] = PaperPart(Paper(*state.paper), {}, {}, frozenset(), state.counted)
        self.features[pid] = state.features
        if links:
            self.links.update(state.links)
        for name, n in state.predicates:  # (Counter.update of a dict: 3 times slower)
            self.predicates[name] = self.predicates.get(name, 0) + n

    def in_order(self, order: Sequence[str]) -> None:
        self.light = {pid: self.light[pid] for pid in order}
        self.features = {pid: self.features[pid] for pid in order}


class _Writer:
    """The steps of writing one generation (``write_generation``), with what they share."""

    def __init__(self, job: Job, resolved: Resolved) -> None:
        self.job, self.resolved = job, resolved
        self.vocab, self.entities = resolved.vocab, resolved.entities
        self.entity_digests = {eid: digest(e) for eid, e in sorted(self.entities.items())}
        self.concepts = tuple(sorted(rdf.concepts_described(Corpus((), self.entities),
                                                            self.vocab)))
        chosen = set(job.chosen)
        # graph.nt is streamed through an external sort unless Turtle or JSON-LD (written
        # from every triple at once) are asked for too: holding them took 4.7 GB at 20,000
        # papers.
        self.stream_nt = "graph.nt" in chosen and not {"graph.ttl", "graph.jsonld"} & chosen
        # graph.html's technique map is drawn from the index written first (its panels
        # streamed from the per-paper rows), not from every result: at 20,000 papers the
        # corpus and an index built over it took 700 MB.
        self.stored_map = len(resolved.order) > MAP_MIN_PAPERS
        # Other files are written from every paper's result at once.
        self.corpus = (resolved.corpus() if chosen - {JSONL}
                       - ({"graph.nt"} if self.stream_nt else set())
                       - ({"graph.html"} if self.stored_map else set()) else None)
        # extraction.jsonl is assembled from lines, the unchanged papers' copied by byte range,
        # even when the corpus is loaded for another file (graph.html above 2,000 papers):
        # writing it whole from the corpus cost 0.55 s of CPU of every 50-paper add.
        need_lines = JSONL in chosen
        previous = job.previous
        self.reuse = {pid for pid in resolved.order if previous and previous.reusable(
            pid, resolved.digests[pid], need_lines)}
        self.concept_entity = concept_entities(self.entities)
        self.depths: dict[str, dict[str, int]] = {}
        self.tally = _Tally()
        # Rebuilt papers' lines go to a scratch file as they come (a build never holds them).
        self.lines = Lines(job.gen / "lines.new") if need_lines else None
        self.changed: dict[str, PaperResult] = {}  # of papers whose digest changed
        self.links_now: tuple[tuple[str, str, str], ...] = ()
        self.ranked: Callable[[], dict] | None = None  # the map's related papers, from beside
        # The index just written, read once for the derived facts and the map (what they both
        # read, such as the entities and their papers, is read once: 0.35 s less CPU of each
        # 50-paper add or remove at 4,870 papers).
        self.index_read = None
        self.renamed = {eid for eid, d in self.entity_digests.items()  # (all: a first build)
                        if job.current is None or job.current.entity_digests.get(eid) != d}

    def open_index(self) -> IndexWriter:
        """The index writer: on a copy of the previous index where papers are reused."""
        path = self.job.gen / "index.sqlite"
        if self.reuse:
            shutil.copyfile(self.job.previous.gen / "index.sqlite", path)
        return IndexWriter(path, copied=bool(self.reuse))

    def start_store_delta(self, worker: Executor, trim: tuple[Future, frozenset[str]]
                          ) -> Future:
        """Start the store delta beside this process (which writes the rows, the index and
        extraction.jsonl meanwhile); returns the future of its change in size. It needs only
        the changed papers' results and every paper's links."""
        resolved, current, previous = self.resolved, self.job.current, self.job.previous
        ids = [pid for pid in resolved.order
               if current.paper_digests.get(pid) != resolved.digests[pid]]
        for batch in chunked(ids, 500):
            self.changed.update(zip(batch, resolved.results(batch), strict=True))
        alike = [pid for pid in resolved.order if pid not in self.changed]  # (links alike)
        old = [pid for pid in alike if pid in previous.states]
        new_links = set(chain.from_iterable(previous.states[pid].links for pid in old))
        for batch in chunked([pid for pid in alike if pid not in previous.states], 500):
            new_links.update(chain.from_iterable(map(links_of, resolved.results(batch))))
        new_links.update(chain.from_iterable(map(links_of, self.changed.values())))
        self.links_now = tuple(sorted(new_links))
        # (queued behind the checkpoint: the one worker runs them in turn)
        return worker.submit(store_delta, self.job.gen / "store", trim[1], self.entities,
                             self.changed, self.vocab, current, resolved.digests,
                             self.entity_digests, self.concepts, self.links_now)

    def _rebuild(self, index: IndexWriter, batch: list[str]) -> list[PaperResult]:
        """Index rows, state and line of each paper of ``batch``; returns their results."""
        unread = [pid for pid in batch if pid not in self.changed]  # (changed: read before)
        made = (dict(zip(unread, self.resolved.results(unread), strict=True)) if unread
                else {})
        results = [self.changed.get(pid) or made[pid] for pid in batch]
        for pid, result in zip(batch, results, strict=True):
            # The index keeps papers without their source ("file:line" of this run's
            # inputs): a row reused later must not depend on where it was read.
            part = paper_part(result)
            part = part._replace(paper=replace(part.paper, source=""))
            state = state_of(result, part, paper_features(
                part.counted, self.entities, self.concept_entity, self.vocab, self.depths))
            index.add(pid, part, state)
            self.tally.keep(pid, state, links=self.job.previous is None)
            if self.lines is not None:
                self.lines.add(pid, io.result_line(result, self.entities))
        return results

    def flow(self, index: IndexWriter, sinks: Sequence[Any]) -> None:
        """Every paper not reused through ``_rebuild``, a batch at a time; their triples to
        ``sinks`` (a new store, graph.nt streamed), then the reused papers' triples to
        graph.nt and the entities' and concepts' to all."""
        order = [pid for pid in self.resolved.order if pid not in self.reuse]
        for batch in chunked(order, 500):
            results = self._rebuild(index, batch)
            if sinks:
                self._feed(sinks, results, ())
        nt = [sink for sink in sinks if isinstance(sink, rdf.SortedNTriples)]
        for batch in chunked(sorted(self.reuse), 500) if nt else ():
            self._feed(nt, self.resolved.results(batch), ())  # (the store has them)
        if sinks:
            self._feed(sinks, (), self.entities.values(), self.concepts)

    def _feed(self, sinks: Sequence[Any], results: Iterable[PaperResult],
              entities: Iterable[Entity], concepts: Sequence[str] = ()) -> None:
        facts = rdf.partial_triples(Corpus((), self.entities), results, entities, concepts,
                                    self.vocab)
        for sink in sinks:
            sink.add(facts)

    def keep_reused(self, index: IndexWriter) -> None:
        """Tally the reused papers, their features recomputed where they may have changed."""
        previous = self.job.previous
        stale = (previous.stale_features(self.entities, self.renamed, self.concept_entity,
                                         self.vocab, self.depths) if self.reuse else None)
        for pid in self.reuse:
            state = previous.states[pid]
            if stale(state.counted):
                state = state._replace(features=paper_features(
                    state.counted, self.entities, self.concept_entity, self.vocab,
                    self.depths))
                index.restate(pid, state)
            self.tally.keep(pid, state, links=previous is None)
        self.tally.in_order(self.resolved.order)

    def anew(self, index: IndexWriter) -> dict[str, set[str]] | None:
        """The index rows that papers rebuilt, restated or gone may change (None: all)."""
        if not self.reuse:
            return None
        current, tally = self.job.current, self.tally
        was = self.job.previous.states
        rebuilt = set(self.resolved.order) - self.reuse
        moved = rebuilt | index.restated
        gone = was.keys() - set(self.resolved.order)  # (or failing now)
        left = [was[p] for p in gone | moved if p in was]
        postings = ({k for state in left for k in state.features}
                    | {k for p in moved for k in tally.features[p]})
        return {"entities": self.renamed | (current.entity_digests.keys()
                                            - self.entity_digests.keys()),
                "features": moved | gone, "postings": postings, "factors": postings,
                "entity_papers": {e for state in left for e in state.counted}
                | {e for p in rebuilt for e in tally.light[p].counted}}

    def assemble_lines(self) -> None:
        self.job.step(JSONL)
        path, previous = self.job.gen / JSONL, self.job.previous
        self.lines.assemble(path, self.resolved.order, previous,
                            lambda pid: self.renamed.isdisjoint(previous.states[pid].mentioned),
                            self.entities)

    def write_index(self, index: IndexWriter, store_beside: bool) -> list:
        """The corpus-wide index and extraction.jsonl; returns the technique counts."""
        built = index.assemble(self.tally.light, self.entities, self.vocab,
                               self.tally.features)
        self.job.step("query store and index" if store_beside else "query index")
        if self.lines is not None:
            self.assemble_lines()
        try:
            return index.write(built, self.vocab, self.anew(index), clusters_rows(built))
        except BaseException:
            index.close()
            raise

    def rdf_files(self, nt: rdf.SortedNTriples | None, derived: list
                  ) -> tuple[list | None, int | None]:
        """The triples the RDF files written whole need (or None), and the number of lines
        of a streamed graph.nt (or None)."""
        if nt is not None:
            self.job.step("graph.nt")
            return None, nt.write(self.job.gen / "graph.nt")
        if set(self.job.chosen) & RDF_FILES:
            self.job.step("RDF triples")
            return rdf.corpus_triples(self.corpus, self.vocab, derived), None
        return None, None

    def finish(self, counts: list, n_triples: int | Callable[[], int] | None,
               triples: list | None, nt: bool
               ) -> tuple[Manifest, dict[str, Any]]:
        """The exports not written yet, build.json and manifest.json."""
        job, resolved, predicates = self.job, self.resolved, self.tally.predicates
        record = write_exports(self.corpus, job.gen, files=job.chosen, inputs=job.inputs,
                               on_step=job.step, triples=triples, n_triples=n_triples,
                               ready=(*([JSONL] if self.lines is not None else []),
                                      *(["graph.nt"] if nt else [])),
                               counts={"papers": len(resolved.order),
                                       "entities": len(self.entities),
                                       "relations": sum(predicates.values()),
                                       "skipped": len(resolved.skipped)},
                               map_source=(stored_map_source(job.gen / "index.sqlite",
                                                             self.ranked, self.index_read)
                                           if self.stored_map else None))
        manifest = Manifest(job.number, job.pipeline, job.keys, job.asked,
                            tuple(sorted(record.files)), dict(record.counts), resolved.digests,
                            self.entity_digests, self.concepts, resolved.failed,
                            self.links_now if job.previous else tuple(sorted(self.tally.links)))
        write_json(job.gen / "manifest.json", manifest.as_dict())
        return manifest, {"shared": tuple((e, n) for e, n in counts if n >= 2),
                          "entity_types": dict(Counter(e.type for e in self.entities.values())),
                          "predicates": dict(predicates)}


def write_generation(job: Job, resolved: Resolved, worker: Executor | None = None,
                     trim: tuple[Future, frozenset[str]] | None = None
                     ) -> tuple[Manifest, dict[str, Any]]:
    """Write generation ``job.number`` into ``job.gen``. With a delta (``job.previous``),
    ``trim`` is the future of ``kg.project.store.store_without`` checkpointing the previous
    store into ``gen/store`` without the papers named, and the delta goes to ``worker``.
    Returns the manifest and a summary (shared techniques, entities per type, relations per
    predicate)."""
    writer = _Writer(job, resolved)
    job.step("rows, lines and triples of each paper")
    index = writer.open_index()
    delta = writer.start_store_delta(worker, trim) if job.previous is not None else None
    # The worker reads the derived facts the store holds once its delta is done, while this
    # process writes the rows and the index, and keeps them for its update after the map's
    # ranking (that update went 0.52-0.59 -> 0.37-0.42 s at 4,870 papers).
    if delta is not None:
        worker.submit(keep_derived_held, job.gen / "store")
    # A new store takes each batch's triples as they come: pyoxigraph's bulk loader holds
    # what it is given (0.84 GB for one conference file, 0.16 GB a batch at a time).
    store = None if delta else NewStore(job.gen / "store")
    nt = rdf.SortedNTriples(job.gen / "nt.runs", NT_RUN_LINES) if writer.stream_nt else None
    try:
        writer.flow(index, [sink for sink in (store, nt) if sink is not None])
        writer.keep_reused(index)
        counts = writer.write_index(index, delta is not None)
        job.step("derived facts")  # (whole-corpus: they need the index just written)
        index_path = job.gen / "index.sqlite"
        if writer.stored_map and "graph.html" in job.chosen \
                and len(resolved.order) <= RELATED_MAX_PAPERS:
            # The map's related papers, kept beside the index for Neo4j loads too
            # (kg.project.RELATED). In an incremental build the store worker ranks them, then
            # adds the derived facts to the store after its delta (it runs what it is given
            # in turn), while this process draws the rest of the map (kg.project.beside).
            if delta is not None:
                ranked = worker.submit(stored_related, index_path)
                writer.ranked = lambda: wait(ranked)
            else:
                writer.ranked = lambda: stored_related(index_path)
        writer.index_read = stored_index(index_path)
        derived = derived_rdf(writer.index_read)
        if delta is not None:
            derived_beside = worker.submit(update_derived, job.gen / "store", derived)
        for sink in (store, nt):
            if sink is not None:
                sink.add(derived)
    except BaseException:
        if store is not None:
            store.close(sync=False)
        raise
    n_triples: int | Callable[[], int] | None = store.close() if store is not None else None
    if delta is not None:
        def counted() -> int:  # the store's size once the worker is done with it
            return (job.current.counts["triples"] - wait(trim[0]) + wait(delta)
                    + wait(derived_beside))

        # (counted as build.json is written, after the map, unless graph.nt is checked)
        n_triples = counted() if nt is not None else counted
    triples, written_nt = writer.rdf_files(nt, derived)
    if nt is not None and written_nt != n_triples:  # both hold the graph: a bug if they differ
        raise KgError(f"graph.nt has {written_nt} triples but the store {n_triples}; please "
                      "report this (with the inputs if you can); a build into a new directory "
                      "(`kg build INPUT... -o NEWDIR`) starts from scratch")
    return writer.finish(counts, n_triples, triples, nt is not None)
