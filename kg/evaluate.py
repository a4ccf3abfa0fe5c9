"""Score the extractor against an annotated gold set (``kg eval``).

Gold JSONL, one paper per line: ``{"abstract": ...}`` inline (optionally ``"title"``), or a
``"source": {"corpus", "file", "line"}`` reference into a corpora directory (for corpora whose
licence forbids copying the text), plus ``"entities": [{"type", "name", "surface": [...],
"core": bool}]`` and optionally ``"relations": [{"subject", "predicate", "object", "core"}]``,
where subject is ``"paper"`` or an entity ``name`` of the record and object an entity ``name``.

Matching is lenient and per paper: a predicted entity matches a gold entity of the same type when
any of its surface forms (name, aliases, mention texts) equals any gold surface form, ignoring
case, hyphens, spaces and a plural -s. Borderline gold entities (``core: false``) are neither
misses nor false positives.

Relations are scored only for records that carry ``"relations"``. A predicted relation matches a
gold one when the predicates are equal and each end matches: ``"paper"`` matches the paper
itself, an entity name matches a predicted entity by the same surface rule (type is not
compared: the predicate already says the role, and type errors are counted with the entities).
Borderline gold relations are neither misses nor false positives; predicted duplicates (same
subject, predicate and object) count once. ``mentions`` means "mentioned but not used" (negated,
prior work only, a contrast): a predicted ``paper mentions X`` counts only when the paper has no
other relation to X, since ``mentions`` is also the super-property of every use. The overall
relation score (``Report.relations``) is the micro average over the nine predicates other than
``mentions``, which is reported on its own row.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kg.errors import InputError
from kg.extract import match_key
from kg.ingest import OPENREVIEW_LAYOUTS, IngestOptions, read_inputs
from kg.model import ENTITY_TYPES, PREDICATES, Corpus, Entity, EntityType, Paper, PaperResult
from kg.pipeline import extract_all
from kg.resolve import resolve


@dataclass(frozen=True)
class GoldEntity:
    type: str
    name: str
    surfaces: frozenset[str]
    core: bool


@dataclass(frozen=True)
class GoldRelation:
    subject: GoldEntity | None  # None: the paper itself
    predicate: str
    object: GoldEntity
    core: bool

    def label(self) -> str:
        subject = self.subject.name if self.subject else "paper"
        return f"{subject} {self.predicate} {self.object.name}"


@dataclass(frozen=True)
class GoldPaper:
    paper: Paper
    entities: tuple[GoldEntity, ...]
    relations: tuple[GoldRelation, ...] | None = None  # None: the record has no relation gold


@dataclass
class Counts:
    tp: int = 0  # gold core entities found
    fn: int = 0  # gold core entities missed
    tp_pred: int = 0  # predicted entities that match a gold core entity
    fp: int = 0  # predicted entities matching no gold entity

    @property
    def precision(self) -> float:
        return self.tp_pred / (self.tp_pred + self.fp) if self.tp_pred + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass
class Report:
    per_type: dict[str, Counts] = field(default_factory=dict)
    overall: Counts = field(default_factory=Counts)
    pairs: Counts = field(default_factory=Counts)
    # Empty unless some gold record carries "relations"; then one row per predicate.
    per_predicate: dict[str, Counts] = field(default_factory=dict)
    relations: Counts = field(default_factory=Counts)  # micro over all but "mentions"
    errors: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        def row(c: Counts) -> dict:
            return {"precision": round(c.precision, 4), "recall": round(c.recall, 4),
                    "f1": round(c.f1, 4), "tp": c.tp, "fn": c.fn, "fp": c.fp}
        out = {"overall": row(self.overall),
               "per_type": {t: row(c) for t, c in self.per_type.items()},
               "shared_technique_pairs": row(self.pairs)}
        if self.per_predicate:
            out["relations"] = {"overall": row(self.relations),
                                "per_predicate": {p: row(c)
                                                  for p, c in self.per_predicate.items()}}
        out["papers"] = self.errors
        return out


def _norm(text: str) -> str:
    return match_key(text)


def find_corpora(gold_path: Path) -> Path | None:
    if os.environ.get("KG_CORPORA"):
        return Path(os.environ["KG_CORPORA"])
    for parent in gold_path.resolve().parents:
        for candidate in (parent / "shared" / "corpora", parent.parent / "shared" / "corpora"):
            if candidate.is_dir():
                return candidate
    return None


def _source_text(source: dict, corpora: Path | None, where: str
                 ) -> tuple[str | None, str, tuple[str, ...]]:
    """Title, abstract and author keywords of the referenced corpus row."""
    if corpora is None:
        raise InputError(f"{where}: the record refers to {source.get('corpus')}/"
                         f"{source.get('file')} but no corpora directory was found; pass "
                         "--corpora DIR or set KG_CORPORA")
    path = corpora / source["corpus"] / source["file"]
    try:
        # split("\n"), not splitlines(): abstracts may contain U+2028 and friends.
        lines = path.read_text(encoding="utf-8").split("\n")
        fields = lines[int(source["line"]) - 1].split("\t")
    except (OSError, IndexError, ValueError) as exc:
        raise InputError(f"{where}: cannot read line {source.get('line')} of {path} ({exc})") \
            from exc
    layout = OPENREVIEW_LAYOUTS.get(len(fields))
    if layout:
        keywords = tuple(k.strip() for k in fields[layout.index("keywords")].split(";")
                         if k.strip()) if "keywords" in layout else ()
        return fields[layout.index("title")], fields[layout.index("abstract")], keywords
    raise InputError(f"{where}: {path}:{source['line']} has {len(fields)} fields, expected 9/11")


def load_gold(path: Path, corpora: Path | None = None) -> list[GoldPaper]:
    corpora = corpora or find_corpora(path)
    papers: list[GoldPaper] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: malformed JSON ({exc.msg})") from exc
        if "abstract" in record:
            title, abstract = record.get("title"), record["abstract"]
            keywords: tuple[str, ...] = ()
        else:
            title, abstract, keywords = _source_text(record.get("source", {}), corpora, where)
            if record.get("sha1") and hashlib.sha1(abstract.encode()).hexdigest() != \
                    record["sha1"]:
                raise InputError(f"{where}: the source abstract changed (sha1 mismatch)")
        entities = []
        for e in record.get("entities", []):
            if e.get("type") not in ENTITY_TYPES:
                raise InputError(f"{where}: entity {e.get('name')!r} has type {e.get('type')!r};"
                                 f" use one of {', '.join(ENTITY_TYPES)}")
            surfaces = frozenset(_norm(s) for s in [e["name"], *e.get("surface", [])] if s)
            entities.append(GoldEntity(e["type"], e["name"], surfaces, bool(e.get("core", True))))
        relations = None
        if "relations" in record:
            relations = tuple(_gold_relation(r, entities, where) for r in record["relations"])
        paper = Paper(id=f"gold-{number}", abstract=abstract.strip(), title=title or None,
                      label=title or "", keywords=keywords, source=where)
        papers.append(GoldPaper(paper, tuple(entities), relations))
    return papers


def _gold_relation(r: dict, entities: list[GoldEntity], where: str) -> GoldRelation:
    by_name = {e.name: e for e in entities}
    if r.get("predicate") not in PREDICATES:
        raise InputError(f"{where}: relation {r!r} has predicate {r.get('predicate')!r}; use one "
                         f"of {', '.join(PREDICATES)}")
    ends = []
    for key in ("subject", "object"):
        name = r.get(key)
        if key == "subject" and name == "paper":
            ends.append(None)
        elif name in by_name:
            ends.append(by_name[name])
        else:
            raise InputError(f"{where}: relation {key} {name!r} is not the name of an entity of "
                             "this record" + (' (nor "paper")' if key == "subject" else "")
                             + "; add the entity or fix the name")
    return GoldRelation(ends[0], r["predicate"], ends[1], bool(r.get("core", True)))


def _score_relations(g: GoldPaper, result: PaperResult, corpus: Corpus,
                     forms: dict[str, set[str]], report: Report, errors: dict) -> None:
    """Add one paper's relation counts to ``report.per_predicate``; list misses in ``errors``."""
    assert g.relations is not None

    def end_matches(gold_end: GoldEntity | None, predicted: str) -> bool:
        if gold_end is None:
            return predicted == result.paper.id
        if predicted not in forms:  # an end the paper has no mention of: judge it by its names
            e = corpus.entities.get(predicted)
            forms[predicted] = {_norm(s) for s in (e.name, *e.aliases)} if e else set()
        return bool(forms[predicted] & gold_end.surfaces)

    def matches(gr: GoldRelation, triple: tuple[str, str, str]) -> bool:
        subject, predicate, obj = triple
        return (gr.predicate == predicate and end_matches(gr.subject, subject)
                and end_matches(gr.object, obj))

    def name(end: str) -> str:
        if end == result.paper.id:
            return "paper"
        return corpus.entities[end].name if end in corpus.entities else end

    triples = {(r.subject, r.predicate, r.object) for r in result.relations}
    # "mentions" is the super-property of every paper->entity predicate, and the extractor may
    # write it beside a use. Only a bare one (no other paper->X relation) claims "only mentioned".
    used = {o for s, p, o in triples if s == result.paper.id and p != "mentions"}
    predicted = sorted(t for t in triples
                       if not (t[1] == "mentions" and t[0] == result.paper.id and t[2] in used))
    missed = _tally_gold(g.relations, predicted, matches, report.per_predicate)
    spurious = []
    for t in predicted:
        hits = [gr for gr in g.relations if matches(gr, t)]
        c = report.per_predicate.setdefault(t[1], Counts())
        if any(gr.core for gr in hits):
            c.tp_pred += 1
        elif not hits:
            c.fp += 1
            spurious.append(f"{name(t[0])} {t[1]} {name(t[2])}")
    errors["missed_relations"], errors["spurious_relations"] = missed, spurious


def _tally_gold(relations: list[GoldRelation], predicted: list, matches, per_predicate: dict
                ) -> list[str]:
    """Count each core gold relation found (tp) or missed (fn); the missed ones' labels."""
    missed = []
    for gr in relations:
        if gr.core:
            c = per_predicate.setdefault(gr.predicate, Counts())
            if any(matches(gr, t) for t in predicted):
                c.tp += 1
            else:
                c.fn += 1
                missed.append(gr.label())
    return missed


def _add(total: Counts, counts: Iterable[Counts]) -> None:
    for c in counts:
        for attr in ("tp", "fn", "tp_pred", "fp"):
            setattr(total, attr, getattr(total, attr) + getattr(c, attr))


def _score_entities(g: GoldPaper, result: PaperResult, corpus: Corpus, report: Report
                    ) -> tuple[list[tuple[Entity, set[str]]], dict[str, set[str]], dict]:
    """Add one paper's entity counts to ``report.per_type``: its predicted entities with their
    surface forms, the forms by entity id, and the paper's errors."""
    predicted = []
    entity_forms: dict[str, set[str]] = {}
    for eid, spans in result.mentions:
        e = corpus.entities[eid]
        forms = {_norm(s) for s in (e.name, *e.aliases, *(s.text for s in spans))}
        predicted.append((e, forms))
        entity_forms[eid] = forms
    missed, spurious = [], []
    for ge in g.entities:
        hit = any(e.type == ge.type and forms & ge.surfaces for e, forms in predicted)
        if ge.core:
            c = report.per_type[ge.type]
            if hit:
                c.tp += 1
            else:
                c.fn += 1
                missed.append(f"{ge.type}:{ge.name}")
    for e, forms in predicted:
        matches = [ge for ge in g.entities if ge.type == e.type and forms & ge.surfaces]
        c = report.per_type[e.type]
        if any(ge.core for ge in matches):
            c.tp_pred += 1
        elif not matches:
            c.fp += 1
            spurious.append(f"{e.type}:{e.name}")
    return predicted, entity_forms, {"paper": g.paper.source, "missed": missed,
                                     "spurious": spurious}


def score(gold: list[GoldPaper], corpus: Corpus) -> Report:
    """Per-type and overall precision/recall/F1, pairwise shared-technique P/R, and per-predicate
    relation P/R/F1 for the records that carry relation gold."""
    report = Report(per_type={t: Counts() for t in ENTITY_TYPES})
    predicted_techniques: list[set[str]] = []
    gold_techniques: list[tuple[set[str], set[str]]] = []  # (core names, all names)
    for g, result in zip(gold, corpus.results, strict=True):
        predicted, entity_forms, errors = _score_entities(g, result, corpus, report)
        if g.relations is not None:
            _score_relations(g, result, corpus, entity_forms, report, errors)
        report.errors.append(errors)
        # Papers share what they use, as kg shared counts it: not what one only mentions.
        used = set(result.used_ids)
        predicted_techniques.append({e.id for e, _ in predicted
                                     if e.type == EntityType.TECHNIQUE and e.id in used})
        techniques = [ge for ge in g.entities if ge.type == EntityType.TECHNIQUE]
        gold_techniques.append(({ge.name.casefold() for ge in techniques if ge.core},
                                {ge.name.casefold() for ge in techniques}))
    _add(report.overall, report.per_type.values())
    report.per_predicate = {p: report.per_predicate[p] for p in PREDICATES
                            if p in report.per_predicate}
    _add(report.relations, (c for p, c in report.per_predicate.items() if p != "mentions"))
    _score_pairs(gold_techniques, predicted_techniques, report.pairs)
    return report


def _score_pairs(gold_techniques: list[tuple[set[str], set[str]]],
                 predicted_techniques: list[set[str]], pairs_counts: Counts) -> None:
    """Paper pairs sharing a technique: gold (core names) against predicted (used ids)."""
    pairs: defaultdict[tuple[bool, bool], int] = defaultdict(int)
    for i, j in itertools.combinations(range(len(gold_techniques)), 2):
        (core_i, all_i), (core_j, all_j) = gold_techniques[i], gold_techniques[j]
        g_share = bool(core_i & core_j)
        if not g_share and all_i & all_j:
            continue  # shared only through borderline techniques: not scored either way
        p_share = bool(predicted_techniques[i] & predicted_techniques[j])
        pairs[(g_share, p_share)] += 1
    pairs_counts.tp = pairs_counts.tp_pred = pairs[(True, True)]
    pairs_counts.fn = pairs[(True, False)]
    pairs_counts.fp = pairs[(False, True)]


def evaluate(path: Path, corpora: Path | None = None,
             context: Sequence[str | Path] = (), model: str | None = None) -> Report:
    """Load the gold file, run the pipeline on its papers, and score.

    ``context`` inputs (e.g. the whole conference files the gold papers come from) are
    extracted in the same run, as a user would build them, so corpus-level steps see the whole
    corpus; only the gold papers are scored (a context paper with a gold paper's text is
    dropped, so no paper is extracted twice). ``model`` ("kg-span") adds the trained span
    model's candidates to the rules'.

    >>> report = evaluate(Path("tests/data/seed-gold.jsonl"))
    >>> report.overall.precision > 0.5 and report.overall.recall > 0.5
    True
    """
    gold = load_gold(path, corpora)
    papers = [g.paper for g in gold]
    if context:
        seen = {g.paper.abstract for g in gold}
        papers += [p for p in read_inputs(list(context), IngestOptions()).papers
                   if p.abstract.strip() not in seen]
    extractions = extract_all(papers, workers=2 if len(papers) > 200 else 1,
                              trained_model=model)
    corpus = resolve(extractions)
    gold_results = Corpus(corpus.results[:len(gold)], corpus.entities)
    return score(gold, gold_results)
