"""The export set of ``kg build``, written so a reader never sees half of it.

Every file is written to a temporary name in the output directory and ``os.replace``d into
place (a kill leaves the old file or the new one, never a piece; a symlink already at the name
is replaced, not followed). The old completion record ``build.json`` is removed first and the
new one written last, so while a build runs — and after one is killed — the directory has no
record and readers refuse it instead of mixing two generations. ``check_export_dir`` is that
refusal: it compares the files with the record (sizes always; the hash of the one file about
to be read, when it is small enough to be cheap).

>>> import tempfile
>>> from kg.pipeline import run
>>> out = Path(tempfile.mkdtemp())
>>> record = write_exports(run(["examples/iclr2025-seed.txt"]), out, html=False)
>>> record.counts["papers"], sorted(record.files)[:3]
(19, ['edges.csv', 'extraction.jsonl', 'graph.graphml'])
>>> check_export_dir(out).counts == record.counts
True
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg.errors import InputError
from kg.fs import (  # (BuildRecord, read_record, sha256_file: also kg.exports API)
    PROBE_PREFIX,
    RECORD,
    TMP_PREFIX,
    BuildRecord,
    check_writable,
    read_record,
    rebuild_hint,
    replacing,
    sha256_file,
)
from kg.io import write_jsonl
from kg.model import Corpus
from kg.text import spreadsheet_cell, xml_safe

ADMIN_DIR = "neo4j-admin"
# The neo4j-admin tables kg.neo4j.admin writes, here so that stale-file cleanup knows them.
ADMIN_FILES = ("papers.csv", "entities.csv", "concepts.csv", "rel_paper_entity.csv",
               "rel_entity_entity.csv", "has_concept.csv", "broader.csv")
# Any file of them either layout writes (a re-export removes those it did not write this time).
ADMIN_NAME = re.compile(r"(?P<table>papers|entities|concepts|rel_paper_entity|"
                        r"rel_entity_entity|has_concept|broader)(\.header|-\d{6})?\.csv\Z")
# Hashing costs ~1 s per GB; a reader hashes the file it reads only below this size.
CHEAP_HASH_BYTES = 64 * 2**20

NODE_COLUMNS = ("id", "kind", "type", "label", "kg_id", "title", "concept", "aliases", "venue",
                "year", "url")
EDGE_COLUMNS = ("source", "target", "predicate", "evidence", "start", "end", "rule",
                "confidence", "paper")


@dataclass(frozen=True)
class Sources:
    """What a format's writer reads: the corpus, its RDF triples when a format needs them, and
    what the technique map reads when the caller has it without the corpus
    (``kg.viz.map_source.MapSource``: a project's stored index)."""

    corpus: Corpus | None
    triples: list | None
    map: Any = None


@dataclass(frozen=True)
class Format:
    """One export format: its ``--formats`` name, its files, the writer of those files (given
    the ``Sources`` and the temporary path of each file; returns a notice for the user, or
    None), whether it reads the RDF triples, and whether a project keeps it current."""

    name: str
    files: tuple[str, ...]
    write: Callable[[Sources, Sequence[Path]], str | None] | None
    rdf: bool = False
    project: bool = True


def _write_nt(src: Sources, paths: Sequence[Path]) -> None:
    from kg.rdf import triples_to_ntriples  # (kg.rdf loads the vocabulary's modules: on use)

    _write_text(paths[0], triples_to_ntriples(src.triples))


def _write_ttl(src: Sources, paths: Sequence[Path]) -> None:
    from kg.rdf import triples_to_turtle  # (on use, as above)

    _write_text(paths[0], triples_to_turtle(src.triples))


def _write_jsonld(src: Sources, paths: Sequence[Path]) -> None:
    from kg.rdf import triples_to_jsonld  # (on use, as above)

    _write_text(paths[0], triples_to_jsonld(src.triples))


def _write_extraction(src: Sources, paths: Sequence[Path]) -> None:
    with paths[0].open("w", encoding="utf-8", newline="") as fh:
        write_jsonl(src.corpus, fh)


def _write_html(src: Sources, paths: Sequence[Path]) -> str | None:
    from kg.viz import write_viz  # (the map's layout: only where graph.html is asked for)

    summary = write_viz(src.map if src.map is not None else src.corpus, paths[0])
    return f"graph.html: {summary.notice}" if summary.notice else None


def _none(_: object) -> None:
    return None


# Every export format, in the order a build writes them. Adding a format is adding a line here:
# `kg build --formats`, the project's choice of files, the export record and the removal of
# stale files all read this table.
FORMATS: tuple[Format, ...] = (
    Format("nt", ("graph.nt",), _write_nt, rdf=True),
    Format("ttl", ("graph.ttl",), _write_ttl, rdf=True),
    Format("jsonld", ("graph.jsonld",), _write_jsonld, rdf=True),
    Format("graphml", ("graph.graphml",), lambda src, paths: _none(write_graphml(src.corpus,
                                                                               *paths))),
    Format("csv", ("nodes.csv", "edges.csv"), lambda src, paths: write_csv(src.corpus, *paths)),
    Format("jsonl", ("extraction.jsonl",), _write_extraction),
    Format("html", ("graph.html",), _write_html),
    # Written by `kg neo4j script`, not by a build; named so a build removes a stale one.
    Format("cypher", ("graph.cypher",), None, project=False),
)
# Every name a kg command writes into an export directory; one not written by this build is
# stale (an old graph.html after --no-html, a graph.cypher of an older corpus) and is removed.
KNOWN_FILES: tuple[str, ...] = tuple(f for fmt in FORMATS for f in fmt.files)
RDF_FILES: frozenset[str] = frozenset(f for fmt in FORMATS if fmt.rdf for f in fmt.files)


def write_graphml(corpus: Corpus, path: str | Path) -> Path:
    """Write ``corpus_graph`` as GraphML (UTF-8, byte-identical for the same corpus).

    Attribute keys are named after the attributes; edge ids are ``predicate|paper id``.
    """
    import networkx as nx  # (networkx and kg.analysis: 0.3 s, only for these files)

    from kg.analysis import corpus_graph

    path = Path(path)
    nx.write_graphml_xml(xml_safe_graph(corpus_graph(corpus)), path, named_key_ids=True)
    return path


def xml_safe_graph(graph):
    """A copy of ``graph`` (same order) whose ids, keys and text values XML 1.0 can hold.

    >>> import networkx as nx
    >>> g = nx.MultiDiGraph()
    >>> g.add_edge("a", "b", key="k\\x00", evidence="form\\x0cfeed")
    'k\\x00'
    >>> list(xml_safe_graph(g).edges(keys=True, data=True))
    [('a', 'b', 'k', {'evidence': 'formfeed'})]
    """
    def clean(value):
        return xml_safe(value) if isinstance(value, str) else value

    out = type(graph)()
    out.add_nodes_from((clean(n), {k: clean(v) for k, v in d.items()})
                       for n, d in graph.nodes(data=True))
    for u, v, key, d in graph.edges(keys=True, data=True):
        out.add_edge(clean(u), clean(v), key=clean(key), **{k: clean(x) for k, x in d.items()})
    return out


def write_csv(corpus: Corpus, nodes_path: str | Path, edges_path: str | Path) -> None:
    """Write ``corpus_graph`` as two CSV files (byte-identical for the same corpus).

    ``nodes.csv``: ``id,kind,type,label,kg_id,title,concept,aliases,venue,year,url``;
    ``edges.csv``: ``source,target,predicate,evidence,start,end,rule,confidence,paper`` (the
    evidence columns are empty for ``concept`` and ``broader`` edges).
    """
    from kg.analysis import corpus_graph  # (on use, as above)

    graph = corpus_graph(corpus)
    with Path(nodes_path).open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(NODE_COLUMNS)
        for node, data in graph.nodes(data=True):
            writer.writerow([_cell(node), *(_cell(data.get(c)) for c in NODE_COLUMNS[1:])])
    with Path(edges_path).open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(EDGE_COLUMNS)
        for source, target, data in graph.edges(data=True):
            writer.writerow([_cell(source), _cell(target),
                             *(_cell(data.get(c)) for c in EDGE_COLUMNS[2:])])


def _cell(value: object) -> str:
    return spreadsheet_cell(value)  # a leading = + - @ would be a formula in a spreadsheet


def _input_record(source: str | Path) -> dict[str, object]:
    path = Path(source)
    # A pipe or FIFO (kg build <(zcat x.gz)) was read to its end already: opening it again
    # to hash it would wait forever for a writer.
    if str(source) == "-" or not (path.is_file() or path.is_dir()):
        return {"path": str(source), "sha256": None}
    if path.is_dir():  # an export dir read back: its record already names its inputs
        path = path / "extraction.jsonl"
    return {"path": str(source), "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def remove_stale(out_dir: Path, keep: set[str], previous: Sequence[str],
                 ours: Collection[str] | None = None) -> None:
    """Remove what an earlier run left in ``out_dir`` that this one did not write (``keep``):
    of the export files, only those in ``ours`` (recorded by kg's last build there, and
    unchanged since: ``recorded_unchanged``; every known name when None); the neo4j-admin
    tables (``kg export`` names them, in a folder of its own); temporary files."""
    for name in {*KNOWN_FILES, *previous} - keep:
        target = out_dir / name
        if "/" not in name and (target.is_file() or target.is_symlink()) and (
                ours is None or name in ours):
            target.unlink()
    admin = out_dir / ADMIN_DIR
    if admin.is_dir() and not admin.is_symlink():
        for name in (*ADMIN_FILES, "import.sh"):
            (admin / name).unlink(missing_ok=True)
        # A project's sharded export (kg.neo4j.write_admin_shards): stem.header.csv
        # and stem-NNNNNN.csv of each table.
        for path in admin.glob("*.csv"):
            if ADMIN_NAME.match(path.name) and not path.is_symlink():
                path.unlink()
        with contextlib.suppress(OSError):  # not empty: the user's own files stay
            admin.rmdir()
    for leftover in [*out_dir.glob(f"{TMP_PREFIX}*"), *out_dir.glob(f"{PROBE_PREFIX}*")]:
        # from a build that was killed
        if leftover.is_file():
            leftover.unlink()


def _previous_files(out_dir: Path) -> list[str]:
    try:
        return list(json.loads((out_dir / RECORD).read_text(encoding="utf-8"))["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return []


def recorded_unchanged(out_dir: Path) -> set[str]:
    """The files ``out_dir``'s build.json records that still have the size and sha256 it
    records (hashed only when the size matches): the files kg may replace or remove there."""
    try:
        files = read_record(out_dir).files
    except InputError:
        return set()
    ours = set()
    for name, meta in files.items():
        path = out_dir / name
        with contextlib.suppress(OSError):
            if path.stat().st_size == meta.get("bytes") and sha256_file(path) == meta.get(
                    "sha256"):
                ours.add(name)
    return ours


def write_exports(
    corpus: Corpus | None,
    out_dir: str | Path,
    *,
    html: bool = True,
    files: Collection[str] | None = None,
    inputs: Sequence[str | Path] = (),
    on_step: Callable[[str], None] | None = None,
    triples: list | None = None,
    n_triples: int | Callable[[], int] | None = None,
    ready: Collection[str] = (),
    digests: Mapping[str, str] | None = None,
    counts: dict[str, int] | None = None,
    map_source: Any = None,
) -> BuildRecord:
    """Write the export set of ``kg build`` into ``out_dir`` and finish with ``build.json``.

    graph.ttl, graph.nt (sorted N-Triples), graph.jsonld, graph.graphml, nodes.csv, edges.csv,
    extraction.jsonl and (``html``) graph.html, each byte-identical for the same corpus;
    ``files`` names a subset to write instead. ``triples`` are the corpus's triples when the
    caller has them already; ``n_triples`` their number when no file here needs them (or what
    counts them, asked when build.json is written).
    ``on_step`` is told the name of each step as it starts (for progress on a terminal).
    A caller that wrote some of ``files`` into ``out_dir`` itself names them ``ready`` (they
    are recorded, not written: kg.project assembles extraction.jsonl and streams graph.nt)
    and passes the corpus ``counts`` (papers, entities, relations, skipped), and no
    ``corpus`` when no other file is asked for; ``digests`` are the sha256 of those it hashed.
    A ``map_source`` (``kg.viz.map_source.MapSource``) is what graph.html's technique map is
    drawn from instead of the corpus.
    """
    from kg import __version__, derived, rdf  # (kg.rdf: on use, as above)

    out_dir = check_writable(out_dir)
    step = on_step or (lambda name: None)
    buildable = [fmt for fmt in FORMATS if fmt.write is not None]
    wanted = ({f for fmt in buildable for f in fmt.files} if files is None
              else set(files) - set(KNOWN_FILES) | {f for fmt in buildable for f in fmt.files
                                                    if set(fmt.files) & set(files)})
    if not html:
        wanted.discard("graph.html")
    previous = _previous_files(out_dir)
    ours = recorded_unchanged(out_dir)
    # No record while files change: a reader refuses the directory rather than mix generations.
    (out_dir / RECORD).unlink(missing_ok=True)

    if triples is None and (n_triples is None or (wanted - set(ready)) & RDF_FILES):
        step("RDF triples")  # with the derived facts the saved queries read, as in a project
        triples = rdf.corpus_triples(
            corpus, extra=derived.derived_triples(derived.derived_facts(corpus, k=0)))
    sources = Sources(corpus, triples, map_source)
    notices: list[str] = []
    for fmt in buildable:
        if not set(fmt.files) & wanted or set(fmt.files) <= set(ready):
            continue
        step(", ".join(fmt.files))
        with contextlib.ExitStack() as stack:
            paths = [stack.enter_context(replacing(out_dir / name)) for name in fmt.files]
            notice = fmt.write(sources, paths)
        if notice:
            notices.append(notice)
    step("build.json")
    written: dict[str, dict[str, object]] = {}
    for name in sorted(wanted):
        path = out_dir / name
        written[name] = {"bytes": path.stat().st_size,
                         "sha256": (digests or {}).get(name) or sha256_file(path)}
    remove_stale(out_dir, set(written) | {RECORD}, previous, ours=ours)
    record = BuildRecord(
        version=__version__,
        counts={**(counts if counts is not None else {
                    "papers": len(corpus), "entities": len(corpus.entities),
                    "relations": sum(len(r.relations) for r in corpus.results),
                    "skipped": len(corpus.skipped)}),
                "triples": (len(triples) if triples is not None
                            else n_triples() if callable(n_triples) else n_triples)},
        files=written, inputs=tuple(_input_record(s) for s in inputs), notices=tuple(notices))
    with replacing(out_dir / RECORD) as tmp:
        _write_text(tmp, json.dumps(record.as_dict(), indent=2, ensure_ascii=False) + "\n")
    return record


def _write_text(path: Path, text: str) -> None:
    # newline="" so the bytes are the same on every platform.
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def check_export_dir(directory: str | Path, reading: str | None = None) -> BuildRecord:
    """The record of ``directory`` after checking its files match it (exit 2 otherwise).

    Sizes are compared for every file; ``reading`` (the file about to be read) is also hashed
    when smaller than ``CHEAP_HASH_BYTES``, so a query stays fast on a large graph.
    """
    directory = Path(directory)
    record = read_record(directory)
    if reading is not None and reading not in record.files:
        raise InputError(f"{directory}/{reading}: not part of the build recorded in {RECORD}; "
                         f"{rebuild_hint(directory)}")
    for name, meta in sorted(record.files.items()):
        path = directory / name
        try:
            size = path.stat().st_size
        except OSError:
            raise InputError(f"{path}: missing, but {RECORD} lists it; "
                             f"{rebuild_hint(directory)}") from None
        if size != meta.get("bytes"):
            raise InputError(f"{path}: {size} bytes, but {RECORD} records {meta.get('bytes')} "
                             f"(changed since the build, or a build was interrupted); "
                             f"{rebuild_hint(directory)}")
        if name == reading and size < CHEAP_HASH_BYTES and sha256_file(path) != meta.get("sha256"):
            raise InputError(f"{path}: its content differs from the one recorded in {RECORD}; "
                             f"{rebuild_hint(directory)}")
    return record


def check_export_file(path: str | Path) -> Path:
    """A graph/extraction file given directly: checked against its directory's record if any.

    A file outside any build is the user's own and is read as it is — unless it is empty, as
    no build writes an empty graph (a 0-byte graph.nt is a failed write, not an empty graph).
    """
    path = Path(path)
    if (path.parent / RECORD).is_file() and path.name in KNOWN_FILES:
        check_export_dir(path.parent, reading=path.name)
    elif path.is_file() and path.stat().st_size == 0:
        raise InputError(f"{path}: empty (0 bytes), not a graph; rebuild it with "
                         f"`kg build INPUT... -o {path.parent}`")
    return path


def graph_file(path: str | Path) -> Path:
    """The graph file at ``path``: itself, or graph.nt / graph.ttl / graph.jsonld in an export
    directory (InputError if there is none, or if the build that wrote it is incomplete)."""
    path = Path(path)
    if path.is_dir():
        for name in ("graph.nt", "graph.ttl", "graph.jsonld"):
            if (path / name).is_file():
                check_export_dir(path, reading=name)  # refuse a half-written or mixed build
                return path / name
        raise InputError(f"{path}: no graph.nt, graph.ttl or graph.jsonld here; "
                         f"run `kg build INPUT... -o {path}` first")
    if not path.is_file():
        raise InputError(f"{path}: no such graph file; pass a .ttl/.nt/.jsonld file or the "
                         "directory `kg build -o` wrote")
    return check_export_file(path)
