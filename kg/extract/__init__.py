"""Extraction: kg's rules as a spaCy pipeline (no model, no download) that finds typed mentions
and relations.

``pipeline()`` returns the spaCy ``Language`` (``components``: one registered component per
rule family); ``Extractor`` runs it over papers and returns ``Extraction`` objects. The rule
families, one module each, each returning candidates:

- ``vocabulary`` — phrase matching of every SKOS label in ``ontology/vocab`` (spaCy's
  PhraseMatcher: case-insensitive, case-sensitive for short acronyms; plural and hyphen/space
  variants), plus versioned names built on a known family (``LLaMA-2-7B`` → Llama 2);
- ``acronyms`` — long form ↔ short form pairs ("Rotated Runtime Smooth (RRS)");
- ``proposals`` — names a paper introduces ("we propose X", "X, a novel …", "dubbed X");
- ``names`` — model, dataset and hardware names from context ("on the X benchmark", "X-7B");
- ``tasks`` — task-shaped noun phrases; ``terms`` — multi-word terms the vocabulary lacks;
- ``select`` — the best non-overlapping candidates; ``links`` — the relations.

The word lists all rules share live in ``words``, the text helpers in ``text``; the label
index they look names up in lives in ``kg.labels``.

>>> from kg.model import Paper
>>> ex = Extractor().extract_one(Paper(id="p", abstract="We propose FooNet, a novel method. "
...     "FooNet uses INT4 quantization and runs on A100 GPUs."))
>>> sorted({(c.span.text, c.type) for c in ex.candidates})[:3]
[('A100 GPUs', 'Hardware'), ('FooNet', 'Method'), ('INT4 quantization', 'Technique')]
"""

from kg.extract.extractor import Extractor, relabel
from kg.extract.text import clean_text, match_key, sentence_offsets, singular, singular_phrase
from kg.labels import LabelIndex, is_acronym_like, label_key


def pipeline(vocab=None, model: str = "none"):
    """kg's extractor as a spaCy ``Language`` (see ``kg.extract.components``).

    Imports spaCy (0.5 s) only when called: kg.extract is read by commands that never extract.
    """
    from kg.extract.components import pipeline as build

    return build(vocab, model)


__all__ = [
    "Extractor", "LabelIndex", "clean_text", "is_acronym_like", "label_key", "match_key",
    "pipeline", "relabel", "sentence_offsets", "singular", "singular_phrase",
]
