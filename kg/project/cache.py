"""A project's extraction cache, and the corpus resolved from it.

``Cache`` keeps each paper's extraction (and the ``Prep`` resolution reads of it) by content
key in ``DIR/.kg/cache.sqlite``; ``Resolved`` makes the corpus-level plan (recurring terms,
acronyms, entity ids) from every paper's cached Prep and builds each paper's result only when
asked. The plan function is passed in: the local one (``kg.resolve.plan``) by default, the
Dask one (``kg.distributed.plan_on_cluster``) when the build runs on a cluster.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from kg.errors import ProjectError
from kg.extract.terms import promote
from kg.model import Corpus, Paper, PaperResult, Skip, expand
from kg.resolve import paper_result, plan, prepare
from kg.vocab import Vocabulary, load_vocabulary


def chunked(items: Sequence, size: int) -> Iterator[list]:
    """``items`` in lists of ``size`` (the last one shorter).

    >>> list(chunked([1, 2, 3], 2))
    [[1, 2], [3]]
    """
    for i in range(0, len(items), size):
        yield list(items[i:i + size])


class Cache:
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

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.db.close()

    def _select(self, columns: str, table: str, keys: Sequence[str]) -> Iterator[tuple]:
        """Rows of ``table`` whose key is one of ``keys`` (asked 900 at a time: SQLite's
        limit on parameters)."""
        for chunk in chunked(list(keys), 900):
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
        """``name`` ("vocabulary") as ``pipeline`` built it, pickled, if kept."""
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


def cached_vocabulary(cache: Cache, pipeline: str) -> Vocabulary:
    """The vocabulary of ``pipeline``: unpickled from the cache where a build kept it (15 ms),
    else parsed (50 ms) and kept."""
    data = cache.built("vocabulary", pipeline)
    if data:
        with contextlib.suppress(Exception):  # damaged, or from another Python: parse it
            return pickle.loads(data)
    vocab = load_vocabulary()
    # Without what it computes on first use (label index, hierarchy): those take longer to
    # unpickle than to compute again.
    cache.put_built("vocabulary", pipeline, pickle.dumps(Vocabulary(vocab.concepts), 5))
    return vocab


class Resolved:
    """The corpus of a project's papers, resolved from cached extractions, with each paper's
    result built only when asked for (a build reuses what did not change).

    Corpus-level decisions come from each paper's cached ``Prep`` (made once per content key),
    so no vocabulary lookup is repeated. ``fresh`` papers (this run's inputs) replace the
    cached Paper, so messages name today's file and line. ``digests[pid]`` hashes what the
    paper's result derives from: its content, kept terms and entity ids. ``plan`` makes the
    corpus-level plan of the preps in id order (default: ``kg.resolve.plan`` here).
    """

    def __init__(self, cache: Cache, papers: Mapping[str, str], fresh: Mapping[str, Paper],
                 preps: dict[str, Any] | None = None, vocab: Vocabulary | None = None,
                 plan_of: Callable[[list], Any] | None = None) -> None:
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
        for batch in chunked([pid for pid in ids if papers[pid] not in preps], 500):
            self._prepare(batch, preps)
        self.order = [pid for pid in ids if pid not in self.failed]
        ordered = [preps[papers[pid]] for pid in self.order]
        decided = plan_of(ordered) if plan_of is not None else plan(ordered, vocab)
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

    def _prepare(self, batch: list[str], preps: dict[str, Any]) -> None:
        """Make (and cache) the preps of ``batch``; note the papers whose extraction failed."""
        papers = self.keys
        found = self.cache.get([papers[pid] for pid in batch])
        made = []
        for pid in batch:
            paper, result = found[papers[pid]]
            if isinstance(result, str):
                self.failed[pid] = result
                self.found[papers[pid]] = (paper, result)
            else:
                prep = prepare(expand(self.fresh.get(pid) or paper, result), self.vocab)
                preps[papers[pid]] = prep
                made.append((papers[pid], prep))
        self.cache.put_preps(made)

    def _found(self, pid: str) -> tuple[Paper, tuple | str]:
        key = self.keys[pid]
        if key not in self.found:
            self.found.update(self.cache.get([key]))
        return self.found[key]

    def result(self, pid: str) -> PaperResult:
        """The resolved PaperResult of paper ``pid``."""
        if self._corpus is not None:
            return self._by_id[pid]
        extraction = expand(self.fresh.get(pid) or self._found(pid)[0], self._found(pid)[1])
        return paper_result(promote(extraction, self.kept[pid]), self.entity_ids[pid])

    def results(self, pids: Sequence[str]) -> list[PaperResult]:
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
            # A batch at a time, their compact forms not kept: the corpus alone is what a
            # large build's map holds (at 20,000 papers it held both: 1.1 GB).
            results = tuple(r for batch in chunked(self.order, 1000)
                            for r in self.results(batch))
            self._by_id = {r.paper.id: r for r in results}
            self._corpus = Corpus(results, self.entities, self.skipped)
        return self._corpus


@contextlib.contextmanager
def open_cache(meta: Path) -> Iterator[tuple[Cache, tuple[str, ...]]]:
    """The project's cache; one that is damaged (truncated: shorter than the size its header
    gives) is moved aside to cache.sqlite.damaged and started afresh (what it lacks is then
    re-extracted, from the current extraction.jsonl where the inputs are not given)."""
    path = meta / "cache.sqlite"
    moved: tuple[str, ...] = ()
    if truncated(path):
        os.replace(path, path.with_name("cache.sqlite.damaged"))
        moved = ("cache.sqlite: truncated (moved aside to cache.sqlite.damaged)",)
    with Cache(path) as cache:
        yield cache, moved


def truncated(path: Path) -> bool:
    """True when the SQLite file at ``path`` is shorter than its header says (a cheap check:
    100 bytes read; a file without a valid header counts as truncated)."""
    try:
        with path.open("rb") as fh:
            header = fh.read(100)
        size = path.stat().st_size
    except FileNotFoundError:
        return False
    if len(header) < 100 or not header.startswith(b"SQLite format 3\0"):
        return size > 0
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(header[28:32], "big")
    valid = header[24:28] == header[92:96]  # else the page count is not maintained
    return valid and size < page * pages
