"""Extraction and resolution on real abstracts (the demo corpus) and small real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from click.testing import CliRunner
from conftest import DATA, ROOT, SEED, names_of, paper_with

from kg.cli import cli
from kg.extract import Extractor
from kg.model import ENTITY_TYPES, PREDICATES, Paper
from kg.pipeline import run
from kg.resolve import resolve
from kg.vocab import CONCEPT_NS


def _typed(texts: list[str], rule: str | None = None) -> list[set[tuple[str, str]]]:
    """Per text, the (mention, type) of what kg extracts from it (by ``rule`` only if given)."""
    ex = Extractor()
    return [{(c.span.text, c.type) for c in ex.extract_one(Paper("p", t)).candidates
             if rule is None or c.rule == rule} for t in texts]


def test_the_extractor_is_a_spacy_pipeline_of_kgs_components():
    from kg.extract import pipeline

    nlp = pipeline()
    assert nlp.lang == "en" and nlp.pipe_names[0] == "kg_vocabulary"
    assert nlp.pipe_names[-2:] == ["kg_select", "kg_links"]
    doc = nlp("We quantize LLaMA-2-7B with GPTQ on A100 GPUs.")
    spans = [(s.text, s.label_, s._.kg_source) for s in doc.spans["kg"]]
    assert spans == [("quantize", "Technique", "vocabulary"),
                     ("LLaMA-2-7B", "Model", "vocabulary-version"),
                     ("GPTQ", "Method", "vocabulary"), ("A100 GPUs", "Hardware", "vocabulary")]
    assert doc.spans["kg"][1].kb_id_.endswith("/model/llama-2")
    assert [(link.predicate, doc.spans["kg"][link.object].text) for link in doc._.kg_links] == [
        ("usesTechnique", "quantize"), ("usesModel", "LLaMA-2-7B"), ("usesTechnique", "GPTQ"),
        ("runsOn", "A100 GPUs")]


def test_kgs_components_join_a_users_own_pipeline():
    import spacy

    import kg.extract.components  # noqa: F401 (registers the components)

    nlp = spacy.blank("en")
    for name in ("kg_vocabulary", "kg_acronyms", "kg_proposals", "kg_select", "kg_links"):
        nlp.add_pipe(name)
    doc = nlp("We propose Rotated Runtime Smooth (RRS), which uses quantization.")
    assert {(s.text, s.label_) for s in doc.spans["kg"]} >= {
        ("Rotated Runtime Smooth", "Method"), ("RRS", "Method"), ("quantization", "Technique")}


def test_acronym_and_long_form_become_one_entity(seed_corpus):
    rrs = paper_with(seed_corpus, "Rotated Runtime Smooth")
    entity = seed_corpus.entities["method/rotated-runtime-smooth"]
    assert entity.type == "Method"
    assert "RRS" in entity.aliases
    assert entity.id in rrs.entity_ids
    mentions = dict(rrs.mentions)[entity.id]
    assert {m.text for m in mentions} >= {"Rotated Runtime Smooth", "RRS"}


def test_seed_papers_yield_lipschitz_quantization_and_caching(seed_corpus):
    lotos = paper_with(seed_corpus, "we introduce LOTOS")
    rrs = paper_with(seed_corpus, "Rotated Runtime Smooth")
    faster = paper_with(seed_corpus, "FasterCache")
    assert "Lipschitz continuity" in names_of(seed_corpus, lotos, "Technique")
    assert "quantization" in names_of(seed_corpus, rrs, "Technique")
    assert {"caching", "feature caching"} & names_of(seed_corpus, faster, "Technique")


def test_papers_introducing_names_propose_them(seed_corpus):
    expected = {"we introduce LOTOS": "LOTOS", "Rotated Runtime Smooth": "Rotated Runtime Smooth",
                "FasterCache": "FasterCache", "We introduce model folding": "model folding",
                "we propose CAV2vec": "CAV2vec"}
    for needle, name in expected.items():
        result = paper_with(seed_corpus, needle)
        proposed = {seed_corpus.entities[r.object].name for r in result.relations
                    if r.predicate == "proposes"}
        assert name in proposed, (needle, proposed)


def test_untitled_papers_are_labelled_by_what_they_propose(seed_corpus):
    lotos = paper_with(seed_corpus, "we introduce LOTOS")
    assert lotos.paper.label.startswith("LOTOS: a new training paradigm")


def test_rrs_and_model_folding_both_link_to_llama(seed_corpus):
    llama = seed_corpus.entities["model/llama"]
    assert llama.concept.endswith("/concept/model/llama")
    assert "LLaMA-7B" in llama.aliases  # the versioned name joins its family
    for needle in ("Rotated Runtime Smooth", "We introduce model folding"):
        result = paper_with(seed_corpus, needle)
        assert llama.id in result.entity_ids
        assert any(r.predicate == "usesModel" and r.object == llama.id for r in result.relations)


def test_a_proposed_name_keeps_its_release_number_and_a_plain_word_name_counts():
    # "Mega-TTS 2" is not "Mega-TTS"; "Decor" has no inner capital, but "we propose Decor, a
    # variant of …" names it all the same. A count after a name ("2 datasets") is not a version.
    found = _typed(["This paper introduces Mega-TTS 2, a prompting mechanism. Mega-TTS 2 is fast.",
                    "In this paper, we propose Decor, a variant of decentralized SGD.",
                    "We release FooBench 2 datasets for speech."], "proposed-name")
    assert found[0] == {("Mega-TTS 2", "Method")}
    assert found[1] == {("Decor", "Method")}
    assert ("FooBench 2", "Method") not in found[2] and ("FooBench 2", "Dataset") not in found[2]


def test_a_proposed_name_takes_the_type_its_description_and_agreeing_uses_give():
    # Real ICLR/ICML 2024 sentences, shortened: hyphenated words ("score-based",
    # "decoder-only") are part of the description, not its end; "MAgg models relations" (a
    # verb) does not overrule "a method" when "the MAgg method" says otherwise.
    found = _typed(["We present AbX, a new score-based diffusion generative model guided by "
                    "evolutionary constraints for antibody design.",
                    "We introduce Transformer-VQ, a decoder-only transformer with dense attention.",
                    "We curate GRIT, a comprehensive refer-and-ground instruction tuning dataset "
                    "including 1.1M samples.",
                    "We introduce OpenVLA, a 7B-parameter open-source VLA trained on episodes.",
                    "We propose MAgg, a method to augment machine learning models. MAgg models "
                    "metamorphic relations. We evaluate the proposed MAgg method on three tasks."],
                   "proposed-name")
    assert found == [{("AbX", "Model")}, {("Transformer-VQ", "Model")}, {("GRIT", "Dataset")},
                     {("OpenVLA", "Model")}, {("MAgg", "Method")}]


def test_a_name_written_in_capitals_is_proposed_whole_after_any_proposing_cue():
    # Real ICLR 2024 sentences: "IN-CONTEXT PRETRAINING" was proposed as "PRETRAINING" (the
    # first word was taken by the vocabulary and "we instead present" was no cue).
    ex = Extractor()
    texts = ["We instead present IN-CONTEXT PRETRAINING, a new approach where language models "
             "are trained on a sequence of related documents.",
             "We propose STEP-BACK PROMPTING to enable LLMs to do abstractions.",
             "We hence propose WildFusion, a new approach to 3D-aware image synthesis.",
             "We propose SAM for LLMs."]
    found = [{c.span.text for c in ex.extract_one(Paper("p", t)).candidates
              if c.rule == "proposed-name"} for t in texts]
    assert found == [{"IN-CONTEXT PRETRAINING"}, {"STEP-BACK PROMPTING"}, {"WildFusion"},
                     {"SAM"}]


def test_a_title_case_title_names_its_task():
    ex = Extractor()
    paper = Paper("p", "We render faces from one image.",
                  title="Fast Talking Portrait Synthesis with Neural Fields")
    found = {(c.span.text, c.type) for c in ex.extract_one(paper).candidates}
    assert ("Talking Portrait Synthesis", "Task") in found


def test_a_task_phrase_may_say_how_it_is_supervised():
    # "-ed" words end a phrase ("a … model guided by"), but "unsupervised" names a kind of task;
    # a participle or a word of praise before the phrase is not part of it ("text-based audio
    # editing" in an ICLR 2024 title was lost whole; "exhibits superior recognition" was one).
    found = _typed(["This enables unsupervised part segmentation of objects in four editing "
                    "tasks.",
                    "A localization loss enables localized reflectance estimation.",
                    "The model exhibits superior recognition and impressive detection.",
                    "Results show why reasoning helps, including paragraph-to-video retrieval."],
                   "task-phrase")
    assert found == [{("unsupervised part segmentation", "Task")},
                     {("reflectance estimation", "Task")}, set(),
                     {("paragraph-to-video retrieval", "Task")}]


def test_unknown_names_a_dataset_context_types_are_datasets_even_when_coined_or_sized():
    # Without the dataset test before the size and CamelCase tests these came out Model
    # ("QM1B": a "1B" size) and Method (CamelCase).
    found = _typed(["Our data is 13 times larger than the quantum-only QM1B dataset.",
                    "We present seven datasets grouped by size: ToyMix, LargeMix and UltraLarge.",
                    "We search on NAS-Bench-201 and TransNAS-Bench-101.",
                    "We validate on real datasets with sketches including CountSketch.",
                    "We evaluate it on two benchmark datasets, HM-EQA and OpenEQA, in simulation. "
                    "Across a wide range of benchmarks, GPSE-enhanced models win."])
    assert ("QM1B", "Dataset") in found[0]
    assert {("ToyMix", "Dataset"), ("LargeMix", "Dataset"), ("UltraLarge", "Dataset")} <= found[1]
    assert ("TransNAS-Bench-101", "Dataset") in found[2]
    assert {("HM-EQA", "Dataset"), ("OpenEQA", "Dataset")} <= found[4]
    assert not any(name == "GPSE-enhanced" and type_ == "Dataset" for name, type_ in found[4])
    assert ("CountSketch", "Dataset") not in found[3]


def test_names_listed_after_methods_or_models_are_methods_or_models():
    # ICLR/ICML 2024 sentences: listed names no vocabulary knows were not found at all; a
    # listed company or plural class is none ("OpenAI", "DNNs").
    found = _typed(["We improve variance-reduced methods (e.g., SVRG and SAGA) on sums.",
                    "It outperforms smaller models and pruning strategies, such as MAG, SNIP and "
                    "GRASP, across the range.",
                    "State space models like S4D, LRU, and Mamba are fast.",
                    "Open-source models of equal size, such as Pythia, INCITE, OpenLLaMA and the "
                    "TinyLlama models, lag behind.",
                    "Deep models, such as DNNs and OpenAI systems, fail."])
    assert {("SVRG", "Method"), ("SAGA", "Method")} <= found[0]
    assert {("MAG", "Method"), ("SNIP", "Method"), ("GRASP", "Method")} <= found[1]
    assert {("S4D", "Model"), ("LRU", "Model")} <= found[2]
    assert {("INCITE", "Model"), ("OpenLLaMA", "Model")} <= found[3]
    assert not {name for name, _ in found[4]} & {"DNNs", "OpenAI"}


def test_a_coined_name_something_is_evaluated_on_is_a_dataset():
    # SciREX and ICLR/CoRL 2024 sentences: these came out Method (CamelCase, no digit). A
    # plural acronym evaluated on ("accuracy on AEs") is not a dataset.
    found = _typed(["Experiments on BlogCatalog, Flickr and YouTube show that it beats DeepWalk.",
                    "We evaluate on CityPersons and Caltech.",
                    "Our empirical evaluation on the X-MAGICAL benchmark shows robust transfer.",
                    "Our agent is tested on MiniWoB, and it is evaluated on LLMs."])
    assert ("BlogCatalog", "Dataset") in found[0]
    assert ("CityPersons", "Dataset") in found[1]
    assert ("X-MAGICAL", "Dataset") in found[2]
    assert ("MiniWoB", "Dataset") in found[3]
    assert not {t for n, t in found[3] if n == "LLMs" and t == "Dataset"}


def test_nothing_is_found_inside_a_link():
    ex = Extractor()
    text = ("We study credit assignment. Code: [https://github.com/NJU-RL/ACORM]"
            "(https://github.com/NJU-RL/ACORM) and www.example.org/LLM-GAN.")
    assert {c.span.text for c in ex.extract_one(Paper("p", text)).candidates} == set()


def test_versioned_model_names_keep_their_version_and_family():
    # Without the versioned-name rule these resolve to the bare families (LLaMA, Mistral):
    # nothing else in the sentences marks them as names.
    ex = Extractor()
    text = "Results on LLaMA-2-13B are reported. The scores of Mistral-7B-v0.3 were lower."
    corpus = resolve([ex.extract_one(Paper("a", text))], vocab=ex.vocab)
    (result,) = corpus.results
    found = {spans[0].text: corpus.entities[eid] for eid, spans in result.mentions}
    assert set(found) == {"LLaMA-2-13B", "Mistral-7B-v0.3"}
    for surface, family in (("LLaMA-2-13B", "llama"), ("Mistral-7B-v0.3", "mistral")):
        entity = found[surface]
        assert entity.type == "Model" and surface in (entity.name, *entity.aliases)
        assert f"{CONCEPT_NS}model/{family}" in ex.vocab.ancestors(entity.concept)


def test_spelling_variants_merge_across_papers():
    corpus = run([DATA / "inputs" / "papers.json"])
    resnets = [e for e in corpus.entities.values() if "resnet" in e.id]
    assert len(resnets) == 1
    assert {"ResNet-18", "ResNet18"} <= {resnets[0].name, *resnets[0].aliases}
    assert all(resnets[0].id in r.entity_ids for r in corpus.results)


def test_plural_and_singular_are_one_entity():
    ex = Extractor()
    papers = [Paper("a", "We run on GPUs."), Paper("b", "We run on a single GPU.")]
    corpus = resolve([ex.extract_one(p) for p in papers], vocab=ex.vocab)
    gpu = [e for e in corpus.entities.values() if e.type == "Hardware"]
    assert len(gpu) == 1 and {"GPUs", "GPU"} <= {gpu[0].name, *gpu[0].aliases}


def test_entity_ids_are_stable_across_corpora(seed_corpus):
    both = run([SEED, DATA / "inputs" / "papers.jsonl"])
    shared = set(seed_corpus.entities) & set(both.entities)
    assert "method/rotated-runtime-smooth" in shared
    for eid in shared:
        assert both.entities[eid].type == seed_corpus.entities[eid].type


def test_offsets_index_title_newline_abstract():
    corpus = run([DATA / "inputs" / "papers.jsonl"])
    for result in corpus.results:
        text = result.paper.text
        assert text.startswith(result.paper.title + "\n")
        for _, spans in result.mentions:
            for s in spans:
                assert text[s.start:s.end] == s.text
        for r in result.relations:
            assert text[r.evidence.start:r.evidence.end] == r.evidence.text


def test_every_relation_has_evidence_rule_and_confidence(seed_corpus):
    for result in seed_corpus.results:
        mentioned = set(result.entity_ids)
        assert {r.object for r in result.relations if r.predicate == "mentions"} == mentioned
        for r in result.relations:
            assert r.predicate in PREDICATES
            assert r.rule and 0 < r.confidence <= 1
            assert r.evidence.text and r.evidence.end > r.evidence.start
    assert {e.type for e in seed_corpus.entities.values()} <= set(ENTITY_TYPES)


def test_mention_evidence_is_the_whole_sentence_holding_the_first_mention(seed_corpus):
    for result in seed_corpus.results:
        first = {eid: spans[0] for eid, spans in result.mentions}
        for r in result.relations:
            if r.predicate == "mentions":
                m = first[r.object]
                assert r.evidence.start <= m.start < r.evidence.end
                before = result.paper.text[:r.evidence.start].rstrip()
                assert before == "" or before[-1] in ".!?\n", r.evidence.text[:30]


def test_hardware_is_found_with_its_relation():
    corpus = run([DATA / "inputs" / "papers.jsonl"])
    p1 = corpus.results[0]
    hardware = [r for r in p1.relations if r.predicate == "runsOn"]
    assert hardware and "A100" in corpus.entities[hardware[0].object].name + \
        " ".join(corpus.entities[hardware[0].object].aliases)


def test_extract_jsonl_output_is_byte_identical_across_runs(tmp_path):
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"run{seed}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-m", "kg", "extract", str(SEED), "--format", "jsonl",
                        "-o", str(out)], check=True, env=env, cwd=ROOT)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    first = json.loads(outputs[0].splitlines()[0])
    assert set(first) == {"paper", "entities", "relations"}
    assert set(first["entities"][0]) == {"id", "type", "name", "aliases", "concept", "mentions"}


def test_cli_reports_skips_and_goes_on():
    result = CliRunner().invoke(cli, ["extract", str(DATA / "inputs" / "bad.jsonl"),
                                      "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 2
    assert "skipped 3 record(s)" in result.stderr
    assert "bad.jsonl:4: malformed JSON" in result.stderr


def test_strict_turns_skips_into_a_failure():
    result = CliRunner().invoke(cli, ["extract", str(DATA / "inputs" / "bad.jsonl"), "--strict"])
    assert result.exit_code == 3
    assert "3 record(s) skipped (--strict)" in result.stderr
    assert "Traceback" not in result.output


def test_no_usable_input_is_a_clear_error():
    result = CliRunner().invoke(cli, ["extract", str(DATA / "inputs" / "missing.jsonl")])
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_help_does_not_import_heavy_libraries():
    code = "import sys; from kg.cli import cli; print(sorted(m for m in ('spacy', 'rdflib', " \
           "'neo4j', 'pyvis', 'networkx') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


MARKUP = Paper(id="markup", title=r"\textbf{FasterCache}: $k$-means for **LLaMA-2-7B**",
               abstract=r"We cluster with $k$-means and quantize \emph{LLaMA-2-7B} to INT4 "
                        r"on A100 GPUs, unlike $\ell_2$-regularized \textsc{ResNet-18}.")


def test_two_workers_give_exactly_the_single_process_result():
    from kg.ingest import read_inputs
    from kg.pipeline import extract_all

    papers = [*read_inputs([SEED]).papers, MARKUP] * 6  # > 2 chunks, so the pool really runs
    single = extract_all(papers, workers=1)
    assert extract_all(papers, workers=2) == single
    # Mentions are cut from the paper's own text, markup and all, never from the cleaned copy.
    spans = [c.span for e in single for c in e.candidates]
    assert any("$k$-means" in s.text or "LLaMA-2-7B" in s.text for s in spans)
    for e in single:
        for c in e.candidates:
            assert c.span.text == e.paper.text[c.span.start:c.span.end]


def test_build_exports_do_not_depend_on_the_worker_count(tmp_path):
    src = tmp_path / "papers.jsonl"
    rows = [{"id": f"m{i}", "title": MARKUP.title, "abstract": MARKUP.abstract}
            for i in range(110)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    outs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        result = CliRunner().invoke(cli, ["build", str(src), "-o", str(out), "--workers",
                                          str(workers)])
        assert result.exit_code == 0, result.output
        # The exports and the manifest; the store's and caches' files are the database's own.
        outs.append({p.relative_to(out).as_posix(): p.read_bytes()
                     for p in sorted(out.rglob("*")) if p.is_file() and (
                         ".kg" not in p.parts or p.name == "manifest.json")})
    assert outs[0].keys() == outs[1].keys()
    differ = [name for name in outs[0] if outs[0][name] != outs[1][name]]
    assert differ == []


def test_the_span_model_when_missing_fails_with_a_clear_message(monkeypatch, tmp_path):
    from kg import pipeline
    from kg.extract import extractor, span_model

    monkeypatch.setattr(span_model, "MODELS", tmp_path)  # a package without its model
    monkeypatch.setattr(extractor, "_PIPELINES", type(extractor._PIPELINES)())
    monkeypatch.setattr(pipeline, "_EXTRACTORS", {})  # no kg-span extractor of earlier tests
    result = CliRunner().invoke(cli, ["extract", str(SEED), "--model", "kg-span"])
    assert result.exit_code == 1, result.output
    assert "no span model 'kg-span'" in result.stderr
    assert "scripts/train-span-model" in result.stderr
    assert "Traceback" not in result.output


def test_model_candidates_join_before_selection_and_the_vocabulary_types_known_names(
        monkeypatch):
    import types

    from spacy.language import Language

    from kg.extract.components import add_candidates
    from kg.model import Candidate, Span

    def spans(doc):  # a stand-in model: "Zorblax" (unknown) and "GPTQ" (known: a Method)
        found = [Candidate(Span(w, doc.text.index(w), doc.text.index(w) + len(w)), "Dataset",
                           "model", None, 0.5) for w in ("Zorblax", "GPTQ")]
        add_candidates(doc, found)
        return doc

    from collections import OrderedDict

    from kg.extract import components, extractor

    name = "kg_span_extract_test"  # not "kg_span": the real model's name
    if not Language.has_factory(name):
        Language.component(name, func=spans)
    monkeypatch.setitem(sys.modules, "kg.extract.span_model", types.ModuleType("span_model"))
    monkeypatch.setitem(components.MODELS, "kg-span", (name,))
    monkeypatch.setattr(extractor, "_PIPELINES", OrderedDict())  # the stand-in's stay out
    text = "Results on Zorblax improve with GPTQ."
    rules = {(c.span.text, c.type, c.rule) for c in _found_with(text, "none")}
    both = {(c.span.text, c.type, c.rule) for c in _found_with(text, "kg-span")}
    assert both - rules == {("Zorblax", "Dataset", "model")}
    assert ("GPTQ", "Method", "vocabulary") in rules & both


def _found_with(text: str, model: str):
    return Extractor(model=model).extract_one(Paper(id="p", abstract=text)).candidates


def test_each_extractor_matches_only_its_own_vocabulary():
    # The vocabulary component used to be registered under f"kg_vocabulary_{id(extractor)}":
    # when a new Extractor reused a dead one's id, it matched with the dead one's labels.
    import gc

    from kg.model import Concept
    from kg.vocab import Vocabulary

    def vocab(word: str) -> Vocabulary:
        iri = f"https://w3id.org/mlkg/concept/technique/{word}"
        return Vocabulary({iri: Concept(iri, "Technique", word)})

    paper = Paper(id="p", abstract="We combine zorbling with quuxing.")
    for round_ in range(40):
        word = ("zorbling", "quuxing")[round_ % 2]
        found = {c.span.text for c in Extractor(vocab(word)).extract_one(paper).candidates
                 if c.rule == "vocabulary"}
        assert found == {word}, f"round {round_}: matched {found}"
        gc.collect()


def _found(text: str, title: str | None = None) -> set[tuple[str, str]]:
    return {(c.span.text, c.type) for c in
            Extractor().extract_one(Paper(id="p", abstract=text, title=title)).candidates}


def test_coordinated_and_suffixed_names_are_split_and_kept_whole():
    from kg.pipeline import extract_all

    found = _found("We evaluate on CIFAR10/100 and fine-tune SDXL-Turbo and GPT-4o mini.")
    assert {("CIFAR10", "Dataset"), ("SDXL-Turbo", "Model"), ("GPT-4o mini", "Model")} <= found
    corpus = resolve(extract_all([Paper(id="p", abstract="Results on CIFAR-10/100.")]))
    assert {"dataset/cifar-10", "dataset/cifar-100"} <= set(corpus.entities)
    assert all(not alias.isdigit() for e in corpus.entities.values() for alias in e.aliases)


def test_an_acronym_whose_letters_are_set_in_bold_is_defined_and_named():
    # Real ICML/ICLR 2024 sentences, shortened: abstracts that bold an acronym's letters
    # ("**P**reference", "$\\textbf{T}$est") split each word in two once markup is blanked,
    # so "(PAIL)" found no long form; a proposed long form whose capitals are the acronym's
    # names a method even with lower-case words in it. The long form itself, whose text holds
    # the markup, is not a candidate; "(Nemesis)" is a word, not the plural of "Nemesi".
    found = _typed(["In this paper, we propose a novel imitation learning algorithm, **P**reference"
                    " **A**ided **I**mitation **L**earning from imperfect demonstrations (PAIL).",
                    "We propose a novel framework of **A**ttention-guided **CO**ntrastive **R**ole "
                    "representation learning for **M**ARL (**ACORM**).",
                    "We propose $\\textbf{Un-Mix}$ing $\\textbf{T}$est-Time "
                    "$\\textbf{N}$ormalization $\\textbf{S}$tatistics (UnMix-TNS), a method.",
                    "We propose differentially private bias-term fine-tuning (DP-BiTFiT).",
                    "Our R2SGrasp designs the Real-to-Sim Data Repairer (R2SRepairer) for noise."],
                   "acronym-definition")
    assert found[0] == {("PAIL", "Method")}
    assert found[1] == {("ACORM", "Method")}
    assert found[2] == {("UnMix-TNS", "Method")}
    assert ("DP-BiTFiT", "Method") in found[3]  # lower case, but named by "we propose"
    assert not any("designs" in name for name, _ in found[4])
    used = _typed(["We fine-tune with differentially private bias-term fine-tuning "
                   "(DP-BiTFiT)."], "acronym-definition")[0]
    assert ("DP-BiTFiT", "Technique") in used
    from kg.pipeline import extract_all

    result = resolve(extract_all([Paper("p", "We propose differentially private bias-term "
                                            "fine-tuning (DP-BiTFiT). DP-BiTFiT is fast.")]))
    assert ("proposes", "method/differentially-private-bias-term-fine-tuning") in {
        (r.predicate, r.object) for r in result.results[0].relations}
    # A digit between letters stands for a word ("Recall to Imagine (R2I)"); a version number
    # does not ("ResNet-56" is no acronym of "results obtained using neural networks").
    digits = _typed(["We propose Recall to Imagine (R2I), a method for memory tasks.",
                     "We report results obtained using neural networks (ResNet-56)."],
                    "acronym-definition")
    assert ("R2I", "Method") in digits[0] and not digits[1]
    # A lower-case long form no head word types is the paper's method when a cue names it.
    gs4co = _typed(["We propose a framework, namely, graph symbolic discovery for exact "
                    "combinatorial optimization solver (GS4CO), for branching."])[0]
    assert ("GS4CO", "Method") in gs4co
    nemesis = _typed(["We propose a new method named Normalizing the soft-prompt vectors of "
                      "vision-language models (Nemesis)."], "acronym-definition")[0]
    assert "Nemesis" in {name for name, _ in nemesis}


def test_a_one_word_name_after_a_naming_cue_or_a_bare_proposing_verb_is_proposed():
    # Real ICLR 2024 sentences: a capitalised word or hyphenated compound that ends its noun
    # phrase after "named"/"called", or that an appositive describes after "and propose" or
    # "by introducing", is the paper's name; an adjective made of a name ("GPT-generated") or
    # one of several listed ("namely Hiera and ViTDet") is not.
    found = _typed(["This paper introduces a novel approach named Intra-Fusion, challenging "
                    "this prevailing pruning paradigm.",
                    "We propose an enhancement to a state-of-the-art SAT solver called Kissat.",
                    "We address this need by introducing Salvage, a novel removal-based "
                    "explainability method for image classification.",
                    "We study low-rank models and propose Maestro, a framework for trainable "
                    "low-rank layers.",
                    "We introduce Mol-Instructions, a comprehensive instruction dataset.",
                    "We verify our approach on nine Atari tasks and present GPT-generated "
                    "explanations for policies.",
                    "We study two state-of-the-art methods, namely Hiera and ViTDet, and find "
                    "flaws.",
                    "We propose a novel message-passing function called Multiset to Multiset GNN.",
                    "We propose a method termed Stacked Deep Sets and Quantile Pooling."],
                   "proposed-name")
    assert found[:5] == [{("Intra-Fusion", "Method")}, {("Kissat", "Method")},
                         {("Salvage", "Method")}, {("Maestro", "Method")},
                         {("Mol-Instructions", "Dataset")}]
    assert not any(name in ("GPT-generated", "Hiera", "Multiset")
                   for name, _ in found[5] | found[6] | found[7])
    # Title Case names joined by a function word are one name; one ending in GNN a model.
    assert found[7:] == [{("Multiset to Multiset GNN", "Model")},
                         {("Stacked Deep Sets and Quantile Pooling", "Method")}]
    fedgf = _typed(["We propose a method called Federated Learning for Global Flatness (FedGF)."])
    assert ("Federated Learning for Global Flatness", "Method") in fedgf[0]


def test_a_papers_own_acronym_and_naming_words_decide_what_its_names_are():
    # CoRL 2024 sentences: "IS" defined as importance sampling was the Inception Score where
    # the paper used it again; "PAWS-Data: an extensive dataset" (a colon) was a Method; the
    # long form after "namely" was the paper's method but not proposed.
    found = _typed(["We compare with importance sampling (IS) baselines. BAMS beats IS.",
                    "We also contribute PAWS-Data: an extensive dataset gathered with PAWS."])
    assert ("IS", "Metric") not in found[0] and ("IS", "Technique") in found[0]
    assert ("PAWS-Data", "Dataset") in found[1]
    from kg.pipeline import extract_all

    result = resolve(extract_all([
        Paper("p", "We propose a novel control approach, namely Control with Patterns (CWP), "
                   "for stability."),
        Paper("q", "We propose a novel FL technique with synthetic anchors, dubbed as DeSA."),
        Paper("r", "A recent seminal work (InvLINT) shows a linear mapping. We propose more.")]))
    p, q, r = ({(x.predicate, x.object) for x in res.relations} for res in result.results)
    assert ("proposes", "method/control-with-patterns") in p
    assert ("proposes", "method/desa") in q
    assert r & {("usesTechnique", "method/invlint"), ("mentions", "method/invlint")} == {
        ("mentions", "method/invlint")}


def test_a_hyphenated_name_made_with_known_names_is_one_new_name():
    # Real ICLR/ICML 2024 names: "UCB-VI" was two vocabulary matches (UCB, and VI as
    # variational inference), "U-MAE" a metric (MAE), "M2M-GNN" the technique GNN. A name
    # ending in a kind of network is a model, one with a dataset in it a dataset; adjectives
    # ("GNN-based"), plurals of a class ("MM-LLMs") and metric pairs ("TPR-FPR") stay apart.
    found = _typed(["Transformers approximate UCB-VI for tabular Markov decision processes.",
                    "We propose U-MAE, and M2M-GNN for heterophilic graphs.",
                    "We evaluate on SNLI-VE and COCO-Stuff.",
                    "We compare GNN-based methods with MM-LLMs on the TPR-FPR trade-off."])
    assert {("UCB-VI", "Method")} <= found[0] and ("VI", "Technique") not in found[0]
    assert {("U-MAE", "Method"), ("M2M-GNN", "Model")} <= found[1]
    assert {("SNLI-VE", "Dataset"), ("COCO-Stuff", "Dataset")} <= found[2]
    assert not {name for name, _ in found[3]} & {"GNN-based", "MM-LLMs", "TPR-FPR"}
    # A CamelCase name made with a dataset's name is a dataset, not a coined method.
    assert _typed(["Labels in ImageNet-PI are noisy."]) == [{("ImageNet-PI", "Dataset")}]


def test_acronym_long_forms_with_technique_heads_are_techniques_unless_proposed():
    assert ("Empirical Risk Minimization", "Technique") in _found(
        "Models trained with Empirical Risk Minimization (ERM) fail under shift.")
    assert ("Contrastive Preference Learning", "Method") in _found(
        "We propose Contrastive Preference Learning (CPL), a new algorithm.")


def test_terms_the_vocabulary_lacks_are_kept_in_strong_contexts_only():
    ex = Extractor().extract_one(Paper(id="p", title="Hierarchical Policy Learning for Robots",
                                       abstract="We study keyframe interpolation control."))
    assert ("Hierarchical Policy Learning", "Technique") in {
        (c.span.text, c.type) for c in ex.candidates}
    # What a title says the work is for is its problem (ICML 2024 titles).
    titled = Extractor().extract_one(Paper(id="q", title="Towards Foundational Models for "
                                           "Molecular Learning", abstract="We train on graphs."))
    assert ("Molecular Learning", "Task") in {(c.span.text, c.type) for c in titled.candidates}
    assert [c.span.text for c in ex.pending] == ["keyframe interpolation control"]


def test_a_pending_term_is_kept_when_another_paper_of_the_run_uses_it():
    from kg.pipeline import extract_all

    papers = [Paper(id="a", abstract="We study keyframe interpolation control for arms."),
              Paper(id="b", abstract="Robots benefit from keyframe interpolation control."),
              Paper(id="c", abstract="Legged robots need torque interpolation control.")]
    corpus = resolve(extract_all(papers))
    term = "technique/keyframe-interpolation-control"
    assert [term in r.entity_ids for r in corpus.results] == [True, True, False]
    assert ("a", "usesTechnique", term) in {(r.subject, r.predicate, r.object)
                                            for r in corpus.results[0].relations}
    # Alone, a paper keeps no pending term: the run has no second paper using it.
    alone = resolve(extract_all(papers[:1]))
    assert term not in alone.results[0].entity_ids


def test_negated_contrasted_and_prior_work_techniques_are_mentions_not_uses():
    from kg.pipeline import extract_all

    text = ("Existing methods rely on quantization, which hurts accuracy. Our approach requires "
            "neither caching past activations nor pruning. It is faster than knowledge "
            "distillation and uses low-rank adaptation.")
    result = resolve(extract_all([Paper(id="p", abstract=text)])).results[0]
    uses = {r.object for r in result.relations if r.predicate != "mentions"}
    mentioned = {r.object for r in result.relations if r.predicate == "mentions"}
    for only_mentioned in ("technique/quantization", "technique/caching", "technique/pruning",
                           "technique/knowledge-distillation"):
        assert only_mentioned in mentioned and only_mentioned not in uses, only_mentioned
    assert "method/lora" in uses


def test_not_necessarily_and_a_negating_title_make_mentions_not_uses():
    from kg.pipeline import extract_all

    papers = [Paper(id="a", abstract="Our generalization bound holds for any bounded (not "
                    "necessarily Lipschitz continuous) loss and uses quantization."),
              Paper(id="b", title="No Cache, No Problem: Streaming Attention for Long Inputs",
                    abstract="We study streaming attention for long inputs.")]
    results = {r.paper.id: r for r in resolve(extract_all(papers)).results}
    for pid, negated in (("a", "technique/lipschitz-continuity"), ("b", "technique/caching")):
        preds = {r.predicate for r in results[pid].relations if r.object == negated}
        assert preds == {"mentions"}, (pid, preds)
    assert "usesTechnique" in {r.predicate for r in results["a"].relations
                               if r.object == "technique/quantization"}
    # Not a negation: the idiom "No X Left Behind", and tasks a title names.
    kept = [Paper(id="c", title="No Quantization Left Behind: Accurate 2-bit LLMs",
                  abstract="We study low-bit language models."),
            Paper(id="d", title="No Machine Translation Without Alignment",
                  abstract="We study word alignment.")]
    kept = {r.paper.id: r for r in resolve(extract_all(kept)).results}
    assert "usesTechnique" in {r.predicate for r in kept["c"].relations
                               if r.object == "technique/quantization"}
    assert "addresses" in {r.predicate for r in kept["d"].relations
                           if r.object == "task/machine-translation"}


def test_inverse_order_acronyms_and_unknown_metrics_next_to_numbers():
    found = _found("We build on FOO (Fast Optimal Operator) and reach 71.3 EM on SQuAD, "
                   "using 12 GB of memory; the bound is $O(S^3 AB)$.")
    assert {("FOO", "Method"), ("Fast Optimal Operator", "Method"), ("EM", "Metric")} <= found
    assert not {text for text, _ in found} & {"GB", "AB"}


def test_background_sentences_about_the_field_make_mentions_not_uses():
    from kg.pipeline import extract_all

    text = ("Large language models have shown strong reasoning abilities. Reinforcement "
            "learning has been applied to many control problems. Recent advances in diffusion "
            "models, however, are slow. We propose FooNet, which uses diffusion models and "
            "knowledge distillation.")
    result = resolve(extract_all([Paper(id="p", abstract=text)])).results[0]
    uses = {r.object for r in result.relations if r.predicate != "mentions"}
    mentioned = {r.object for r in result.relations if r.predicate == "mentions"}
    for background in ("technique/large-language-model", "technique/reinforcement-learning"):
        assert background in mentioned and background not in uses, background
    # Used in a sentence about this paper too: a use.
    assert {"technique/diffusion-model", "technique/knowledge-distillation"} <= uses


def test_candidate_types_are_plain_strings_on_real_abstracts(corpora_dir):
    # A str enum member in a type would still compare equal, but its repr (which a project's
    # entity digests read) differs: every stage hands plain strings on.
    from kg.evaluate import load_gold

    papers = [g.paper for g in load_gold(DATA / "dev-gold.jsonl", corpora_dir)]
    kinds = {type(c.type) for ex in Extractor().extract(papers) for c in ex.candidates}
    assert kinds == {str}


def _predicates(papers: list[Paper], concept: str) -> dict[str, set[str]]:
    """Paper id → the predicates linking it to technique ``concept`` (empty: not found)."""
    from kg.pipeline import extract_all

    results = resolve(extract_all(papers)).results
    return {r.paper.id: {x.predicate for x in r.relations if x.object == f"technique/{concept}"}
            for r in results}


def test_a_negated_reliance_or_a_rejected_assumption_is_a_mention_not_a_use():
    # Sentences from ICLR/ICML 2024 abstracts that counted as Lipschitz uses.
    lipschitz = [
        "We give the first convergence result for VIs with general constraints that does not "
        "rely on the assumption that the operator is $L$-Lipschitz.",
        "Despite the well-known fact that dot-product self-attention is not (globally) "
        "Lipschitz, we develop new theoretical analysis.",
        "To mitigate the lack of local Lipschitz continuity, popular approaches revolve around "
        "linesearch procedures.",
        "The oft-used strong-monotonicity and Lipschitz continuity assumptions on VI problems are "
        "restrictive and do not hold in many machine learning problems.",
    ]
    found = _predicates([Paper(id=str(i), abstract=t) for i, t in enumerate(lipschitz)],
                        "lipschitz-continuity")
    assert all(preds == {"mentions"} for preds in found.values()), found
    # The negation ends with its clause: what follows "and" is used.
    kept = _predicates([Paper(id="q", abstract="Our method does not require retraining and "
                              "uses quantization.")], "quantization")
    assert "usesTechnique" in kept["q"]
    kept = _predicates([Paper(id="p", abstract="Our one-shot method does not require model "
                              "retraining after pruning.")], "pruning")
    assert "usesTechnique" in kept["p"]


def test_what_a_field_often_relies_on_is_a_mention_not_a_use():
    # ICLR/ICML 2024 sentences that counted as uses: a generalisation about others ("often
    # rely on", "typically requires", "conventionally relies on"), its subject and its object.
    texts = {"a": "However, these methods often rely on supervised learning, which misses "
                  "locality.",
             "b": "Structural pruning conventionally relies on discarding neurons, which "
                  "necessitates subsequent fine-tuning.",
             "c": "Our method typically requires only one round of fine-tuning."}
    papers = [Paper(id=k, abstract=v) for k, v in texts.items()]
    assert _predicates(papers, "supervised-learning")["a"] == {"mentions"}
    tuned = _predicates(papers, "fine-tuning")
    assert tuned["b"] == {"mentions"} and "usesTechnique" in tuned["c"]


def test_a_field_named_with_its_acronym_or_growing_is_background():
    # ICLR/ICML 2024 openings that counted as LLM uses in papers that did not use one.
    texts = {"a": "Recent large language models (LLMs) have witnessed significant advancement "
                  "in various tasks. We build a theorem dataset.",
             "b": "As LLMs become commonplace, machine-generated text may flood the internet. "
                  "We study text watermarks.",
             "c": "As we prompt LLMs more, we study their answers."}
    found = _predicates([Paper(id=k, abstract=v) for k, v in texts.items()],
                        "large-language-model")
    assert found["a"] == found["b"] == {"mentions"} and "usesTechnique" in found["c"]


def test_a_sentence_ends_at_a_period_with_no_space_after_it():
    # ICLR 2024 (Intra-Fusion), as written: 310 of its 2,260 abstracts lose the space after a
    # period somewhere. The run-on "sentence" gave the pruning paper's fine-tuning use as
    # evidence a sentence that names it only to do without it; a hyphenated adjective
    # ("resource-intensive") between a negation and its technique kept the negation away.
    text = ("Pruning conventionally needs no extra data. This paper introduces a novel approach "
            "named Intra-Fusion, challenging this prevailing pruning paradigm.Notably, our "
            "approach achieves substantial accuracy recovery without the need for "
            "resource-intensive fine-tuning, making it efficient.")
    found = _predicates([Paper(id="p", abstract=text),
                         Paper(id="q", abstract="Models solve unseen tasks from prompts without "
                                                "further parameters fine-tuning.")],
                        "fine-tuning")
    assert found["p"] == found["q"] == {"mentions"}
    ex = Extractor().extract_one(Paper(id="p", abstract=text))
    assert len(ex.sentences) == 3


def test_hedged_and_attributed_prior_work_is_a_mention_not_a_use():
    texts = {
        "quantization": [
            "This hypothesis was only partially verified for NNs of tiny sizes or specific "
            "types, such as quantized NNs.",
            "The straight-through estimator (STE) is commonly used to optimize quantized neural "
            "networks, yet its contexts of effective performance are unclear.",
        ],
        "vector-quantization": [
            "These methods are modeled in the vector-quantized (VQ) space, whereas leading "
            "recognition methods use pixels as inputs.",
        ],
        "lipschitz-continuity": [
            "We build upon the work by Bolte et al. (2022), who prove linear convergence under a "
            "piecewise Lipschitz smooth assumption.",
            "We introduce a structural assumption that generalizes most of the settings proposed "
            "so far (e.g., linear MDPs and Lipschitz MDPs).",
            "Recently, a variety of minimax algorithms based on Lipschitz smoothness have been "
            "proposed.",
            "For a very long time, the stepsize has tacitly been set to one divided by the "
            "Lipschitz constant.",
        ],
    }
    for concept, sentences in texts.items():
        found = _predicates([Paper(id=str(i), abstract=t) for i, t in enumerate(sentences)],
                            concept)
        assert all(preds == {"mentions"} for preds in found.values()), (concept, found)


def test_an_ambiguous_alias_counts_only_in_its_own_sense():
    other_sense = {
        "caching": [
            Paper(id="l2", abstract="We accelerate training by reducing GPU L2 cache miss."),
            Paper(id="hbm", abstract="Each step moves the model from HBM to the accelerator's "
                  "cache."),
            Paper(id="io", abstract="FlashAttention requires $N^2/M$ I/O operations where $M$ "
                  "is the size of cache."),
        ],
        "feature-caching": [
            Paper(id="transfer", title="Feature Reuse and Scaling: Understanding Transfer "
                  "Learning with Protein Language Models",
                  abstract="We perform a systematic analysis of transfer learning."),
        ],
        "quantization": [
            Paper(id="quantum", title="Stochastic Quantum Sampling",
                  abstract="One challenge of quantizing the resulting Markov chains is balance."),
            Paper(id="coarse", abstract="It yields spatially coarsely quantized feature maps."),
        ],
        "binary-neural-network": [
            Paper(id="completion", abstract="We formulate a 1-bit tensor completion."),
        ],
        "vector-quantization": [
            Paper(id="vqd", abstract="Experiments on Stable Diffusion and VQ Diffusion with "
                  "different fine-tuning methods (i.e, LoRA, DreamBooth, and standard training) "
                  "demonstrate the effectiveness of our proposed method."),
        ],
    }
    for concept, papers in other_sense.items():
        found = _predicates(papers, concept)
        assert not any(found.values()), (concept, found)
    # In their own sense the same aliases are uses.
    own = _predicates([Paper(id="zo", abstract="We develop feature reuse and forward "
                             "parallelization to speed up zeroth-order training.")],
                      "feature-caching")
    assert "usesTechnique" in own["zo"]
    kv = _predicates([Paper(id="kv", abstract="We evict tokens from the cache to fit the "
                            "GPU memory.")], "caching")
    assert "usesTechnique" in kv["kv"]


def test_a_vector_quantization_paper_uses_quantization_whatever_else_it_says():
    from kg.analysis import shared
    from kg.pipeline import extract_all
    from kg.vocab import load_vocabulary

    vq = CONCEPT_NS + "technique/vector-quantization"
    assert CONCEPT_NS + "technique/quantization" in load_vocabulary().ancestors(vq)
    corpus = resolve(extract_all([
        Paper(id="a", abstract="We train an autoencoder with a vector-quantized codebook."),
        Paper(id="b", abstract="We use vector quantization and quantized latent codes.")]))
    assert [u.paper.id for u in shared(corpus, "quantization")] == ["a", "b"]
