"""The Extractor: kg's spaCy pipeline (``kg.extract.components``) run over papers, each Doc
turned into an ``Extraction``.

>>> from kg.model import Paper
>>> ex = Extractor().extract_one(Paper(id="p", abstract="We propose FooNet, a novel method. "
...     "FooNet uses INT4 quantization and runs on A100 GPUs."))
>>> sorted({(c.span.text, c.type) for c in ex.candidates})[:3]
[('A100 GPUs', 'Hardware'), ('FooNet', 'Method'), ('INT4 quantization', 'Technique')]
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import replace

from kg.extract.text import clean_text
from kg.model import Extraction, Paper
from kg.vocab import Vocabulary, load_vocabulary

# The longest text extracted: spaCy's ``max_length``. Time grows faster than the length
# (3.3 s at 200,000 characters): a longer "abstract" is a whole book or a broken file, and is
# refused rather than let stall a run.
MAX_CHARS = 1_000_000

# Pipelines built in this process, by (vocabulary, model): building one costs ~0.35 s (every
# label's phrases split and indexed; the PhraseMatcher then takes them as Docs need them,
# ``kg.extract.vocabulary``), and tests and `kg eval` make many Extractors. The
# vocabulary object is kept with its pipeline, so an id is never reused while cached.
_PIPELINES: OrderedDict[tuple[int, str], tuple[Vocabulary, object]] = OrderedDict()


def _pipeline(vocab: Vocabulary, model: str):
    key = (id(vocab), model)
    if key not in _PIPELINES:
        # Imported here, not at the top: spaCy takes 0.5 s to import, and kg.extract is read
        # by commands that never extract (kg shared, kg --help).
        from kg.extract.components import pipeline

        _PIPELINES[key] = (vocab, pipeline(vocab, model))
        while len(_PIPELINES) > 4:
            _PIPELINES.popitem(last=False)
    _PIPELINES.move_to_end(key)
    return _PIPELINES[key][1]


class Extractor:
    """kg's pipeline for one vocabulary; ``extract`` streams papers through ``nlp.pipe``.

    ``model`` is "none" (the rules only) or "kg-span" (the rules plus the trained span model,
    when installed; otherwise a KgError says so).
    """

    def __init__(self, vocab: Vocabulary | None = None, model: str = "none") -> None:
        self.vocab = vocab or load_vocabulary()
        self.model = model
        self.nlp = _pipeline(self.vocab, model)

    def __reduce__(self):
        # Pickled as what builds it: its components are closures a Language cannot pickle,
        # and unpickling a PhraseMatcher re-adds every pattern, as building does. (Only the
        # vocabulary's parse is saved.)
        return _restore, (self.vocab, self.model)

    def extract(self, papers: Iterable[Paper]) -> Iterator[Extraction]:
        """One Extraction per paper, in order."""
        return map(_extraction, self.nlp.pipe(map(self._doc, papers)))

    def extract_one(self, paper: Paper) -> Extraction:
        return next(self.extract([paper]))

    def _doc(self, paper: Paper):
        if len(paper.text) > MAX_CHARS:
            raise ValueError(f"the text has {len(paper.text):,} characters, more than the "
                             f"{MAX_CHARS:,} the extractor takes")
        doc = self.nlp.make_doc(clean_text(paper.text))
        doc._.kg_paper = paper
        return doc


def _restore(vocab: Vocabulary, model: str) -> Extractor:
    ex = Extractor.__new__(Extractor)
    ex.vocab, ex.model, ex.nlp = vocab, model, _pipeline(vocab, model)
    return ex


def _extraction(doc) -> Extraction:
    state = doc._.kg
    return Extraction(state.document.paper, tuple(state.chosen), tuple(state.links),
                      state.proposals.label, state.document.sentences, tuple(state.pending))


def relabel(paper: Paper, extraction: Extraction) -> Paper:
    """An untitled paper's label from what it proposes ("LOTOS: a new training paradigm…")."""
    if paper.title or not extraction.label:
        return paper
    label = " ".join(extraction.label.split())
    if len(label) > 90:
        label = label[:89].rsplit(" ", 1)[0] + "…"
    return replace(paper, label=label)
