"""BibTeX and RIS, read one entry at a time (parsed by ``bibtexparser`` and ``rispy``).

An entry is collected line by line (so memory holds one entry) and handed to the library;
a broken entry is a Skip naming its line, the next entry is read.

>>> lines = iter(enumerate(["@article{k1,", " title={A}, abstract={We study X.},",
...                          " author={D{\\\\\\"o}rner, Ralf and Bo}, year=2020}"], start=1))
>>> [(w, r["id"], r["authors"]) for w, r in bibtex_records("f.bib", lines)]
[('f.bib:1', 'k1', ['Ralf Dörner', 'Bo'])]
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import bibtexparser
import rispy
from bibtexparser.middlewares import LatexDecodingMiddleware

from kg.ingest.scholarly import arxiv_url, delatex, doi_url
from kg.model import Skip

# bibtexparser logs each block it cannot parse; that block becomes a Skip here instead.
logging.getLogger("bibtexparser").addHandler(logging.NullHandler())

Lines = Iterator[tuple[int, "str | Skip"]]
# An entry starts with @type{ at the start of a line: not counting braces, so one entry with
# an unbalanced brace (real exports have them) costs that entry, not the rest of the file.
_ENTRY_START = re.compile(r"^@\s*(\w+)\s*[{(]")


def _chunks(lines: Lines, starts: re.Pattern) -> Iterator[tuple[int, list[str], Skip | None]]:
    """Groups of lines, each from a line matching ``starts`` to the next one."""
    start, chunk, bad = 0, [], None
    for number, line in lines:
        if isinstance(line, str) and starts.match(line):
            if chunk:
                yield start, chunk, bad
            start, chunk, bad = number, [], None
        if isinstance(line, Skip):
            bad = bad or line
        elif start:
            chunk.append(line)
    if chunk:
        yield start, chunk, bad


def _bib_person(name: str) -> str:
    last, _, first = name.partition(",")
    return " ".join(f"{first.strip()} {last.strip()}".split()) if first else name.strip()


def bibtex_records(name: str, lines: Lines) -> Iterator[tuple[str, dict | Skip]]:
    """The entries of a BibTeX file (``@string`` macros apply to the entries after them)."""
    macros: list[str] = []
    for start, chunk, bad in _chunks(lines, _ENTRY_START):
        where = f"{name}:{start}"
        kind = _ENTRY_START.match(chunk[0]).group(1).lower()  # type: ignore[union-attr]
        if bad is not None:
            yield where, Skip(where, f"entry skipped: {bad.reason}")
            continue
        if kind in ("string", "preamble", "comment"):
            if kind == "string":
                macros.extend(chunk)
            continue
        library = bibtexparser.parse_string("".join([*macros, *chunk]),
                                            append_middleware=[LatexDecodingMiddleware()])
        if not library.entries or library.failed_blocks:
            yield where, Skip(where, "not a readable BibTeX entry (check its braces and "
                              "commas); the next entry is read")
            continue
        yield where, _from_bibtex(library.entries[0])


def _from_bibtex(entry) -> dict:
    fields = {f.key.lower(): str(f.value).strip() for f in entry.fields}
    links = [doi_url(fields.get("doi"))]
    if fields.get("archiveprefix", "").lower() == "arxiv" or fields.get("eprinttype") == "arxiv":
        links.append(arxiv_url(fields.get("eprint")))
    links = [link for link in dict.fromkeys(links) if link]
    return {"id": entry.key, "title": fields.get("title"), "abstract": fields.get("abstract"),
            "authors": [_bib_person(a) for a in re.split(r"\s+and\s+", fields.get("author", ""))
                        if a.strip()],
            "keywords": re.split(r"\s*[,;]\s*", fields["keywords"]) if "keywords" in fields
            else [],
            "venue": fields.get("journal") or fields.get("booktitle") or fields.get("venue"),
            "year": fields.get("year"), "date": fields.get("date"),
            "url": fields.get("url") or (links[0] if links else None), "links": links}


_RIS_START = re.compile(r"^TY  - ")


def ris_records(name: str, lines: Lines) -> Iterator[tuple[str, dict | Skip]]:
    """The references of a RIS file (abstract from ``AB``, else ``N2``)."""
    for start, chunk, bad in _chunks(lines, _RIS_START):
        where = f"{name}:{start}"
        if bad is not None:
            yield where, Skip(where, f"reference skipped: {bad.reason}")
            continue
        try:
            (ref,) = rispy.loads("".join(chunk).rstrip() + "\n", skip_unknown_tags=True)
        except (ValueError, OSError) as exc:
            yield where, Skip(where, f"not a readable RIS reference ({exc}); the next one is read")
            continue
        yield where, _from_ris(ref)


def _from_ris(ref: dict) -> dict:
    links = [doi_url(ref.get("doi"))]
    urls = ref.get("urls") or []
    venue = (ref.get("journal_name") or ref.get("secondary_title") or ref.get("alternate_title3")
             or ref.get("alternate_title1"))
    return {"id": ref.get("id"), "title": ref.get("title") or ref.get("primary_title"),
            "abstract": ref.get("abstract") or ref.get("notes_abstract"),
            "authors": [_bib_person(delatex(a)) for a in
                        ref.get("authors") or ref.get("first_authors") or []],
            "keywords": ref.get("keywords") or [], "venue": venue,
            "year": ref.get("year") or ref.get("publication_year"), "date": ref.get("date"),
            "url": urls[0] if urls else (links[0] if links[0] else None),
            "links": [link for link in links if link]}
