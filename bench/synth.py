"""Deterministic synthetic abstracts for scale benchmarks, made by recombining real sentences.

    .venv/bin/python bench/synth.py 50000 -o /tmp/synth-50k.jsonl [--corpora ../shared/corpora]
    .venv/bin/python bench/synth.py 1000000 -o /tmp/arxiv-1m.json --format arxiv

Reads the OpenReview 2024 files in place (ICLR 2024, ICML 2024, CoRL 2024/2025; never copied
into the repository), splits their abstracts into sentences, and writes N papers as JSON Lines
(``id``, ``title``, ``abstract``, ``venue``, ``year``): paper i takes a real title and venue and
five to nine sentences drawn with ``random.Random(seed + i)``, so the same N and seed always give
the same file, and each paper mixes techniques the way real abstracts name them. Generate at
bench time; the output is derived from unlicensed data and must not be committed.

``--format arxiv`` writes the same papers as lines of the arXiv metadata snapshot (``id``,
``authors``/``authors_parsed``, ``categories``, ``versions[].created``, ``update_date``, …, the
field layout of ../shared/corpora/formats/arxiv-snapshot), for bench/ingest.py.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ("ICLR_cc_2024_Conference.tsv", "ICML_cc_2024_Conference.tsv",
         "CoRL_2024_Conference.tsv", "CoRL_2025_Conference.tsv")


def pools(corpora: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """Every sentence of every abstract, and every (title, venue), in file order."""
    from kg.extract import sentence_offsets
    from kg.ingest import IngestOptions, read_inputs

    sentences: list[str] = []
    heads: list[tuple[str, str]] = []
    paths = [corpora / "openreview-2024" / name for name in FILES
             if (corpora / "openreview-2024" / name).is_file()]
    for paper in read_inputs(paths, IngestOptions()).papers:
        text = paper.abstract
        sentences.extend(text[s:e] for s, e in sentence_offsets(text) if e - s > 30)
        heads.append((paper.title or "Untitled", paper.venue or ""))
    return sentences, heads


def synthesize(n: int, corpora: Path, seed: int = 0):
    """Yield ``n`` synthetic papers (dicts), deterministically."""
    sentences, heads = pools(corpora)
    for i in range(n):
        rng = random.Random(seed * 1_000_003 + i)
        title, venue = heads[rng.randrange(len(heads))]
        picked = [sentences[rng.randrange(len(sentences))] for _ in range(rng.randint(5, 9))]
        yield {"id": f"synth-{i:07d}", "title": f"{title} ({i})", "abstract": " ".join(picked),
               "venue": venue, "year": 2024 + i % 2}


CATEGORIES = ("cs.LG", "cs.AI", "cs.CL", "cs.CV", "cs.RO", "stat.ML", "cs.NE", "math.OC")
_EPOCH = datetime(2023, 1, 1, 9, 0, tzinfo=UTC)


def as_arxiv(paper: dict, i: int) -> dict:
    """``paper`` (from ``synthesize``) as an arXiv snapshot line, deterministically."""
    rng = random.Random(i)
    created = _EPOCH + timedelta(minutes=37 * i)
    authors = [f"A{rng.randrange(10_000)} Author{rng.randrange(100_000)}"
               for _ in range(rng.randint(1, 6))]
    cats = " ".join(dict.fromkeys(rng.choice(CATEGORIES) for _ in range(rng.randint(1, 3))))
    return {"id": f"{created:%y%m}.{i % 100_000:05d}", "submitter": authors[0],
            "authors": ", ".join(authors), "title": paper["title"], "comments": None,
            "journal-ref": paper["venue"] or None, "doi": None, "report-no": None,
            "categories": cats, "license": None, "abstract": f"  {paper['abstract']}\n",
            "versions": [{"version": "v1", "created": format_datetime(created, usegmt=True)}],
            "update_date": f"{created:%Y-%m-%d}",
            "authors_parsed": [[a.split()[1], a.split()[0], ""] for a in authors]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", type=int)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=("jsonl", "arxiv"), default="jsonl",
                        help="jsonl: kg's own fields; arxiv: arXiv metadata snapshot lines")
    args = parser.parse_args()
    if not (args.corpora / "openreview-2024").is_dir():
        print(f"{args.corpora}: no openreview-2024 here; pass --corpora", file=sys.stderr)
        return 2
    with args.output.open("w", encoding="utf-8") as fh:
        for i, paper in enumerate(synthesize(args.n, args.corpora, args.seed)):
            record = as_arxiv(paper, i) if args.format == "arxiv" else paper
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"wrote {args.n:,} synthetic papers to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
