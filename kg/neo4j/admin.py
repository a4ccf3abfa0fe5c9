"""neo4j-admin import CSVs and their import.sh.

Two layouts of the same rows. A Corpus in memory gives one file per table (ADMIN_FILES). A
project is read a batch of papers at a time (memory bounded by the batch, not the corpus):
each table that grows with the papers gets a header file and numbered shards — shard N holds
batch N's papers, their relationships, and the entities (with HAS_CONCEPT) no earlier batch
used, so every entity is written once — while concepts.csv and broader.csv, bounded by the
vocabulary, stay whole. import.sh names every file; it is written last, and removed first, so
a directory with an import.sh holds one complete export.
"""

from __future__ import annotations

import csv
import itertools
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from kg.errors import InputError, KgError
from kg.exports import ADMIN_FILES, ADMIN_NAME, check_export_dir, replacing
from kg.io import read_jsonl
from kg.model import Corpus, Entity, PaperResult
from kg.neo4j.rows import (
    DEFAULT_PROJECT,
    REL_TYPES,
    SCHEMA,
    closed_concept_rows,
    concept_rows,
    entity_row,
    subject_label,
)
from kg.neo4j.scope import project_id
from kg.vocab import load_vocabulary

ARRAY_DELIMITER = ";"
DEFAULT_SHARD_PAPERS = 5000
_REL_PROPS = ["paper", "evidence", "start:int", "end:int", "rule", "confidence:double"]
ADMIN_HEADERS: dict[str, list[str]] = {
    "papers.csv": ["id:ID(Paper)", ":LABEL", "project", "title", "label", "abstract",
                   "authors:string[]", "keywords:string[]", "venue", "year:int", "url", "date",
                   "categories:string[]", "links:string[]"],
    "entities.csv": ["id:ID(Entity)", ":LABEL", "project", "type", "name", "aliases:string[]",
                     "concept"],
    "concepts.csv": ["iri:ID(Concept)", ":LABEL", "label", "type", "alt_labels:string[]"],
    "rel_paper_entity.csv": [":START_ID(Paper)", ":END_ID(Entity)", ":TYPE", *_REL_PROPS],
    "rel_entity_entity.csv": [":START_ID(Entity)", ":END_ID(Entity)", ":TYPE", *_REL_PROPS],
    "has_concept.csv": [":START_ID(Entity)", ":END_ID(Concept)", ":TYPE"],
    "broader.csv": [":START_ID(Concept)", ":END_ID(Concept)", ":TYPE"],
}
# The tables that grow with the papers: sharded in a project's export.
SHARDED = ("papers.csv", "entities.csv", "rel_paper_entity.csv", "rel_entity_entity.csv",
           "has_concept.csv")


def _array(values: Iterable[str]) -> str:
    # neo4j-admin has no escape for the array delimiter inside an item: replace it.
    return ARRAY_DELIMITER.join(v.replace(ARRAY_DELIMITER, ",") for v in values)


def _paper_rows(results: Iterable[PaperResult], project: str) -> list[list[Any]]:
    return [[r.paper.id, "Paper", project, r.paper.title or "", r.paper.label,
             r.paper.abstract, _array(r.paper.authors), _array(r.paper.keywords),
             r.paper.venue or "", "" if r.paper.year is None else r.paper.year,
             r.paper.url or "", r.paper.date or "", _array(r.paper.categories),
             _array(r.paper.links)]
            for r in sorted(results, key=lambda r: r.paper.id)]


def _entity_rows(entities: Iterable[Entity], project: str
                 ) -> tuple[list[list[Any]], list[list[Any]]]:
    """Rows of entities.csv and has_concept.csv, by entity id."""
    rows = [entity_row(e) for e in sorted(entities, key=lambda e: e.id)]
    return ([[e["id"], f"Entity;{e['type']}", project, e["type"], e["name"],
              _array(e["aliases"]), e["concept"] or ""] for e in rows],
            [[e["id"], e["concept"], "HAS_CONCEPT"] for e in rows if e["concept"]])


def _relation_rows(results: Iterable[PaperResult], entities: dict[str, Entity]
                   ) -> tuple[list[list[Any]], list[list[Any]]]:
    """Rows of rel_paper_entity.csv and rel_entity_entity.csv, sorted."""
    paper_rels, entity_rels = [], []
    for result in results:
        for rel in result.relations:
            label = subject_label(result, rel, entities)
            row = [rel.subject, rel.object, REL_TYPES[rel.predicate], result.paper.id,
                   rel.evidence.text, rel.evidence.start, rel.evidence.end, rel.rule,
                   repr(float(rel.confidence))]
            (paper_rels if label == "Paper" else entity_rels).append(row)
    return sorted(paper_rels), sorted(entity_rels)


def _concept_tables(concepts: list[dict], broader: list[dict]) -> dict[str, list[list[Any]]]:
    return {"concepts.csv": [[c["iri"], "Concept", c["label"] or "", c["type"] or "",
                              _array(c["alt_labels"])] for c in concepts],
            "broader.csv": [[b["child"], b["parent"], "BROADER"] for b in broader]}


def _write_csv(path: Path, header: Sequence[str] | None, rows: Iterable[Sequence[Any]]) -> Path:
    # Written atomically, like every export.
    with replacing(path) as tmp, tmp.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        if header is not None:
            writer.writerow(header)
        writer.writerows(rows)
    return path


def _finish_admin_dir(out_dir: Path, written: list[Path], nodes: Sequence[str],
                      relationships: Sequence[str]) -> list[Path]:
    """Write import.sh (last), then remove what an earlier export of the other layout, or
    with more shards, left (import.sh would not name it, but it would mislead a reader)."""
    script = out_dir / "import.sh"
    with replacing(script) as tmp:
        tmp.write_text(admin_import_script(nodes, relationships), encoding="utf-8")
        tmp.chmod(0o755)
    keep = {p.name for p in written}
    for path in sorted(out_dir.iterdir()):
        if ADMIN_NAME.match(path.name) and path.name not in keep and (
                path.is_file() or path.is_symlink()):
            path.unlink()
    return [*written, script]


def write_admin_csvs(corpus: Corpus, out_dir: Path, *, vocabulary=None,
                     project: str = DEFAULT_PROJECT) -> list[Path]:
    """Write nodes/relationships CSVs and ``import.sh`` for ``neo4j-admin database import``.

    ID spaces keep paper ids, entity ids and concept IRIs apart (``:ID(Paper)`` etc.); papers
    and entities carry ``project`` as ``kg neo4j load`` writes it. For a project of any size,
    ``write_project_admin_csvs`` writes the same rows in shards.
    """
    entities, has_concept = _entity_rows(corpus.entities.values(), project)
    paper_rels, entity_rels = _relation_rows(
        sorted(corpus.results, key=lambda r: r.paper.id), corpus.entities)
    tables = {"papers.csv": _paper_rows(corpus.results, project), "entities.csv": entities,
              "rel_paper_entity.csv": paper_rels, "rel_entity_entity.csv": entity_rels,
              "has_concept.csv": has_concept, **_concept_tables(*concept_rows(corpus, vocabulary))}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "import.sh").unlink(missing_ok=True)  # until every file is new
    written = [_write_csv(out_dir / name, ADMIN_HEADERS[name], tables[name])
               for name in ADMIN_FILES]
    return _finish_admin_dir(out_dir, written, ADMIN_FILES[:3], ADMIN_FILES[3:])


def shard_name(table: str, number: int | None = None) -> str:
    """A shard's file name (``None``: the table's header file).

    >>> shard_name("papers.csv", 3), shard_name("papers.csv")
    ('papers-000003.csv', 'papers.header.csv')
    """
    stem = table.removesuffix(".csv")
    return f"{stem}.header.csv" if number is None else f"{stem}-{number:06d}.csv"


def write_admin_shards(batches: Iterable[Corpus], out_dir: Path, *, vocabulary=None,
                       on_batch: Callable[[int], None] | None = None,
                       project: str = DEFAULT_PROJECT) -> list[Path]:
    """Write the neo4j-admin CSVs of a corpus given a batch of papers at a time.

    Each batch is a Corpus holding some papers' results and (at least) the entities they
    use; a batch may also carry entities no paper uses. Batch N becomes shard N of each
    sharded table (none where it has no rows); an entity goes in the shard of the first batch
    that holds it. The rows, taken together, are those ``write_admin_csvs`` writes for the
    whole corpus. ``on_batch`` gets each batch's number of papers once its shards are written.

    >>> import tempfile
    >>> from kg.pipeline import run
    >>> corpus = run(["examples/iclr2025-seed.txt"])
    >>> halves = [Corpus(corpus.results[:10], corpus.entities), Corpus(corpus.results[10:],
    ...           corpus.entities)]
    >>> names = [p.name for p in write_admin_shards(halves, Path(tempfile.mkdtemp()))]
    >>> [name for name in names if name.startswith("papers")]
    ['papers-000001.csv', 'papers-000002.csv', 'papers.header.csv']
    >>> [name for name in names if name.startswith("entities")]  # all with the first batch
    ['entities-000001.csv', 'entities.header.csv']
    """
    if vocabulary is None:
        vocabulary = load_vocabulary()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "import.sh").unlink(missing_ok=True)  # until every file is new
    placed: set[str] = set()  # entity ids written so far: ids, not entities, stay in memory
    used: set[str] = set()  # concept IRIs (and their ancestors) of the entities written
    shards: dict[str, list[Path]] = {table: [] for table in SHARDED}
    for number, batch in enumerate(batches, start=1):
        fresh = [e for eid, e in batch.entities.items() if eid not in placed]
        placed.update(e.id for e in fresh)
        used |= vocabulary.closure(e.concept for e in fresh if e.concept)
        tables = _shard_tables(batch, fresh, project)
        for table in SHARDED:
            if tables[table]:
                shards[table].append(
                    _write_csv(out_dir / shard_name(table, number), None, tables[table]))
        if on_batch:
            on_batch(len(batch))
        # Let go of this batch before the next is read: two at once would double the peak.
        del batch, fresh, tables
    written = [path for table in SHARDED for path in shards[table]]
    for table in SHARDED:
        written.append(_write_csv(out_dir / shard_name(table), ADMIN_HEADERS[table], ()))
    for table, rows in _concept_tables(*closed_concept_rows(used, vocabulary)).items():
        written.append(_write_csv(out_dir / table, ADMIN_HEADERS[table], rows))
    groups = [_file_group(table, shards) for table in ADMIN_FILES]
    return _finish_admin_dir(out_dir, written, groups[:3], groups[3:])


def _shard_tables(batch: Corpus, fresh: list[Entity], project: str
                  ) -> dict[str, list[list[Any]]]:
    """The rows a batch adds to each sharded table (``fresh``: its entities not yet written)."""
    entities, has_concept = _entity_rows(fresh, project)
    paper_rels, entity_rels = _relation_rows(batch.results, batch.entities)
    return {"papers.csv": _paper_rows(batch.results, project), "entities.csv": entities,
            "rel_paper_entity.csv": paper_rels, "rel_entity_entity.csv": entity_rels,
            "has_concept.csv": has_concept}


def _file_group(table: str, shards: dict[str, list[Path]]) -> str:
    """The files neo4j-admin reads as ``table``: a whole file, or its header and shards."""
    if table not in SHARDED:
        return table
    return ",".join([shard_name(table), *(p.name for p in shards[table])])


def project_batches(project, papers_per_batch: int = DEFAULT_SHARD_PAPERS) -> Iterator[Corpus]:
    """A project's corpus (``kg.project.Project``) a batch of papers at a time, in id order.

    From the generation's extraction.jsonl, read once, line by line, when it was written
    (each batch checked as every extraction file is, errors naming the file and line); else
    from the project's cache, a batch of extractions at a time (``--formats`` without jsonl).
    Each batch carries the entities its papers mention; entities no paper mentions come last,
    in a batch without papers.
    """
    if papers_per_batch < 1:
        raise KgError("the shard size must be at least 1 paper")
    if "extraction.jsonl" in project.manifest.written:
        check_export_dir(project.generation, reading="extraction.jsonl")
        yield from jsonl_batches(project.generation / "extraction.jsonl", papers_per_batch)
        return
    yield from project.batches(papers_per_batch)


def jsonl_batches(path: Path, size: int) -> Iterator[Corpus]:
    """The extraction file ``path``, ``size`` papers at a time, each batch checked as every
    extraction file is (an error names ``path`` and its line)."""
    with path.open(encoding="utf-8") as fh, \
            tempfile.TemporaryDirectory(prefix="kg-shard-") as tmp:
        part = Path(tmp) / "batch.jsonl"
        first_line, count = 1, size
        while count == size:
            lines = list(itertools.islice(fh, size))
            if not lines:
                break
            with part.open("w", encoding="utf-8") as out:
                out.writelines(lines)  # not "".join: a second copy of the batch's text
            count = len(lines)
            del lines  # the text is in the file: not held while its Corpus is
            try:
                yield read_jsonl(part)  # checked as every extraction file is
            except InputError as exc:  # name the project's file and line, not the batch's
                where = re.match(re.escape(str(part)) + r":(\d+): ", str(exc))
                if not where:
                    raise
                raise InputError(f"{path}:{first_line + int(where[1]) - 1}: "
                                 f"{str(exc)[where.end():]}") from exc
            first_line += count


def write_project_admin_csvs(project, out_dir: Path, *,
                             papers_per_shard: int = DEFAULT_SHARD_PAPERS, vocabulary=None,
                             on_batch: Callable[[int], None] | None = None) -> list[Path]:
    """``write_admin_shards`` over ``project_batches``: a project of any size, in bounded
    memory (a shard's papers at a time, plus the set of entity ids written), its papers and
    entities in the project's scope (``kg.neo4j.scope.project_id``). An import holds no
    derived facts: `kg neo4j load DIR` afterwards (a full load) writes them.

    >>> import tempfile
    >>> from kg.ingest import IngestOptions, read_inputs
    >>> from kg.project import build, open_project
    >>> papers = read_inputs(["examples/iclr2025-seed.txt"], IngestOptions()).papers
    >>> out = Path(tempfile.mkdtemp())
    >>> _ = build(out, papers)
    >>> paths = write_project_admin_csvs(open_project(out), out / "neo4j-admin",
    ...                                  papers_per_shard=10)
    >>> sorted(p.name for p in paths if p.name.startswith("papers"))
    ['papers-000001.csv', 'papers-000002.csv', 'papers.header.csv']
    """
    return write_admin_shards(project_batches(project, papers_per_shard), out_dir,
                              vocabulary=vocabulary, on_batch=on_batch,
                              project=project_id(project.root))


def admin_import_script(nodes: Sequence[str] = ADMIN_FILES[:3],
                        relationships: Sequence[str] = ADMIN_FILES[3:]) -> str:
    """The ``neo4j-admin database import full`` command for the CSVs (run where they are).

    ``nodes`` and ``relationships`` are the file groups, each a header file and its shards
    joined by commas (neo4j-admin reads a group as one file). ``import.sh --schema`` prints the
    constraints and indexes ``kg neo4j load`` creates, for cypher-shell once the database runs
    (an admin import creates none).

    >>> print(admin_import_script(["papers.header.csv,papers-000001.csv"], []).splitlines()[-1])
      --nodes=papers.header.csv,papers-000001.csv
    """
    options = [f"--nodes={group}" for group in nodes]
    options += [f"--relationships={group}" for group in relationships]
    schema = "".join(f"{statement};\n" for statement in SCHEMA)
    return (
        "#!/usr/bin/env bash\n"
        "# Import the kg graph into an empty database (stop Neo4j first; Neo4j 5.x).\n"
        "# Usage: ./import.sh [DATABASE]\n"
        "# Then start Neo4j and create kg's constraints and indexes:\n"
        "#   ./import.sh --schema | cypher-shell -u neo4j -p PASSWORD -d DATABASE\n"
        "set -euo pipefail\n"
        "if [ \"${1:-}\" = --schema ]; then\n"
        f"  cat <<'CYPHER'\n{schema}CYPHER\n"
        "  exit 0\n"
        "fi\n"
        "cd \"$(dirname \"$0\")\"\n"
        # The database name goes first: --nodes/--relationships take several files each.
        "neo4j-admin database import full \"${1:-neo4j}\" --overwrite-destination "
        f"--multiline-fields=true --array-delimiter='{ARRAY_DELIMITER}'"
        + "".join(f" \\\n  {option}" for option in options) + "\n")


