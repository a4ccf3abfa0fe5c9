"""kg's extractor as a spaCy pipeline: the tokenizer, the vocabulary matcher and each rule family
as registered components, so a spaCy user can add them to a pipeline of their own.

``pipeline()`` returns ``spacy.blank("en")`` with kg's tokenizer (``kg.tokenizer.v1``) and the
components, in this order:

====================  =====================================================================
``kg_vocabulary``     every SKOS label, by spaCy's PhraseMatcher (must come first: it makes
                      the per-document state the others read and extend)
``kg_versions``       versioned and coordinated names on a known family (LLaMA-2-7B, CIFAR-10/100)
``kg_acronyms``       long form ↔ short form definitions
``kg_proposals``      names the paper introduces ("we propose X")
``kg_context_names``  unknown models, datasets, hardware, metrics typed by their context
``kg_tasks``          task-shaped noun phrases
``kg_terms``          multi-word terms the vocabulary lacks (strong ones now, the rest pending)
(a model)             where a trained component adds its candidates (``add_candidates``)
``kg_select``         canonical order, the best non-overlapping candidates → ``doc.spans["kg"]``
``kg_links``          the paper's relations → ``doc._.kg_links``
====================  =====================================================================

Each selected span has ``label_`` = its type, ``kb_id_`` = its concept IRI ("" for a name the
vocabulary does not know) and ``span._.kg_source`` (the rule), ``span._.kg_confidence``. The
text a Doc is made from should be ``clean_text(text)`` (markup blanked, same length), as the
Extractor does; ``doc._.kg_paper`` (optional) gives the rules the title and the paper's own text.

>>> nlp = pipeline()
>>> doc = nlp("We propose FooNet, a novel method. FooNet uses INT4 quantization on A100 GPUs.")
>>> [(s.text, s.label_) for s in doc.spans["kg"]][:3]
[('FooNet', 'Method'), ('FooNet', 'Method'), ('INT4 quantization', 'Technique')]
>>> doc.spans["kg"][2].kb_id_.rsplit("/", 2)[1:], doc.spans["kg"][2]._.kg_source
(['technique', 'int4-quantization'], 'vocabulary')
>>> [(link.predicate, doc.spans["kg"][link.object].text) for link in doc._.kg_links][:2]
[('proposes', 'FooNet'), ('usesTechnique', 'INT4 quantization')]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import spacy
from spacy.language import Language
from spacy.tokens import Doc, Span

from kg.data import is_model_path
from kg.errors import KgError
from kg.extract.acronyms import acronyms, inverse_acronyms
from kg.extract.document import Document
from kg.extract.links import links
from kg.extract.names import context_names, list_types
from kg.extract.nlp import register_tokenizer
from kg.extract.proposals import Proposals, proposals, retype_acronyms
from kg.extract.select import inside_new_names, propagate, select
from kg.extract.tasks import task_phrases
from kg.extract.terms import term_candidates
from kg.extract.text import clean_text
from kg.extract.vocabulary import (
    VocabularyMatcher,
    canonical,
    coordinated_names,
    in_context,
    versioned_names,
)
from kg.labels import LabelIndex
from kg.model import Candidate, Link, Paper
from kg.vocab import Vocabulary, load_vocabulary

RULES = ("kg_vocabulary", "kg_versions", "kg_acronyms", "kg_proposals", "kg_context_names",
         "kg_tasks", "kg_terms", "kg_select", "kg_links")
# The trained components each --model adds, just before kg_select. Importing
# kg.extract.span_model must register "kg_span" (@Language.factory), a component that predicts
# spans on the Doc (kg's tokens) and hands them to add_candidates(doc, [...]) with rule "model";
# until that module exists, --model kg-span stops with "the kg-span model is not installed".
MODELS: dict[str, tuple[str, ...]] = {"none": (), "kg-span": ("kg_span",)}


@dataclass
class State:
    """What the components of one Doc share, in ``doc._.kg``. Mutable on purpose: each
    component extends ``found`` in place, as the rule families did in one function."""

    document: Document
    index: LabelIndex
    found: list[Candidate]
    proposals: Proposals = field(default_factory=lambda: Proposals((), {}, frozenset(), None))
    terms: list[tuple[Candidate, bool]] = field(default_factory=list)
    chosen: list[Candidate] = field(default_factory=list)
    pending: list[Candidate] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)


def _state(doc: Doc) -> State:
    state = doc._.kg
    if state is None:
        raise ValueError("kg_vocabulary must run before the other kg components")
    return state


def add_candidates(doc: Doc, candidates: Iterable[Candidate]) -> None:
    """Where a trained component's candidates join the rules' (give them rule "model"): before
    canonical ordering and selection. Where the vocabulary knows a span's text, its type and
    concept win over the model's."""
    state = _state(doc)
    for cand in candidates:
        labels = state.index.lookup(cand.span.text)
        state.found.extend([replace(cand, type=label.type, concept=label.concept)
                            for label in labels] or [cand])


for _name, _default in (("kg", None), ("kg_paper", None)):
    if not Doc.has_extension(_name):
        Doc.set_extension(_name, default=_default)
for _name, _getter in (
    ("kg_links", lambda doc: _state(doc).links),
    ("kg_sentences", lambda doc: _state(doc).document.sentences),
    ("kg_pending", lambda doc: _state(doc).pending),
    ("kg_label", lambda doc: _state(doc).proposals.label),
):
    if not Doc.has_extension(_name):
        Doc.set_extension(_name, getter=_getter)
# A span of doc.spans["kg"] carries the index of its candidate in its id.
for _name, _getter in (
    ("kg_candidate", lambda span: _state(span.doc).chosen[span.id]),
    ("kg_source", lambda span: span._.kg_candidate.rule),
    ("kg_confidence", lambda span: span._.kg_candidate.confidence),
):
    if not Span.has_extension(_name):
        Span.set_extension(_name, getter=_getter)


_GIVEN: dict[str, Vocabulary] = {}  # vocabularies handed to pipeline() as objects, by name


def _vocabulary(name: str) -> Vocabulary:
    if not name:
        return load_vocabulary()
    if name in _GIVEN:
        return _GIVEN[name]
    return load_vocabulary(Path(name))


class VocabularyComponent:
    """``kg_vocabulary``: the vocabulary's phrase matches; starts each Doc's ``doc._.kg``."""

    def __init__(self, nlp: Language, vocabulary: Vocabulary) -> None:
        self.index = vocabulary.label_index
        self.matcher = VocabularyMatcher(vocabulary, nlp)

    def __call__(self, doc: Doc) -> Doc:
        paper = doc._.kg_paper
        if paper is None:
            paper = Paper(id="", abstract=doc.text)
        # The Doc's text is the paper's, cleaned (``doc.text`` would join every token anew).
        text = clean_text(paper.text)
        doc._.kg = State(Document.of(paper, text), self.index,
                         in_context(text, self.matcher(doc, text)))
        return doc


@Language.factory("kg_vocabulary", default_config={"vocabulary": ""})
def make_vocabulary(nlp: Language, name: str, vocabulary: str) -> VocabularyComponent:
    """``vocabulary``: a directory of SKOS ``*.ttl`` files ("" = kg's own)."""
    return VocabularyComponent(nlp, _vocabulary(vocabulary))


def _rule(name: str):
    """Register ``step(state)`` as the stateless component ``name``."""
    def register(step):
        def component(doc: Doc) -> Doc:
            step(_state(doc))
            return doc

        Language.component(name, func=component)
        return step
    return register


@_rule("kg_versions")
def _versions(s: State) -> None:
    d = s.document
    # "VQ" in "VQ Diffusion" is found here, not by the phrase matcher: the same context rules.
    s.found += in_context(d.text, list(versioned_names(s.index, list(d.names), d.text)))
    s.found += coordinated_names(s.index, d.text)


@_rule("kg_acronyms")
def _acronyms(s: State) -> None:
    s.found += acronyms(s.index, s.document, s.found)
    s.found += inverse_acronyms(s.index, s.document, s.found)


@_rule("kg_proposals")
def _proposals(s: State) -> None:
    s.proposals = proposals(s.index, s.document, s.found)
    s.found = retype_acronyms([*s.found, *s.proposals.candidates], s.proposals.types)


@_rule("kg_context_names")
def _context_names(s: State) -> None:
    s.found += context_names(s.index, s.document)


@_rule("kg_tasks")
def _tasks(s: State) -> None:
    s.found += task_phrases(s.document, s.found)


@_rule("kg_terms")
def _terms(s: State) -> None:
    s.terms = term_candidates(s.document, s.found)
    s.found += [c for c, strong in s.terms if strong]


@_rule("kg_links")
def _links(s: State) -> None:
    s.links = links(s.document, s.chosen, s.proposals.proposed)


def _select(doc: Doc) -> Doc:
    """``kg_select``: canonical order, then the best non-overlapping candidates."""
    s = _state(doc)
    d = s.document
    found = sorted(s.found, key=canonical)
    chosen = select(found)
    chosen = propagate(d, chosen)
    chosen = inside_new_names(found, chosen)
    chosen = list_types(chosen, d.text)
    # Rules read the cleaned text; a mention's text is always the paper's own
    # ("k$-means", not "k -means"), whichever process extracted it.
    source = d.paper.text
    s.chosen = [c if c.span.text == source[c.span.start:c.span.end] else
                replace(c, span=d.span(c.span.start, c.span.end)) for c in chosen]
    s.pending = [c for c, strong in s.terms if not strong and not any(
        o.span.start < c.span.end and c.span.start < o.span.end for o in s.chosen)]
    spans = [doc.char_span(c.span.start, c.span.end, label=c.type, kb_id=c.concept or "",
                           alignment_mode="expand", span_id=i) for i, c in enumerate(s.chosen)]
    doc.spans["kg"] = [span for span in spans if span is not None]  # None: only whitespace
    return doc


Language.component("kg_select", func=_select)


def pipeline(vocab: Vocabulary | None = None, model: str = "none") -> Language:
    """A blank English ``Language`` with kg's tokenizer and every kg component; ``model``
    ("none" or "kg-span") adds a trained component's candidates before selection."""
    check_model(model)
    register_tokenizer()
    nlp = spacy.blank("en", config={"nlp": {"tokenizer": {"@tokenizers": "kg.tokenizer.v1"}}})
    name = ""
    if vocab is not None:
        name = f"<vocabulary object {id(vocab)}>"
        _GIVEN[name] = vocab
    try:
        for rule in RULES:
            if rule == "kg_select":
                _add_model(nlp, model)
            nlp.add_pipe(rule, **({"config": {"vocabulary": name}} if rule == "kg_vocabulary"
                                  else {}))
    finally:
        _GIVEN.pop(name, None)  # only for this call: the component holds it from now on
    return nlp


def check_model(model: str) -> None:
    """A KgError unless ``model`` is "none", an installed model (its components registered) or
    a span model directory (a path, e.g. one ``scripts/train-span-model`` is writing)."""
    components = _model_components(model)
    if not components:
        return
    try:
        import kg.extract.span_model  # noqa: F401 (registers the component; optional)
    except ImportError as exc:
        raise KgError(f"the {model} model is not installed ({exc}); use --model none") from exc
    missing = [c for c, _ in components if not Language.has_factory(c)]
    if missing:
        raise KgError(f"the {model} model is not installed (no component {missing[0]}); "
                      "use --model none")


def _model_components(model: str) -> list[tuple[str, dict]]:
    if model in MODELS:
        return [(component, {}) for component in MODELS[model]]
    if is_model_path(model):
        return [("kg_span", {"model": model})]
    raise KgError(f"unknown model {model!r}; use one of {', '.join(MODELS)} or a model directory")


def _add_model(nlp: Language, model: str) -> None:
    check_model(model)
    for component, config in _model_components(model):
        nlp.add_pipe(component, config=config)
