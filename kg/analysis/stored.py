"""A project's query index on disk (``index.sqlite``): the schema ``AnalysisIndex`` is kept
in, its writer and its reader.

Each AnalysisIndex field with many rows is a table (key, pickled value) read on demand, so a
query reads what it touches; fields with many small values are one pickle each in the
``meta`` table; ``results`` holds what the slow whole-corpus queries return, computed once
per build (``result_key``); per paper, ``papers``, ``pairs`` (evidence, confidence, use)
and the project's ``state`` of each paper (kg.project.generation).
"""

from __future__ import annotations

import pickle
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kg import analysis
from kg.analysis.index import AnalysisIndex, assemble_index, result_key
from kg.model import TECHNIQUE_TYPES, Corpus, PaperResult, Span

# The AnalysisIndex fields kept as tables read on demand, so a query reads what it touches.
_TABLES = ("papers", "entities", "features", "postings", "factors", "entity_papers")
# Fields with many small values, kept as one pickle each (in the meta table): a build writes
# them in milliseconds instead of a row per key, and a query reads one whole in a few.
_BLOBS = ("order", "idf", "info", "names", "concept_entity", "titles", "labels",
          "concept_labels", "broader", "facets", "facet_of")


class IndexWriter:
    """Writes a generation's query index. Given a ``copied`` one (the previous generation's),
    it changes it in place: the rows of papers rebuilt (``add``) or gone, and
    of the corpus-wide keys that may differ (``write``); otherwise it writes every row.
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

    def add(self, pid: str, part: analysis.PaperPart, state: Any) -> None:
        """The rows of paper ``pid``, rebuilt: its part of the index and its ``state``."""
        self.rows["papers"].append((pid, PaperResult(part.paper, (), ())))
        if part.evidence or part.confidence or part.used:
            self.rows["pairs"].append((pid, {"evidence": part.evidence,
                                             "confidence": part.confidence,
                                             "used": set(part.used)}))
        self.rows["state"].append((pid, state))
        self.rebuilt.append(pid)
        if len(self.rows["state"]) >= 500:
            self._flush()

    def restate(self, pid: str, state: Any) -> None:
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

    def assemble(self, parts: dict[str, Any], entities: dict, vocab,
                 features: dict[str, dict]) -> AnalysisIndex:
        """The index of every paper's ``parts`` and ``features`` (in id order), the per-paper
        rows added so far written."""
        self._flush()
        return assemble_index(parts, entities, vocab, features=features)

    def write(self, index: AnalysisIndex, vocab, anew: dict[str, set[str]] | None,
              clusters: list[tuple[str, bytes]]) -> list:
        """Write (in a copy: bring up to date) every table of ``index``, its stored results
        with the ``clusters`` (``clusters_rows``), and close the file. ``anew`` (with a copied
        index) names, per table, the keys whose rows may differ from the previous
        generation's: the other rows are kept. Returns the technique counts stored."""
        db = self.db
        with db:
            if self.copied:  # the papers gone (or failing now)
                gone = [(k,) for (k,) in db.execute('SELECT k FROM "state"')
                        if k not in index.papers]
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
            counted = _counts(index)
            stored = clusters + [(k, pickle.dumps(v, 5)) for k, v in counted]
            db.executemany("INSERT INTO results VALUES (?, ?)", sorted(stored))
        db.close()
        return dict(counted)[result_key("technique_counts", TECHNIQUE_TYPES)]

    def close(self) -> None:
        self.db.close()


def clusters_rows(index: AnalysisIndex) -> list[tuple[str, bytes]]:
    """The clusters `kg techniques` shows, computed once per build (Louvain takes seconds on
    a conference; the query then takes milliseconds), pickled for ``IndexWriter.write``."""
    groups = [replace(c, papers=tuple(replace(p, abstract="") if p.abstract else p
                                      for p in c.papers))
              for c in analysis.clusters(index)]
    return [(result_key("clusters", 0, 2, 3), pickle.dumps(groups, 5))]


def _counts(index: AnalysisIndex) -> list[tuple[str, object]]:
    """What else `kg techniques` and `kg trends` ask of the whole corpus, computed once per
    build."""
    types = TECHNIQUE_TYPES
    ranked, named = trend_tables(index)
    return [(result_key("technique_counts", types), analysis.technique_counts(index)),
            (result_key("cooccurrence", types),
             analysis.cooccurrence(index, limit=analysis.STORED_PAIRS)),
            (result_key("trend_counts"), ranked),
            (result_key("facet_papers"), facet_papers(index.facet_of)),
            *((result_key("trend_count", name), numbers) for name, numbers in named.items())]


def technique_targets(index: AnalysisIndex) -> list[tuple[str, frozenset[str]]]:
    """Each technique or method some paper counts for, with what its name counts (as
    ``analysis.shared_targets``), every name in order: an entity of a vocabulary concept is
    named by the concept's label, so "RL", "Reinforcement Learning" and "reinforcement
    learning" are one name."""
    wanted = set(TECHNIQUE_TYPES)
    concepts = index.vocab.concepts
    names, labels = set(), set()
    for eid in index.entity_papers:
        name, type_ = index.info.get(eid, ("", ""))
        if type_ in wanted:
            concept = concepts.get(index.entities[eid].concept or "")
            names.add(concept.pref_label if concept else name)
            labels.update([concept.pref_label] if concept else [])
    # Of names differing in case only, the vocabulary's label first: it is the one listed
    # when they count the same papers ("pretraining", not a title's "PRETRAINING").
    return [(name, frozenset(analysis.shared_targets(index, name)[2]))
            for name in sorted(names, key=lambda n: (n.casefold(), n not in labels, n))]


def trend_tables(index: AnalysisIndex, facet_of: Mapping[str, int] | None = None
                 ) -> tuple[list[tuple[str, dict[int, int]]], dict[str, dict[int, int]]]:
    """Each of ``technique_targets`` with its papers per facets number (``facet_of``, else
    the index's; any period — year, month, venue, category — follows from the numbers): the
    list `kg trends --rising` ranks (names counting the same entities once, the first by
    name), and every name by its casefolded form, for `kg trends NAME` (``stored_trend``).
    So neither counts 1.5 million postings, nor reads each paper's facets number, at
    100,000 papers."""
    if facet_of is None:
        facet_of = index.facet_of
    if isinstance(facet_of, Blob):  # (a million lookups: through the dict itself)
        facet_of = facet_of.whole()
    counted: dict[frozenset[str], dict[int, int]] = {}
    ranked, named = [], {}
    for name, targets in technique_targets(index):
        if targets not in counted:
            postings = [index.entity_papers.get(eid, ()) for eid in targets]
            pids = postings[0] if len(postings) == 1 else set().union(*postings)
            counted[targets] = dict(sorted(Counter(map(facet_of.__getitem__, pids)).items()))
            ranked.append((name, counted[targets]))
        named.setdefault(name.casefold(), counted[targets])
    return ranked, named


def trend_counts(index: AnalysisIndex, facet_of: Mapping[str, int] | None = None
                 ) -> list[tuple[str, dict[int, int]]]:
    """What `kg trends --rising` ranks (``trend_tables``): each name with its papers per
    facets number."""
    return trend_tables(index, facet_of)[0]


def facet_papers(facet_of: Mapping[str, int]) -> dict[int, int]:
    """Papers per facets number: every period's papers (the shares' denominators) without
    reading each paper's number."""
    if isinstance(facet_of, Blob):
        facet_of = facet_of.whole()
    return dict(sorted(Counter(facet_of.values()).items()))


def stored_trend(index: AnalysisIndex, name: str) -> dict[int, int] | None:
    """The papers per facets number a build stored for technique ``name`` (any case), or
    None: not stored (not a technique or method name, an index from before these were
    kept, --include-mentions), or ``name`` is an entity id (which names that entity alone).
    The same count as ``trend_tables`` gives, hence as `kg shared NAME`."""
    if index.stored is None or name in index.entities:
        return None
    return index.stored.get(result_key("trend_count", name.casefold()))


class Table(Mapping):
    """A read-only Mapping over one index table (keys in order); values read once."""

    def __init__(self, db: sqlite3.Connection, name: str) -> None:
        self.db, self.name, self.memo = db, f'"{name}"', {}
        self.every: tuple | None = None  # every (key, value), once items() has read them

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
        if self.every is None:  # (a build's map and derived facts both read every entity)
            rows = []
            for k, v in self.db.execute(f"SELECT k, v FROM {self.name} ORDER BY k"):
                if k not in self.memo:
                    self.memo[k] = pickle.loads(v)
                rows.append((k, self.memo[k]))
            self.every = tuple(rows)
        return self.every

    def values(self):
        return [v for _, v in self.items()]


class Blob(Mapping):
    """A read-only Mapping over one pickled dict in the meta table, read on first use."""

    def __init__(self, db: sqlite3.Connection, key: str) -> None:
        self.db, self.key, self.value = db, key, None

    def _dict(self) -> dict:
        if self.value is None:
            row = self.db.execute("SELECT v FROM meta WHERE k = ?", (self.key,)).fetchone()
            # (no row: an index written before the blob existed; kg trends then reads papers)
            self.value = pickle.loads(row[0]) if row is not None else {}
        return self.value

    def __getitem__(self, key: str) -> Any:
        return self._dict()[key]

    def __iter__(self) -> Iterator:
        return iter(self._dict())

    def whole(self) -> dict:
        """The dict itself, for a caller looking up every key (a million ``[]`` through
        this Mapping cost a second more than through the dict)."""
        return self._dict()

    def __len__(self) -> int:
        return len(self._dict())


class Lazy(Sequence):
    """A read-only Sequence over one pickled tuple in the meta table, read on first use: the
    titles of every paper (``texts``) take a tenth of a second at 100,000 papers, and only a
    paper looked up by words in its title needs them."""

    def __init__(self, db: sqlite3.Connection, key: str) -> None:
        self.db, self.key, self.value = db, key, None

    def _tuple(self) -> tuple:
        if self.value is None:
            row = self.db.execute("SELECT v FROM meta WHERE k = ?", (self.key,)).fetchone()
            self.value = pickle.loads(row[0])
        return self.value

    def __getitem__(self, at):
        return self._tuple()[at]

    def __iter__(self) -> Iterator:
        return iter(self._tuple())

    def __len__(self) -> int:
        return len(self._tuple())


class LazyVocabulary:
    """Stands for the index's ``Vocabulary`` (any attribute), unpickled on first use: 715 KB,
    30 ms at 2,500 concepts, that `kg trends` answering from stored counts never reads."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db, self._vocab = db, None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # (only names not set in __init__ get here)
            raise AttributeError(name)
        if self._vocab is None:
            (value,) = self._db.execute("SELECT v FROM meta WHERE k = 'vocab'").fetchone()
            self._vocab = pickle.loads(value)
        return getattr(self._vocab, name)


class Pairs:
    """``index.evidence[(pid, eid)]``, ``index.confidence[…]`` and ``(pid, eid) in
    index.used`` over the per-paper ``pairs`` table."""

    def __init__(self, table: Table, field: str) -> None:
        self.table, self.field = table, field

    def _row(self, pid: str) -> dict:
        return self.table.get(pid, {"evidence": {}, "confidence": {}, "used": set()})

    def __getitem__(self, key: tuple[str, str]) -> Any:
        value = self._row(key[0])[self.field][key[1]]
        return Span(*value) if self.field == "evidence" else value

    def __contains__(self, key: tuple[str, str]) -> bool:
        return key[1] in self._row(key[0])[self.field]

    def get(self, key: tuple[str, str], default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


def read_index(path: Path, corpus: Callable[[], Corpus]) -> AnalysisIndex:
    """The index at ``path``, read lazily; ``corpus`` gives the corpus behind it (for a
    query the stored index cannot answer)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    tables = {name: Table(db, name) for name in _TABLES}
    pairs = Table(db, "pairs")
    blobs = {name: Blob(db, f"table:{name}") for name in _BLOBS}
    return AnalysisIndex(**tables, **blobs, evidence=Pairs(pairs, "evidence"),
                         confidence=Pairs(pairs, "confidence"), used=Pairs(pairs, "used"),
                         texts=Lazy(db, "texts"), vocab=LazyVocabulary(db),
                         include_mentions=False, source=corpus, stored=Table(db, "results"))

