"""A kg project: what ``kg build -o DIR`` keeps in DIR so the next build is incremental.

::

    DIR/
      build.json, extraction.jsonl, graph.nt, …  the exports of the current generation
      .kg/
        project.json    marks DIR as a kg project (format and version)
        lock            held (flock) by the build running on DIR; holds its pid
        cache.sqlite    per-paper extraction results and their Preps (what resolution reads)
                        by content key (paper + pipeline)
        CURRENT         the committed generation's name, replaced atomically
        gen-000003/     one complete generation: manifest.json, store/ (pyoxigraph,
                        RocksDB), index.sqlite (kg shared/related/techniques) and the exports

A build extracts only papers whose content key is not cached, plans the corpus-level steps
(recurring terms, acronyms, entity ids) from every paper's cached Prep, and writes a new
generation next to the current one. A paper whose result digest is unchanged is not rebuilt:
its index rows and extraction.jsonl line are carried over; the others flow through in
batches. The RDF store is a hard-link checkpoint of the previous one with the delta applied
(a first build bulk-loads it batch by batch). Only then does CURRENT name it. A build
killed at any moment leaves CURRENT — and every query — on the previous complete
generation; the next build starts again from there. Papers are kept in id order, so any
sequence of builds, adds and removes gives the exports (and the index) a build from scratch
of the final set gives.

>>> import tempfile
>>> from kg.ingest import IngestOptions, read_inputs
>>> papers = read_inputs(["examples/iclr2025-seed.txt"], IngestOptions()).papers
>>> out = Path(tempfile.mkdtemp())
>>> build(out, papers[:10]).counts["papers"]
10
>>> outcome = add(out, papers[10:])
>>> outcome.counts["papers"], outcome.extracted
(19, 9)
>>> build(out, papers).extracted  # nothing changed: nothing is extracted or written
0
>>> open_project(out).index().n_papers
19
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gc
import hashlib
import json
import os
import pickle
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple

from kg.errors import InputError, KgError
from kg.model import Corpus, Paper, Skip

META = ".kg"
FORMAT = "kg-project"
FORMAT_VERSION = 1
# The export formats and their files. "auto" writes all of them up to AUTO_ALL_PAPERS papers;
# above, only extraction.jsonl: each build would otherwise spend most of its time rewriting
# half a gigabyte of text (30 s at 4,870 papers) that queries do not need (they read the store
# and index); `--formats all` asks for it.
FORMATS: dict[str, tuple[str, ...]] = {
    "nt": ("graph.nt",), "ttl": ("graph.ttl",), "jsonld": ("graph.jsonld",),
    "graphml": ("graph.graphml",), "csv": ("nodes.csv", "edges.csv"),
    "jsonl": ("extraction.jsonl",), "html": ("graph.html",),
}
AUTO_ALL_PAPERS = 2000
# Lines of graph.nt sorted in memory at a time when it is streamed (about 60 MB of them).
NT_RUN_LINES = 250_000
# Fewer new papers than this are extracted in a child process while this one reads what does
# not depend on them: unpickling the extractor and extracting them (0.2 s for 50) then overlap
# that reading, and kg.pipeline.extract_each extracts so few in one process anyway.
FEW_PAPERS = 100


class BusyError(KgError):
    """Another process is building this project."""


class ProjectError(InputError):
    """DIR is not a usable kg project (foreign, damaged or from another format version)."""


# ------------------------------------------------------------------ versions and keys


def pipeline_version() -> str:
    """kg's version plus a hash of its code and vocabulary: a change re-extracts every paper.

    >>> pipeline_version() == pipeline_version()
    True
    """
    from kg import __version__
    from kg.vocab import ontology_dir

    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted([*package.rglob("*.py"), *ontology_dir().rglob("*.ttl")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:16]}"


def paper_key(paper: Paper, pipeline: str) -> str:
    """A content key: what extraction reads of ``paper`` (not where it came from)."""
    data = json.dumps([pipeline, paper.metadata()], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def _digest(value: object) -> str:
    # repr of the frozen dataclasses is complete and deterministic (fields in order).
    return hashlib.sha1(repr(value).encode("utf-8")).hexdigest()[:20]


# ------------------------------------------------------------------ the manifest


@dataclass(frozen=True)
class Manifest:
    """What one generation holds: papers by content key, formats, digests for the deltas."""

    generation: int
    pipeline: str
    papers: dict[str, str]  # paper id → content key (every paper asked for, failures too)
    formats: tuple[str, ...]  # as asked ("auto", or names of FORMATS)
    written: tuple[str, ...]  # the export files this generation has
    counts: dict[str, int]
    paper_digests: dict[str, str] = field(default_factory=dict)  # what its facts derive from
    entity_digests: dict[str, str] = field(default_factory=dict)  # of each Entity
    concepts: tuple[str, ...] = ()  # concept IRIs the store describes
    failed: dict[str, str] = field(default_factory=dict)  # paper id → why extraction failed
    # Entity → entity relations (subject, predicate, object ids) the store holds; None in a
    # manifest from before they were recorded (the store is then scanned for them).
    links: tuple[tuple[str, str, str], ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": FORMAT_VERSION, "generation": self.generation,
                "pipeline": self.pipeline, "formats": list(self.formats),
                "written": list(self.written), "counts": self.counts, "papers": self.papers,
                "failed": self.failed, "paper_digests": self.paper_digests,
                "entity_digests": self.entity_digests, "concepts": list(self.concepts),
                "links": None if self.links is None else [list(t) for t in self.links]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        return cls(int(data["generation"]), str(data["pipeline"]), dict(data["papers"]),
                   tuple(data["formats"]), tuple(data["written"]), dict(data["counts"]),
                   dict(data["paper_digests"]), dict(data["entity_digests"]),
                   tuple(data["concepts"]), dict(data.get("failed", {})),
                   None if data.get("links") is None else tuple(map(tuple, data["links"])))


def _gen_name(number: int) -> str:
    return f"gen-{number:06d}"


# ------------------------------------------------------------------ opening a project


@dataclass(frozen=True)
class Project:
    """A committed generation of a project directory, opened for reading.

    ``store()`` and ``index()`` open the on-disk RDF store and query index; ``corpus()``
    rebuilds the resolved corpus from the cache (for what the index does not hold).
    """

    root: Path
    generation: Path
    manifest: Manifest

    def store(self):
        """The generation's pyoxigraph store, read-only."""
        import pyoxigraph as ox

        return ox.Store.read_only(str(self.generation / "store"))

    def index(self):
        """The query index (``kg.analysis.AnalysisIndex``), read lazily from index.sqlite."""
        from kg.analysis import AnalysisIndex

        return _read_index(self.generation / "index.sqlite", AnalysisIndex, self.corpus)

    def vocabulary(self):
        """The vocabulary this generation was built with: the one the project keeps pickled
        in its cache (3 ms), else the vocabulary files as they are now (parsed: 50 ms)."""
        from kg.vocab import load_vocabulary

        with contextlib.suppress(ProjectError, sqlite3.Error), \
                _Cache(self.root / META / "cache.sqlite", readonly=True) as cache:  # (if any)
            return _vocabulary(cache, self.manifest.pipeline)  # (read-only: not kept)
        return load_vocabulary()

    def corpus(self) -> Corpus:
        """The resolved corpus: from extraction.jsonl when written, else from the cache."""
        from kg.exports import check_export_dir
        from kg.io import read_jsonl

        if "extraction.jsonl" in self.manifest.written:
            check_export_dir(self.generation, reading="extraction.jsonl")
            return read_jsonl(self.generation / "extraction.jsonl")
        with _Cache(self.root / META / "cache.sqlite", readonly=True) as cache:
            return _Resolved(cache, self.manifest.papers, {}).corpus()


def is_project(directory: str | Path) -> bool:
    """True when ``directory`` holds a kg project (``.kg/project.json``)."""
    return (Path(directory) / META / "project.json").is_file()


def open_project(directory: str | Path) -> Project:
    """The committed state of the project at ``directory`` (ProjectError if there is none)."""
    root = Path(directory)
    meta = root / META
    if not (meta / "project.json").is_file():
        if (root / "build.json").is_file() or (root / "extraction.jsonl").is_file():
            raise ProjectError(f"{root}: an export directory from an older kg, without a query "
                               f"store; upgrade it with `kg build INPUT... -o {root}` (the "
                               "same inputs; or its extraction.jsonl)")
        raise ProjectError(f"{root}: not a kg project; build one with "
                           f"`kg build INPUT... -o {root}`")
    _check_format(root)
    current = _current(root)
    if current is None:
        raise ProjectError(f"{root}: no complete build yet (the first build was interrupted "
                           f"or is running); run `kg build INPUT... -o {root}`")
    return Project(root, meta / _gen_name(current.generation), current)


def _check_format(root: Path) -> None:
    path = root / META / "project.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        fmt, version = data["format"], data["version"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProjectError(f"{path}: unreadable ({exc}); this is not a project kg can use — "
                           f"move {root} aside, or delete {root / META} to build afresh") from exc
    if fmt != FORMAT or version != FORMAT_VERSION:
        raise ProjectError(f"{path}: a {fmt!r} version {version!r} project; this kg reads "
                           f"{FORMAT!r} version {FORMAT_VERSION}; build into another directory")


def _current(root: Path) -> Manifest | None:
    meta = root / META
    try:
        name = (meta / "CURRENT").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    path = meta / name / "manifest.json"
    try:
        return Manifest.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProjectError(f"{path}: damaged ({exc}); move {root} aside, or delete "
                           f"{meta} to rebuild from the inputs") from exc


def _check_target(root: Path) -> None:
    """Refuse to build into a directory kg would clobber: its files are not kg's."""
    from kg.exports import KNOWN_FILES, RECORD

    if (root / META).exists():
        if not (root / META).is_dir() or not (root / META / "project.json").is_file():
            raise ProjectError(f"{root / META}: not a kg project folder; move it aside")
        _check_format(root)
        _current(root)
        return
    if not root.is_dir() or (root / RECORD).is_file():
        return  # new, or an export directory of an older kg: upgraded in place
    ours = sorted(name for name in KNOWN_FILES if (root / name).exists())
    if ours:
        raise ProjectError(f"{root}: has {', '.join(ours)} but no kg build record, so they "
                           "are not kg's to replace; choose an empty or new -o directory")


# ------------------------------------------------------------------ the lock


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Hold DIR's build lock; another live build gets BusyError naming its process.

    flock is released by the kernel when the holder dies, so a killed build never leaves a
    stale lock behind.
    """
    meta = root / META
    meta.mkdir(parents=True, exist_ok=True)
    fd = os.open(meta / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            raise BusyError(f"{root} is being built by process {holder}; wait for it to "
                            "finish (or stop it) and run the command again") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


# ------------------------------------------------------------------ the extraction cache


class _Cache:
    """Per-paper extraction results by content key, in SQLite (atomic, append-mostly)."""

    def __init__(self, path: Path, readonly: bool = False) -> None:
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        self.readonly = readonly
        try:
            self.db = sqlite3.connect(uri, uri=True)
            if not readonly:
                self.db.execute("CREATE TABLE IF NOT EXISTS extraction "
                                "(key TEXT PRIMARY KEY, paper BLOB, found BLOB)")
                # What resolution reads of each extraction (kg.resolve.Prep), made once.
                self.db.execute("CREATE TABLE IF NOT EXISTS prep (key TEXT PRIMARY KEY, v BLOB)")
                # What the current pipeline builds before its first paper (the default
                # extractor, the vocabulary), pickled (``built``).
                self.db.execute("CREATE TABLE IF NOT EXISTS prebuilt "
                                "(name TEXT PRIMARY KEY, pipeline TEXT, v BLOB)")
        except sqlite3.Error as exc:
            raise ProjectError(f"{path}: unusable cache ({exc}); delete it to re-extract"
                               ) from exc

    def __enter__(self) -> _Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()

    def _select(self, columns: str, table: str, keys: Sequence[str]) -> Iterator[tuple]:
        """Rows of ``table`` whose key is one of ``keys`` (asked 900 at a time: SQLite's
        limit on parameters)."""
        for chunk in _chunked(list(keys), 900):
            yield from self.db.execute(f"SELECT {columns} FROM {table} WHERE key IN "
                                       f"({','.join('?' * len(chunk))})", chunk)

    def missing(self, keys: Iterable[str]) -> set[str]:
        wanted = set(keys)
        return wanted - {k for (k,) in self._select("key", "extraction", sorted(wanted))}

    def put(self, rows: Iterable[tuple[str, Paper, tuple | str]]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO extraction VALUES (?, ?, ?)",
                                ((k, pickle.dumps(p, 5), pickle.dumps(f, 5))
                                 for k, p, f in rows))

    def get(self, keys: Sequence[str]) -> dict[str, tuple[Paper, tuple | str]]:
        return {key: (pickle.loads(paper), pickle.loads(found)) for key, paper, found
                in self._select("key, paper, found", "extraction", keys)}

    def preps(self, keys: Sequence[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        # A read-only cache from before the table has no preps.
        with contextlib.suppress(sqlite3.OperationalError):
            out.update((k, pickle.loads(v)) for k, v in self._select("key, v", "prep", keys))
        return out

    def put_preps(self, rows: Sequence[tuple[str, Any]]) -> None:
        if rows and not self.readonly:
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO prep VALUES (?, ?)",
                                    ((k, pickle.dumps(v, 5)) for k, v in rows))

    def built(self, name: str, pipeline: str) -> bytes | None:
        """``name`` ("extractor", "vocabulary") as ``pipeline`` built it, pickled, if kept."""
        with contextlib.suppress(sqlite3.OperationalError):  # a read-only cache without it
            row = self.db.execute("SELECT v FROM prebuilt WHERE name = ? AND pipeline = ?",
                                  (name, pipeline)).fetchone()
            return row[0] if row else None
        return None

    def put_built(self, name: str, pipeline: str, data: bytes) -> None:
        """Keep ``name`` as ``pipeline`` built it (replacing another pipeline's)."""
        if not self.readonly:
            with self.db:
                self.db.execute("INSERT OR REPLACE INTO prebuilt VALUES (?, ?, ?)",
                                (name, pipeline, data))

    def keep_only(self, keys: Iterable[str]) -> None:
        # The keys to drop are found here, not by a temporary table of those to keep: a
        # build drops a few rows, and filling that table with every key took 18 ms.
        keep = set(keys)
        with self.db:
            for table in ("extraction", "prep"):
                gone = [row for row in self.db.execute(f"SELECT key FROM {table}")
                        if row[0] not in keep]
                self.db.executemany(f"DELETE FROM {table} WHERE key = ?", gone)


def _chunked(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


class _Resolved:
    """The corpus of a project's papers, resolved from cached extractions, with each paper's
    result built only when asked for (a build reuses what did not change).

    Corpus-level decisions come from each paper's cached ``Prep`` (made once per content key),
    so no vocabulary lookup is repeated. ``fresh`` papers (this run's inputs) replace the
    cached Paper, so messages name today's file and line. ``digests[pid]`` hashes what the
    paper's result derives from: its content, kept terms and entity ids. With ``cluster``
    (a ``kg.distributed.session``) the plan is made on that Dask cluster.
    """

    def __init__(self, cache: _Cache, papers: Mapping[str, str], fresh: Mapping[str, Paper],
                 cluster: tuple | None = None, preps: dict[str, Any] | None = None,
                 vocab=None) -> None:
        from kg.pipeline import expand
        from kg.resolve import plan, prepare
        from kg.vocab import load_vocabulary

        self.vocab = vocab = vocab or load_vocabulary()
        ids = sorted(papers)
        self.cache, self.keys, self.fresh = cache, papers, fresh
        if preps is None:  # (a caller that read them already passes them)
            preps = cache.preps([papers[pid] for pid in ids])
        # Extractions are read only where no prep is cached (new papers, failures), a batch
        # at a time, and again for the results asked for: a build that changes a few papers
        # reads a few, and a first build never holds every extraction at once.
        self.found: dict[str, tuple[Paper, tuple | str]] = {}  # failures only, after this
        self.failed: dict[str, str] = {}
        for batch in _chunked([pid for pid in ids if papers[pid] not in preps], 500):
            found = cache.get([papers[pid] for pid in batch])
            made = []
            for pid in batch:
                paper, result = found[papers[pid]]
                if isinstance(result, str):
                    self.failed[pid] = result
                    self.found[papers[pid]] = (paper, result)
                else:
                    prep = prepare(expand(fresh.get(pid) or paper, result), vocab)
                    preps[papers[pid]] = prep
                    made.append((papers[pid], prep))
            cache.put_preps(made)
        self.order = [pid for pid in ids if pid not in self.failed]
        ordered = [preps[papers[pid]] for pid in self.order]
        if cluster is not None:  # the same plan, as group-bys on the Dask cluster
            from kg.distributed import plan_on_cluster

            decided = plan_on_cluster(ordered, cluster[0])
        else:
            decided = plan(ordered, vocab)
        del ordered, preps
        self.entities = decided.entities
        self.kept = dict(zip(self.order, decided.kept, strict=True))
        self.entity_ids = dict(zip(self.order, decided.entity_ids, strict=True))
        self.digests = {pid: hashlib.sha1("\0".join(
            [papers[pid], repr(self.kept[pid]), *self.entity_ids[pid]]).encode(
            "utf-8")).hexdigest()[:20] for pid in self.order}
        self.skipped = tuple(Skip(fresh[pid].source if pid in fresh else pid, why)
                             for pid, why in self.failed.items())
        self._corpus: Corpus | None = None

    def _found(self, pid: str) -> tuple[Paper, tuple | str]:
        key = self.keys[pid]
        if key not in self.found:
            self.found.update(self.cache.get([key]))
        return self.found[key]

    def _paper(self, pid: str) -> Paper:
        return self.fresh.get(pid) or self._found(pid)[0]

    def result(self, pid: str):
        """The resolved PaperResult of paper ``pid``."""
        from kg.extract.terms import promote
        from kg.pipeline import expand
        from kg.resolve import paper_result

        if self._corpus is not None:
            return self._by_id[pid]
        extraction = expand(self._paper(pid), self._found(pid)[1])
        return paper_result(promote(extraction, self.kept[pid]), self.entity_ids[pid])

    def results(self, pids: Sequence[str]) -> list:
        """The results of ``pids``, their extractions read in one go and not kept."""
        if self._corpus is not None:
            return [self._by_id[pid] for pid in pids]
        wanted = [self.keys[pid] for pid in pids if self.keys[pid] not in self.found]
        self.found.update(self.cache.get(wanted))
        try:
            return [self.result(pid) for pid in pids]
        finally:
            for key in wanted:
                del self.found[key]

    def corpus(self) -> Corpus:
        """Every paper's result, in id order."""
        if self._corpus is None:
            missing = [self.keys[pid] for pid in self.order if self.keys[pid] not in self.found]
            self.found.update(self.cache.get(missing))
            results = tuple(self.result(pid) for pid in self.order)
            self._by_id = {r.paper.id: r for r in results}
            self._corpus = Corpus(results, self.entities, self.skipped)
        return self._corpus


# ------------------------------------------------------------------ building


@dataclass(frozen=True)
class Outcome:
    """What a build, add or remove did."""

    counts: dict[str, int]
    extracted: int  # papers extracted by this run
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()  # papers whose content changed
    written: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    shared: tuple = ()  # (Entity, papers) of techniques shared by 2+ papers, most first
    skipped: tuple[Skip, ...] = ()  # papers whose extraction failed
    entity_types: dict[str, int] = field(default_factory=dict)  # entities per type
    predicates: dict[str, int] = field(default_factory=dict)  # relations per predicate
    noop: bool = False  # nothing changed, nothing written


def build(directory: str | Path, papers: Sequence[Paper], **options: Any) -> Outcome:
    """Make the project at ``directory`` hold exactly ``papers`` (extracting only what is new
    or changed; papers no longer given are removed)."""
    return _update(Path(directory), lambda current: {p.id: p for p in papers},
                   fresh=papers, **options)


def add(directory: str | Path, papers: Sequence[Paper], **options: Any) -> Outcome:
    """Add ``papers`` to the project (a paper with an id already there replaces it)."""
    def target(current: Mapping[str, str]) -> dict[str, Paper | str]:
        return {**current, **{p.id: p for p in papers}}

    return _update(Path(directory), target, fresh=papers, **options)


def remove(directory: str | Path, ids: Iterable[str], **options: Any) -> Outcome:
    """Remove the papers ``ids`` with every fact and every entity no other paper supports."""
    ids = list(dict.fromkeys(ids))

    def target(current: Mapping[str, str]) -> dict[str, Paper | str]:
        unknown = [i for i in ids if i not in current]
        if unknown:
            raise InputError(f"{len(unknown)} id(s) not in {directory}: "
                             + ", ".join(unknown[:10])
                             + " (`kg techniques`/`kg shared` list paper ids)")
        gone = set(ids)
        return {pid: key for pid, key in current.items() if pid not in gone}

    return _update(Path(directory), target, fresh=(), must_exist=True, **options)


@contextlib.contextmanager
def _no_collections(engine: str) -> Iterator[None]:
    """Keep the cycle collector off during a local build (a Dask one: a hundred times less
    often, for the client's own garbage).

    A build allocates millions of small objects that outlive their batch (preps, states,
    features, entities), and each time enough have piled up CPython scans them, in vain: a
    whole 4,870-paper build leaves 75 objects in cycles, extracting 2,000 papers none. The
    scans were 0.09 s of removing 50 papers (1.25 s) and 0.5 s of the full build, at the
    default thresholds a fifth of `kg add`. Peak memory is unchanged (261 MB for 4,870
    papers). Forked workers inherit the setting. Builds are not run from several threads of
    one process (the setting is process-wide).
    """
    enabled, before = gc.isenabled(), gc.get_threshold()
    if engine == "local":
        gc.disable()
    else:
        gc.set_threshold(70_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if enabled:
            gc.enable()


def _update(root: Path, target_of: Callable, **options: Any) -> Outcome:
    try:
        with _no_collections(options.get("engine", "local")):
            return _update_locked(root, target_of, **options)
    except sqlite3.Error as exc:  # of the cache, or of the index being written
        if "full" in str(exc):  # "database or disk is full"
            raise ProjectError(f"{root}: No space left on device ({exc}); free some space "
                               "and run the command again") from exc
        raise ProjectError(f"{root / META}: {exc}; check its permissions, or, if a file there "
                           "is damaged, build into a new directory (`kg build INPUT... -o "
                           "NEWDIR`)") from exc
    except OSError as exc:  # written by the store or a temporary file, not via replacing()
        if exc.errno in (errno.ENOSPC, errno.EDQUOT) or "No space" in str(exc):
            raise ProjectError(f"{root}: No space left on device ({exc}); free some space "
                               "and run the command again") from exc
        raise


def _update_locked(root: Path, target_of: Callable, *, fresh: Sequence[Paper],
            formats: Sequence[str] | None = None, workers: int = 1,
            on_progress: Callable[[int, int], None] | None = None,
            on_step: Callable[[str], None] | None = None,
            trained_model: str | None = None, inputs: Sequence[str | Path] = (),
            must_exist: bool = False, engine: str = "local",
            scheduler: str | None = None) -> Outcome:
    from kg.exports import check_writable

    step = on_step or (lambda name: None)
    if must_exist:
        open_project(root)
    _check_target(root)
    check_writable(root)
    with _locked(root):
        meta = root / META
        if not (meta / "project.json").is_file():
            _write_json(meta / "project.json", {"format": FORMAT, "version": FORMAT_VERSION})
        current = _current(root)
        pipeline = pipeline_version()
        before = current.formats if current else ("auto",)
        asked = _asked(formats, before)
        with _Cache(meta / "cache.sqlite") as cache:
            # A paper kept from the current generation is its content key: its Paper is read
            # from the cache only when the pipeline changed (the key changes with it).
            target: dict[str, Paper | str] = target_of(current.papers if current else {})
            if current is not None and current.pipeline != pipeline:
                kept = cache.get([k for k in target.values() if isinstance(k, str)])
                target = {pid: kept[p][0] if isinstance(p, str) else p
                          for pid, p in target.items()}
            keys = {pid: p if isinstance(p, str) else paper_key(p, pipeline)
                    for pid, p in sorted(target.items())}
            if not keys:
                raise InputError("no papers would be left; a project needs at least one")
            chosen = _choose(asked, len(keys))
            if (current is not None and current.pipeline == pipeline and current.papers == keys
                    and current.written == chosen and _published(root, current)):
                return Outcome(current.counts, 0, notices=_format_notice(asked, chosen),
                               noop=True)
            missing = cache.missing(keys.values())
            todo = [target[pid] for pid in keys if keys[pid] in missing]
            lost = sorted(pid for pid in keys if keys[pid] in missing
                          and isinstance(target[pid], str))
            if lost:
                raise ProjectError(f"{meta / 'cache.sqlite'}: lost the extraction of "
                                   f"{len(lost)} paper(s) ({', '.join(lost[:5])}); run "
                                   f"`kg build INPUT... -o {root}` with all the inputs")
            if engine not in ("local", "dask"):
                raise InputError(f"engine {engine!r}: choose local or dask")
            previous_gen = meta / _gen_name(current.generation) if current else None
            delta = (current is not None and current.pipeline == pipeline
                     and (previous_gen / "store").is_dir())
            number = current.generation + 1 if current else 1
            gen = meta / _gen_name(number)
            if gen.exists():  # left by a build that was killed before it committed
                shutil.rmtree(gen)
            gen.mkdir()
            trim = extracted = keeper = index_copy = None
            reap: list[Callable[[], Any]] = []  # children _write_generation started
            try:
                if delta:
                    # A child checkpoints the store without the papers gone or changed while
                    # this process extracts and resolves; the store delta starts from it.
                    gone = sorted(p for p, k in current.papers.items() if keys.get(p) != k)

                    def without() -> int:
                        return _store_without(previous_gen / "store", gen / "store", gone)

                    trim = (_forked(without) if _rocksdb_free() else _done(without()),
                            frozenset(gone))
                preps = previous = None
                if engine == "local" and 0 < len(todo) < FEW_PAPERS:
                    # The child extracts them; this process meanwhile reads the other papers'
                    # preps and the previous generation, and imports the later stages. (It
                    # forks even where RocksDB has run: the child never touches a store.)
                    built = cache.built("extractor", pipeline) if trained_model is None else None
                    extracted = _forked(lambda: _extract_few(todo, pipeline, trained_model,
                                                             built))
                    preps = cache.preps(sorted(keys.values()))
                    previous = _Previous(previous_gen, current) if delta else None
                    _import_later_stages()
                    rows, made, new_built = extracted()
                    cache.put(rows)
                    cache.put_preps(made)
                    if new_built is not None:
                        cache.put_built("extractor", pipeline, new_built)
                    preps.update(made)
                    if on_progress:
                        on_progress(len(todo), len(todo))
                # On Dask, extraction and the resolution plan share one cluster session.
                with (_dask_session(scheduler, workers) if engine == "dask"
                      else contextlib.nullcontext()) as cluster:
                    if preps is None:
                        _extract(cache, todo, pipeline, workers, on_progress, trained_model,
                                 cluster=cluster)
                        if (engine == "local" and trained_model is None and todo
                                and not cache.built("extractor", pipeline)):
                            # For the next `kg add` of a few papers, pickled by a child
                            # while this process resolves. (Not beside a Dask client: its
                            # threads may hold locks the child would wait on forever.)
                            keeper = _forked(_pickled_extractor)
                    if delta:
                        # The previous index is copied by the kernel (sendfile, without the
                        # GIL) while this process resolves. (After the forks above: the
                        # thread is not theirs.)
                        index_copy = _in_thread(lambda: _copy_synced(
                            previous_gen / "index.sqlite", gen / "index.sqlite"))
                        reap.append(index_copy)
                    step(f"resolving entities across {len(keys):,} papers")
                    resolved = _Resolved(cache, keys, {p.id: p for p in fresh},
                                         cluster=cluster, preps=preps,
                                         vocab=_vocabulary(cache, pipeline))
                if delta and previous is None:
                    previous = _Previous(previous_gen, current)
                manifest, summary = _write_generation(root, gen, resolved, keys, pipeline,
                                                      asked, chosen, current, previous, trim,
                                                      number, inputs, step, reap,
                                                      index_copy)
                if keeper is not None:
                    # A cache: its child failing never fails the build.
                    with contextlib.suppress(KgError, OSError, sqlite3.Error):
                        cache.put_built("extractor", pipeline, keeper())
            except BaseException:  # a failed generation is never left for a reader to find
                for child in (extracted, trim and trim[0], keeper, *reap):  # one writes in gen
                    if child is not None:
                        with contextlib.suppress(Exception):
                            child()
                shutil.rmtree(gen, ignore_errors=True)
                raise
            _commit(meta, gen.name)
            _publish(root, gen, manifest.written)
            _prune(meta, cache, manifest, current)
        old = set(current.papers) if current else set()
        return Outcome(manifest.counts, len(todo),
                       added=tuple(sorted(set(keys) - old)),
                       removed=tuple(sorted(old - set(keys))),
                       changed=tuple(sorted(pid for pid in old & set(keys)
                                            if current.papers[pid] != keys[pid])),
                       written=manifest.written, notices=_format_notice(asked, chosen),
                       skipped=resolved.skipped, **summary)


def _asked(formats: Sequence[str] | None, before: tuple[str, ...]) -> tuple[str, ...]:
    """The formats asked for: ``@current`` (what DIR had) expanded; a later ``-x`` cancels an
    earlier ``x``.

    >>> _asked(["@current", "-html"], ("auto",)), _asked(None, ("nt",))
    (('auto', '-html'), ('nt',))
    """
    if not formats:
        return before
    out: list[str] = []
    for fmt in formats:
        if fmt == "@current":
            out.extend(before)
        else:
            out = [f for f in out if f not in (fmt, f"-{fmt.lstrip('-')}")] + [fmt]
    return tuple(out)


def _choose(asked: Sequence[str], n_papers: int) -> tuple[str, ...]:
    """The export files a build writes for ``asked`` formats and a corpus of ``n_papers``.

    >>> _choose(["auto", "-html"], 19)[:3], _choose(["auto"], 5000)
    (('edges.csv', 'extraction.jsonl', 'graph.graphml'), ('extraction.jsonl',))
    """
    names: list[str] = []
    for fmt in (f for f in asked if not f.startswith("-")):
        if fmt == "all" or (fmt == "auto" and n_papers <= AUTO_ALL_PAPERS):
            names.extend(f for files in FORMATS.values() for f in files)
        elif fmt == "auto":
            names.extend(FORMATS["jsonl"])
        elif fmt in FORMATS:
            names.extend(FORMATS[fmt])
        else:
            raise InputError(f"--formats {fmt}: unknown; choose from auto, all, "
                             + ", ".join(FORMATS))
    for fmt in (f[1:] for f in asked if f.startswith("-")):
        names = [n for n in names if n not in FORMATS.get(fmt, ())]
    return tuple(sorted(set(names)))


def _format_notice(asked: Sequence[str], chosen: Sequence[str]) -> tuple[str, ...]:
    if "auto" not in asked:
        return ()
    left = [f for f, files in FORMATS.items() if not set(files) <= set(chosen)]
    if not left:
        return ()
    return (f"above {AUTO_ALL_PAPERS:,} papers a build writes only {', '.join(chosen)} "
            f"besides the query store; {', '.join(left)}: `kg build ... --formats all` (or "
            "e.g. `--formats jsonl,nt`) writes them and keeps them current",)


def _dask_session(scheduler: str | None, workers: int):
    from kg import distributed

    return distributed.session(scheduler, workers)


def _extract(cache: _Cache, papers: list[Paper], pipeline: str, workers: int,
             on_progress: Callable[[int, int], None] | None, trained_model: str | None, *,
             cluster: tuple | None = None) -> None:
    """Extract ``papers`` and store each result (or failure) in the cache as it comes, so a
    killed build keeps what it has done. ``cluster``, a ``kg.distributed.session``, extracts
    on that Dask cluster instead of local processes."""
    from kg.pipeline import extract_each

    if not papers:
        return
    batch: list[tuple[str, Paper, tuple | str]] = []
    done = 0

    def progress(n: int) -> None:
        nonlocal done
        done += n
        if on_progress:
            on_progress(done, len(papers))

    if cluster is not None:
        from kg import distributed

        items = distributed.extract_each(papers, on_progress=progress,
                                         trained_model=trained_model, connected=cluster)
    else:
        items = extract_each(papers, workers, progress, trained_model)
    for row in _cache_rows(papers, items, pipeline):
        batch.append(row)
        if len(batch) >= 500:
            cache.put(batch)
            batch = []
    cache.put(batch)


def _cache_rows(papers: Sequence[Paper], items: Iterable, pipeline: str
                ) -> Iterator[tuple[str, Paper, tuple | str]]:
    """The cache row of each paper: its content key, the paper, and its extraction made
    compact (or the message saying why extraction failed)."""
    from kg.model import Extraction
    from kg.pipeline import compact

    for paper, item in zip(papers, items, strict=True):
        yield (paper_key(paper, pipeline), paper,
               compact(item) if isinstance(item, Extraction) else item)


def _extract_few(papers: list[Paper], pipeline: str, trained_model: str | None,
                 built: bytes | None = None
                 ) -> tuple[list[tuple[str, Paper, tuple | str]], list[tuple[str, Any]],
                            bytes | None]:
    """The cache rows of ``papers``' extractions (in one process), the preps of those that
    succeeded (made as ``_Resolved`` would make them), and the default extractor pickled for
    the cache when ``built`` (the cached one, if any) was not usable.

    Unpickling the default extractor takes 0.06 s; building it 0.15 s (parsing the
    vocabulary, indexing its labels, splitting every phrase).
    """
    from kg.pipeline import _extract_safely, expand, extractor
    from kg.resolve import prepare

    ex = fresh = None
    if built:  # (only the default extractor is kept)
        with contextlib.suppress(Exception):  # damaged, or from another Python: build it
            ex = pickle.loads(built)
    if ex is None:
        ex = extractor(trained_model)
        if trained_model is None:
            with contextlib.suppress(Exception):  # (a cache, never a reason to fail)
                fresh = _pickled_extractor()
    rows = list(_cache_rows(papers, _extract_safely(ex, papers), pipeline))
    return rows, [(key, prepare(expand(paper, found), ex.vocab)) for key, paper, found in rows
                  if not isinstance(found, str)], fresh


def _vocabulary(cache: _Cache, pipeline: str):
    """The vocabulary of ``pipeline``: unpickled from the cache where a build kept it (15 ms),
    else parsed (50 ms) and kept."""
    from kg.vocab import Vocabulary, load_vocabulary

    data = cache.built("vocabulary", pipeline)
    if data:
        with contextlib.suppress(Exception):  # damaged, or from another Python: parse it
            return pickle.loads(data)
    vocab = load_vocabulary()
    # Without what it computes on first use (label index, hierarchy): those take longer to
    # unpickle than to compute again.
    cache.put_built("vocabulary", pipeline, pickle.dumps(Vocabulary(vocab.concepts), 5))
    return vocab


def _pickled_extractor() -> bytes:
    """The default extractor, pickled for the cache (``_extract_few`` unpickles it)."""
    from kg.pipeline import extractor

    return pickle.dumps(extractor(None), 5)


def _import_later_stages() -> None:
    """Import what the corpus-wide steps use (0.1 s) while a child extracts; igraph, for the
    clusters, is then imported once here, not in each build's clusters child."""
    import igraph  # noqa: F401
    import pyoxigraph  # noqa: F401

    import kg.analysis
    import kg.exports
    import kg.io
    import kg.rdf  # noqa: F401


class _State(NamedTuple):
    """What a generation keeps of one paper beyond the index rows, so the next build reuses
    it while the paper's result is unchanged (plain tuples: fast to read back)."""

    paper: tuple  # the Paper's fields, as resolved (with its label; no abstract if titled)
    counted: tuple[str, ...]  # entity ids it counts for (kg.analysis.PaperPart.counted)
    links: tuple[tuple[str, str, str], ...]  # entity → entity relations it asserts
    predicates: tuple[tuple[str, int], ...]  # its relations per predicate
    mentioned: tuple[str, ...]  # entity ids its extraction.jsonl line describes
    features: dict  # its index features (kg.analysis.paper_features), as last computed


_PAPER_FIELDS = tuple(f.name for f in fields(Paper))


def _state_of(result, part, features: dict) -> _State:
    from collections import Counter

    # The corpus-wide steps read a paper's title and label (the abstract only names an
    # untitled, unlabelled paper): a state without it is a fifth of the size.
    paper = part.paper if not (part.paper.title or part.paper.label) else replace(
        part.paper, abstract="")
    return _State(tuple(getattr(paper, f) for f in _PAPER_FIELDS), part.counted,
                  _links(result),
                  tuple(sorted(Counter(r.predicate for r in result.relations).items())),
                  result.entity_ids, features)


def _links(result) -> tuple[tuple[str, str, str], ...]:
    """The entity → entity relations a paper's result asserts."""
    return tuple(sorted({(r.subject, r.predicate, r.object) for r in result.relations
                         if r.subject != result.paper.id}))


class _Previous:
    """The previous generation's per-paper states, and where each paper's extraction.jsonl
    line lies in its file (reused lines are copied by byte range, never read into memory)."""

    def __init__(self, gen: Path, manifest: Manifest) -> None:
        self.gen, self.manifest = gen, manifest
        self.states: dict[str, _State] = {}
        self.spans: dict[str, tuple[int, int]] = {}
        try:
            db = sqlite3.connect(f"file:{gen / 'index.sqlite'}?mode=ro", uri=True)
            try:
                self.states = {k: pickle.loads(v) for k, v in db.execute("SELECT k, v FROM state")}
            finally:
                db.close()
        except sqlite3.Error:  # a generation from before states were kept: nothing reused
            return
        if "extraction.jsonl" in manifest.written:
            self.spans = _line_spans(gen, manifest)

    def stale_features(self, entities: dict, renamed: set[str], concept_entity: dict[str, str],
                       vocab, depths: dict[str, dict[str, int]]
                       ) -> Callable[[Sequence[str]], bool]:
        """A test of a reused paper's counted entities: True when its stored features may
        differ today (an entity's concept changed, or which entity stands for one of their
        broader concepts). ``renamed``: the entities new or changed since this generation."""
        from kg.analysis import _ancestor_depths

        # Only the entities new, changed or gone may have another concept: theirs are read,
        # not all 7,000 of a conference.
        changed = renamed | (self.manifest.entity_digests.keys() - entities.keys())
        db = sqlite3.connect(f"file:{self.gen / 'index.sqlite'}?mode=ro", uri=True)
        try:
            (blob,) = db.execute("SELECT v FROM meta WHERE k = 'table:concept_entity'"
                                 ).fetchone()
            was = pickle.loads(blob)
            before: dict[str, str | None] = {}
            for chunk in _chunked(sorted(changed), 500):
                before.update((k, pickle.loads(v).concept) for k, v in db.execute(
                    f"SELECT k, v FROM entities WHERE k IN ({','.join('?' * len(chunk))})",
                    chunk))
        finally:
            db.close()
        moved = {iri for iri in was.keys() | concept_entity.keys()
                 if was.get(iri) != concept_entity.get(iri)}
        hit: dict[str, bool] = {}

        def stale(counted: Sequence[str]) -> bool:
            for eid in counted:
                concept = entities[eid].concept if eid in entities else None
                if eid in changed and before.get(eid) != concept:
                    return True
                if concept:
                    if concept not in hit:
                        if concept not in depths:
                            depths[concept] = _ancestor_depths(vocab, concept)
                        hit[concept] = not moved.isdisjoint(depths[concept])
                    if hit[concept]:
                        return True
            return False

        return stale

    def reusable(self, pid: str, digest: str, need_line: bool) -> bool:
        return (pid in self.states and self.manifest.paper_digests.get(pid) == digest
                and (pid in self.spans or not need_line))


def _write_generation(root: Path, gen: Path, resolved: _Resolved, keys: dict[str, str],
                      pipeline: str, asked: tuple[str, ...], chosen: tuple[str, ...],
                      current: Manifest | None, previous: _Previous | None,
                      trim: tuple[Callable[[], int], frozenset[str]] | None, number: int,
                      inputs: Sequence[str | Path], step: Callable[[str], None],
                      reap: list[Callable[[], Any]],
                      index_copy: Callable[[], None] | None = None
                      ) -> tuple[Manifest, dict[str, Any]]:
    """Write generation ``number`` into ``gen``; ``previous`` is the current generation when
    its store can take a delta (the same pipeline), and then ``trim`` waits for
    ``_store_without`` to have checkpointed it into ``gen/store`` without the papers named,
    and ``index_copy`` for its index.sqlite to have been copied there.
    A child process started here is appended to ``reap``, for the caller to reap on failure.

    Papers flow through in batches: each result becomes its index rows, its state, its
    extraction.jsonl line and (for a new store, and a streamed graph.nt) its triples, then is
    dropped, so a build never holds every result (unless a file other than extraction.jsonl
    and graph.nt needs them all). A paper whose result is unchanged since the current
    generation (same digest) is not rebuilt at all: its index rows are copied, its line reused
    (re-rendered when one of its entities changed).
    """
    from collections import Counter

    from kg import rdf
    from kg.analysis import PaperPart, concept_entities, paper_features, paper_part
    from kg.exports import write_exports
    from kg.io import result_to_dict

    vocab = resolved.vocab
    entities = resolved.entities
    entity_digests = {eid: _digest(e) for eid, e in sorted(entities.items())}
    concepts = tuple(sorted(rdf.concepts_described(Corpus((), entities), vocab)))
    delta = previous is not None
    # graph.nt is streamed through an external sort unless Turtle or JSON-LD (written from
    # every triple at once) are asked for too: holding them took 4.7 GB at 20,000 papers.
    stream_nt = "graph.nt" in chosen and not {"graph.ttl", "graph.jsonld"} & set(chosen)
    # Other files are written from every paper's result at once.
    corpus = (resolved.corpus() if set(chosen) - {"extraction.jsonl"}
              - ({"graph.nt"} if stream_nt else set()) else None)
    need_lines = corpus is None and "extraction.jsonl" in chosen
    reuse = {pid for pid in resolved.order
             if previous and previous.reusable(pid, resolved.digests[pid], need_lines)}
    concept_entity = concept_entities(entities)
    depths: dict[str, dict[str, int]] = {}
    step("rows, lines and triples of each paper")
    if index_copy is not None:
        try:
            index_copy()
        except OSError:
            if reuse:
                raise
        if not reuse:  # nothing to keep of it
            (gen / "index.sqlite").unlink(missing_ok=True)
    index = _IndexWriter(gen / "index.sqlite", copied=bool(reuse))
    # What the corpus-wide steps need of each paper, not its whole state: a build holds
    # these for every paper (the states themselves go to the index as they come).
    light: dict[str, PaperPart] = {}
    features: dict[str, dict] = {}
    links: set[tuple[str, str, str]] = set()
    predicates: dict[str, int] = {}

    def keep(pid: str, state: _State) -> None:
        light[pid] = PaperPart(Paper(*state.paper), {}, {}, frozenset(), state.counted)
        features[pid] = state.features
        if not delta:  # (a delta has them already: links_now)
            links.update(state.links)
        for name, n in state.predicates:  # (Counter.update of a dict: 3 times slower)
            predicates[name] = predicates.get(name, 0) + n

    # Rebuilt papers' lines go to a scratch file as they come (a build never holds them).
    lines = _Lines(gen / "lines.new") if need_lines else None
    changed: dict[str, Any] = {}  # results of papers whose digest changed (the store delta)
    store_delta = None
    if delta:
        # The store delta needs only the changed papers' results and every paper's links:
        # a child applies it from here, on the core that resolution left idle, while this
        # process writes the rows, the index and extraction.jsonl.
        ids = [pid for pid in resolved.order
               if current.paper_digests.get(pid) != resolved.digests[pid]]
        for batch in _chunked(ids, 500):
            changed.update(zip(batch, resolved.results(batch), strict=True))
        alike = [pid for pid in resolved.order if pid not in changed]  # (their links alike)
        old = [pid for pid in alike if pid in previous.states]
        new_links = set(chain.from_iterable(previous.states[pid].links for pid in old))
        for batch in _chunked([pid for pid in alike if pid not in previous.states], 500):
            new_links.update(chain.from_iterable(map(_links, resolved.results(batch))))
        new_links.update(chain.from_iterable(map(_links, changed.values())))
        links_now = tuple(sorted(new_links))
        trimmed = (trim[0](), trim[1])

        def apply() -> int:
            return _store_delta(gen / "store", trimmed, entities, changed, vocab, current,
                                resolved.digests, entity_digests, concepts, links_now)

        # Unless RocksDB has run in this process: a forked child would inherit its
        # background threads' locks, held, and hang on them.
        if _rocksdb_free():
            store_delta = _forked(apply)
            reap.append(store_delta)
        else:
            step("query store")
            n_triples = apply()
    # A new store takes each batch's triples as they come: pyoxigraph's bulk loader holds
    # what it is given (0.84 GB for one conference file, 0.16 GB a batch at a time).
    store = None if delta else _NewStore(gen / "store")
    nt = rdf.SortedNTriples(gen / "nt.runs", NT_RUN_LINES) if stream_nt else None
    sinks = [sink for sink in (store, nt) if sink is not None]  # what takes triples as they come
    try:
        for batch in _chunked([pid for pid in resolved.order if pid not in reuse], 500):
            unread = [pid for pid in batch if pid not in changed]  # (changed: read above)
            made = dict(zip(unread, resolved.results(unread), strict=True)) if unread else {}
            results = [changed.get(pid) or made[pid] for pid in batch]
            for pid, result in zip(batch, results, strict=True):
                # The index keeps papers without their source ("file:line" of this run's
                # inputs): a row reused later must not depend on where it was read.
                part = paper_part(result)
                part = part._replace(paper=replace(part.paper, source=""))
                state = _state_of(result, part, paper_features(
                    part.counted, entities, concept_entity, vocab, depths))
                index.add(pid, part, state)
                keep(pid, state)
                if lines is not None:
                    lines.add(pid, (json.dumps(result_to_dict(result, entities),
                                               ensure_ascii=False) + "\n").encode("utf-8"))
            if sinks:
                facts = rdf.partial_triples(Corpus((), entities), results, (), (), vocab)
                for sink in sinks:
                    sink.add(facts)
        if nt is not None:  # the reused papers' triples (the store has them already)
            for batch in _chunked(sorted(reuse), 500):
                nt.add(rdf.partial_triples(Corpus((), entities), resolved.results(batch), (),
                                           (), vocab))
        if sinks:
            facts = rdf.partial_triples(Corpus((), entities), (), entities.values(),
                                        concepts, vocab)
            for sink in sinks:
                sink.add(facts)
    except BaseException:
        if store is not None:
            store.close(sync=False)
        raise
    if store is not None:
        n_triples = store.close()
    renamed = {eid for eid, d in entity_digests.items()  # (all of them in a first build)
               if current is None or current.entity_digests.get(eid) != d}
    stale = (previous.stale_features(entities, renamed, concept_entity, vocab, depths)
             if reuse else None)
    for pid in reuse:
        state = previous.states[pid]
        if stale(state.counted):
            state = state._replace(features=paper_features(state.counted, entities,
                                                           concept_entity, vocab, depths))
            index.restate(pid, state)
        keep(pid, state)
    light = {pid: light[pid] for pid in resolved.order}
    features = {pid: features[pid] for pid in resolved.order}
    links = links_now if delta else tuple(sorted(links))
    triples = None
    if nt is not None:
        step("graph.nt")
        written_nt = nt.write(gen / "graph.nt")
    elif any(name in chosen for name in ("graph.nt", "graph.ttl", "graph.jsonld")):
        step("RDF triples")
        triples = rdf.corpus_triples(corpus, vocab)
    anew = None
    if reuse:  # the index rows that papers rebuilt, restated or gone may change
        was = previous.states
        rebuilt = set(resolved.order) - reuse
        moved = rebuilt | index.restated
        gone = was.keys() - set(resolved.order)  # (or failing now)
        left = [was[p] for p in gone | moved if p in was]
        anew = {"entities": renamed | (current.entity_digests.keys() - entity_digests.keys()),
                "features": moved | gone,
                "postings": {k for state in left for k in state.features}
                | {k for p in moved for k in features[p]},
                "entity_papers": {e for state in left for e in state.counted}
                | {e for p in rebuilt for e in light[p].counted}}
        anew["factors"] = anew["postings"]

    hashed: list[Callable[[], str]] = []  # waits for extraction.jsonl's sync and hash

    def assemble_lines() -> None:
        from kg.exports import sha256_file

        step("extraction.jsonl")
        path = gen / "extraction.jsonl"
        lines.assemble(path, resolved.order, previous,
                       lambda pid: renamed.isdisjoint(previous.states[pid].mentioned),
                       entities)
        # Synced and hashed (for build.json) by a thread while this process goes on, and
        # the clusters child still runs.
        hashed.append(_in_thread(lambda: (_fsync_file(path), sha256_file(path))[1]))
        reap.append(hashed[0])

    if not delta:  # (a new store was loaded batch by batch above)
        step("query store")
    # (extraction.jsonl is assembled while the clusters are worked out)
    step("query store and index" if store_delta else "query index")
    counts = index.finish(light, entities, vocab, features, anew,
                          assemble_lines if lines is not None else None)
    if store_delta is not None:  # (else applied above, or a new store loaded)
        n_triples = store_delta()
    digests = {"extraction.jsonl": hashed[0]()} if hashed else {}
    if nt is not None and written_nt != n_triples:  # both hold the graph: a bug if they differ
        raise KgError(f"graph.nt has {written_nt} triples but the store {n_triples}; please "
                      "report this (with the inputs if you can); a build into a new directory "
                      "(`kg build INPUT... -o NEWDIR`) starts from scratch")
    record = write_exports(corpus, gen, files=chosen, inputs=inputs, on_step=step,
                           triples=triples, n_triples=n_triples,
                           ready=(*(["extraction.jsonl"] if lines is not None else []),
                                  *(["graph.nt"] if nt is not None else [])), digests=digests,
                           counts={"papers": len(resolved.order), "entities": len(entities),
                                   "relations": sum(predicates.values()),
                                   "skipped": len(resolved.skipped)})
    manifest = Manifest(number, pipeline, keys, asked, tuple(sorted(record.files)),
                        dict(record.counts), resolved.digests, entity_digests, concepts,
                        resolved.failed, links)
    _write_json(gen / "manifest.json", manifest.as_dict())
    return manifest, {"shared": tuple((e, n) for e, n in counts if n >= 2),
                      "entity_types": dict(Counter(e.type for e in entities.values())),
                      "predicates": dict(predicates)}


class _Lines:
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

    def assemble(self, target: Path, order: Sequence[str], previous: _Previous | None,
                 as_is: Callable[[str], bool], entities: dict) -> None:
        """Write ``target`` with the line of each paper of ``order``: its new line, else its
        previous line (re-rendered by ``_renamed`` unless ``as_is(pid)``). Writes
        ``lines.idx`` beside it (each line's end offset), which the next build reads."""
        from array import array

        self.fh.close()
        ends = array("Q")
        try:
            if list(self.spans) == list(order):  # every line is new, in order: the file is it
                os.replace(self.path, target)
                total = 0
                for _, length in self.spans.values():
                    total += length
                    ends.append(total)
            else:
                old = (previous.gen / "extraction.jsonl") if previous else None
                # Written in place: nobody reads the generation before its commit, which
                # syncs it (the caller starts that sooner).
                with target.open("wb") as out, self.path.open("rb") as new, \
                        (old.open("rb") if old else contextlib.nullcontext()) as was:
                    # [source, offset, length] with contiguous ranges merged, or [None, the
                    # re-rendered line, its length]
                    runs: list[list] = []
                    total = 0
                    for pid in order:
                        if pid in self.spans:
                            source, (offset, length) = new, self.spans[pid]
                        elif as_is(pid):
                            source, (offset, length) = was, previous.spans[pid]
                        else:
                            offset, length = previous.spans[pid]
                            line = _renamed(os.pread(was.fileno(), length, offset), entities)
                            source, offset, length = None, line, len(line)
                        total += length
                        ends.append(total)
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
        finally:
            self.path.unlink(missing_ok=True)
        (target.parent / "lines.idx").write_bytes(ends.tobytes())


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


def _line_spans(gen: Path, manifest: Manifest) -> dict[str, tuple[int, int]]:
    """Where each paper's line lies in ``gen``'s extraction.jsonl: paper id → (offset,
    length); empty when the line ends found do not fit the manifest's papers."""
    order = [pid for pid in sorted(manifest.papers) if pid not in manifest.failed]
    ends = _line_ends(gen)
    if len(ends) != len(order):
        return {}
    return {pid: (start, end - start)
            for pid, start, end in zip(order, [0, *ends[:-1]], ends, strict=True)}


def _line_ends(gen: Path) -> list[int]:
    """The end offset of each line of ``gen``'s extraction.jsonl: from ``lines.idx``, or
    found in the file (a generation written before the index was kept)."""
    import mmap
    from array import array

    try:
        ends = array("Q")
        ends.frombytes((gen / "lines.idx").read_bytes())
        return ends.tolist()
    except (OSError, ValueError):
        pass
    found: list[int] = []
    try:
        with (gen / "extraction.jsonl").open("rb") as fh, \
                mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            at = data.find(b"\n")
            while at >= 0:
                found.append(at + 1)
                at = data.find(b"\n", at + 1)
    except (OSError, ValueError):  # missing or empty
        return []
    return found


def _renamed(line: bytes, entities: dict) -> bytes:
    """An extraction.jsonl line with its entities' names, aliases, types and concepts as
    ``entities`` has them now.

    Only the "entities" array is parsed and rewritten: ``, "entities": [`` and
    ``], "relations": [`` can only occur between the record's fields (inside a JSON string
    every quote is escaped), and the abstract and relations are most of the line.

    >>> from kg.model import Entity
    >>> line = (b'{"paper": {"id": "p"}, "entities": [{"id": "m/x", "type": "Method", '
    ...         b'"name": "X", "aliases": [], "concept": null, "mentions": []}], '
    ...         b'"relations": []}')
    >>> _renamed(line, {"m/x": Entity("m/x", "Method", "X", ("XX",))}) == line.replace(
    ...     b'"aliases": []', b'"aliases": ["XX"]')
    True
    """
    start = line.index(b', "entities": [') + len(b', "entities": ')
    end = line.index(b'], "relations": [', start) + 1
    found = json.loads(line[start:end])
    for entry in found:
        e = entities[entry["id"]]
        entry.update(type=e.type, name=e.name, aliases=list(e.aliases), concept=e.concept)
    return line[:start] + json.dumps(found, ensure_ascii=False).encode("utf-8") + line[end:]


def _write_json(path: Path, data: object) -> None:
    from kg.exports import replacing

    with replacing(path) as tmp:
        # Not indented: only then does json use its C encoder (0.4 s less on a conference).
        tmp.write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")


def _fsync_file(path: Path) -> None:
    with path.open("rb") as fh:
        os.fsync(fh.fileno())


def _fsync_tree(directory: Path) -> None:
    for path in directory.rglob("*"):
        if path.is_file():
            _fsync_file(path)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)  # its entries: the names of the files synced
    finally:
        os.close(fd)


def _commit(meta: Path, name: str) -> None:
    from kg.exports import replacing

    # The generation reaches the disk before CURRENT names it (its store synced its files).
    gen = meta / name
    for path in gen.iterdir():
        if path.is_file():
            _fsync_file(path)
        elif path.name != "store":
            _fsync_tree(path)
    for directory in (gen / "store", gen):
        if directory.is_dir():
            _fsync_dir(directory)
    with replacing(meta / "CURRENT") as tmp:
        tmp.write_text(name + "\n", encoding="utf-8")
    _fsync_dir(meta)


def _publish(root: Path, gen: Path, names: Sequence[str]) -> None:
    """Hard-link the generation's exports into DIR (build.json last) and drop stale ones."""
    from kg.exports import _TMP_PREFIX, RECORD, _remove_stale

    (root / RECORD).unlink(missing_ok=True)
    for name in [*names, RECORD]:
        tmp = root / f"{_TMP_PREFIX}{name}"
        tmp.unlink(missing_ok=True)
        try:
            os.link(gen / name, tmp)
        except OSError:  # a file system without hard links: copy
            shutil.copyfile(gen / name, tmp)
        os.replace(tmp, root / name)
    _remove_stale(root, {*names, RECORD}, ())


def _published(root: Path, manifest: Manifest) -> bool:
    """True when DIR's top-level exports are this generation's (a kill may have cut the
    publishing short)."""
    from kg.exports import RECORD

    gen = root / META / _gen_name(manifest.generation)
    try:
        return all(os.path.samefile(gen / n, root / n) for n in [*manifest.written, RECORD])
    except OSError:
        return False


def _prune(meta: Path, cache: _Cache, manifest: Manifest, previous: Manifest | None) -> None:
    """Keep the current generation and the one before (a `kg serve` may still read it)."""
    keep = {_gen_name(manifest.generation)}
    if previous is not None:
        keep.add(_gen_name(previous.generation))
    for path in meta.glob("gen-*"):
        if path.name not in keep:
            shutil.rmtree(path, ignore_errors=True)
    cache.keep_only({*manifest.papers.values(), *(previous.papers.values() if previous else ())})


# ------------------------------------------------------------------ the RDF store


class _NewStore:
    """A new on-disk store bulk-loaded a batch of triples at a time (``add``); ``close``
    flushes it and gives its size."""

    def __init__(self, path: Path) -> None:
        import pyoxigraph as ox

        self.ox, self.store, self.path = ox, ox.Store(str(path)), path

    def add(self, triples: Iterable[tuple[str, str, str]]) -> None:
        text = "".join(f"{s} {p} {o} .\n" for s, p, o in triples).encode("utf-8")
        if text:
            self.store.bulk_load(text, format=self.ox.RdfFormat.N_TRIPLES)

    def close(self, sync: bool = True) -> int:
        self.store.flush()
        size = len(self.store)
        del self.store
        if sync:  # (not after a failure: the first error is the one to tell)
            _fsync_tree(self.path)
        return size


def _delete_papers(store, papers: Sequence[str]) -> int:
    """Delete the triples of ``papers`` and of their relations' assertions (derived from
    them) from ``store``; returns how many. Matched and deleted in the store, not read into
    Python one quad at a time: 2-3 times faster."""
    from kg import rdf

    removed = 0
    for chunk in _chunked(list(papers), 500):
        nodes = " ".join(f"<{rdf.paper_iri(pid)}>" for pid in chunk)
        where = (f"{{ VALUES ?s {{ {nodes} }} ?s ?p ?o }} UNION {{ VALUES ?paper {{ {nodes} }} "
                 f"?s <{rdf.PROV_NS}wasDerivedFrom> ?paper . ?s ?p ?o }}")
        (row,) = store.query("SELECT (COUNT(*) AS ?n) WHERE { SELECT DISTINCT ?s ?p ?o "
                             f"WHERE {{ {where} }} }}")
        removed += int(row["n"].value)
        store.update(f"DELETE {{ ?s ?p ?o }} WHERE {{ {where} }}")
    return removed


def _store_without(previous: Path, path: Path, papers: Sequence[str]) -> int:
    """Checkpoint the store at ``previous`` into ``path`` without the triples of ``papers``
    (``_delete_papers``); returns how many it dropped. ``_store_delta`` syncs it later."""
    import pyoxigraph as ox

    ox.Store.read_only(str(previous)).backup(str(path))
    store = ox.Store(str(path))
    removed = _delete_papers(store, papers)
    store.flush()
    del store
    return removed


def _store_delta(path: Path, trimmed: tuple[int, frozenset[str]], entities: dict,
                 results: Mapping[str, Any], vocab, current: Manifest,
                 paper_digests: dict[str, str], entity_digests: dict[str, str],
                 concepts: tuple[str, ...], links: tuple[tuple[str, str, str], ...]) -> int:
    """Bring the checkpoint of the previous store at ``path`` (``_store_without``: how many
    triples it dropped, of which papers) to what ``_store_full`` of the new corpus would
    hold: the changed papers, entities and concepts replaced. ``results`` hold (at least)
    every paper whose digest changed."""
    import pyoxigraph as ox

    from kg import rdf

    removed, early = trimmed
    store = ox.Store(str(path))
    gone_papers = [p for p, d in current.paper_digests.items()
                   if paper_digests.get(p) != d and p not in early]
    new_papers = [p for p, d in paper_digests.items() if current.paper_digests.get(p) != d]
    gone_entities = [e for e, d in current.entity_digests.items()
                     if entity_digests.get(e) != d]
    new_entities = [e for e, d in entity_digests.items() if current.entity_digests.get(e) != d]
    gone_concepts = sorted(set(current.concepts) - set(concepts))
    new_concepts = sorted(set(concepts) - set(current.concepts))
    relation_predicates = {ox.NamedNode(rdf.ONTOLOGY_NS + p) for p in rdf.PREDICATES}
    # The size is kept as it changes (len() of a store scans it: 0.17 s at 4,870 papers).
    # The papers' and their relations' own nodes are the subjects of what _delete_papers
    # deletes, so nothing is counted again below.
    size = current.counts["triples"] - removed - _delete_papers(store, gone_papers)
    doomed: list = []
    for eid in gone_entities:  # its own description; relations it is the subject of below
        node = ox.NamedNode(rdf.entity_iri(eid))
        doomed.extend(q for q in store.quads_for_pattern(node, None, None, None)
                      if q.predicate not in relation_predicates)
    for iri in gone_concepts:
        doomed.extend(store.quads_for_pattern(ox.NamedNode(iri), None, None, None))
    # Entity → entity relations ("A outperforms B") may be asserted by several papers: the
    # store keeps exactly those some paper of the new corpus asserts.
    def iris(found):
        return {(rdf.entity_iri(s), p, rdf.entity_iri(o)) for s, p, o in found}

    wanted = iris(links)
    if current.links is not None:
        had = iris(current.links)
        doomed.extend(ox.Quad(ox.NamedNode(s), ox.NamedNode(rdf.ONTOLOGY_NS + p),
                              ox.NamedNode(o)) for s, p, o in sorted(had - wanted))
        wanted -= had
    else:  # an older manifest: find them in the store
        for predicate in sorted(relation_predicates, key=str):
            for q in store.quads_for_pattern(None, predicate, None, None):
                if (q.subject.value.startswith(rdf.ENTITY_NS) and
                        (q.subject.value, predicate.value.removeprefix(rdf.ONTOLOGY_NS),
                         q.object.value) not in wanted):
                    doomed.append(q)
    schemes = {iri: rdf.scheme_triples(iri, vocab) for iri in {*current.concepts, *concepts}}
    old_schemes = {t for iri in current.concepts for t in schemes[iri]}
    new_schemes = {t for iri in concepts for t in schemes[iri]}
    lines = [f"{s} {p} {o} .\n" for s, p, o in old_schemes - new_schemes]
    if lines:
        doomed.extend(ox.parse(input="".join(lines).encode(), format=ox.RdfFormat.N_TRIPLES))
    for quad in {ox.Quad(q.subject, q.predicate, q.object) for q in doomed}:
        if quad in store:
            store.remove(quad)
            size -= 1
    triples = rdf.partial_triples(
        Corpus((), entities), [results[p] for p in new_papers],
        [entities[e] for e in new_entities], new_concepts, vocab)
    triples.extend(sorted(new_schemes - old_schemes))
    triples.extend(sorted((f"<{s}>", f"<{rdf.ONTOLOGY_NS}{p}>", f"<{o}>")
                          for s, p, o in wanted))
    # The nodes of the papers changed (each paper, its assertions and sentences) are new: all
    # their triples were deleted above. Their lines are loaded as they are, each once (the
    # store parses and inserts them without a Python object per quad: 0.03 s, not 0.1 s).
    own = tuple(f"<{ns}" for ns in (rdf.PAPER_NS, rdf.ASSERTION_NS, rdf.SENTENCE_NS))
    fresh = {f"{s} {p} {o} .\n" for s, p, o in triples if s.startswith(own)}
    if fresh:
        store.load(input="".join(fresh).encode("utf-8"), format=ox.RdfFormat.N_TRIPLES)
        size += len(fresh)
    rest = [f"{s} {p} {o} .\n" for s, p, o in triples if not s.startswith(own)]
    if rest:  # these may be in the store already
        new = [q for q in {q for q in ox.parse(input="".join(rest).encode("utf-8"),
                                               format=ox.RdfFormat.N_TRIPLES)}
               if q not in store]
        store.extend(new)
        size += len(new)
    store.flush()
    del store
    _fsync_tree(path)  # here, often in a child process, rather than at the commit
    return size


# ------------------------------------------------------------------ the query index

# The AnalysisIndex fields kept as tables read on demand, so a query reads what it touches.
_TABLES = ("papers", "entities", "features", "postings", "factors", "entity_papers")
# Fields with many small values, kept as one pickle each (in the meta table): a build writes
# them in milliseconds instead of a row per key, and a query reads one whole in a few.
_BLOBS = ("order", "idf", "info", "names", "concept_entity", "titles", "labels",
          "concept_labels", "broader")


class _IndexWriter:
    """Writes a generation's query index. Given a ``copied`` one (the previous generation's),
    it changes it in place: the rows of papers rebuilt (``add``) or gone, and
    of the corpus-wide keys that may differ (``finish``); otherwise it writes every row.
    Tables are read in key order, so both end with the same rows."""

    _PER_PAPER = ("papers", "pairs", "state")

    def __init__(self, path: Path, copied: bool) -> None:
        self.copied = copied
        self.db = sqlite3.connect(path)
        # A new file no reader sees before the generation commits (which fsyncs it).
        self.db.execute("PRAGMA journal_mode = OFF")
        self.db.execute("PRAGMA synchronous = OFF")
        if not self.copied:
            for name in (*self._PER_PAPER, *(t for t in _TABLES if t != "papers"), "meta",
                         "results"):
                self.db.execute(f'CREATE TABLE "{name}" (k TEXT PRIMARY KEY, v BLOB)')
        self.rows: dict[str, list] = {name: [] for name in self._PER_PAPER}
        self.rebuilt: list[str] = []
        self.restated: set[str] = set()

    def add(self, pid: str, part, state: _State) -> None:
        from kg.model import PaperResult

        self.rows["papers"].append((pid, PaperResult(part.paper, (), ())))
        if part.evidence or part.confidence or part.used:
            self.rows["pairs"].append((pid, {"evidence": part.evidence,
                                             "confidence": part.confidence,
                                             "used": set(part.used)}))
        self.rows["state"].append((pid, state))
        self.rebuilt.append(pid)
        if len(self.rows["state"]) >= 500:
            self._flush()

    def restate(self, pid: str, state: _State) -> None:
        """Write the state of a reused paper anew (its features were recomputed)."""
        self.rows["state"].append((pid, state))
        self.restated.add(pid)

    def _table(self, name: str, rows: Mapping[str, Any], anew: set[str] | None) -> None:
        """Table ``name`` with ``rows``; in a copy, only the keys ``anew`` (every key added,
        changed or gone) are written or deleted: removing 50 of 4,870 papers pickles 786 rows
        instead of every one of 33,554, and neither the other rows nor their keys are read."""
        db = self.db
        if not self.copied:
            db.executemany(f'INSERT INTO "{name}" VALUES (?, ?)',
                           ((k, pickle.dumps(v, 5)) for k, v in rows.items()))
            return
        keys = sorted(anew)
        db.executemany(f'DELETE FROM "{name}" WHERE k = ?', ((k,) for k in keys if k not in rows))
        db.executemany(f'INSERT OR REPLACE INTO "{name}" VALUES (?, ?)',
                       ((k, pickle.dumps(rows[k], 5)) for k in keys if k in rows))

    def _flush(self) -> None:
        if self.copied:  # a rebuilt paper may have no pairs row now
            self.db.executemany('DELETE FROM "pairs" WHERE k = ?', ((k,) for k in self.rebuilt))
        self.rebuilt.clear()
        for name, rows in self.rows.items():
            self.db.executemany(f'INSERT OR REPLACE INTO "{name}" VALUES (?, ?)',
                                ((k, pickle.dumps(v, 5)) for k, v in rows))
            rows.clear()

    def finish(self, parts: dict[str, Any], entities: dict, vocab, features: dict[str, dict],
               anew: dict[str, set[str]] | None = None,
               meanwhile: Callable[[], object] | None = None) -> list:
        """Write (in a copy: bring up to date) every table; ``parts`` and ``features`` of
        every paper, in id order.
        ``anew`` (with a copied index) names, per table, the keys whose rows may differ from
        the previous generation's: the other rows are kept. ``meanwhile`` runs first, while
        the clusters are being worked out. Returns the technique counts the index stores."""
        from kg.analysis import TECHNIQUE_TYPES, assemble_index, result_key

        self._flush()
        index = assemble_index(parts, entities, vocab, features=features)
        # The clusters (Louvain) take a fifth of an incremental build: they are worked out on
        # the second core while this one writes the tables and the rest of what is stored.
        slow = _forked(lambda: [(k, pickle.dumps(v, 5)) for k, v in _clusters(index)])
        db = self.db
        stored = None
        try:
            if meanwhile is not None:
                meanwhile()
            with db:
                if self.copied:  # the papers gone (or failing now)
                    gone = [(k,) for (k,) in db.execute('SELECT k FROM "state"')
                            if k not in parts]
                    for name in self._PER_PAPER:
                        db.executemany(f'DELETE FROM "{name}" WHERE k = ?', gone)
                for name in _TABLES:
                    if name != "papers":
                        self._table(name, getattr(index, name), anew and anew[name])
                # (a copy keeps its vocabulary: the same pipeline, so the same one)
                db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [
                    ("texts", pickle.dumps(index.texts, 5)),
                    *((f"table:{name}", pickle.dumps(getattr(index, name), 5))
                      for name in _BLOBS),
                    *([] if self.copied else [("vocab", pickle.dumps(vocab, 5))])])
                db.execute("DELETE FROM results")
                counted = _counts(index)  # (while the child works on)
                stored = slow() + [(k, pickle.dumps(v, 5)) for k, v in counted]
                db.executemany("INSERT INTO results VALUES (?, ?)", sorted(stored))
        finally:
            if stored is None:  # reap the child even when writing failed
                with contextlib.suppress(Exception):
                    slow()
        db.close()
        return dict(counted)[result_key("technique_counts", TECHNIQUE_TYPES)]


def _forked(work: Callable[[], Any]) -> Callable[[], Any]:
    """Start ``work`` (on data in memory, or files nobody else has open) in a forked child
    and return a function that waits for its result, or raises its exception (asked again,
    it says the same). Without fork, ``work`` runs here.

    The child inherits DIR's lock with the parent's descriptors, so every path reaps it, and
    it dies with its parent: a build killed with -9 leaves no process behind holding the lock.

    >>> _forked(lambda: sum(range(10)))()
    45
    """
    if not hasattr(os, "fork"):
        return _done(work())
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave, never return into the caller
        try:
            os.close(read)
            with contextlib.suppress(Exception):
                import ctypes

                ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG = SIGKILL (Linux)
            try:
                data = pickle.dumps((True, work()), 5)
            except BaseException as exc:  # errors kg maps to messages pass as they are
                data = pickle.dumps((False, exc if isinstance(exc, (KgError, OSError)) else
                                     KgError(f"{type(exc).__name__}: {exc}")), 5)
            with os.fdopen(write, "wb") as fh:
                fh.write(data)
        finally:
            os._exit(0)
    os.close(write)
    outcome: list = []  # (ok, value), once the child is reaped: asking again repeats it

    def result() -> Any:
        if not outcome:
            data = b""
            try:
                with os.fdopen(read, "rb") as fh:
                    data = fh.read()
            finally:  # reaped whatever happens (an interrupted wait kills it: no more use)
                if not data:
                    with contextlib.suppress(OSError):
                        os.kill(pid, 9)
                os.waitpid(pid, 0)
                outcome.append(pickle.loads(data) if data else (False, KgError(
                    f"a helper process ({pid}) of the build died; run the command again")))
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    return result


def _in_thread(work: Callable[[], Any]) -> Callable[[], Any]:
    """Start ``work`` (file work that releases the GIL: sendfile, fsync, hashing) in a thread
    and return a function that waits for its result, or raises its exception.

    >>> _in_thread(lambda: sum(range(10)))()
    45
    """
    import threading

    outcome: list = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # (given to the waiter)
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="kg-files", daemon=True)
    thread.start()

    def wait() -> Any:
        thread.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    return wait


def _copy_synced(source: Path, target: Path) -> None:
    shutil.copyfile(source, target)
    _fsync_file(target)  # written back now: the commit syncs only the rows changed since


def _done(value: Any) -> Callable[[], Any]:
    """What ``_forked`` returns, for work done already."""
    return lambda: value


def _rocksdb_free() -> bool:
    """True when no RocksDB thread runs in this process (RocksDB keeps its thread pool, named
    ``rocksdb:…``, once any store was opened), so a forked child may open a store."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:  # not Linux: never fork a store
        return False
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm", encoding="utf-8") as fh:
                if fh.read().startswith("rocksdb"):
                    return False
        except OSError:  # the thread ended meanwhile
            continue
    return True


def _clusters(index) -> list[tuple[str, object]]:
    """The clusters `kg techniques` shows, computed once per build (Louvain takes seconds on
    a conference; the query then takes milliseconds)."""
    from dataclasses import replace

    from kg import analysis

    groups = [replace(c, papers=tuple(replace(p, abstract="") if p.abstract else p
                                      for p in c.papers))
              for c in analysis.clusters(index)]
    return [(analysis.result_key("clusters", 0, 2, 3), groups)]


def _counts(index) -> list[tuple[str, object]]:
    """What else `kg techniques` asks of the whole corpus, computed once per build."""
    from kg import analysis

    types = analysis.TECHNIQUE_TYPES
    return [(analysis.result_key("technique_counts", types), analysis.technique_counts(index)),
            (analysis.result_key("cooccurrence", types),
             analysis.cooccurrence(index, limit=analysis.STORED_PAIRS))]


class _Table(Mapping):
    """A read-only Mapping over one index table (keys in order); values read once."""

    def __init__(self, db: sqlite3.Connection, name: str) -> None:
        self.db, self.name, self.memo = db, f'"{name}"', {}

    def __getitem__(self, key: str) -> Any:
        if key not in self.memo:
            row = self.db.execute(f"SELECT v FROM {self.name} WHERE k = ?", (key,)).fetchone()
            if row is None:
                raise KeyError(key)
            self.memo[key] = pickle.loads(row[0])
        return self.memo[key]

    def __contains__(self, key: object) -> bool:
        return key in self.memo or self.db.execute(
            f"SELECT 1 FROM {self.name} WHERE k = ?", (key,)).fetchone() is not None

    def __iter__(self) -> Iterator:
        return (k for (k,) in self.db.execute(f"SELECT k FROM {self.name} ORDER BY k"))

    def __len__(self) -> int:
        return self.db.execute(f"SELECT COUNT(*) FROM {self.name}").fetchone()[0]

    def items(self):
        for k, v in self.db.execute(f"SELECT k, v FROM {self.name} ORDER BY k"):
            if k not in self.memo:
                self.memo[k] = pickle.loads(v)
        return [(k, self.memo[k]) for k in self]

    def values(self):
        return [v for _, v in self.items()]


class _Blob(Mapping):
    """A read-only Mapping over one pickled dict in the meta table, read on first use."""

    def __init__(self, db: sqlite3.Connection, key: str) -> None:
        self.db, self.key, self.value = db, key, None

    def _dict(self) -> dict:
        if self.value is None:
            row = self.db.execute("SELECT v FROM meta WHERE k = ?", (self.key,)).fetchone()
            self.value = pickle.loads(row[0])
        return self.value

    def __getitem__(self, key: str) -> Any:
        return self._dict()[key]

    def __iter__(self) -> Iterator:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())


class _Pairs:
    """``index.evidence[(pid, eid)]``, ``index.confidence[…]`` and ``(pid, eid) in
    index.used`` over the per-paper ``pairs`` table."""

    def __init__(self, table: _Table, field: str) -> None:
        self.table, self.field = table, field

    def _row(self, pid: str) -> dict:
        return self.table.get(pid, {"evidence": {}, "confidence": {}, "used": set()})

    def __getitem__(self, key: tuple[str, str]) -> Any:
        from kg.model import Span

        value = self._row(key[0])[self.field][key[1]]
        return Span(*value) if self.field == "evidence" else value

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key[1] in self._row(key[0])[self.field]

    def get(self, key: tuple[str, str], default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


def _read_index(path: Path, cls, corpus: Callable[[], Corpus]):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    tables = {name: _Table(db, name) for name in _TABLES}
    pairs = _Table(db, "pairs")
    meta = dict(db.execute("SELECT k, v FROM meta WHERE k NOT LIKE 'table:%'"))
    blobs = {name: _Blob(db, f"table:{name}") for name in _BLOBS}
    return cls(**tables, **blobs, evidence=_Pairs(pairs, "evidence"),
               confidence=_Pairs(pairs, "confidence"), used=_Pairs(pairs, "used"),
               texts=pickle.loads(meta["texts"]), vocab=pickle.loads(meta["vocab"]),
               include_mentions=False, source=corpus, stored=_Table(db, "results"))
