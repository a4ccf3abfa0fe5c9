"""Which paper a person means: ids, URLs, OpenReview forum ids and title starts
(``find_paper``, ``resolve_papers``), and what to call a paper in output (``paper_label``,
``short_id``)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from kg.analysis.index import AnalysisIndex, analysis_index
from kg.errors import AmbiguousPaperError, NotFoundError
from kg.model import Corpus, Paper
from kg.text import shorten


def paper_label(paper: Paper) -> str:
    """What to call a paper in output: its label, else title, else the abstract's start.

    >>> paper_label(Paper(id="p", abstract="We study the effect of caching on models."))
    'We study the effect of caching on models.'
    """
    return shorten(paper.label or paper.title or paper.abstract, 90)


_FORUM_ID = re.compile(r"[?&]id=([^&#\s]+)")


def short_id(paper_id: str) -> str:
    """What to show (and what a person types) for a paper id: the OpenReview forum id of a
    forum or PDF URL, else the id itself (``p-<hash>``, an arXiv id, ...).

    >>> short_id("https://openreview.net/forum?id=Oce2215aJE"), short_id("p-32f6716951bc")
    ('Oce2215aJE', 'p-32f6716951bc')
    """
    found = _FORUM_ID.search(paper_id) if "://" in paper_id else None
    return found.group(1) if found else paper_id


def _by_id(index: AnalysisIndex, ref: str) -> list[str]:
    """Papers ``ref`` names by id, URL or forum id (exactly), else by a unique id prefix."""
    if ref in index.papers:
        return [ref]
    wanted = short_id(ref.rstrip("/"))
    exact = [pid for pid in index.papers if pid.rstrip("/") == ref.rstrip("/")
             or short_id(pid) == wanted or index.papers[pid].paper.url == ref]
    return exact or [pid for pid in index.papers if pid.startswith(ref)
                     or short_id(pid).startswith(ref)]


def find_paper(corpus: Corpus, reference: str) -> Paper:
    """The paper ``reference`` names: its id, its URL, its OpenReview forum id, a unique id
    prefix, its title or label, a title prefix, or words of its label/title.

    An exact id beats a prefix, a title beats a title prefix, which beats words inside;
    several matches raise AmbiguousPaperError listing them (short ids), none raises
    NotFoundError with the closest titles.

    >>> from kg.pipeline import run
    >>> corpus = run(["examples/iclr2025-seed.txt"])
    >>> find_paper(corpus, "fastercache").label[:11]
    'FasterCache'
    """
    index = analysis_index(corpus)
    ref = reference.strip()
    folded = " ".join(ref.split()).casefold()
    if not folded:
        raise NotFoundError("empty paper reference; give a paper id, URL, forum id or the "
                            "start of its title")
    found = _by_id(index, ref)
    if len(found) != 1:
        exact = list(index.titles.get(folded, ()))
        starts = [pid for pid, text in index.texts if f"\0{folded}" in text]  # (title)
        found = exact or starts or found or [pid for pid, text in index.texts if folded in text]
    matches = [index.papers[pid].paper for pid in dict.fromkeys(found)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = "\n".join(f"  {short_id(p.id)}  {paper_label(p)}" for p in matches[:10])
        more = f"\n  … and {len(matches) - 10} more" if len(matches) > 10 else ""
        raise AmbiguousPaperError(
            f"{reference!r} matches {len(matches)} papers; give one id (or more of the title):"
            f"\n{shown}{more}", matches)
    labels = {paper_label(r.paper): pid for pid, r in index.papers.items()}
    close = difflib.get_close_matches(ref, list(labels), n=5, cutoff=0.5)
    hint = "".join(f"\n  {short_id(labels[c])}  {c}" for c in close)
    raise NotFoundError(
        f"no paper matches {reference!r} (by id, URL, forum id, title or title words) among "
        f"{index.n_papers} papers" + (f"; did you mean:{hint}" if hint else ""),
        [labels[c] for c in close])


def resolve_papers(corpus: Corpus, references: Iterable[str]) -> list[str]:
    """The paper ids ``references`` name (each as ``find_paper`` reads it), in order, once.

    For commands taking several papers (``kg remove DIR REF...``): an ambiguous or unknown
    reference raises AmbiguousPaperError / NotFoundError naming it, before anything is done.

    >>> from kg.pipeline import run
    >>> corpus = run(["examples/iclr2025-seed.txt"])
    >>> resolve_papers(corpus, ["FasterCache", "p-32f6716951bc"])[1]
    'p-32f6716951bc'
    """
    return list(dict.fromkeys(find_paper(corpus, ref).id for ref in references))
