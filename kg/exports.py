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
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kg.errors import InputError
from kg.model import Corpus
from kg.text import spreadsheet_cell, xml_safe

RECORD = "build.json"
# Every name a kg command writes into an export directory; one not written by this build is
# stale (an old graph.html after --no-html, a graph.cypher of an older corpus) and is removed.
KNOWN_FILES = ("graph.ttl", "graph.nt", "graph.jsonld", "graph.graphml", "nodes.csv",
               "edges.csv", "extraction.jsonl", "graph.html", "graph.cypher")
ADMIN_DIR = "neo4j-admin"
_TMP_PREFIX = ".kg-tmp-"
_PROBE_PREFIX = ".kg-probe-"  # check_writable's test file: not an export being written
# Hashing costs ~1 s per GB; a reader hashes the file it reads only below this size.
CHEAP_HASH_BYTES = 64 * 2**20
_UMASK = os.umask(0o022)
os.umask(_UMASK)

NODE_COLUMNS = ("id", "kind", "type", "label", "kg_id", "title", "concept", "aliases", "venue",
                "year", "url")
EDGE_COLUMNS = ("source", "target", "predicate", "evidence", "start", "end", "rule",
                "confidence", "paper")


@dataclass(frozen=True)
class BuildRecord:
    """What ``build.json`` says: the build's files (bytes, sha256), inputs and counts."""

    version: str
    counts: dict[str, int]
    files: dict[str, dict[str, object]]  # name -> {"bytes": int, "sha256": str}
    inputs: tuple[dict[str, object], ...] = field(default=())
    notices: tuple[str, ...] = field(default=(), compare=False)  # for the user, not recorded

    def as_dict(self) -> dict[str, object]:
        return {"kg_version": self.version, "counts": self.counts, "inputs": list(self.inputs),
                "files": self.files}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _rebuild_hint(directory: Path) -> str:
    return f"rebuild it with `kg build INPUT... -o {directory}`"


def _write_error(path: Path, exc: OSError) -> InputError:
    reason = exc.strerror or str(exc)
    return InputError(f"{path}: cannot write ({reason}); free some space, fix the permissions "
                      "or choose another -o")


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path``, moved onto ``path`` when the block ends without error.

    The temporary file is created exclusively (``mkstemp``), so no symlink planted under its
    name is followed, and ``os.replace`` swaps the directory entry — a symlink at ``path`` is
    replaced itself, its target untouched. On error the temporary file is removed.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "a.txt"
    >>> with replacing(target) as tmp:
    ...     _ = tmp.write_text("new")
    >>> target.read_text()
    'new'
    """
    path = Path(path)
    try:
        fd, name = tempfile.mkstemp(prefix=f"{_TMP_PREFIX}{path.name}.", dir=path.parent)
    except OSError as exc:
        raise _write_error(path, exc) from exc
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; exports are as readable as any file
        yield tmp
        with tmp.open("rb+") as fh:  # the bytes reach the disk before the name points at them
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _write_error(path, exc) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def check_writable(directory: str | Path) -> Path:
    """Create ``directory`` if needed and prove a file can be made in it (before a long run).

    >>> try:
    ...     check_writable("/proc/kg-cannot-be-here")
    ... except InputError as exc:
    ...     print(str(exc).split(" (")[0])
    /proc/kg-cannot-be-here: cannot write here
    """
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=_PROBE_PREFIX, dir=directory)
        try:
            os.write(fd, b"kg")
        finally:
            os.close(fd)
            os.unlink(name)
    except FileExistsError as exc:
        raise InputError(f"{directory}: exists and is not a directory; choose another -o"
                         ) from exc
    except OSError as exc:
        raise InputError(f"{directory}: cannot write here ({exc.strerror or exc}); "
                         "choose another -o") from exc
    return directory


def write_graphml(corpus: Corpus, path: str | Path) -> Path:
    """Write ``corpus_graph`` as GraphML (UTF-8, byte-identical for the same corpus).

    Attribute keys are named after the attributes; edge ids are ``predicate|paper id``.
    """
    import networkx as nx

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
    from kg.analysis import corpus_graph

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
    if str(source) == "-" or not path.exists():
        return {"path": str(source), "sha256": None}
    if path.is_dir():  # an export dir read back: its record already names its inputs
        path = path / "extraction.jsonl"
    return {"path": str(source), "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def _remove_stale(out_dir: Path, keep: set[str], previous: Sequence[str]) -> None:
    for name in {*KNOWN_FILES, *previous} - keep:
        target = out_dir / name
        if "/" not in name and (target.is_file() or target.is_symlink()):
            target.unlink()
    admin = out_dir / ADMIN_DIR
    if admin.is_dir() and not admin.is_symlink():
        from kg.neo4j import ADMIN_FILES, ADMIN_NAME

        for name in (*ADMIN_FILES, "import.sh"):
            (admin / name).unlink(missing_ok=True)
        # A project's sharded export (kg.neo4j.write_admin_shards): stem.header.csv
        # and stem-NNNNNN.csv of each table.
        for path in admin.glob("*.csv"):
            if ADMIN_NAME.match(path.name) and not path.is_symlink():
                path.unlink()
        with contextlib.suppress(OSError):  # not empty: the user's own files stay
            admin.rmdir()
    for leftover in [*out_dir.glob(f"{_TMP_PREFIX}*"), *out_dir.glob(f"{_PROBE_PREFIX}*")]:
        # from a build that was killed
        if leftover.is_file():
            leftover.unlink()


def _previous_files(out_dir: Path) -> list[str]:
    try:
        return list(json.loads((out_dir / RECORD).read_text(encoding="utf-8"))["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return []


def write_exports(
    corpus: Corpus | None,
    out_dir: str | Path,
    *,
    html: bool = True,
    files: Collection[str] | None = None,
    inputs: Sequence[str | Path] = (),
    on_step: Callable[[str], None] | None = None,
    triples: list | None = None,
    n_triples: int | None = None,
    ready: Collection[str] = (),
    digests: Mapping[str, str] | None = None,
    counts: dict[str, int] | None = None,
) -> BuildRecord:
    """Write the export set of ``kg build`` into ``out_dir`` and finish with ``build.json``.

    graph.ttl, graph.nt (sorted N-Triples), graph.jsonld, graph.graphml, nodes.csv, edges.csv,
    extraction.jsonl and (``html``) graph.html, each byte-identical for the same corpus;
    ``files`` names a subset to write instead. ``triples`` are the corpus's triples when the
    caller has them already; ``n_triples`` their number when no file here needs them.
    ``on_step`` is told the name of each step as it starts (for progress on a terminal).
    A caller that wrote some of ``files`` into ``out_dir`` itself names them ``ready`` (they
    are recorded, not written: kg.project assembles extraction.jsonl and streams graph.nt)
    and passes the corpus ``counts`` (papers, entities, relations, skipped), and no
    ``corpus`` when no other file is asked for; ``digests`` are the sha256 of those it hashed.
    """
    from kg import __version__, rdf
    from kg.io import write_jsonl

    out_dir = check_writable(out_dir)
    step = on_step or (lambda name: None)
    wanted = set(KNOWN_FILES[:8] if files is None else files) - {"graph.cypher"}
    if not html:
        wanted.discard("graph.html")
    previous = _previous_files(out_dir)
    # No record while files change: a reader refuses the directory rather than mix generations.
    (out_dir / RECORD).unlink(missing_ok=True)

    if triples is None and (n_triples is None or
                            (wanted - set(ready)) & {"graph.nt", "graph.ttl", "graph.jsonld"}):
        step("RDF triples")
        triples = rdf.corpus_triples(corpus)
    writers: list[tuple[str, Callable[[Path], object]]] = [
        ("graph.nt", lambda p: _write_text(p, rdf.triples_to_ntriples(triples))),
        ("graph.ttl", lambda p: _write_text(p, rdf.triples_to_turtle(triples))),
        ("graph.jsonld", lambda p: _write_text(p, rdf.triples_to_jsonld(triples))),
        ("graph.graphml", lambda p: write_graphml(corpus, p)),
        ("nodes.csv", None),  # with edges.csv
        ("extraction.jsonl", lambda p: _write_jsonl(corpus, p, write_jsonl)),
    ]
    notices: list[str] = []
    for name, write in writers:
        if write is None and wanted & {"nodes.csv", "edges.csv"}:
            wanted |= {"nodes.csv", "edges.csv"}
            step("nodes.csv, edges.csv")
            with replacing(out_dir / "nodes.csv") as nodes, \
                    replacing(out_dir / "edges.csv") as edges:
                write_csv(corpus, nodes, edges)
        elif write is not None and name in wanted and name not in ready:
            step(name)
            with replacing(out_dir / name) as tmp:
                write(tmp)
    if "graph.html" in wanted:
        from kg.viz import write_viz

        step("graph.html")
        with replacing(out_dir / "graph.html") as tmp:
            summary = write_viz(corpus, tmp)
        if summary.notice:
            notices.append(f"graph.html: {summary.notice}")
    step("build.json")
    written: dict[str, dict[str, object]] = {}
    for name in sorted(wanted):
        path = out_dir / name
        written[name] = {"bytes": path.stat().st_size,
                         "sha256": (digests or {}).get(name) or sha256_file(path)}
    _remove_stale(out_dir, set(written) | {RECORD}, previous)
    record = BuildRecord(
        version=__version__,
        counts={**(counts if counts is not None else {
                    "papers": len(corpus), "entities": len(corpus.entities),
                    "relations": sum(len(r.relations) for r in corpus.results),
                    "skipped": len(corpus.skipped)}),
                "triples": len(triples) if triples is not None else n_triples},
        files=written, inputs=tuple(_input_record(s) for s in inputs), notices=tuple(notices))
    with replacing(out_dir / RECORD) as tmp:
        _write_text(tmp, json.dumps(record.as_dict(), indent=2, ensure_ascii=False) + "\n")
    return record


def _write_text(path: Path, text: str) -> None:
    # newline="" so the bytes are the same on every platform.
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(text)




def _write_jsonl(corpus: Corpus, path: Path, write_jsonl) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        write_jsonl(corpus, fh)


def read_record(directory: str | Path) -> BuildRecord:
    """The completion record of an export directory; InputError (exit 2) when there is none."""
    directory = Path(directory)
    try:
        data = json.loads((directory / RECORD).read_text(encoding="utf-8"))
        return BuildRecord(str(data["kg_version"]), dict(data["counts"]), dict(data["files"]),
                           tuple(data.get("inputs", ())))
    except FileNotFoundError as exc:
        raise InputError(f"{directory}: no {RECORD}, so not a complete `kg build` output (a "
                         "build was interrupted, is running, or predates build records); "
                         f"{_rebuild_hint(directory)}") from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{directory}/{RECORD}: unreadable ({exc}); "
                         f"{_rebuild_hint(directory)}") from exc


def check_export_dir(directory: str | Path, reading: str | None = None) -> BuildRecord:
    """The record of ``directory`` after checking its files match it (exit 2 otherwise).

    Sizes are compared for every file; ``reading`` (the file about to be read) is also hashed
    when smaller than ``CHEAP_HASH_BYTES``, so a query stays fast on a large graph.
    """
    directory = Path(directory)
    record = read_record(directory)
    if reading is not None and reading not in record.files:
        raise InputError(f"{directory}/{reading}: not part of the build recorded in {RECORD}; "
                         f"{_rebuild_hint(directory)}")
    for name, meta in sorted(record.files.items()):
        path = directory / name
        try:
            size = path.stat().st_size
        except OSError:
            raise InputError(f"{path}: missing, but {RECORD} lists it; "
                             f"{_rebuild_hint(directory)}") from None
        if size != meta.get("bytes"):
            raise InputError(f"{path}: {size} bytes, but {RECORD} records {meta.get('bytes')} "
                             f"(changed since the build, or a build was interrupted); "
                             f"{_rebuild_hint(directory)}")
        if name == reading and size < CHEAP_HASH_BYTES and sha256_file(path) != meta.get("sha256"):
            raise InputError(f"{path}: its content differs from the one recorded in {RECORD}; "
                             f"{_rebuild_hint(directory)}")
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
