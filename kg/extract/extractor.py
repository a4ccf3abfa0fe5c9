"""The Extractor: vocabulary matches, then each rule family in turn, then selection and links.

>>> from kg.model import Paper
>>> ex = Extractor().extract_one(Paper(id="p", abstract="We propose FooNet, a novel method. "
...     "FooNet uses INT4 quantization and runs on A100 GPUs."))
>>> sorted({(c.span.text, c.type) for c in ex.candidates})[:3]
[('A100 GPUs', 'Hardware'), ('FooNet', 'Method'), ('INT4 quantization', 'Technique')]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace

from kg.extract import span_model
from kg.extract.acronyms import acronyms, inverse_acronyms
from kg.extract.document import Document
from kg.extract.links import links
from kg.extract.names import context_names, list_types, trained_candidates
from kg.extract.nlp import load_trained, split_words
from kg.extract.proposals import proposals, retype_acronyms
from kg.extract.select import inside_new_names, propagate, select
from kg.extract.tasks import task_phrases
from kg.extract.terms import term_candidates
from kg.extract.text import clean_text
from kg.extract.vocabulary import VocabularyMatcher, coordinated_names, versioned_names
from kg.model import Extraction, Paper
from kg.vocab import Vocabulary, load_vocabulary

# The longest text extracted: spaCy's ``max_length``, which kg's rules ran under until they ran
# without spaCy. Time grows faster than the length (3.3 s at 200,000 characters): a longer
# "abstract" is a whole book or a broken file, and is refused rather than let stall a run.
MAX_CHARS = 1_000_000


class Extractor:
    """Builds the vocabulary matcher once; ``extract`` streams papers through the rules.

    ``trained_model`` names an installed spaCy pipeline (e.g. ``en_core_web_sm``) whose entity
    recogniser may add candidates; the default needs none, and does not import spaCy.
    """

    def __init__(self, vocab: Vocabulary | None = None, trained_model: str | None = None) -> None:
        self.vocab = vocab or load_vocabulary()
        self.index = self.vocab.label_index
        self.matcher = VocabularyMatcher(self.vocab)
        # Measurement hook (issue 23): a kg span model (``kg-span`` or a model directory) adds
        # its candidates to the rules'; any other name is an installed spaCy pipeline.
        self.span_model = None
        self.ner = None
        if trained_model and (trained_model in span_model.shipped() or "/" in trained_model):
            self.span_model = span_model.load(trained_model)
        elif trained_model:
            self.ner = load_trained(trained_model)

    def extract(self, papers: Iterable[Paper]) -> Iterator[Extraction]:
        """One Extraction per paper, in order."""
        if self.span_model is None:
            return map(self.extract_one, papers)
        papers = list(papers)  # the model reads them in batches
        predicted = span_model.predict(self.span_model, (p.text for p in papers))
        return map(self.extract_one, papers, predicted)

    def extract_one(self, paper: Paper, predicted=None) -> Extraction:
        if len(paper.text) > MAX_CHARS:
            raise ValueError(f"the text has {len(paper.text):,} characters, more than the "
                             f"{MAX_CHARS:,} the extractor takes")
        text = clean_text(paper.text)
        d = Document.of(paper, text)
        found = self.matcher(text, *split_words(text))
        found += versioned_names(self.index, list(d.names), text)
        found += coordinated_names(self.index, text)
        found += acronyms(self.index, d, found)
        found += inverse_acronyms(self.index, d, found)
        proposed = proposals(self.index, d, found)
        found = retype_acronyms([*found, *proposed.candidates], proposed.types)
        found += context_names(self.index, d)
        found += task_phrases(d, found)
        terms = term_candidates(d, found)
        found += [c for c, strong in terms if strong]
        if self.span_model is not None:
            found = span_model.merge(found, span_model.model_candidates(
                self.span_model, paper.text, found, index=self.index, spans=predicted))
        if self.ner is not None:
            found += trained_candidates(self.ner, d)
        chosen = select(found)
        chosen = propagate(d, chosen)
        chosen = inside_new_names(found, chosen)
        chosen = list_types(chosen, text)
        found_links = links(d, chosen, proposed.proposed)
        # Rules read the cleaned text; a mention's text is always the paper's own
        # ("k$-means", not "k -means"), whichever process extracted it.
        source = paper.text
        chosen = [c if c.span.text == source[c.span.start:c.span.end] else
                  replace(c, span=d.span(c.span.start, c.span.end)) for c in chosen]
        pending = [c for c, strong in terms if not strong and not any(
            o.span.start < c.span.end and c.span.start < o.span.end for o in chosen)]
        return Extraction(paper, tuple(chosen), tuple(found_links), proposed.label, d.sentences,
                          tuple(pending))


def relabel(paper: Paper, extraction: Extraction) -> Paper:
    """An untitled paper's label from what it proposes ("LOTOS: a new training paradigm…")."""
    if paper.title or not extraction.label:
        return paper
    label = " ".join(extraction.label.split())
    if len(label) > 90:
        label = label[:89].rsplit(" ", 1)[0] + "…"
    return replace(paper, label=label)
