"""Hand-check of uses: is each paper `kg shared` lists for a technique a real user?

    kg build ../shared/corpora/openreview-2024/ICLR_cc_2024_Conference.tsv \\
        ../shared/corpora/openreview-2024/ICML_cc_2024_Conference.tsv -o /tmp/ml24
    .venv/bin/python bench/uses_check.py --graph /tmp/ml24 [--techniques quantization,...]

For each technique, every user paper with the sentence kg gives as evidence, joined with the
judgements in ``tests/data/uses-check.tsv`` (one row per technique, paper and evidence
sentence: ``use`` or ``not``, and a one-line reason a reader can check against the sentence).
Prints per technique: users, judged, real uses and their share; then every user not yet judged
(paper, title, sentence: judge it and add a row) and every paper judged a real use that this
graph does not list ("missed": on the graph after a change, recall lost; on the graph before
it, the real users the change added). ``--tsv`` prints the unjudged users as rows to paste
and fill in. A judgement is of the sentence: when kg gives a paper another sentence, it is
judged again. Figures, not assertions (docs/uses-check.md says how the judgements were made).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from kg.analysis import shared
from kg.errors import KgError
from kg.project import open_project

ROOT = Path(__file__).resolve().parent.parent
JUDGEMENTS = ROOT / "tests" / "data" / "uses-check.tsv"
TECHNIQUES = ("quantization", "caching", "Lipschitz continuity")
COLUMNS = ("technique", "paper", "verdict", "reason", "sentence")


def one_line(text: str) -> str:
    return " ".join(text.split())


def read_judgements(path: Path) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(technique, paper id, sentence) → (verdict, reason)."""
    if not path.exists():
        return {}
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    out = {}
    for line, row in enumerate(rows, start=2):
        if row["verdict"] not in ("use", "not"):
            sys.exit(f"{path}:{line}: verdict {row['verdict']!r}; write 'use' or 'not'")
        out[(row["technique"], row["paper"], one_line(row["sentence"]))] = (
            row["verdict"], row["reason"])
    return out


def users(index, technique: str) -> list[tuple[str, str, str]]:
    """(paper id, title, evidence sentence) of each paper `kg shared` lists, in its order."""
    out = []
    for use in shared(index, technique):
        first = use.uses[0]  # the direct use first, then by position: what `kg shared` shows
        out.append((use.paper.id, one_line(use.paper.title or ""),
                    one_line(first.evidence.text)))
    return out


def check(index, techniques: tuple[str, ...], judged: dict, tsv: bool) -> None:
    unjudged: list[tuple[str, str, str, str]] = []
    print(f"{'technique':<22} {'users':>5} {'judged':>6} {'real':>5} {'share':>6} {'missed':>6}")
    for technique in techniques:
        listed = users(index, technique)
        verdicts = [judged.get((technique, pid, sentence)) for pid, _, sentence in listed]
        real = sum(1 for v in verdicts if v and v[0] == "use")
        done = sum(1 for v in verdicts if v)
        listed_ids = {pid for pid, _, _ in listed}
        lost = sorted({pid for (t, pid, _), (verdict, _) in judged.items()
                       if t == technique and verdict == "use" and pid not in listed_ids})
        share = f"{real / done:.1%}" if done else "-"
        print(f"{technique:<22} {len(listed):>5} {done:>6} {real:>5} {share:>6} {len(lost):>6}")
        unjudged += [(technique, pid, title, sentence)
                     for (pid, title, sentence), v in zip(listed, verdicts, strict=True)
                     if v is None]
        for pid in lost:
            print(f"    judged a real use, not listed: {pid}")
    if tsv:
        for technique, pid, _, sentence in unjudged:
            print("\t".join((technique, pid, "?", "?", sentence)))
        return
    for technique, pid, title, sentence in unjudged:
        print(f"\nnot judged: {technique} | {pid} | {title}\n    {sentence}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", required=True, help="a project directory from `kg build -o`")
    ap.add_argument("--techniques", default=",".join(TECHNIQUES))
    ap.add_argument("--judgements", type=Path, default=JUDGEMENTS)
    ap.add_argument("--tsv", action="store_true", help="print unjudged users as TSV rows")
    args = ap.parse_args()
    try:
        index = open_project(args.graph).index()
    except KgError as exc:
        sys.exit(f"uses_check: {exc}")
    check(index, tuple(args.techniques.split(",")), read_judgements(args.judgements), args.tsv)


if __name__ == "__main__":
    main()
