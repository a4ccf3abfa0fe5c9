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
                        RocksDB), index.sqlite (kg shared/related/techniques), the exports
                        and integrity.json (the project it belongs to, every file's size)

This module is the read side: ``open_project`` gives the committed generation (``Project``)
and what it holds. Writing one is ``kg.project.builder`` (``build``, ``add`` and ``remove``,
importable from here too); its steps live in ``cache`` (the extraction cache, resolution from
it), ``generation`` (index rows, lines, triples and exports of a generation) and ``store``
(the RDF store delta).

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
>>> from kg.project import add, build
>>> papers = read_inputs(["examples/iclr2025-seed.txt"], IngestOptions()).papers
>>> out = Path(tempfile.mkdtemp())
>>> build(out, papers[:10]).counts["papers"]
10
>>> outcome = add(out, papers[10:])
>>> outcome.counts["papers"], outcome.extracted
(19, 9)
>>> build(out, papers).extracted  # nothing changed: nothing is extracted or written
0
>>> project = open_project(out)
>>> project.index().n_papers
19
>>> [r.paper.id for r in project.results(sorted(project.manifest.papers)[:2])] == sorted(
...     project.manifest.papers)[:2]
True
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import pickle
import re
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg import io
from kg.data import span_model_path
from kg.errors import KgError, ProjectError
from kg.exports import check_export_dir
from kg.fs import sha256_file
from kg.model import Corpus, Paper, PaperResult

META = ".kg"
FORMAT = "kg-project"
FORMAT_VERSION = 1
JSONL = "extraction.jsonl"
# Beside a generation's extraction.jsonl: the end offset of each line (8-byte unsigned ints,
# native order), so a reader seeks to a paper's line instead of scanning the file.
LINE_INDEX = "lines.idx"
# Written into each generation as it is committed: the id of the project it belongs to and
# the size of every file in it (the sha256 of the small files queries read), so a reader can
# tell a generation changed, truncated or brought in from elsewhere from the one kg wrote.
# Not in manifest.json: the store's file sizes and the project id differ between two builds
# of the same papers, and manifest.json is compared byte for byte across worker counts.
CHECK = "integrity.json"
# Each paper's related papers, ranked where a build drew the technique map (stored_related).
RELATED = "related.pickle"
# Files hashed when recorded and when checked (below this size: milliseconds).
HASHED = ("index.sqlite", LINE_INDEX, RELATED, "manifest.json")
HASH_BELOW = 8 * 2**20
_GEN_NAME = re.compile(r"gen-\d{6}\Z")
# The small fields of a manifest, which ``Manifest.as_dict`` writes first: opening a project
# reads only them (``manifest_head``). The per-paper maps after them are 13.8 MB of JSON at
# 100,000 papers, 0.1-0.2 s to parse, and a query (`kg trends`, `kg shared`) never reads them.
HEAD = ("format", "version", "generation", "pipeline", "model", "formats", "written", "counts")
_HEAD_BYTES = 1 << 16
_SPACE = re.compile(r"\s*")
_COLON = re.compile(r"\s*:\s*")
_COMMA = re.compile(r"\s*,\s*")


def pipeline_version(model: str | None = None) -> str:
    """kg's version plus a hash of its code and vocabulary: a change re-extracts every paper.
    With a span ``model`` ("kg-span" or a model directory), its name and the hash of its files
    too: papers extracted with and without it never share a cache entry.

    >>> pipeline_version() == pipeline_version()
    True
    >>> pipeline_version("kg-span") == pipeline_version()
    False
    """
    from kg import __version__
    from kg.vocab import ontology_dir  # (kg.vocab loads kg.extract: a query need not)

    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent  # kg/
    for path in sorted([*package.rglob("*.py"), *ontology_dir().rglob("*.ttl")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    version = f"{__version__}+{digest.hexdigest()[:16]}"
    if model in (None, "none"):
        return version
    return f"{version}+{model_digest(model)}"


def model_digest(model: str) -> str:
    """The span model's name and a hash of its files (shipped in kg/extract/models or a
    directory); a model that is not there hashes as its name alone (using it fails clearly)."""
    directory = span_model_path(model)
    digest = hashlib.sha256(model.encode())
    if directory.is_dir():
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            digest.update(path.relative_to(directory).as_posix().encode() + b"\0"
                          + path.read_bytes())
    return f"{Path(model).name}-{digest.hexdigest()[:12]}"


def pipeline_model(pipeline: str) -> str | None:
    """The span model a ``pipeline_version`` names (None: kg's rules only).

    >>> pipeline_model("0.1.0+bd1e785814905513+kg-span-0123456789ab"), pipeline_model("0.1.0+bd1e")
    ('kg-span', None)
    """
    parts = pipeline.split("+", 2)
    return parts[2].rsplit("-", 1)[0] if len(parts) == 3 else None


def chosen_model(current: Manifest | None, asked: str | None) -> str | None:
    """The span model a build, add or remove extracts with (None: kg's rules only): the one
    ``asked`` ("none": the rules only), else the one the project's papers were extracted
    with, so that `kg add DIR` after `kg build -o DIR --model kg-span` keeps the model
    instead of extracting every paper again without it (a new project: the rules only).

    >>> chosen_model(None, None), chosen_model(None, "kg-span"), chosen_model(None, "none")
    (None, 'kg-span', None)
    """
    if asked is None:
        return current.model if current is not None else None
    return None if asked == "none" else asked


def built_with(directory: str | Path) -> str | None:
    """The span model the project at ``directory`` extracted its papers with ("none": kg's
    rules only); None when ``directory`` holds no project, or none that can be opened (its
    next build says why or repairs it). Reads only the manifest's head."""
    with contextlib.suppress(ProjectError, OSError, ValueError, KeyError, TypeError):
        if is_project(directory):
            return open_project(directory, check=False).model or "none"
    return None


def paper_key(paper: Paper, pipeline: str) -> str:
    """A content key: what extraction reads of ``paper`` (not where it came from)."""
    data = json.dumps([pipeline, paper.metadata()], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Manifest:
    """What one generation holds: papers by content key, formats, digests for the deltas."""

    generation: int
    pipeline: str
    papers: dict[str, str]  # paper id → content key (every paper asked for, failures too)
    formats: tuple[str, ...]  # as asked ("auto", or names of kg.exports.FORMATS)
    written: tuple[str, ...]  # the export files this generation has
    counts: dict[str, int]
    paper_digests: dict[str, str] = field(default_factory=dict)  # what its facts derive from
    entity_digests: dict[str, str] = field(default_factory=dict)  # of each Entity
    concepts: tuple[str, ...] = ()  # concept IRIs the store describes
    failed: dict[str, str] = field(default_factory=dict)  # paper id → why extraction failed
    # Entity → entity relations (subject, predicate, object ids) the store holds; None in a
    # manifest from before they were recorded (the store is then scanned for them).
    links: tuple[tuple[str, str, str], ...] | None = None

    @property
    def model(self) -> str | None:
        """The span model its papers were extracted with (None: the rules only)."""
        return pipeline_model(self.pipeline)

    def as_dict(self) -> dict[str, Any]:
        # (HEAD first, in this order: manifest_head reads them without the rest)
        return {"format": FORMAT, "version": FORMAT_VERSION, "generation": self.generation,
                "pipeline": self.pipeline, "model": self.model, "formats": list(self.formats),
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

    @property
    def lined(self) -> list[str]:
        """The papers extraction.jsonl has a line for, in its order (id order)."""
        return [pid for pid in sorted(self.papers) if pid not in self.failed]


def gen_name(number: int) -> str:
    return f"gen-{number:06d}"


def line_spans(gen: Path, manifest: Manifest) -> dict[str, tuple[int, int]]:
    """Where each paper's line lies in ``gen``'s extraction.jsonl: paper id → (offset,
    length), from ``lines.idx`` (else found in the file: a generation from before the index
    was kept); empty when the line ends found do not fit the manifest's papers."""
    order = manifest.lined
    try:
        ends = io.read_offsets(gen / LINE_INDEX)
    except (OSError, ValueError):
        ends = io.line_ends(gen / JSONL)
    if len(ends) != len(order):
        return {}
    return {pid: (start, end - start)
            for pid, start, end in zip(order, [0, *ends[:-1]], ends, strict=True)}


@dataclass(frozen=True)
class Project:
    """A committed generation of a project directory, opened for reading.

    ``store()`` and ``index()`` open the on-disk RDF store and query index; ``corpus()``,
    ``results(ids)`` and ``batches(n)`` rebuild resolved results from the cache (for what
    the index does not hold); ``lines(ids)`` reads papers' extraction.jsonl lines.
    """

    root: Path
    generation: Path
    # The manifest when the caller has it parsed already; else read on first use of
    # ``manifest`` (a query reads only ``head``).
    given: Manifest | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def manifest(self) -> Manifest:
        """What the generation holds (``Manifest``), every field: parsed on first use."""
        return self.given or read_manifest(self.generation / "manifest.json")

    @functools.cached_property
    def head(self) -> dict[str, Any]:
        """The manifest's small fields (``HEAD``: generation, pipeline, model, formats,
        written, counts), read without its per-paper maps."""
        if self.given is not None:
            return {k: v for k, v in self.given.as_dict().items() if k in HEAD}
        return manifest_head(self.generation / "manifest.json")

    @property
    def model(self) -> str | None:
        """The span model the project's papers were extracted with (None: the rules only)."""
        return pipeline_model(str(self.head["pipeline"]))

    def store(self):
        """The generation's pyoxigraph store, read-only."""
        import pyoxigraph as ox  # (0.05 s: only the commands that query the store pay it)

        return ox.Store.read_only(str(self.generation / "store"))

    def index(self):
        """The query index (``kg.analysis.AnalysisIndex``), read lazily from index.sqlite."""
        from kg.analysis.stored import read_index  # (networkx-free, but not needed by all)

        return read_index(self.generation / "index.sqlite", self.corpus)

    def map_source(self):
        """What the technique map reads (``kg.viz.map_source.MapSource``), from the stored
        index and the related papers kept (``related``): no paper's result is read."""
        kept = self.related()
        return stored_map_source(self.generation / "index.sqlite",
                                 None if kept is None else lambda: kept)

    def related(self) -> dict[str, list] | None:
        """Each paper's ``kg.derived.RELATED_K`` related papers (id, score, shared names) as the
        build that drew the map ranked them (``generation.stored_related``), else None."""
        from kg.derived import RELATED_K

        try:
            with (self.generation / RELATED).open("rb") as fh:
                k, ranked = pickle.load(fh)
        except (OSError, EOFError, pickle.UnpicklingError, TypeError, ValueError):
            return None  # (unreadable: rank them again, kg.analysis.related_all)
        return ranked if k == RELATED_K else None

    def _cache(self):
        # (resolution is imported only by the commands that read the cache)
        from kg.project.cache import Cache

        return Cache(self.root / META / "cache.sqlite", readonly=True)

    def vocabulary(self):
        """The vocabulary this generation was built with: the one the project keeps pickled
        in its cache (3 ms), else the vocabulary files as they are now (parsed: 50 ms)."""
        from kg.project.cache import cached_vocabulary
        from kg.vocab import load_vocabulary

        with contextlib.suppress(ProjectError, sqlite3.Error), self._cache() as cache:
            return cached_vocabulary(cache, self.manifest.pipeline)  # (read-only: not kept)
        return load_vocabulary()

    def corpus(self) -> Corpus:
        """The resolved corpus: from extraction.jsonl when written, else from the cache."""
        if JSONL in self.manifest.written:
            check_export_dir(self.generation, reading=JSONL)
            return io.read_jsonl(self.generation / JSONL)
        with self._resolution() as resolved:
            return resolved.corpus()

    def results(self, ids: Iterable[str]) -> list[PaperResult]:
        """The resolved results of the papers ``ids`` (as the generation's exports hold them),
        in the order given, from the project's cache.

        Each call reads the cache and makes the corpus-level plan again (about a second at
        5,000 papers): ask for many papers at once, or go through ``batches``. A paper not in
        the generation, or whose extraction failed, raises KeyError.
        """
        with self._resolution() as resolved:
            return resolved.results(list(ids))

    def batches(self, n: int) -> Iterator[Corpus]:
        """The resolved corpus ``n`` papers at a time, in id order, from the project's cache
        (whatever ``--formats`` wrote), in memory bounded by a batch.

        Each batch carries the entities its papers mention; the entities no paper mentions
        come last, in a batch without papers. The cache stays open until the iteration ends.
        """
        if n < 1:
            raise KgError("a batch must hold at least 1 paper")
        with self._resolution() as resolved:
            mentioned: set[str] = set()
            for start in range(0, len(resolved.order), n):
                results = resolved.results(resolved.order[start:start + n])
                ids = sorted({eid for r in results for eid in r.entity_ids})
                mentioned.update(ids)
                yield Corpus(tuple(results), {eid: resolved.entities[eid] for eid in ids})
            rest = sorted(set(resolved.entities) - mentioned)
            if rest:
                yield Corpus((), {eid: resolved.entities[eid] for eid in rest})

    @contextlib.contextmanager
    def _resolution(self) -> Iterator[Any]:
        from kg.project.cache import Resolved  # (see _cache)

        with self._cache() as cache:
            yield Resolved(cache, self.manifest.papers, {})

    def lines(self, ids: Iterable[str]) -> dict[str, str]:
        """The extraction.jsonl lines (``kg.io`` records, each ending in a newline) of the
        papers ``ids``, by paper id: read by the line index where it fits the manifest, else
        found by scanning the file. Ids the file has no line for are left out (the caller
        says which were wanted). Only for a generation that wrote extraction.jsonl
        (``"extraction.jsonl" in manifest.written``; ProjectError otherwise).
        """
        wanted = set(ids)
        path = self.generation / JSONL
        if JSONL not in self.manifest.written:
            raise ProjectError(f"{self.root}: its build did not write {JSONL}; read the "
                               "papers with Project.results or Project.batches")
        if not wanted:
            return {}
        spans = line_spans(self.generation, self.manifest)
        out: dict[str, str] = {}
        with path.open("rb") as fh:
            if spans:
                for pid in sorted(wanted & spans.keys()):
                    offset, length = spans[pid]
                    fh.seek(offset)
                    out[pid] = fh.read(length).decode("utf-8")
                return out
            for raw in fh:
                line = raw.decode("utf-8")
                pid = io.line_paper_id(line)
                if pid in wanted:
                    out[pid] = line
        return out


def stored_index(index_path: Path):
    """A generation's stored index for what reads only its uses, on the index's own settings
    (the technique map, the derived facts): it never loads the corpus."""
    from kg.analysis.stored import read_index  # (as in Project.index)

    def no_corpus():
        raise KgError("the stored index was asked for the corpus; please report this")

    return read_index(index_path, no_corpus)


def stored_map_source(index_path: Path, ranked: Callable[[], Mapping[str, list]] | None = None,
                      index=None):
    """What the technique map reads (``kg.viz.map_source``) from a generation's ``index``
    (``stored_index``, opened here unless given): papers from their state rows, evidence
    from their pairs rows, a row at a time; ``ranked`` gives the related papers ranked."""
    from kg.viz.map_source import MapPaper, MapSource, PaperEvidence  # (only to draw a map)

    def rows(table: str) -> Iterator[tuple[str, Any]]:
        db = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
        try:  # (key order: the papers' order in the index, as in the corpus)
            for k, v in db.execute(f'SELECT k, v FROM "{table}" ORDER BY k'):
                yield k, pickle.loads(v)
        finally:
            db.close()

    def papers() -> Iterator[MapPaper]:
        for _, state in rows("state"):
            # Only what the map shows (authors and keywords were half of what it kept).
            p = Paper(*state.paper)
            # Each row unpickles its own copy of every entity id: one string per id instead.
            yield MapPaper(Paper(p.id, "", p.title, p.label, venue=p.venue, year=p.year,
                                 url=p.url, links=p.links),
                           tuple(map(sys.intern, state.mentioned)),
                           tuple(map(sys.intern, state.counted)))

    def evidence() -> Iterator[PaperEvidence]:
        for pid, row in rows("pairs"):
            yield PaperEvidence(pid, row["evidence"], row["confidence"], row["used"])

    index = stored_index(index_path) if index is None else index
    return MapSource(index, papers, evidence, ranked)


def is_project(directory: str | Path) -> bool:
    """True when ``directory`` holds a kg project (``.kg/project.json``)."""
    return (Path(directory) / META / "project.json").is_file()


def open_project(directory: str | Path, check: bool = True) -> Project:
    """The committed state of the project at ``directory`` (ProjectError if there is none,
    and, unless ``check`` is false, if a file of it is missing or differs from the sizes and
    hashes recorded when it was committed: ``damage``)."""
    root = Path(directory)
    meta = root / META
    if not (meta / "project.json").is_file():
        if (root / "build.json").is_file() or (root / JSONL).is_file():
            raise ProjectError(f"{root}: an export directory from an older kg, without a query "
                               f"store; upgrade it with `kg build INPUT... -o {root}` (the "
                               "same inputs; or its extraction.jsonl)")
        raise ProjectError(f"{root}: not a kg project; build one with "
                           f"`kg build INPUT... -o {root}`")
    check_format(root)
    name = _current_name(root)
    if name is None:
        raise ProjectError(f"{root}: no complete build yet (the first build was interrupted "
                           f"or is running); run `kg build INPUT... -o {root}`")
    project = Project(root, meta / name)
    path = project.generation / "manifest.json"
    try:
        number = project.head["generation"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProjectError(f"{path}: damaged ({exc}); move {root} aside, or delete "
                           f"{meta} to rebuild from the inputs") from exc
    _check_number(path, number, name, root)
    return checked(project) if check else project


def open_generation(directory: str | Path, name: str) -> Project:
    """Generation ``name`` of the project at ``directory``, current or not, checked as
    ``open_project`` checks the current one: ``kg serve`` pins the generation it serves, so
    a worker it starts later opens that one, not whatever CURRENT names by then."""
    root = Path(directory)
    gen = root / META / name
    foreign = _foreign(root, gen) if _GEN_NAME.match(name) else "not a generation's name"
    if foreign:
        raise ProjectError(f"{gen}: {foreign}")
    try:
        manifest_head(gen / "manifest.json")["generation"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProjectError(f"{gen}: gone or damaged ({exc}); the project has moved on: "
                           "open it again") from exc
    return checked(Project(root, gen))


def checked(project: Project) -> Project:
    """``project`` if nothing in its generation differs from what was recorded (``damage``),
    else ProjectError naming what does and how to repair it."""
    problems = damage(project)
    if problems:
        raise ProjectError(f"{project.generation}: changed outside kg since it was built "
                           f"({describe(problems)}); `kg build` with the same inputs "
                           f"repairs it (`kg build INPUT... -o {project.root}`)")
    return project


def project_id(root: Path) -> str | None:
    """The id ``project.json`` gives the project (None in one made before ids were kept)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return json.loads((root / META / "project.json").read_text(encoding="utf-8")).get("id")
    return None


def survey(gen: Path) -> dict[str, dict[str, object]]:
    """What ``integrity.json`` records of ``gen``: each file's size (relative path → {"bytes"}),
    and the sha256 of the small ones queries read. The store's LOCK and LOG files are left
    out: RocksDB writes them whenever the store is opened."""
    files: dict[str, dict[str, object]] = {}
    for path in sorted(gen.rglob("*")):
        rel = path.relative_to(gen).as_posix()
        if not path.is_file() or rel == CHECK or (
                rel.startswith("store/") and path.name.startswith(("LOCK", "LOG"))):
            continue
        size = path.stat().st_size
        files[rel] = {"bytes": size}
        if rel in HASHED and size < HASH_BELOW:
            files[rel]["sha256"] = sha256_file(path)
    return files


def damage(project: Project) -> list[str]:
    """What differs in ``project``'s generation from what was recorded when it was committed
    (missing files, other sizes, other hashes of the small files); empty when nothing does.
    A generation from before kg recorded this is checked for its store and index only.

    Stats every file and hashes a few small ones: about a millisecond at a conference.
    """
    gen = project.generation
    try:
        recorded = json.loads((gen / CHECK).read_text(encoding="utf-8"))["files"]
    except FileNotFoundError:
        return [f"{name}: missing" for name in ("store", "index.sqlite")
                if not (gen / name).exists()]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"{CHECK}: unreadable ({exc})"]
    problems = []
    for rel, meta in sorted(recorded.items()):
        try:
            size = (gen / rel).stat().st_size
        except OSError:
            problems.append(f"{rel}: missing")
            continue
        if size != meta.get("bytes"):
            problems.append(f"{rel}: {size:,} bytes, {meta.get('bytes'):,} recorded")
        elif "sha256" in meta and sha256_file(gen / rel) != meta["sha256"]:
            problems.append(f"{rel}: content changed")
    return problems


def describe(problems: list[str]) -> str:
    """``damage``'s list in a sentence: the store's files counted, the others named.

    >>> describe(["index.sqlite: missing", "store/000010.sst: missing", "store/CURRENT: missing"])
    'index.sqlite: missing; store/: 2 files missing or changed'
    """
    store = [p for p in problems if p.startswith("store/")]
    out = [p for p in problems if not p.startswith("store/")][:5]
    if store:
        out.append(f"store/: {len(store)} file{'s' if len(store) > 1 else ''} missing or "
                   "changed")
    return "; ".join(out)


def check_format(root: Path) -> None:
    """ProjectError unless ``root/.kg/project.json`` names a project format this kg reads."""
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


def read_current(root: Path) -> Manifest | None:
    """The manifest of the committed generation; None before the first commit. ProjectError
    when CURRENT names something other than a generation of this project (another project's,
    linked or copied in, or a path)."""
    name = _current_name(root)
    if name is None:
        return None
    path = root / META / name / "manifest.json"
    try:
        manifest = read_manifest(path)
    except ProjectError as exc:
        raise ProjectError(f"{exc}; move {root} aside, or delete {root / META} to rebuild "
                           "from the inputs") from exc
    _check_number(path, manifest.generation, name, root)
    return manifest


def read_manifest(path: Path) -> Manifest:
    """The manifest at ``path``, every field (ProjectError: unreadable or damaged)."""
    try:
        return Manifest.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProjectError(f"{path}: damaged ({exc})") from exc


def manifest_head(path: Path) -> dict[str, Any]:
    """The ``HEAD`` fields of the manifest at ``path``, parsed one by one from its first
    bytes up to the first other key (then the rest is not read); the whole file when they
    are not first (a manifest from before this order). OSError or ValueError if unreadable.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "manifest.json"
    >>> _ = path.write_text('{"generation": 3, "pipeline": "0.1.0+ab", "papers": {"p1": "k"}}')
    >>> manifest_head(path)
    {'generation': 3, 'pipeline': '0.1.0+ab'}
    """
    with path.open("rb") as fh:
        start = fh.read(_HEAD_BYTES)
    decoder, head = json.JSONDecoder(), {}
    text = start.decode("utf-8", errors="replace")  # (a cut character: only past the head)
    with contextlib.suppress(ValueError, AttributeError):
        at = _SPACE.match(text).end()
        if text[at] != "{":
            raise ValueError("not an object")
        at = _SPACE.match(text, at + 1).end()
        while True:
            key, at = decoder.raw_decode(text, at)
            if key not in HEAD:
                if {"generation", "pipeline"} <= head.keys():
                    return head
                break
            head[key], at = decoder.raw_decode(text, _COLON.match(text, at).end())
            at = _COMMA.match(text, at).end()  # (None at the object's end: AttributeError)
    data = json.loads(path.read_bytes())
    return {k: v for k, v in data.items() if k in HEAD}


def _check_number(path: Path, number: object, name: str, root: Path) -> None:
    if not isinstance(number, int) or gen_name(number) != name:
        raise ProjectError(f"{path}: the manifest of generation {number!r}, not of {name}; "
                           f"move {root} aside, or delete {root / META} to rebuild")


def _current_name(root: Path) -> str | None:
    """The name of the committed generation CURRENT gives (None before the first commit),
    checked to be one of this project's (``read_current``)."""
    meta = root / META
    try:
        name = (meta / "CURRENT").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(f"{meta / 'CURRENT'}: unreadable ({exc}); move {root} aside, or "
                           f"delete {meta} to rebuild from the inputs") from exc
    gen = meta / name
    foreign = _foreign(root, gen) if _GEN_NAME.match(name) else "not a generation's name"
    if foreign:
        raise ProjectError(f"{meta / 'CURRENT'} names {name[:80]!r}: {foreign}, so it is not "
                           f"this project's state; write one of this project's generations "
                           f"(ls {meta}) into CURRENT, or move {root} aside and build afresh")
    return name


def _foreign(root: Path, gen: Path) -> str | None:
    """Why ``gen`` is not a generation of the project at ``root`` (None when it is)."""
    if gen.is_symlink():
        return f"a link to {gen.resolve()}"
    try:
        belongs = json.loads((gen / CHECK).read_text(encoding="utf-8")).get("project")
    except FileNotFoundError:
        return None  # committed before generations recorded their project
    except (OSError, ValueError, AttributeError):
        return None  # (damage() reports the file)
    mine = project_id(root)
    if belongs and mine and belongs != mine:
        return f"a generation of another project ({belongs[:12]}, this one is {mine[:12]})"
    return None


_BUILD_API = ("build", "add", "remove", "Outcome")


def __getattr__(name: str):
    # The write side (kg.project.builder) imports extraction, resolution, the store and the
    # exports: loaded on first use, so the queries that only read a project stay light.
    if name not in _BUILD_API:
        raise AttributeError(f"module 'kg.project' has no attribute {name!r}")
    module = importlib.import_module("kg.project.builder")
    # (the names of kg.project.builder, bound here on first use)
    globals().update({n: getattr(module, n) for n in _BUILD_API})
    return globals()[name]
