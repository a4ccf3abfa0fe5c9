"""kg eval: gold files load (inline or by reference), scores are computed and reported."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import DATA

from kg.cli import cli
from kg.errors import InputError
from kg.evaluate import (
    Counts,
    GoldEntity,
    GoldPaper,
    GoldRelation,
    load_gold,
    score,
)
from kg.extract import match_key
from kg.model import Corpus, Entity, Paper, PaperResult, Relation, Span


def test_both_gold_files_load_with_their_full_text(corpora_dir):
    seed = load_gold(DATA / "seed-gold.jsonl")
    dev = load_gold(DATA / "dev-gold.jsonl", corpora_dir)
    assert (len(seed), len(dev)) == (19, 30)
    assert all(g.paper.abstract and g.entities for g in seed + dev)
    assert all(g.paper.title for g in dev)


def test_counts_compute_precision_recall_f1():
    c = Counts(tp=3, fn=1, tp_pred=3, fp=1)
    assert (c.precision, c.recall, c.f1) == (0.75, 0.75, 0.75)
    assert Counts().f1 == 0.0


def test_a_changed_source_abstract_is_refused(tmp_path, corpora_dir):
    line = json.loads((DATA / "dev-gold.jsonl").read_text().splitlines()[0])
    line["sha1"] = "0" * 40
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps(line) + "\n")
    with pytest.raises(InputError, match="sha1 mismatch"):
        load_gold(gold, corpora=corpora_dir)


def test_eval_cli_prints_a_table_and_json():
    result = CliRunner().invoke(cli, ["eval", str(DATA / "seed-gold.jsonl")])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].split() == ["type", "P", "R", "F1", "TP", "FN", "FP"]
    result = CliRunner().invoke(cli, ["eval", str(DATA / "seed-gold.jsonl"), "--format", "json"])
    data = json.loads(result.output)
    assert set(data["per_type"]) == {"Method", "Model", "Dataset", "Hardware", "Technique",
                                     "Task", "Metric"}


def test_fail_under_turns_a_low_score_into_an_exit_code():
    result = CliRunner().invoke(cli, ["eval", str(DATA / "seed-gold.jsonl"), "--fail-under",
                                      "0.99"])
    assert result.exit_code == 1
    assert "overall F1" in result.output


# Relation scoring: hand-made gold and extraction objects, so each rule is pinned exactly.

def _paper_and_gold(relations, entities=None):
    paper = Paper(id="p1", abstract="SGRv2 beats RVT. We use imitation learning, not caching.",
                  title="SGRv2")
    def gold_entity(type_, name, *surfaces, core=True):
        return GoldEntity(type_, name, frozenset(map(match_key, (name, *surfaces))), core)

    ents = {e.name: e for e in entities or [
        gold_entity("Method", "SGRv2"),
        gold_entity("Method", "RVT", "Robotic View Transformer"),
        gold_entity("Technique", "imitation learning"),
        gold_entity("Technique", "caching", core=False),
    ]}
    rels = tuple(GoldRelation(None if s == "paper" else ents[s], p, ents[o], core)
                 for s, p, o, core in relations)
    return paper, GoldPaper(paper, tuple(ents.values()), rels)


def _corpus(paper, entities, triples):
    ents = {eid: Entity(eid, t, name, aliases) for eid, t, name, aliases in entities}
    span = Span(paper.text[:5], 0, 5)
    mentions = tuple((eid, (Span(ents[eid].name, 0, 0),)) for eid in ents)
    rels = tuple(Relation(s, p, o, span, "test", 0.9) for s, p, o in triples)
    return Corpus((PaperResult(paper, mentions, rels),), ents)


ENTS = [("method/sgrv2", "Method", "SGRv2", ()),
        ("method/robotic-view-transformer", "Method", "Robotic View Transformer", ("RVTx",)),
        ("technique/il", "Technique", "Imitation-Learning", ()),
        ("technique/caching", "Technique", "caching", ())]


def test_relation_matches_on_predicate_and_any_surface_of_both_ends():
    paper, gold = _paper_and_gold([("SGRv2", "outperforms", "RVT", True),
                                   ("paper", "usesTechnique", "imitation learning", True)])
    corpus = _corpus(paper, ENTS, [
        # the object matches through the gold surface "robotic view transformer"
        ("method/sgrv2", "outperforms", "method/robotic-view-transformer"),
        # right ends, wrong predicate: a false positive, and the gold relation stays missed
        ("p1", "usesModel", "technique/il")])
    report = score([gold], corpus)
    out, uses = report.per_predicate["outperforms"], report.per_predicate["usesTechnique"]
    assert (out.tp, out.fn, out.tp_pred, out.fp) == (1, 0, 1, 0)
    assert (uses.tp, uses.fn) == (0, 1)
    assert report.per_predicate["usesModel"].fp == 1
    assert (report.relations.tp, report.relations.fn, report.relations.fp) == (1, 1, 1)
    assert report.errors[0]["missed_relations"] == ["paper usesTechnique imitation learning"]
    assert report.errors[0]["spurious_relations"] == ["paper usesModel Imitation-Learning"]


def test_a_paper_subject_matches_only_the_paper_itself():
    paper, gold = _paper_and_gold([("paper", "usesTechnique", "imitation learning", True)])
    corpus = _corpus(paper, ENTS, [("method/sgrv2", "usesTechnique", "technique/il")])
    c = score([gold], corpus).per_predicate["usesTechnique"]
    assert (c.tp, c.fn, c.fp) == (0, 1, 1)


def test_borderline_gold_relations_are_neither_missed_nor_spurious_and_duplicates_count_once():
    paper, gold = _paper_and_gold([("paper", "usesTechnique", "caching", False),
                                   ("paper", "usesTechnique", "imitation learning", False)])
    corpus = _corpus(paper, ENTS, [("p1", "usesTechnique", "technique/caching"),
                                   ("p1", "usesTechnique", "technique/caching")])
    c = score([gold], corpus).per_predicate["usesTechnique"]
    assert (c.tp, c.fn, c.tp_pred, c.fp) == (0, 0, 0, 0)
    paper, gold = _paper_and_gold([("paper", "usesTechnique", "caching", True)])
    c = score([gold], _corpus(paper, ENTS, [("p1", "usesTechnique", "technique/caching"),
                                            ("p1", "usesTechnique", "technique/caching"),
                                            ("p1", "usesTechnique", "technique/il")])
              ).per_predicate["usesTechnique"]
    assert (c.tp, c.tp_pred, c.fp) == (1, 1, 1)


def test_mentions_counts_only_when_the_paper_does_not_also_use_the_entity():
    paper, gold = _paper_and_gold([("paper", "mentions", "caching", True),
                                   ("paper", "usesTechnique", "imitation learning", True)])
    # "mentions" written as the super-property next to a use is not a claim of mere mention ...
    beside_use = _corpus(paper, ENTS, [("p1", "usesTechnique", "technique/caching"),
                                       ("p1", "mentions", "technique/caching"),
                                       ("p1", "usesTechnique", "technique/il"),
                                       ("p1", "mentions", "technique/il")])
    report = score([gold], beside_use)
    m = report.per_predicate["mentions"]
    assert (m.tp, m.fn, m.fp) == (0, 1, 0)
    assert report.per_predicate["usesTechnique"].fp == 1
    # ... a bare one is, and it is kept out of the overall (non-mentions) figure.
    bare = _corpus(paper, ENTS, [("p1", "mentions", "technique/caching"),
                                 ("p1", "usesTechnique", "technique/il")])
    report = score([gold], bare)
    m = report.per_predicate["mentions"]
    assert (m.tp, m.fn, m.fp) == (1, 0, 0)
    assert (report.relations.tp, report.relations.fn, report.relations.fp) == (1, 0, 0)


def test_records_without_relation_gold_score_no_relations():
    paper, gold = _paper_and_gold([])
    no_gold = GoldPaper(paper, gold.entities, None)
    report = score([no_gold], _corpus(paper, ENTS, [("p1", "usesTechnique", "technique/il")]))
    assert report.per_predicate == {} and "relations" not in report.as_dict()


@pytest.mark.parametrize("relation, message", [
    ({"subject": "paper", "predicate": "uses", "object": "X"}, "predicate 'uses'"),
    ({"subject": "paper", "predicate": "usesModel", "object": "Y"}, "object 'Y' is not the name"),
    ({"subject": "Z", "predicate": "extends", "object": "X"}, "subject 'Z' is not the name"),
])
def test_a_gold_relation_with_an_unknown_predicate_or_entity_is_refused(tmp_path, relation,
                                                                        message):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"abstract": "We use X.", "entities": [
        {"type": "Technique", "name": "X", "surface": ["X"], "core": True}],
        "relations": [relation]}) + "\n")
    with pytest.raises(InputError, match=message):
        load_gold(gold)


def test_corl_and_icml_gold_load_and_eval_prints_relation_rows(corpora_dir):
    corl = load_gold(DATA / "corl-gold.jsonl", corpora_dir)
    icml = load_gold(DATA / "icml-gold.jsonl", corpora_dir)
    assert (len(corl), len(icml)) == (20, 20)
    assert all(g.paper.title and g.relations for g in corl + icml)
    result = CliRunner().invoke(cli, ["eval", str(DATA / "corl-gold.jsonl"), "--corpora",
                                      str(corpora_dir)])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0] for line in result.output.splitlines() if line.strip()}
    assert {"relation", "proposes", "usesTechnique", "runsOn", "mentions"} <= rows


def test_eval_compares_the_shipped_span_model_with_the_rules_on_a_gold_set():
    result = CliRunner().invoke(cli, ["eval", str(DATA / "dev-gold.jsonl"), "--compare"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.output.splitlines()
            if line.strip()}
    assert "rules only" in result.output and "rules + model" in result.output
    rules_recall, model_recall = float(rows["Method"][1]), float(rows["Method"][4])
    assert model_recall > rules_recall  # kg-span finds coined Method names on dev


def test_eval_prints_rules_only_and_rules_plus_model_side_by_side(monkeypatch):
    import sys
    import types

    from spacy.language import Language

    from kg.extract.components import add_candidates
    from kg.model import Candidate

    def spans(doc):  # a stand-in model: every "model"/"models" a Method
        text = doc.text
        found, pos = [], text.find("model")
        while pos >= 0:
            found.append(Candidate(Span("model", pos, pos + 5), "Method", "model", None, 0.5))
            pos = text.find("model", pos + 5)
        add_candidates(doc, found)
        return doc

    name = "kg_span_eval_test"
    if not Language.has_factory(name):
        Language.component(name, func=spans)
    from collections import OrderedDict

    from kg import pipeline
    from kg.extract import components, extractor

    monkeypatch.setitem(sys.modules, "kg.extract.span_model", types.ModuleType("span_model"))
    monkeypatch.setitem(components.MODELS, "kg-span", (name,))
    # Pipelines built with the stand-in stay out of the process' caches.
    monkeypatch.setattr(extractor, "_PIPELINES", OrderedDict())
    monkeypatch.setattr(pipeline, "_EXTRACTORS", {})
    result = CliRunner().invoke(cli, ["eval", str(DATA / "seed-gold.jsonl"), "--model",
                                      "kg-span", "--format", "json"])
    assert result.exit_code == 0, result.output
    both = json.loads(result.output)
    rules, with_model = both["rules"], both["rules+model"]
    assert rules["per_type"]["Method"]["fp"] < with_model["per_type"]["Method"]["fp"]
    assert rules["per_type"]["Technique"] == with_model["per_type"]["Technique"]
    table = CliRunner().invoke(cli, ["eval", str(DATA / "seed-gold.jsonl"), "--compare"])
    assert "rules only" in table.output and "rules + model" in table.output
