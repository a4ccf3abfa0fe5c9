"""Records of scholarly APIs and dumps → generic records (``id``, ``title``, ``abstract``, …).

Each ``from_*`` function takes one parsed JSON record and returns a dict that
``kg.ingest.records.paper_from_record`` turns into a Paper. Field maps are in docs/formats.md.

>>> rec = from_openalex({"id": "https://openalex.org/W1", "publication_year": 2024,
...     "abstract_inverted_index": {"We": [0], "X.": [3], "study": [1]}})
>>> rec["id"], rec["abstract"], rec["year"]
('W1', 'We study X.', 2024)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

from pylatexenc.latex2text import LatexNodes2Text

_LATEX = LatexNodes2Text()
_ARXIV_ID = re.compile(r"^(\d{4}\.\d{4,5}|[a-z-]+(\.[A-Z]{2})?/\d{7})(v\d+)?$", re.I)


def delatex(text: str) -> str:
    r"""LaTeX accents and braces as Unicode text (``D{\"o}rner`` → ``Dörner``).

    >>> delatex(r"D{\"o}rner, Bal\'azs")
    'Dörner, Balázs'
    """
    if "\\" not in text and "{" not in text:
        return text
    try:
        return _LATEX.latex_to_text(text)
    except Exception:  # pylatexenc has no error hierarchy; keep the raw text
        return text


def _names(items: object, key: str) -> list[str]:
    """``[item[key] …]`` for a list of dicts (authors, topics), skipping anything else."""
    if not isinstance(items, list):
        return []
    return [item[key] for item in items
            if isinstance(item, dict) and isinstance(item.get(key), str) and item[key].strip()]


def _unique(values) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def doi_url(doi: object) -> str | None:
    """``https://doi.org/DOI`` from a bare DOI or a DOI URL.

    >>> doi_url("10.1/X"), doi_url("https://doi.org/10.1/X"), doi_url(None)
    ('https://doi.org/10.1/X', 'https://doi.org/10.1/X', None)
    """
    if not isinstance(doi, str) or not doi.strip():
        return None
    doi = re.sub(r"^(https?://(dx\.)?doi\.org/|doi:)", "", doi.strip(), flags=re.I)
    return f"https://doi.org/{doi}"


def arxiv_url(arxiv_id: object) -> str | None:
    if not isinstance(arxiv_id, str) or not arxiv_id.strip():
        return None
    arxiv_id = re.sub(r"^(https?://arxiv\.org/abs/|arxiv:)", "", arxiv_id.strip(), flags=re.I)
    return f"https://arxiv.org/abs/{arxiv_id}"


def from_arxiv(rec: dict) -> dict:
    """A line of the arXiv metadata snapshot (Kaggle "arXiv Dataset")."""
    arxiv_id = str(rec.get("id") or "").strip()
    parsed = rec.get("authors_parsed")
    if isinstance(parsed, list):
        authors = [delatex(" ".join(p for p in (*part[1:2], part[0], *part[2:3]) if p))
                   for part in parsed if isinstance(part, list) and part]
    else:
        authors = [delatex(a) for a in re.split(r",\s*|\s+and\s+", str(rec.get("authors") or ""))]
    versions = rec.get("versions")
    first = versions[0] if isinstance(versions, list) and versions else None
    date = _rfc2822_day(first.get("created")) if isinstance(first, dict) else None
    date = date or rec.get("update_date")
    url = arxiv_url(arxiv_id) if _ARXIV_ID.match(arxiv_id) else None
    return {"id": arxiv_id or None, "title": rec.get("title"), "abstract": rec.get("abstract"),
            "authors": _unique(authors), "venue": rec.get("journal-ref"), "date": date,
            "categories": str(rec.get("categories") or "").split(), "url": url,
            "links": [doi_url(rec.get("doi"))] if rec.get("doi") else []}


_RFC2822 = re.compile(r"(\d{1,2}) ([A-Z][a-z]{2}) (\d{4})")
_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug",
                                       "Sep", "Oct", "Nov", "Dec"), start=1)}


def _rfc2822_day(value: object) -> str | None:
    """The ISO day of an arXiv ``created`` stamp (a regex: email.utils is 10× slower here).

    >>> _rfc2822_day("Mon, 2 Apr 2007 19:18:42 GMT"), _rfc2822_day("soon")
    ('2007-04-02', None)
    """
    match = _RFC2822.search(value) if isinstance(value, str) else None
    if not match or match.group(2) not in _MONTHS:
        return None
    day, month, year = match.groups()
    return f"{year}-{_MONTHS[month]:02d}-{int(day):02d}"


def inverted_abstract(index: object) -> str | None:
    """The abstract of an OpenAlex ``abstract_inverted_index`` (missing positions left out).

    >>> inverted_abstract({"b": [1], "a": [0, 4], "c": [2]})
    'a b c a'
    """
    if not isinstance(index, dict) or not index:
        return None
    at: dict[int, str] = {}
    for word, places in index.items():
        for place in places if isinstance(places, list) else ():
            if isinstance(place, int):
                at[place] = word
    return " ".join(at[p] for p in sorted(at)) or None


def _dig(rec: dict, *keys: str) -> object:
    for key in keys:
        rec = rec.get(key) if isinstance(rec, dict) else None  # type: ignore[assignment]
    return rec


def from_openalex(rec: dict) -> dict:
    """An OpenAlex work (``/works`` API or snapshot line)."""
    ids = rec.get("ids") if isinstance(rec.get("ids"), dict) else {}
    openalex = str(rec.get("id") or ids.get("openalex") or "")
    doi = doi_url(ids.get("doi") or rec.get("doi"))
    links = _unique([doi, arxiv_url(ids.get("arxiv")), openalex or None])
    topics = _names(rec.get("topics"), "display_name") or _names(rec.get("concepts"),
                                                                   "display_name")
    return {"id": openalex.rsplit("/", 1)[-1] or None,
            "title": rec.get("display_name") or rec.get("title"),
            "abstract": inverted_abstract(rec.get("abstract_inverted_index"))
            or rec.get("abstract"),
            "authors": [_dig(a, "author", "display_name") for a in rec.get("authorships") or []
                        if isinstance(_dig(a, "author", "display_name"), str)],
            "keywords": _names(rec.get("keywords"), "display_name"),
            "venue": _dig(rec, "primary_location", "source", "display_name"),
            "year": rec.get("publication_year"), "date": rec.get("publication_date"),
            "categories": _unique(topics), "url": links[0] if links else None, "links": links}


def from_s2(rec: dict) -> dict:
    """A Semantic Scholar paper: Graph API (camelCase) or S2AG bulk line (lower case)."""
    low = {k.lower(): v for k, v in rec.items()}
    external = low.get("externalids") if isinstance(low.get("externalids"), dict) else {}
    corpus = low.get("corpusid") or external.get("CorpusId")
    paper_id = f"CorpusId:{corpus}" if corpus else low.get("paperid")
    journal = _dig(low, "journal", "name")
    fields = [f for f in low.get("fieldsofstudy") or [] if isinstance(f, str)]
    links = _unique([doi_url(external.get("DOI")), arxiv_url(external.get("ArXiv"))])
    url = low.get("url") if isinstance(low.get("url"), str) else None
    return {"id": paper_id, "title": low.get("title"), "abstract": low.get("abstract"),
            "authors": _names(low.get("authors"), "name"),
            "venue": low.get("venue") or journal or None, "year": low.get("year"),
            "date": low.get("publicationdate"),
            "categories": _unique([*fields, *_names(low.get("s2fieldsofstudy"), "category")]),
            "url": url or (links[0] if links else None), "links": links}


def _value(content: dict, key: str) -> object:
    """``content[key]["value"]`` (API v2), or ``content[key]`` itself (API v1)."""
    item = content.get(key)
    return item.get("value") if isinstance(item, dict) else item


def from_openreview(rec: dict) -> dict:
    """An OpenReview note (API v2 ``content.X.value``; v1 plain values are read too)."""
    content = rec.get("content") if isinstance(rec.get("content"), dict) else {}
    stamp = rec.get("pdate") or rec.get("cdate") or rec.get("tcdate")
    date = (datetime.fromtimestamp(stamp / 1000, UTC).date().isoformat()
            if isinstance(stamp, int | float) else None)
    note_id = rec.get("forum") or rec.get("id")
    area = _value(content, "primary_area")
    return {"id": note_id, "title": _value(content, "title"),
            "abstract": _value(content, "abstract"), "authors": _value(content, "authors"),
            "keywords": _value(content, "keywords"),
            "venue": _value(content, "venue") or _value(content, "venueid"), "date": date,
            "categories": [area.replace("_", " ")] if isinstance(area, str) else [],
            "url": f"https://openreview.net/forum?id={note_id}" if note_id else None}


def kind_of(rec: dict) -> str | None:
    """Which scholarly format a JSON record is, from its keys; None for a generic record.

    >>> kind_of({"paperId": "x"}), kind_of({"id": "1", "abstract": "a"})
    ('s2', None)
    """
    keys = rec.keys()
    if "authors_parsed" in keys or {"versions", "submitter"} <= keys:
        return "arxiv"
    if "abstract_inverted_index" in keys or str(rec.get("id", "")).startswith(
            "https://openalex.org/"):
        return "openalex"
    if {"paperId", "corpusId", "corpusid", "externalids"} & keys:
        return "s2"
    if isinstance(rec.get("content"), dict) and ({"forum", "invitations", "invitation", "cdate"}
                                                 & keys):
        return "openreview"
    if "type" in keys and ({"issued", "container-title", "citation-key"} & keys
                           or isinstance(rec.get("author"), list)):
        return "csl"
    return None


def from_csl(rec: dict) -> dict:
    """A CSL-JSON item (Zotero, Better BibTeX, citeproc)."""
    authors = [a.get("literal") or " ".join(str(a[k]) for k in ("given", "family") if a.get(k))
               for a in rec.get("author") or [] if isinstance(a, dict)]
    issued = rec.get("issued") if isinstance(rec.get("issued"), dict) else {}
    parts = (issued.get("date-parts") or [[]])[0] or []
    date = "-".join(f"{int(p):02d}" for p in parts[:3] if str(p).isdigit()) or issued.get("raw")
    links = _unique([doi_url(rec.get("DOI"))])
    return {"id": rec.get("id") or rec.get("citation-key"), "title": rec.get("title"),
            "abstract": rec.get("abstract"), "authors": [a for a in authors if a],
            "keywords": re.split(r"\s*[,;]\s*", rec["keyword"])
            if isinstance(rec.get("keyword"), str) else [],
            "venue": rec.get("container-title"), "date": date,
            "url": rec.get("URL") or (links[0] if links else None), "links": links}


MAPPERS: dict[str, Callable[[dict], dict]] = {
    "arxiv": from_arxiv, "openalex": from_openalex, "s2": from_s2,
    "openreview": from_openreview, "csl": from_csl,
}
