"""Building a project: ``build``, ``add`` and ``remove``, each the same named steps.

lock DIR → work out the target (the papers it is to hold, by content key; the papers given
are read as a stream and what is not cached is extracted as they come: ``kg.project.extracting``)
→ resolve the corpus from the cache → write a new generation beside the current one
(``kg.project.generation``) → commit it (CURRENT names it) and publish its exports.

>>> import tempfile
>>> from kg.ingest import IngestOptions, read_inputs
>>> papers = read_inputs(["examples/iclr2025-seed.txt"], IngestOptions()).papers
>>> out = Path(tempfile.mkdtemp())
>>> build(out, papers[:3], formats=["jsonl"]).counts["papers"]
3
>>> remove(out, [papers[0].id]).removed == (papers[0].id,)
True
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import gc
import json
import os
import shutil
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg.errors import BusyError, InputError, ProjectError
from kg.exports import FORMATS, KNOWN_FILES, RECORD, TMP_PREFIX, read_record, remove_stale
from kg.fs import (
    check_writable,
    fsync_dir,
    fsync_file,
    fsync_tree,
    link_or_copy,
    replacing,
    write_json,
)
from kg.ingest import provisional_label
from kg.model import Paper, Skip
from kg.project import (
    CHECK,
    FORMAT,
    FORMAT_VERSION,
    JSONL,
    META,
    Manifest,
    Project,
    check_format,
    chosen_model,
    damage,
    describe,
    gen_name,
    open_project,
    paper_key,
    pipeline_version,
    project_id,
    read_current,
    survey,
)
from kg.project.beside import store_worker
from kg.project.cache import Cache, Resolved, cached_vocabulary, open_cache
from kg.project.extracting import Reader, extract_few, extract_into
from kg.project.generation import Job, Previous, write_generation
from kg.project.store import store_without

# "auto" writes every format up to AUTO_ALL_PAPERS papers; above, only extraction.jsonl:
# each build would otherwise spend most of its time rewriting half a gigabyte of text (30 s
# at 4,870 papers) that queries do not need (they read the store and index); `--formats all`
# asks for it.
AUTO_ALL_PAPERS = 2000
# The files of each format a project can keep current (kg.exports.FORMATS).
PROJECT_FORMATS: dict[str, tuple[str, ...]] = {f.name: f.files for f in FORMATS if f.project}
# Fewer new papers than this are extracted in this process with the extractor the project
# keeps pickled (unpickled in 0.06 s; building it takes 0.15 s, and worker processes more).
FEW_PAPERS = 100


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
    repaired: tuple[str, ...] = ()  # what was found damaged and rebuilt


def build(directory: str | Path, papers: Iterable[Paper], **options: Any) -> Outcome:
    """Make the project at ``directory`` hold exactly ``papers`` (extracting only what is new
    or changed; papers no longer given are removed). ``papers`` may be a stream (such as
    ``kg.pipeline.PaperStream``): it is read once, as extraction goes (``Reader``)."""
    return _update(Path(directory), lambda current, read: read(papers), **options)


def add(directory: str | Path, papers: Iterable[Paper], **options: Any) -> Outcome:
    """Add ``papers`` (a sequence or a stream) to the project (a paper with an id already
    there replaces it)."""
    def target(current: Mapping[str, str], read: Reader) -> dict[str, Paper | str]:
        return {**current, **read(papers)}

    return _update(Path(directory), target, **options)


def remove(directory: str | Path, ids: Iterable[str], **options: Any) -> Outcome:
    """Remove the papers ``ids`` with every fact and every entity no other paper supports."""
    ids = list(dict.fromkeys(ids))

    def target(current: Mapping[str, str], read: Reader) -> dict[str, Paper | str]:
        unknown = [i for i in ids if i not in current]
        if unknown:
            raise InputError(f"{len(unknown)} id(s) not in {directory}: "
                             + ", ".join(unknown[:10])
                             + " (`kg techniques`/`kg shared` list paper ids)")
        gone = set(ids)
        return {pid: key for pid, key in current.items() if pid not in gone}

    return _update(Path(directory), target, must_exist=True, **options)


@dataclass(frozen=True)
class _Options:
    """How a build runs (the keyword options of ``build``, ``add`` and ``remove``)."""

    formats: Sequence[str] | None = None
    workers: int = 1
    on_progress: Callable[[int, int], None] | None = None
    on_step: Callable[[str], None] | None = None
    trained_model: str | None = None  # "none": the rules; None: as built (chosen_model)
    inputs: Sequence[str | Path] = ()
    must_exist: bool = False
    engine: str = "local"
    scheduler: str | None = None

    def step(self, name: str) -> None:
        if self.on_step is not None:
            self.on_step(name)


def _update(root: Path, target_of: Callable, **options: Any) -> Outcome:
    run = _Options(**options)
    if run.engine not in ("local", "dask"):
        raise InputError(f"engine {run.engine!r}: choose local or dask")
    try:
        with _no_collections(run.engine):
            return _update_locked(root, target_of, run)
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


@contextlib.contextmanager
def _no_collections(engine: str) -> Iterator[None]:
    """Keep the cycle collector off during a local build (a Dask one: a hundred times less
    often, for the client's own garbage).

    A build allocates millions of small objects that outlive their batch (preps, states,
    features, entities), and each time enough have piled up CPython scans them, in vain: a
    whole 4,870-paper build leaves 75 objects in cycles. Measured on ICLR+ICML 2024 with the
    collector on: 0.29-0.42 s of CPU in 900-1,050 collections for each 50-paper remove, add
    or re-add (a quarter of its 1.2-1.7 s). Peak memory is unchanged. Builds are not run from
    several threads of one process (the setting is process-wide).
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


@dataclass(frozen=True)
class _Target:
    """What the new generation is to hold: papers by content key, those to extract, files."""

    keys: dict[str, str]  # paper id → content key, in id order
    todo: list[Paper]  # the papers whose content key is not cached
    papers: dict[str, Paper | str]  # paper id → Paper (given) or content key (kept)
    asked: tuple[str, ...]
    chosen: tuple[str, ...]
    recovered: int = 0  # papers whose lost extraction is redone from the current generation


def _update_locked(root: Path, target_of: Callable, run: _Options) -> Outcome:
    if run.must_exist:
        open_project(root, check=False)  # (a damaged generation is repaired below)
    check_target(root)
    check_writable(root)
    with locked(root):
        meta = root / META
        if project_id(root) is None:  # new, or made before projects had ids
            write_json(meta / "project.json", {"format": FORMAT, "version": FORMAT_VERSION,
                                               "id": uuid.uuid4().hex})
        current = read_current(root)
        damaged = _damage(root, current)
        # (no model asked: the one the project was built with, not the rules alone)
        run = dataclasses.replace(run, trained_model=chosen_model(current, run.trained_model))
        pipeline = pipeline_version(run.trained_model)
        with open_cache(meta) as (cache, moved), contextlib.ExitStack() as stack:
            reader = Reader(cache, pipeline, stack, workers=run.workers,
                            on_progress=run.on_progress, trained_model=run.trained_model,
                            engine=run.engine, scheduler=run.scheduler, few=FEW_PAPERS)
            target = _target(root, cache, current, target_of, pipeline, run.formats, reader)
            if (current is not None and current.pipeline == pipeline and not damaged
                    and current.papers == target.keys and current.written == target.chosen
                    and published(root, current)):
                return Outcome(current.counts, 0, notices=format_notice(target.asked,
                                                                        target.chosen),
                               noop=True)
            manifest, resolved, summary = _new_generation(root, cache, current, target,
                                                          pipeline, run, reader,
                                                          fresh=bool(damaged))
            prune(meta, cache, manifest, current)
    old = set(current.papers) if current else set()
    keys = target.keys
    return Outcome(manifest.counts, reader.extracted + len(target.todo),
                   added=tuple(sorted(set(keys) - old)),
                   removed=tuple(sorted(old - set(keys))),
                   changed=tuple(sorted(pid for pid in old & set(keys)
                                        if current.papers[pid] != keys[pid])),
                   written=manifest.written,
                   notices=(*format_notice(target.asked, target.chosen),
                            *_repair_notice(current, damaged, moved, target.recovered)),
                   skipped=reader.named(resolved.skipped), repaired=(*moved, *damaged), **summary)


def _damage(root: Path, current: Manifest | None) -> tuple[str, ...]:
    """What is damaged in the current generation (``kg.project.damage``)."""
    if current is None:
        return ()
    return tuple(damage(Project(root, root / META / gen_name(current.generation), current)))


def _repair_notice(current: Manifest | None, damaged: Sequence[str], moved: Sequence[str],
                   recovered: int) -> tuple[str, ...]:
    where = gen_name(current.generation) if current else "the project"
    out = [f"repaired: {where} was changed outside kg ({describe(list(damaged))}); the new "
           "generation was rebuilt from the cache, reusing nothing of it"] if damaged else []
    out.extend(f"repaired: {m}" for m in moved)
    if recovered:
        out.append(f"repaired: re-extracted {recovered:,} paper(s) whose cached extraction was "
                   f"lost, from {where}'s {JSONL}")
    return tuple(out)


def _target(root: Path, cache: Cache, current: Manifest | None, target_of: Callable,
            pipeline: str, formats: Sequence[str] | None, read: Reader) -> _Target:
    """The papers the new generation holds, by content key, and those to extract."""
    # A paper kept from the current generation is its content key: its Paper is read from
    # the cache only when the pipeline changed (the key changes with it). A paper given is
    # its key too once read (``read``), already under this pipeline.
    target: dict[str, Paper | str] = target_of(current.papers if current else {}, read)
    recovered: dict[str, Paper] = {}
    if current is not None and current.pipeline != pipeline:
        old = {pid: p for pid, p in target.items()
               if isinstance(p, str) and pid not in read.sources}
        kept = {k: found[0] for k, found in cache.get(list(old.values())).items()}
        recovered = _recover(root, current, [pid for pid, k in old.items() if k not in kept])
        target.update((pid, kept.get(k) or recovered.get(pid, k)) for pid, k in old.items())
    keys = {pid: p if isinstance(p, str) else paper_key(p, pipeline)
            for pid, p in sorted(target.items())}
    if not keys:
        raise InputError("no papers would be left; a project needs at least one")
    asked = asked_formats(formats, current.formats if current else ("auto",))
    missing = cache.missing(keys.values())
    lost = sorted(pid for pid in keys if keys[pid] in missing and isinstance(target[pid], str))
    recovered.update(_recover(root, current, lost))
    target.update(recovered)
    lost = [pid for pid in lost if pid not in recovered]
    if lost:
        raise ProjectError(f"{root / META / 'cache.sqlite'}: lost the extraction of "
                           f"{len(lost)} paper(s) ({', '.join(lost[:5])}), and the current "
                           f"{JSONL} does not hold them as they were; run "
                           f"`kg build INPUT... -o {root}` with all the inputs")
    return _Target(keys, [target[pid] for pid in keys if keys[pid] in missing], target,
                   asked, choose(asked, len(keys)), len(recovered))


def _recover(root: Path, current: Manifest | None, lost: Sequence[str]) -> dict[str, Paper]:
    """The papers ``lost`` (ids of the current generation whose cached extraction is gone)
    as the current generation's extraction.jsonl holds them, where they give the content key
    recorded for them (an untitled paper's line carries the
    label resolution gave it: tried with the one reading gave it too), to be extracted
    again."""
    if not lost or current is None or JSONL not in current.written:
        return {}
    gen = root / META / gen_name(current.generation)
    try:
        lines = Project(root, gen, current).lines(lost)
    except (OSError, UnicodeDecodeError):
        return {}
    found: dict[str, Paper] = {}
    for pid, line in lines.items():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            # (the contract's "paper" object is Paper.metadata(): its fields, lists as arrays)
            paper = Paper(**{k: tuple(v) if isinstance(v, list) else v
                             for k, v in json.loads(line)["paper"].items()})
            for candidate in (paper, dataclasses.replace(  # as read, before resolution
                    paper, label=paper.title or provisional_label(paper.abstract))):
                if paper_key(candidate, current.pipeline) == current.papers[pid]:
                    found[pid] = candidate
                    break
    return found


def _new_generation(root: Path, cache: Cache, current: Manifest | None, target: _Target,
                    pipeline: str, run: _Options, reader: Reader, fresh: bool = False
                    ) -> tuple[Manifest, Resolved, dict]:
    """Extract, resolve and write the next generation, then commit and publish it; ``fresh``
    (the current one is damaged) reuses nothing of the current generation. A generation
    that fails is removed (once what was started beside this process has ended) before the
    error goes on: a reader never finds it."""
    meta = root / META
    previous_gen = meta / gen_name(current.generation) if current else None
    delta = (current is not None and current.pipeline == pipeline and not fresh
             and (previous_gen / "store").is_dir())
    gen = meta / gen_name(current.generation + 1 if current else 1)
    if gen.exists():  # left by a build that was killed before it committed
        shutil.rmtree(gen)
    gen.mkdir()
    try:
        with store_worker() if delta else contextlib.nullcontext() as worker:
            trim = None
            if delta:
                # The store is checkpointed without the papers gone or changed beside this
                # process's extraction and resolution; the store delta starts from it.
                gone = sorted(p for p, k in current.papers.items() if target.keys.get(p) != k)
                trim = (worker.submit(store_without, previous_gen / "store", gen / "store",
                                      gone), frozenset(gone))
            preps = _extract_few(cache, target, pipeline, run)
            resolved = _resolve(cache, target, pipeline, run, preps, reader)
            job = Job(gen, current.generation + 1 if current else 1, pipeline, target.keys,
                      target.asked, target.chosen, None if fresh else current,
                      Previous(previous_gen, current) if delta else None, run.inputs,
                      run.step)
            manifest, summary = write_generation(job, resolved, worker, trim)
    except BaseException:  # a failed generation is never left for a reader to find
        shutil.rmtree(gen, ignore_errors=True)
        raise
    commit(meta, gen.name)
    publish(root, gen, manifest.written, previous_gen)
    return manifest, resolved, summary


def _extract_few(cache: Cache, target: _Target, pipeline: str, run: _Options) -> dict | None:
    """Extract a few papers in this process (``FEW_PAPERS``: starting workers would cost
    more); returns every paper's prep (else None: ``_resolve`` extracts)."""
    todo = target.todo
    if not (run.engine == "local" and 0 < len(todo) < FEW_PAPERS):
        return None
    rows, made = extract_few(todo, pipeline, run.trained_model)
    cache.put(rows)
    cache.put_preps(made)
    preps = cache.preps(sorted(target.keys.values()))
    if run.on_progress:
        run.on_progress(len(todo), len(todo))
    return preps


def _resolve(cache: Cache, target: _Target, pipeline: str, run: _Options,
             preps: dict | None, reader: Reader) -> Resolved:
    """Extract what ``_extract_few`` and the reader left (locally, or on Dask) and resolve
    the corpus."""
    # On Dask, extraction and the resolution plan share one cluster session.
    cluster = reader.cluster() if run.engine == "dask" else None
    if preps is None:
        extract_into(cache, target.todo, pipeline, run.workers, run.on_progress,
                     run.trained_model, cluster=cluster)
    run.step(f"resolving entities across {len(target.keys):,} papers")
    # (No fresh Papers: the cache holds each as this run read it, or with the same content.)
    return Resolved(cache, target.keys, {}, preps=preps,
                    vocab=cached_vocabulary(cache, pipeline), plan_of=_cluster_plan(cluster))


def _cluster_plan(cluster: tuple | None) -> Callable[[list], Any] | None:
    if cluster is None:
        return None
    from kg.distributed import plan_on_cluster  # (Dask is imported only for --engine dask)

    return lambda preps: plan_on_cluster(preps, cluster[0])


def asked_formats(formats: Sequence[str] | None, before: tuple[str, ...]) -> tuple[str, ...]:
    """The formats asked for: ``@current`` (what DIR had) expanded; a later ``-x`` cancels an
    earlier ``x``.

    >>> asked_formats(["@current", "-html"], ("auto",)), asked_formats(None, ("nt",))
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


def choose(asked: Sequence[str], n_papers: int) -> tuple[str, ...]:
    """The export files a build writes for ``asked`` formats and a corpus of ``n_papers``.

    Above ``AUTO_ALL_PAPERS``, "auto" writes extraction.jsonl and graph.html, which is then
    the technique map (``kg.viz``'s view above its own threshold): every build ends with a
    picture.

    >>> choose(["auto", "-html"], 19)[:3], choose(["auto"], 5000)
    (('edges.csv', 'extraction.jsonl', 'graph.graphml'), ('extraction.jsonl', 'graph.html'))
    """
    names: list[str] = []
    for fmt in (f for f in asked if not f.startswith("-")):
        if fmt == "all" or (fmt == "auto" and n_papers <= AUTO_ALL_PAPERS):
            names.extend(f for files in PROJECT_FORMATS.values() for f in files)
        elif fmt == "auto":
            names.extend([*PROJECT_FORMATS["jsonl"], *PROJECT_FORMATS["html"]])
        elif fmt in PROJECT_FORMATS:
            names.extend(PROJECT_FORMATS[fmt])
        else:
            raise InputError(f"--formats {fmt}: unknown; choose from auto, all, "
                             + ", ".join(PROJECT_FORMATS))
    for fmt in (f[1:] for f in asked if f.startswith("-")):
        names = [n for n in names if n not in PROJECT_FORMATS.get(fmt, ())]
    return tuple(sorted(set(names)))


def format_notice(asked: Sequence[str], chosen: Sequence[str]) -> tuple[str, ...]:
    if "auto" not in asked:
        return ()
    left = [f for f, files in PROJECT_FORMATS.items() if not set(files) <= set(chosen)]
    if not left:
        return ()
    return (f"above {AUTO_ALL_PAPERS:,} papers a build writes only {', '.join(chosen)} "
            f"besides the query store; {', '.join(left)}: `kg build ... --formats all` (or "
            "e.g. `--formats jsonl,nt`) writes them and keeps them current",)


# ------------------------------------------------------------------ the lock and the target


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold DIR's build lock; another live build gets BusyError naming its process.

    flock is released by the kernel when the holder dies, so a killed build never leaves a
    stale lock behind.
    """
    meta = root / META
    meta.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(meta / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ProjectError(f"{meta / 'lock'}: cannot open it for writing "
                           f"({exc.strerror or exc}); a build holds it while it runs: make it "
                           "writable (or remove it if it is not a file) and run the command "
                           "again") from exc
    try:
        if os.fstat(fd).st_nlink > 1:  # its pid is written into it: never through a link
            raise ProjectError(f"{meta / 'lock'}: a hard link to another file; remove it (kg "
                               "makes a new one) and run the command again")
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


def check_target(root: Path) -> None:
    """Refuse to build into a directory kg would clobber: its files are not kg's."""
    if (root / META).exists():
        if not (root / META).is_dir() or not (root / META / "project.json").is_file():
            raise ProjectError(f"{root / META}: not a kg project folder; move it aside")
        check_format(root)
        read_current(root)
        return
    if not root.is_dir() or (root / RECORD).is_file():
        return  # new, or an export directory of an older kg: upgraded in place
    ours = sorted(name for name in KNOWN_FILES if (root / name).exists())
    if ours:
        raise ProjectError(f"{root}: has {', '.join(ours)} but no kg build record, so they "
                           "are not kg's to replace; choose an empty or new -o directory")


# ------------------------------------------------------------------ commit and publish


def commit(meta: Path, name: str) -> None:
    """Sync generation ``name`` and make CURRENT name it."""
    # The generation reaches the disk before CURRENT names it (its store synced its files).
    gen = meta / name
    for path in gen.iterdir():
        if path.is_file():
            fsync_file(path)
        elif path.name != "store":
            fsync_tree(path)
    for directory in (gen / "store", gen):
        if directory.is_dir():
            fsync_dir(directory)
    # Last: the sizes of what was synced, and the project the generation belongs to.
    write_json(gen / CHECK, {"project": project_id(meta.parent), "files": survey(gen)})
    with replacing(meta / "CURRENT") as tmp:
        tmp.write_text(name + "\n", encoding="utf-8")
    fsync_dir(meta)


def publish(root: Path, gen: Path, names: Sequence[str], previous: Path | None = None) -> None:
    """Hard-link the generation's exports into DIR (build.json last) and drop stale ones:
    only the files the ``previous`` generation published, and only while unchanged (still
    its file, of the size its build.json records). A graph.html the user wrote with
    `kg viz -o DIR/graph.html`, say, is not kg's to delete."""
    ours = published_files(root, previous)
    (root / RECORD).unlink(missing_ok=True)
    for name in [*names, RECORD]:
        tmp = root / f"{TMP_PREFIX}{name}"
        tmp.unlink(missing_ok=True)
        link_or_copy(gen / name, tmp)
        os.replace(tmp, root / name)
    remove_stale(root, {*names, RECORD}, (), ours=ours)


def published_files(root: Path, gen: Path | None) -> set[str]:
    """The export files in DIR that generation ``gen`` published and nobody changed since."""
    if gen is None:
        return set()
    try:
        files = read_record(gen).files
    except InputError:
        return set()
    ours = set()
    for name, meta in files.items():
        with contextlib.suppress(OSError):
            if (os.path.samefile(root / name, gen / name)
                    and (root / name).stat().st_size == meta.get("bytes")):
                ours.add(name)
    return ours


def published(root: Path, manifest: Manifest) -> bool:
    """True when DIR's top-level exports are this generation's (a kill may have cut the
    publishing short)."""
    gen = root / META / gen_name(manifest.generation)
    try:
        return all(os.path.samefile(gen / n, root / n) for n in [*manifest.written, RECORD])
    except OSError:
        return False


def prune(meta: Path, cache: Cache, manifest: Manifest, previous: Manifest | None) -> None:
    """Keep the current generation and the one before (a `kg serve` may still read it)."""
    keep = {gen_name(manifest.generation)}
    if previous is not None:
        keep.add(gen_name(previous.generation))
    for path in meta.glob("gen-*"):
        if path.name not in keep:
            shutil.rmtree(path, ignore_errors=True)
    cache.keep_only({*manifest.papers.values(), *(previous.papers.values() if previous else ())})
