"""kg-span: a small spaCy ``ner`` model trained on kg's own rule output (AutoNER-style silver
data), whose spans add to the rules' candidates.

The model ships inside the package (``kg/extract/models/kg-span``, rebuilt by
``scripts/train-span-model`` from ``training/kg-span.cfg``); ``load`` needs no download. What it
adds and how it is measured: ``docs/span-model.md``.

- ``silver_doc`` turns one paper's rule output into a training ``Doc``: the rules' candidates are
  entities, the spans the rules are unsure of are *missing* (out of the loss, neither entity nor
  "outside"), every other token is "outside".
- ``predict`` runs the model over texts in batches (greedy; a beam can give probabilities).
- ``model_candidates`` turns one text's predicted spans into ``Candidate`` s with rule ``"model"``:
  spans no rule candidate touches, above their type's threshold (chosen on the dev gold set,
  kept in the model's ``meta.json``), typed by the vocabulary where the vocabulary knows the
  name; and a name the rules found but could not place in the vocabulary may be retyped
  ("CityPersons": Method → Dataset) when the model is sure of it.

>>> import spacy
>>> from kg.extract.nlp import register_tokenizer
>>> register_tokenizer()
>>> nlp = spacy.blank("en", config={"nlp": {"tokenizer": {"@tokenizers": "kg.tokenizer.v1"}}})
>>> doc = silver_doc(nlp, "We train FooNet on ImageNet-1k with Adam.",
...                  [(9, 15, "Method"), (19, 30, "Dataset")], unsure=[(36, 40)])
>>> [(e.text, e.label_) for e in doc.ents], [t.ent_iob_ for t in doc][-2:]
([('FooNet', 'Method'), ('ImageNet-1k', 'Dataset')], ['', 'O'])
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kg.data import SPAN_MODELS, span_model_path
from kg.errors import KgError
from kg.extract.words import is_name_token
from kg.model import Candidate, Span

MODELS = SPAN_MODELS
DEFAULT = "kg-span"
# Greedy: a beam's probabilities saturate (see predict) and cost ~1.8× the model's time.
BEAM_WIDTH = 1
# The rules' type of a concept-less name is replaced only by Dataset ("on the CityPersons
# dataset"), and only when the model is this sure: retyping Models as Methods lost true
# positives on the dev gold set, and the rules' other context types are right far more often.
RETYPE_CONFIDENCE = 0.9
RETYPES = frozenset({"Dataset"})
# A span may not begin or end with one of these ("The thriving", "SWAP-Score can"): the model
# learnt capitalised words from names and sometimes runs a name into the next word.
_EDGE = (
    "a an the this that these those our their its his her we it they one two can could may "
    "might will would should must is are was were be been being has have had do does did and "
    "or but nor of for from to in on at by with via as than which who whose where when while "
    "into onto over under about between across through using based such each both also not "
    "new novel")
EDGE_WORDS = frozenset(_EDGE.split())
# The model's own confidence does not separate good spans from bad (a beam's probabilities
# saturate: most spans get 1.0). What did on the gold sets is the span itself: a name ("ACORM")
# the model finds twice or more in the text is mostly the paper's own; a name found once is
# as often an aside ("RGB", "SE"); plain lowercase phrases are mostly terms no annotator kept.
# Confidence is scaled by these, so a type's threshold picks: 1.0 repeated names only, 0.85
# every name, 0.7 every span.
NAME_ONCE_FACTOR = 0.85
PHRASE_FACTOR = 0.7
PLAIN = re.compile(r"[\w][\w\s\-./+&']*")


@dataclass(frozen=True, slots=True)
class ModelSpan:
    """A span the model predicts: character offsets, type and confidence (1.0 from the
    greedy parse; the beam's probability with a wider beam)."""

    start: int
    end: int
    type: str
    confidence: float


def shipped() -> list[str]:
    """The names of the models shipped in the package."""
    if not MODELS.is_dir():
        return []
    return sorted(p.name for p in MODELS.iterdir() if (p / "config.cfg").is_file())


def load(name: str = DEFAULT):
    """The span model ``name`` (a model shipped in the package, or a model directory) as a
    spaCy ``Language``; a clear KgError when it is absent or broken.

    >>> load("no-such-model")
    Traceback (most recent call last):
    ...
    kg.errors.KgError: no span model 'no-such-model' (shipped: kg-span); \
rebuild it with scripts/train-span-model
    """
    import spacy

    from kg.extract.nlp import register_tokenizer

    path = span_model_path(name, MODELS)
    if not (path / "config.cfg").is_file() or not (path / "ner" / "model").is_file():
        raise KgError(f"no span model {name!r} (shipped: {', '.join(shipped()) or 'none'}); "
                      "rebuild it with scripts/train-span-model")
    register_tokenizer()
    collecting = gc.isenabled()
    try:
        nlp = spacy.load(path)
    except Exception as exc:  # a truncated or foreign directory: say which and how to fix it
        raise KgError(f"span model {name!r} at {path} does not load ({type(exc).__name__}: "
                      f"{exc}); rebuild it with scripts/train-span-model") from exc
    finally:
        # srsly's msgpack reader disables the cycle collector while it reads and enables it
        # after: never again when the read fails, and always when it succeeds, even in a kg
        # build that had switched it off. Leave it as it was.
        (gc.enable if collecting else gc.disable)()
    if not nlp.get_pipe("ner").labels:
        raise KgError(f"span model {name!r} at {path} has no entity labels; rebuild it")
    return nlp


def thresholds(model_nlp) -> dict[str, float]:
    """Per-type confidence thresholds kept in the model's meta (absent type: never added)."""
    return dict(model_nlp.meta.get("kg", {}).get("thresholds", {}))


def predict(model_nlp, texts: Iterable[str], batch_size: int = 64,
            beam_width: int = BEAM_WIDTH) -> Iterator[list[ModelSpan]]:
    """Each text's predicted spans. ``beam_width`` 1 (kg's default) is spaCy's greedy parse,
    every span at confidence 1.0; a wider beam gives each span the probability the beam assigns
    it (measured, width 4, on the gold sets' 109 abstracts: 1,126 of 1,292 spans at ≥ 0.99, for
    ~1.8× the model's CPU time). Deterministic, whatever the batch size."""
    if beam_width <= 1:
        for doc in model_nlp.pipe(texts, batch_size=batch_size):
            yield [ModelSpan(e.start_char, e.end_char, e.label_, 1.0) for e in doc.ents]
        return
    tok2vec = model_nlp.get_pipe("tok2vec")
    ner = model_nlp.get_pipe("ner")
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == batch_size:
            yield from _beam_batch(model_nlp, tok2vec, ner, batch, beam_width)
            batch = []
    if batch:
        yield from _beam_batch(model_nlp, tok2vec, ner, batch, beam_width)


def _beam_batch(model_nlp, tok2vec, ner, texts: list[str], width: int
                ) -> Iterator[list[ModelSpan]]:
    docs = list(tok2vec.pipe(model_nlp.make_doc(t) for t in texts))
    beams = ner.beam_parse(docs, beam_width=width)
    scored = ner.scored_ents(beams)
    ner.set_annotations(docs, beams)
    for doc, scores in zip(docs, scored, strict=True):
        yield [ModelSpan(e.start_char, e.end_char, e.label_,
                         round(float(scores.get((e.start, e.end, e.label_), 0.0)), 4))
               for e in doc.ents]


def model_candidates(model_nlp, text: str, rule_candidates: Sequence[Candidate], *,
                     index=None, spans: Sequence[ModelSpan] | None = None) -> list[Candidate]:
    """The model's candidates for ``text`` (``spans``: its ``predict`` output, computed here
    when not given), given every candidate the rules found.

    A plausible span touching no rule candidate is added when its confidence (the model's,
    scaled by ``NAME_ONCE_FACTOR`` for a name it finds once and by ``PHRASE_FACTOR`` for a span
    with no name token) reaches its type's threshold; if the vocabulary (``index``, a
    ``kg.extract.LabelIndex``) knows the name, the vocabulary's type and concept win. A span
    equal to a concept-less rule candidate of another type, typed one of ``RETYPES`` and at
    least ``RETYPE_CONFIDENCE`` sure, is returned too: the caller puts it in that candidate's
    place (the rules left the name unknown; the model reads its context). Spans overlapping
    any other rule candidate are dropped: where the rules speak, they win.
    """
    if spans is None:
        spans = next(predict(model_nlp, [text]))
    limits = thresholds(model_nlp)
    out: list[Candidate] = []
    for s in spans:
        limit = limits.get(s.type)
        surface = text[s.start:s.end]
        if limit is None or not plausible(text, s.start, s.end):
            continue
        named = any(is_name_token(w) for w in re.split(r"[\s/]+", surface))
        repeated = sum(1 for o in spans if text[o.start:o.end] == surface) > 1
        factor = (1.0 if repeated else NAME_ONCE_FACTOR) if named else PHRASE_FACTOR
        confidence = round(s.confidence * factor, 4)
        if confidence < limit:
            continue
        touching = [c for c in rule_candidates
                    if c.span.start < s.end and s.start < c.span.end]
        if touching:
            same = [c for c in touching if (c.span.start, c.span.end) == (s.start, s.end)]
            if (len(same) == len(touching) and all(c.concept is None for c in same)
                    and all(c.type != s.type for c in same)
                    and s.type in RETYPES and confidence >= RETYPE_CONFIDENCE):
                out.append(Candidate(Span(surface, s.start, s.end), s.type, "model", None,
                                     confidence))
            continue
        known = index.lookup(surface) if index is not None else []
        if known:
            out.extend(Candidate(Span(surface, s.start, s.end), label.type, "model",
                                 label.concept, confidence) for label in known)
        else:
            out.append(Candidate(Span(surface, s.start, s.end), s.type, "model", None,
                                 confidence))
    return out


def plausible(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` can be a name or term at all: whole words, two letters or
    digits at least, no maths or markup, no function word at either edge.

    >>> [plausible(t, 0, len(t)) for t in ("MAFA", "H^", "The thriving", "Key-Value Memory",
    ...                                    "D-iGPT excels", "policy learning")]
    [True, False, False, True, False, True]
    """
    surface = text[start:end]
    if (start > 0 and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum()):
        return False
    if sum(ch.isalnum() for ch in surface) < 2 or not PLAIN.fullmatch(surface):
        return False
    if surface[-1] in "./-":
        return False
    words = surface.split()
    if len(words) > 1 and words[-1].islower() and not words[0].islower():
        return False  # a name run into the next word: "D-iGPT excels"
    return words[0].lower() not in EDGE_WORDS and words[-1].lower() not in EDGE_WORDS


def merge(rule_candidates: Sequence[Candidate], model: Sequence[Candidate]) -> list[Candidate]:
    """The rule candidates with ``model_candidates`` added: a model candidate on exactly the
    span of a concept-less rule candidate replaces it (a retype), any other is appended.

    >>> r = Candidate(Span("CityPersons", 0, 11), "Method", "context-method", None, 0.65)
    >>> m = Candidate(Span("CityPersons", 0, 11), "Dataset", "model", None, 0.95)
    >>> [(c.type, c.rule) for c in merge([r], [m])]
    [('Dataset', 'model')]
    """
    retyped = {(c.span.start, c.span.end) for c in model}
    kept = [c for c in rule_candidates
            if c.concept is not None or (c.span.start, c.span.end) not in retyped]
    return [*kept, *model]


def silver_doc(nlp, text: str, entities: Sequence[tuple[int, int, str]],
               unsure: Sequence[tuple[int, int]] = ()):
    """A training ``Doc``: ``entities`` (char offsets and type; the longest wins an overlap)
    as entities, ``unsure`` spans missing (out of the loss), every other token outside."""
    doc = nlp.make_doc(text)
    ents = []
    taken: set[int] = set()
    for start, end, label in sorted(entities, key=lambda e: (e[0] - e[1], e[0], e[2])):
        span = doc.char_span(start, end, label=label, alignment_mode="contract")
        if span is None or len(span) == 0 or taken & set(range(span.start, span.end)):
            continue
        ents.append(span)
        taken.update(range(span.start, span.end))
    missing = []
    for start, end in sorted(unsure):
        span = doc.char_span(start, end, alignment_mode="expand")
        if span is None or len(span) == 0 or taken & set(range(span.start, span.end)):
            continue
        missing.append(span)
        taken.update(range(span.start, span.end))
    doc.set_ents(sorted(ents, key=lambda s: s.start), missing=missing, default="outside")
    return doc


def write_thresholds(path: Path, limits: dict[str, float], extra: dict | None = None) -> None:
    """Store per-type thresholds (and notes) under ``"kg"`` in a model's meta.json."""
    meta_path = path / "meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["kg"] = {"thresholds": dict(sorted(limits.items())), **(extra or {})}
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")


class SpanComponent:
    """The ``kg_span`` pipeline component: the model's candidates join the rules' in
    ``doc._.kg`` (after the rule families, before ``kg_select``), merged as ``merge`` does.
    It predicts over batches of Docs when the pipeline runs ``nlp.pipe``."""

    def __init__(self, model_nlp) -> None:
        self.model_nlp = model_nlp

    def __call__(self, doc):
        return next(self.pipe([doc]))

    def pipe(self, docs, batch_size: int = 64):
        from spacy.util import minibatch

        for batch in minibatch(docs, batch_size):
            texts = [_text(doc) for doc in batch]
            for doc, text, spans in zip(batch, texts, predict(self.model_nlp, texts),
                                        strict=True):
                state = doc._.kg
                if state is None:
                    raise ValueError("kg_vocabulary must run before kg_span")
                state.found = merge(state.found, model_candidates(
                    self.model_nlp, text, state.found, index=state.index, spans=spans))
                yield doc


def _text(doc) -> str:
    # The paper's own text, as the model was measured on (the Doc holds the cleaned text,
    # of the same length, so offsets agree).
    paper = doc._.kg_paper if doc.has_extension("kg_paper") else None
    return paper.text if paper is not None else doc.text


def _register() -> None:
    from spacy.language import Language

    if not Language.has_factory("kg_span"):
        Language.factory("kg_span", default_config={"model": DEFAULT},
                         func=lambda nlp, name, model: SpanComponent(load(model)))


_register()
