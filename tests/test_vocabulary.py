"""The SKOS vocabulary that drives the extractor: well-formed, sized for ML literature."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from conftest import ROOT

from kg.errors import VocabularyError
from kg.extract import Extractor, label_key
from kg.model import Paper
from kg.vocab import load_vocabulary, parse_vocabulary

MINIMUM = {"Technique": 400, "Model": 200, "Dataset": 250, "Hardware": 60, "Task": 150,
           "Metric": 60}


def test_every_type_has_at_least_the_promised_number_of_concepts():
    counts = Counter(c.type for c in load_vocabulary().concepts.values())
    for type_, minimum in MINIMUM.items():
        assert counts[type_] >= minimum, (type_, counts[type_])


def test_every_broader_target_is_a_defined_concept():
    vocab = load_vocabulary()
    dangling = [(c.iri, b) for c in vocab.concepts.values() for b in c.broader
                if b not in vocab.concepts]
    assert dangling == []


def test_no_label_names_two_concepts_of_one_type():
    owners = defaultdict(set)
    for c in load_vocabulary().concepts.values():
        if c.matchable:
            for label in (c.pref_label, *c.alt_labels):
                owners[(c.type, label_key(label))].add(c.iri)
    assert {k: v for k, v in owners.items() if len(v) > 1} == {}


def test_hierarchy_rolls_int4_quantization_up_to_model_compression():
    vocab = load_vocabulary()
    int4 = vocab.by_label("Technique", "INT4 quantization")
    labels = [vocab.concepts[a].pref_label for a in vocab.ancestors(int4)]
    assert labels[:1] == ["quantization"] and "model compression" in labels


def test_adding_a_term_is_a_ttl_edit(tmp_path):
    (tmp_path / "t.ttl").write_text("""
@prefix kg: <https://w3id.org/mlkg/ontology#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
<https://w3id.org/mlkg/concept/technique/> a skos:ConceptScheme ; kg:entityType kg:Technique .
<https://w3id.org/mlkg/concept/technique/zorbing> a skos:Concept ;
    skos:inScheme <https://w3id.org/mlkg/concept/technique/> ;
    skos:prefLabel "zorbing"@en ; skos:altLabel "ZRB"@en .
""")
    ex = Extractor(vocab=parse_vocabulary([tmp_path / "t.ttl"]))
    found = ex.extract_one(Paper("p", "We apply ZRB, i.e. zorbing, to models."))
    assert {(c.span.text, c.type) for c in found.candidates} == {("ZRB", "Technique"),
                                                                 ("zorbing", "Technique")}


def test_an_edited_vocabulary_is_read_again_and_the_extractor_built_again(tmp_path,
                                                                         monkeypatch):
    # A long-lived process (a notebook) that edits a TTL file builds with the new vocabulary,
    # as the pipeline version (a hash of the files) already says it does.
    from kg import pipeline, vocab

    scheme = ("@prefix kg: <https://w3id.org/mlkg/ontology#> .\n"
              "@prefix skos: <http://www.w3.org/2004/02/skos/core#> .\n"
              "<https://w3id.org/mlkg/concept/technique/> a skos:ConceptScheme ; "
              "kg:entityType kg:Technique .\n")
    term = ("<https://w3id.org/mlkg/concept/technique/{0}> a skos:Concept ; skos:inScheme "
            "<https://w3id.org/mlkg/concept/technique/> ; skos:prefLabel \"{0}\"@en .\n")
    folder = tmp_path / "vocab"
    folder.mkdir()
    (folder / "t.ttl").write_text(scheme + term.format("zorbing"))
    monkeypatch.setattr(vocab, "ontology_dir", lambda: tmp_path)
    monkeypatch.setattr(pipeline, "_EXTRACTORS", {})
    first = pipeline.extractor()
    assert load_vocabulary() is first.vocab and pipeline.extractor() is first
    (folder / "t.ttl").write_text(scheme + term.format("zorbing") + term.format("blarging"))
    assert len(load_vocabulary().concepts) == 2
    found = pipeline.extractor().extract_one(Paper("p", "We apply zorbing and blarging."))
    assert {c.span.text for c in found.candidates} == {"zorbing", "blarging"}


def test_a_broken_vocabulary_file_is_reported_with_its_name(tmp_path):
    bad = tmp_path / "bad.ttl"
    bad.write_text("this is not turtle")
    with pytest.raises(VocabularyError, match=r"bad\.ttl: not valid Turtle"):
        parse_vocabulary([bad])


@pytest.mark.parametrize(("label", "type_"), [
    # named models and named families are Models ...
    ("LLaMA", "Model"), ("GPT-4", "Model"), ("ResNet-18", "Model"), ("BERT", "Model"),
    ("CLIP", "Model"), ("Transformer", "Model"), ("Stable Diffusion", "Model"),
    # ... generic classes of models are Techniques: they are what papers share ...
    ("large language model", "Technique"), ("language model", "Technique"),
    ("vision-language model", "Technique"), ("vision-language-action model", "Technique"),
    ("graph neural network", "Technique"), ("diffusion model", "Technique"),
    ("world model", "Technique"), ("convolutional neural network", "Technique"),
    ("recurrent neural network", "Technique"), ("generative adversarial network", "Technique"),
    ("autoencoder", "Technique"),
    # ... and so are algorithm families; a named algorithm is a Method.
    ("stochastic gradient descent", "Technique"), ("k-means", "Technique"),
    ("classifier-free guidance", "Technique"), ("Adam", "Method"), ("PPO", "Method"),
    ("DPO", "Method"), ("GPTQ", "Method"),
])
def test_the_vocabulary_applies_the_type_convention(label, type_):
    index = load_vocabulary().label_index
    assert {found.type for found in index.lookup(label)} == {type_}


def test_the_vocabulary_module_does_not_import_the_extractor():
    # kg.vocab sits below kg.extract: the label index it builds lives in kg.labels.
    import subprocess
    import sys

    code = ("import sys, kg.vocab; kg.vocab.load_vocabulary().label_index; "
            "print(sorted(m for m in sys.modules if m.startswith(('kg.extract', 'spacy'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_closure_is_the_concepts_plus_all_their_ancestors():
    from kg.model import Concept
    from kg.vocab import Vocabulary

    def concept(slug: str, *broader: str) -> Concept:
        return Concept(f"c/{slug}", "Technique", slug, broader=tuple(f"c/{b}" for b in broader))

    vocab = Vocabulary({c.iri: c for c in (concept("a"), concept("b", "a"), concept("c", "b"),
                                           concept("d", "c", "a"), concept("e"))})
    assert vocab.closure(["c/d"]) == {"c/d", "c/c", "c/b", "c/a"}
    assert vocab.closure(["c/b", "c/e", "c/unknown"]) == {"c/a", "c/b", "c/e", "c/unknown"}
    assert vocab.closure([]) == set()
