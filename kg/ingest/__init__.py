"""Read papers from files: plain text, JSON Lines, JSON, CSV/TSV, the arXiv snapshot,
OpenAlex, Semantic Scholar, OpenReview, BibTeX, CSL-JSON and RIS — plain or gzip/bzip2/zstd
compressed, from a file, a pipe or stdin.

Every paper gets a stable id (the given ``id``, else ``p-`` + a content hash of the normalised
abstract). Bad records are skipped and reported as ``Skip`` s — one bad record never stops a run.
The format is sniffed from the first record (``IngestOptions(format=…)`` forces one); each
module reads one family: ``tabular`` (text, CSV, TSV), ``jsonish`` (JSON Lines, JSON documents),
``scholarly`` (field maps of arXiv, OpenAlex, S2, OpenReview, CSL), ``bibliographic`` (BibTeX,
RIS), ``streams`` (open once, decompress, bounded lines), ``filters`` (--where/--since/--until).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "papers.jsonl"
>>> _ = path.write_text('{"id": "a", "abstract": "We propose X."}\\n{"id": "a"}\\n')
>>> result = read_inputs([path])
>>> [p.id for p in result.papers], len(result.skipped)
(['a'], 1)
"""

from kg.ingest.core import (
    IngestResult,
    Tally,
    detect_format,
    read_inputs,
    read_source,
    stream_papers,
)
from kg.ingest.filters import PaperFilter
from kg.ingest.records import (
    FORMATS,
    OPENREVIEW_LAYOUTS,
    IngestOptions,
    content_id,
    normalise_abstract,
    provisional_label,
)

__all__ = ["FORMATS", "OPENREVIEW_LAYOUTS", "IngestOptions", "IngestResult", "PaperFilter",
           "Tally", "content_id", "detect_format", "normalise_abstract", "provisional_label",
           "read_inputs", "read_source", "stream_papers"]
