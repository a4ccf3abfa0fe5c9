"""Extraction: a spaCy pipeline (no model download) that finds typed mentions and relations.

The pipeline is ``spacy.blank("en")`` with a regex tokenizer and kg's own components, registered
by name so they show in ``nlp.pipe_names``:

- ``kg_sentences`` — sentence boundaries (character offsets; abbreviation-aware);
- ``kg_vocabulary`` — phrase matching of every SKOS label in ``ontology/vocab`` (case-insensitive,
  case-sensitive for short acronyms; plural and hyphen/space variants), plus versioned names
  built on a known family (``LLaMA-2-7B`` → Llama 2, ``ResNet18`` → ResNet-18);
- ``kg_acronyms`` — long form ↔ short form pairs ("Rotated Runtime Smooth (RRS)",
  Schwartz & Hearst 2003) and every later use of the short form;
- ``kg_patterns`` — what no vocabulary can know: names a paper introduces ("we propose X",
  "X, a novel …", "dubbed X"), model and dataset names from context ("on the X benchmark",
  "X-7B"), hardware;
- ``kg_select`` — keeps the best non-overlapping candidates and derives relations.

>>> from kg.model import Paper
>>> ex = Extractor().extract_one(Paper(id="p", abstract="We propose FooNet, a novel method. "
...     "FooNet uses INT4 quantization and runs on A100 GPUs."))
>>> sorted({(c.span.text, c.type) for c in ex.candidates})[:3]
[('A100 GPUs', 'Hardware'), ('FooNet', 'Method'), ('INT4 quantization', 'Technique')]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from kg.model import PREDICATE_FOR_TYPE, Candidate, Extraction, Link, Paper, Span
from kg.vocab import Vocabulary, load_vocabulary

# ---------------------------------------------------------------- text normalisation

_LATEX_CMD = re.compile(r"\\[A-Za-z]+")
_MARKUP = re.compile(r"[*{}$\\~^_]")


def clean_text(text: str) -> str:
    """Blank out LaTeX/Markdown markup *without changing length*, so offsets stay valid.

    >>> clean_text(r"we present \\textbf{FasterCache} and (**RRS**)")
    'we present         FasterCache  and (  RRS  )'
    """
    text = _LATEX_CMD.sub(lambda m: " " * len(m.group(0)), text)
    return _MARKUP.sub(" ", text)


def label_key(text: str) -> str:
    """Lookup key that ignores case, spaces, hyphens and dots: ResNet-18 = resnet18.

    >>> label_key("ResNet-18") == label_key("Resnet18") == label_key("resnet 18")
    True
    """
    return re.sub(r"[\s\-_.]", "", text.casefold())


def singular(word: str) -> str:
    """English plural → singular for the last word of a name, conservatively.

    >>> [singular(w) for w in ("strategies", "caches", "LLMs", "class", "GPUs", "analysis")]
    ['strategy', 'cache', 'LLM', 'class', 'GPU', 'analysis']
    """
    lower = word.lower()
    if len(word) > 2 and word.endswith("s") and word[:-1].isupper():  # LLMs, GPUs
        return word[:-1]
    if len(word) <= 3 or lower.endswith(("ss", "us", "is", "ics")):
        return word
    if lower.endswith("ies") and len(word) > 4:
        return word[:-3] + ("Y" if word[-3:].isupper() else "y")
    if lower.endswith(("sses", "xes")):
        return word[:-2]
    if lower.endswith("s"):
        return word[:-1]
    return word


def match_key(text: str) -> str:
    """The key under which surface forms are the same entity: case, spacing, hyphens and
    plurals ignored ("approaches" = "approach", "KV caches" = "KV-cache").

    >>> match_key("KV caches") == match_key("KV-cache"), match_key("approaches")
    (True, 'approach')
    """
    key = label_key(singular_phrase(text.strip()))
    return key[:-1] if key.endswith(("che", "she")) else key


def is_acronym_like(label: str) -> bool:
    """Short labels with two or more capitals are matched case-sensitively ("RL", "BLEU").

    >>> is_acronym_like("BERT"), is_acronym_like("GPT-4"), is_acronym_like("Lipschitz")
    (True, True, False)
    """
    letters = [ch for ch in label if ch.isalpha()]
    return len(letters) <= 5 and sum(ch.isupper() for ch in letters) >= 2


def _variants(label: str) -> set[str]:
    forms = {label, label.replace("-", " "), label.replace("-", "")}
    out = set()
    for form in forms:
        form = " ".join(form.split())
        if not form:
            continue
        out.add(form)
        head, _, last = form.rpartition(" ")
        if last and last[-1].isalpha():
            prefix = head + " " if head else ""
            if last[-1] in "sxh" and not last.endswith(("ss", "th")):
                out.add(prefix + last + "es")
            elif last[-1] == "y" and len(last) > 1 and last[-2] not in "aeiou":
                out.add(prefix + last[:-1] + "ies")
            if not last.endswith("s"):
                out.add(prefix + last + "s")
            else:
                out.add(prefix + last + "es")
    return out


# ---------------------------------------------------------------- regular expressions

# A "name token": starts with a letter, may contain digits, dots, hyphens, slashes.
# "/" joins only a patch size after a capital (ViT-B/16); "CIFAR-10/100" is two names.
_NAME = re.compile(r"(?<![\w\-/.])[A-Za-z][A-Za-z0-9]*(?:[\-.][A-Za-z0-9]+|(?<=[A-Z])/\d+)*"
                   r"(?![\w\-])")
# Only names with a digit or a capital after the first letter can be versioned/new names.
_MARKED_NAME = re.compile(r"(?<![\w\-/.])[A-Za-z](?=[A-Za-z0-9\-./]*?[A-Z0-9])[A-Za-z0-9]*"
                          r"(?:[\-.][A-Za-z0-9]+|(?<=[A-Z])/\d+)*(?![\w\-])")
_VERSION_TAIL = re.compile(r"^(?:[\-.]?(?:v?\d+(?:\.\d+)*[A-Za-z]?|[BbMmKk]|XL|XXL|o|mini))+$")
_SIZE = re.compile(r"\d+(?:\.\d+)?[BMK]$")
_ACRONYM_PAREN = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9\-]{0,11}?)(?:s)?\s*(?:;[^)]*)?\)")
_WORD = re.compile(r"[A-Za-z0-9][\w\-']*")

_PROPOSE_CUE = re.compile(
    r"\b(?:we|this\s+(?:paper|work)|our\s+(?:paper|work))\s+(?:(?:first|further|then|also|"
    r"hereby|here)\s+)?(?:propose|introduce|present|develop|design|devise|build|create|release|"
    r"construct|curate|contribute|offer|formulate)[sd]?\b",
    re.IGNORECASE,
)
_PROPOSE_WORD = re.compile(r"\b(?:propos|introduc|present|design|develop|devis)\w*", re.I)
# "Our method, LGA", "the proposed framework CAV2vec", "a novel algorithm MFTPL-P"
_HEAD_BEFORE_NAME = re.compile(
    r"\b(?P<head>method|approach|framework|model|algorithm|technique|system|benchmark|dataset|"
    r"suite|architecture|network|agent|pipeline|strategy|MLLM|LLM|VLM|tool|library|toolkit|"
    r"solver|optimizer|paradigm)s?\s*(?:\([A-Za-z\-]{2,10}\))?\s*[,:]?\s*$", re.IGNORECASE)
_NAMING_CUE = re.compile(
    r"\b(?:called|named|dubbed|termed|coined|namely|entitled)\s*[:,]?\s+", re.IGNORECASE)
_APPOSITIVE = re.compile(
    r"\s*(?:\([^)]{1,80}\)\s*)?,\s+(?:a|an|the)\s+(?:novel|new|simple|first|general|unified|"
    r"principled|efficient|effective|lightweight|scalable|large-scale|comprehensive|"
    r"challenging|training-free|plug-and-play|data-free|flexible|versatile|powerful|robust|"
    r"fast|practical|theoretically|generic|modular|open-source|holistic|systematic)\b",
    re.IGNORECASE,
)
_DETERMINERS = re.compile(
    r"\s+(?:(?:a|an|the|our|two|three|several)\s+)?(?:(?:novel|new|simple|general|unified|"
    r"principled|efficient|effective|lightweight|scalable|first|generic|modular|practical|"
    r"large-scale|comprehensive|powerful|training-free|plug-and-play)\s+)*",
    re.IGNORECASE,
)
_HEAD_STOP = {
    "that", "which", "for", "to", "of", "designed", "with", "in", "on", "by", "where", "and",
    "from", "using", "based", "via", "capable", "able", "built", "tailored", "consisting",
    "specifically", "aimed", "inspired", "grounded", "leveraging", "named", "called", "dubbed",
}
_DATASET_HEADS = {"benchmark", "dataset", "corpus", "suite", "testbed", "collection",
                  "leaderboard", "bench", "data", "arena"}
_MODEL_HEADS = {"model", "llm", "network", "architecture", "transformer", "backbone",
                "foundation", "encoder", "decoder", "vlm", "mllm"}

_LF_HEAD_TYPES: dict[str, str] = {}
for _type, _heads in {
    "Task": "recognition generation classification detection segmentation prediction estimation "
            "translation answering retrieval summarization forecasting captioning synthesis "
            "tracking localization parsing reconstruction completion planning navigation "
            "manipulation editing",
    "Dataset": "dataset benchmark corpus suite testbed",
    "Metric": "score error accuracy ratio",
    "Technique": "learning training optimization attention distillation regularization sampling "
                 "decoding tuning fine-tuning pruning quantization alignment augmentation "
                 "embedding encoding normalization inference compression caching prompting "
                 "pretraining pre-training adaptation",
    "Model": "network networks transformer autoencoder model",
}.items():
    for _head in _heads.split():
        _LF_HEAD_TYPES[_head] = _type

_HARDWARE_CONTEXT = re.compile(r"^\s+(?:GPUs?|TPUs?|chips?|accelerators?|cards?)\b")
_NUMBER_FORMAT = re.compile(r"^(?:FP|INT|BF|UINT|W\d+A)\d+$")
_DATASET_AFTER = re.compile(r"^\s+(?:dataset|benchmark|corpus|suite|datasets|benchmarks|"
                            r"test\s+set|validation\s+set|split)\b", re.IGNORECASE)
_DATASET_BEFORE = re.compile(r"\b(?:on|using|across|from)\s+(?:the\s+)?(?:challenging\s+|"
                             r"popular\s+|standard\s+|widely[- ]used\s+)?$", re.IGNORECASE)
_MODEL_AFTER = re.compile(r"^\s*(?:-?\s*(?:based\s+)?(?:models?|LLMs?|backbones?|"
                          r"architectures?|checkpoints?|family|families|series)\b)")
_OUTPERFORM = re.compile(r"\b(?:outperform(?:s|ed|ing)?|surpass(?:es|ed|ing)?|beat(?:s|ing)?|"
                         r"exceed(?:s|ed|ing)?|better\s+than|superior\s+to)\b", re.IGNORECASE)
_EXTEND = re.compile(r"\b(?:extend(?:s|ed|ing)?|build(?:s|ing)?\s+(?:up)?on|built\s+(?:up)?on|"
                     r"generaliz(?:e|es|ed|ing)|an\s+extension\s+of|based\s+on)\b", re.IGNORECASE)
_USE_CUE = re.compile(r"\b(?:us(?:e|es|ed|ing)|employ|leverag|utiliz|apply|appl(?:ies|ied)|"
                      r"adopt|incorporat|integrat|combin|via|through|with|based\s+on|built\s+on|"
                      r"propos|introduc)", re.IGNORECASE)
_EVAL_CUE = re.compile(r"\b(?:on|evaluat|experiment|benchmark|test|results?|achiev|"
                       r"state-of-the-art|outperform|improv)", re.IGNORECASE)

_STOP_NAMES = {
    "We", "Our", "In", "This", "The", "However", "It", "To", "For", "Code", "Experiments",
    "Results", "Further", "Finally", "Moreover", "Specifically", "Additionally", "First",
    "Second", "Third", "Thus", "Therefore", "Existing", "Recent", "Previous", "Empirically",
    "Furthermore", "Extensive", "Through", "Based", "Unlike", "While", "As", "By", "With",
    "Given", "These", "Such", "Theoretically", "Notably", "Overall", "Here", "A", "An", "Not",
    "Yes", "No", "AI", "ML", "DL", "NN", "NNs", "II", "III", "IV", "OOD", "SOTA", "API", "APIs",
    "ID", "IID", "iid", "CV", "NLP", "USA", "UK", "EU", "TL", "DR", "PhD", "LaTeX", "URL",
}
_NOT_NAMES_RE = re.compile(r"^(?:[A-Z]\d?|\d.*|[ivx]+|[A-Z][a-z]+|[a-z].*|.*\d{4}.*|"
                           r"[A-Z][a-z]+(?:-[A-Za-z][a-z]+)+)$")


@dataclass(frozen=True, slots=True)
class _Label:
    concept: str
    type: str


class LabelIndex:
    """Vocabulary lookups by label key: case-insensitive and (for acronyms) case-sensitive."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.ci: dict[str, list[_Label]] = {}
        self.cs: dict[str, list[_Label]] = {}
        for concept in sorted(vocab.concepts.values(), key=lambda c: c.iri):
            if not concept.matchable:
                continue
            for text in (concept.pref_label, *concept.alt_labels):
                target = self.cs if is_acronym_like(text) else self.ci
                key = label_key(text) if target is self.ci else re.sub(r"[\s\-_.]", "", text)
                entry = _Label(concept.iri, concept.type)
                bucket = target.setdefault(key, [])
                if entry not in bucket:
                    bucket.append(entry)

    def lookup(self, text: str) -> list[_Label]:
        exact = re.sub(r"[\s\-_.]", "", text)
        return self.cs.get(exact) or self.ci.get(label_key(text)) or []

    def lookup_name(self, name: str) -> tuple[list[_Label], int]:
        """Longest vocabulary prefix of a name token, as (labels, prefix length in chars)."""
        for end in _prefix_ends(name):
            found = self.lookup(name[:end])
            if not found and name[end - 1 : end] == "s":
                found = self.lookup(name[: end - 1])
            if found:
                return found, end
        return [], 0


def _prefix_ends(name: str) -> list[int]:
    """Cut points of a name, longest first: at separators and letter→digit changes."""
    cuts = {len(name)}
    for i in range(1, len(name)):
        prev, ch = name[i - 1], name[i]
        if ch in "-./" or (prev.isalpha() and ch.isdigit()):
            cuts.add(i)
    return sorted((c for c in cuts if c > 0 and name[:c][-1] not in "-./"), reverse=True)


# ---------------------------------------------------------------- the extractor


@dataclass
class _Doc:
    paper: Paper
    text: str  # cleaned, same length as paper.text
    sentences: list[tuple[int, int]]
    candidates: list[Candidate]
    names: list[re.Match] = field(default_factory=list)  # name tokens (digit/inner capital)
    proposed: set[str] = field(default_factory=set)  # label keys of names the paper introduces

    def sentence_of(self, pos: int) -> Span:
        for start, end in self.sentences:
            if start <= pos < end:
                return Span(self.paper.text[start:end], start, end)
        start, end = self.sentences[-1] if self.sentences else (0, len(self.text))
        return Span(self.paper.text[start:end], start, end)

    def span(self, start: int, end: int) -> Span:
        return Span(self.paper.text[start:end], start, end)


RULE_PRIORITY = {
    "acronym-definition": 6, "proposed-name": 5, "vocabulary": 4, "acronym-use": 4,
    "vocabulary-version": 4, "proposed-name-use": 3, "context-model": 2, "context-dataset": 2,
    "context-hardware": 2, "named-entity": 1, "task-phrase": 1,
}
TYPE_CONFIDENCE = {"vocabulary": 0.9, "vocabulary-version": 0.85, "acronym-definition": 0.85,
                   "acronym-use": 0.8, "proposed-name": 0.85, "proposed-name-use": 0.8,
                   "context-model": 0.65, "context-dataset": 0.7, "context-hardware": 0.7,
                   "named-entity": 0.5, "task-phrase": 0.6}


class Extractor:
    """Builds the spaCy pipeline once; ``extract`` streams papers through it.

    ``trained_model`` names an installed spaCy pipeline (e.g. ``en_core_web_sm``) whose entity
    recogniser may add candidates; the default needs none.
    """

    def __init__(self, vocab: Vocabulary | None = None, trained_model: str | None = None) -> None:
        self.vocab = vocab or load_vocabulary()
        self.index = self.vocab.label_index
        self.nlp = _build_pipeline(self)
        self.ner = _load_trained(trained_model) if trained_model else None

    # -- public API
    def extract(self, papers: Iterable[Paper], batch_size: int = 64) -> Iterator[Extraction]:
        papers = list(papers) if not isinstance(papers, list) else papers
        texts = [clean_text(p.text) for p in papers]
        docs = self.nlp.pipe(texts, batch_size=batch_size)
        for paper, text, doc in zip(papers, texts, docs, strict=True):
            yield self._finish(paper, text, doc)

    def extract_one(self, paper: Paper) -> Extraction:
        return next(self.extract([paper]))

    # -- stages (called from the spaCy components and _finish)
    def _finish(self, paper: Paper, text: str, doc) -> Extraction:
        # ``text`` is the cleaned text the doc was made from (Doc.text re-joins every token).
        state = _Doc(paper, text, _sentence_offsets(doc, text),
                     list(doc.user_data.get("kg_candidates", [])))
        state.names = [m for m in _MARKED_NAME.finditer(text) if _is_name_token(m.group(0))]
        state.candidates.extend(_versioned_names(self, state.names, text))
        _acronyms(self, state)
        proposed_label = _proposals(self, state)
        _context_names(self, state)
        _task_phrases(state)
        if self.ner is not None:
            _trained_candidates(self, state)
        chosen = _select(state.candidates)
        chosen = _propagate(state, chosen)
        chosen = _inside_new_names(state.candidates, chosen)
        chosen = _list_types(chosen, text)
        links = _links(state, chosen)
        return Extraction(paper, tuple(chosen), tuple(links), proposed_label,
                          tuple(state.sentences))


def _load_trained(name: str):
    import spacy

    from kg.errors import KgError

    try:
        return spacy.load(name, disable=["parser", "lemmatizer"])
    except OSError as exc:
        raise KgError(f"spaCy pipeline {name!r} is not installed ({exc}); install its package or "
                      "drop --spacy-model (the default pipeline needs no model)") from exc


_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|(?:e\.g|i\.e|etc|et al|vs|cf|Fig|Eq|resp|approx|w\.r\.t)\."
                    r"|[^\W_]+|\S")


_PIECE = re.compile(_TOKEN.pattern + r"|\s+")


class RegexTokenizer:
    """Splits at every non-alphanumeric character (keeping decimals and a few abbreviations).

    Five times faster than spaCy's rule tokenizer on abstracts, and it splits hyphens and
    dots inside names ("ResNet-18" → ResNet - 18) the same way in patterns and text, which is
    what the phrase matcher needs.

    >>> import spacy
    >>> [t.text for t in RegexTokenizer(spacy.blank("en").vocab)("LLaMA-2-7B, e.g. 6.66")]
    ['LLaMA', '-', '2', '-', '7B', ',', 'e.g.', '6.66']
    """

    def __init__(self, vocab) -> None:
        self.vocab = vocab

    def __call__(self, text: str):
        from spacy.tokens import Doc

        words: list[str] = []
        spaces: list[bool] = []
        for piece in _PIECE.findall(text):
            if piece[0].isspace():
                # One space after a word is that word's trailing space; any other whitespace
                # is a token of its own, as spaCy represents it.
                if words and not spaces[-1] and piece[0] == " ":
                    spaces[-1] = True
                    piece = piece[1:]
                if not piece:
                    continue
            words.append(piece)
            spaces.append(False)
        doc = Doc(self.vocab, words=words, spaces=spaces)
        doc.user_data["kg_text"] = text  # Doc.text re-joins every token; keep the string
        return doc


def _register_components() -> None:
    from spacy.language import Language

    if "kg_sentences" in Language.factories:
        return

    @Language.component("kg_sentences")
    def kg_sentences(doc):
        """Sentence boundaries as character offsets (a regex over the text: no Token objects)."""
        doc.user_data["kg_sentences"] = sentence_offsets(doc.user_data["kg_text"])
        return doc


def _build_pipeline(extractor: Extractor):
    import spacy
    from spacy.language import Language
    from spacy.matcher import PhraseMatcher

    _register_components()
    nlp = spacy.blank("en")
    nlp.tokenizer = RegexTokenizer(nlp.vocab)
    nlp.add_pipe("kg_sentences")
    ci = PhraseMatcher(nlp.vocab, attr="LOWER")
    cs = PhraseMatcher(nlp.vocab, attr="ORTH")
    keys: dict[str, list[_Label]] = {}
    for concept in extractor.vocab.concepts.values():
        if not concept.matchable:
            continue
        for text in (concept.pref_label, *concept.alt_labels):
            sensitive = is_acronym_like(text)
            for form in sorted(_variants(text)):
                key = ("cs:" if sensitive else "ci:") + form
                entry = _Label(concept.iri, concept.type)
                bucket = keys.setdefault(key, [])
                if entry not in bucket:
                    bucket.append(entry)
    for key in sorted(keys):
        sensitive, form = key.startswith("cs:"), key[3:]
        (cs if sensitive else ci).add(key, [nlp.make_doc(form)])
    strings = nlp.vocab.strings

    name = f"kg_vocabulary_{id(extractor)}"

    @Language.component(name)
    def kg_vocabulary(doc):
        found: list[Candidate] = []
        matches = [*ci(doc), *cs(doc)]
        if matches:
            from spacy.attrs import IDX, LENGTH

            offsets = doc.to_array([IDX, LENGTH]).tolist()  # no Token objects: much faster
            text = doc.user_data["kg_text"]
            for match_id, start, end in matches:
                s_char = offsets[start][0]
                e_char = offsets[end - 1][0] + offsets[end - 1][1]
                for label in keys[strings[match_id]]:
                    found.append(Candidate(Span(text[s_char:e_char], s_char, e_char),
                                           label.type, "vocabulary", label.concept,
                                           TYPE_CONFIDENCE["vocabulary"]))
        doc.user_data["kg_candidates"] = found
        return doc

    nlp.add_pipe(name, name="kg_vocabulary")
    return nlp


# A sentence ends at . ! ? (or a line break, e.g. after a title) followed by a capital, digit
# or bracket — not after the abbreviations that keep a sentence going.
_SENTENCE_BREAK = re.compile(r"[.!?]\s+(?=[A-Z0-9(\[\"'])|\n+")
_ABBREVIATION = re.compile(r"(?:\be\.g|\bi\.e|\bet al|\bvs|\bcf|\bFig|\bEq|\bresp|\bapprox)\.$")


def sentence_offsets(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, trailing spaces excluded.

    >>> t = "We use caching, e.g. KV caches. It works!\\nNext"
    >>> [t[s:e] for s, e in sentence_offsets(t)]
    ['We use caching, e.g. KV caches.', 'It works!', 'Next']
    """
    out: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_BREAK.finditer(text):
        if text[m.start()] == "." and _ABBREVIATION.search(text, max(0, m.start() - 8),
                                                          m.start() + 1):
            continue
        end = m.start() + (1 if text[m.start()] in ".!?" else 0)
        if end > start:
            out.append((start, end))
        start = m.end()
    if start < len(text.rstrip()):
        out.append((start, len(text.rstrip())))
    return out or [(0, len(text))]


def _sentence_offsets(doc, text: str) -> list[tuple[int, int]]:
    return doc.user_data.get("kg_sentences") or sentence_offsets(text)


def _versioned_names(extractor: Extractor, names: list[re.Match], text: str
                     ) -> Iterator[Candidate]:
    """Name tokens extending a vocabulary family: LLaMA-2-7B, Qwen2.5-7B, ResNet18, GPT-4o."""
    for match in names:
        token = match.group(0)
        labels, cut = extractor.index.lookup_name(token)
        if not labels:
            continue
        tail = token[cut:]
        if tail and not _VERSION_TAIL.match(tail):
            continue
        start = match.start()
        # "Llama 2" / "GPT 4": a family name followed by a bare version number.
        follow = re.match(r" (\d+(?:\.\d+)?[A-Za-z]?)\b(?![\-.]\w)", text[match.end():])
        end = match.end()
        for label in labels:
            if follow and label.type == "Model":
                longer = extractor.index.lookup(token + follow.group(1))
                if longer:
                    label = longer[0]
                    end = match.end() + follow.end()
            yield Candidate(Span(text[start:end], start, end), label.type, "vocabulary-version",
                            label.concept, TYPE_CONFIDENCE["vocabulary-version"])


# ---------------------------------------------------------------- acronyms


def _find_long_form(words: list[re.Match], short: str) -> int | None:
    """Schwartz & Hearst: index of the first word of the long form ending before '('."""
    letters = [ch.lower() for ch in short if ch.isalnum()]
    if not letters or not short[0].isalnum():
        return None
    limit = min(len(letters) + 5, len(letters) * 2)
    candidate_words = words[-limit:]
    text = " ".join(w.group(0) for w in candidate_words).lower()
    s_i, l_i = len(letters) - 1, len(text) - 1
    while s_i >= 0:
        ch = letters[s_i]
        while l_i >= 0 and (text[l_i] != ch or (s_i == 0 and l_i > 0 and text[l_i - 1].isalnum())):
            l_i -= 1
        if l_i < 0:
            return None
        s_i -= 1
        l_i -= 1
    first_char = l_i + 1
    # map char position back to a word index
    pos = 0
    for i, w in enumerate(candidate_words):
        if pos <= first_char < pos + len(w.group(0)) + 1:
            offset = len(words) - len(candidate_words)
            if len(candidate_words) - i > 1 + len(letters) * 2:
                return None
            return offset + i
        pos += len(w.group(0)) + 1
    return None


def _acronyms(ex: Extractor, d: _Doc) -> None:
    for match in _ACRONYM_PAREN.finditer(d.text):
        short = match.group(1)
        if not any(ch.isupper() for ch in short) or len(short) < 2 or short.isdigit():
            continue
        sent = next(((s, e) for s, e in d.sentences if s <= match.start() < e), None)
        if sent is None:
            continue
        before = list(_WORD.finditer(d.text, sent[0], match.start()))
        if not before:
            continue
        first = _find_long_form(before, short)
        if first is None:
            continue
        lf_start, lf_end = before[first].start(), before[-1].end()
        long_form = d.text[lf_start:lf_end]
        if long_form.lower() == short.lower() or len(long_form) <= len(short):
            continue
        sf_start = match.start(1)
        sf_span = d.span(sf_start, sf_start + len(short))
        lf_span = d.span(lf_start, lf_end)
        labels = ex.index.lookup(long_form) or ex.index.lookup(singular_phrase(long_form))
        if not labels:
            labels = [lab for lab in _labels_in(d, lf_start, lf_end) ]
        if labels:
            for label in labels:
                d.candidates.append(Candidate(sf_span, label.type, "acronym-definition",
                                              label.concept, 0.85, long_form=long_form))
            continue
        long_form, lf_end = _trim_generic_head(long_form, short, lf_start)
        lf_span = d.span(lf_start, lf_end)
        sentence = d.text[sent[0]:sent[1]]
        type_ = _type_of_long_form(long_form, bool(_PROPOSE_WORD.search(sentence)))
        if type_ is None:
            continue
        d.candidates.append(Candidate(lf_span, type_, "acronym-definition", None, 0.8))
        d.candidates.append(Candidate(sf_span, type_, "acronym-definition", None, 0.8,
                                      long_form=long_form))


def singular_phrase(phrase: str) -> str:
    head, _, last = phrase.rpartition(" ")
    return (head + " " if head else "") + singular(last)


def _labels_in(d: _Doc, start: int, end: int) -> list[_Label]:
    """Vocabulary candidates spanning exactly [start, end)."""
    return [_Label(c.concept, c.type) for c in d.candidates
            if c.concept and c.span.start == start and c.span.end == end]


_GENERIC_HEADS = {"method", "approach", "framework", "technique", "algorithm", "module",
                  "strategy", "scheme", "mechanism", "paradigm", "pipeline", "system"}


def _trim_generic_head(long_form: str, short: str, start: int) -> tuple[str, int]:
    """"Few-shot Attention Intervention method (FAI)" → drop "method", which FAI does not spell."""
    words = long_form.split(" ")
    last = words[-1]
    if len(words) > 2 and singular(last).lower() in _GENERIC_HEADS and \
            short[-1:].lower() != last[:1].lower():
        long_form = " ".join(words[:-1])
    return long_form, start + len(long_form)


def _type_of_long_form(long_form: str, proposing: bool) -> str | None:
    words = long_form.split()
    head = singular(words[-1]).lower()
    by_head = _LF_HEAD_TYPES.get(head)
    significant = [w for w in words if w.lower() not in ("of", "with", "for", "and", "the", "in",
                                                          "on", "to", "via", "from", "a")]
    title_case = len(words) >= 2 and all(w[:1].isupper() for w in significant)
    # A Title Case long form is a named method unless its head says task/dataset/metric.
    if title_case and by_head in (None, "Technique", "Model"):
        return "Method" if by_head != "Model" else "Model"
    if by_head:
        return by_head
    if head in _GENERIC_HEADS:
        return "Method"
    return "Method" if proposing and title_case else None


# ---------------------------------------------------------------- proposals


def _head_type(phrase: str) -> str:
    words = []
    for word in re.findall(r"[A-Za-z][\w\-]*", phrase):
        if word.lower() in _HEAD_STOP or (word.endswith("ly") and len(word) > 4):
            break
        if words and word.endswith("ed") and len(word) > 4:  # "a … model guided by": head ends
            break
        words.append(word.lower())
    head = singular(words[-1]) if words else ""
    if head in _DATASET_HEADS or head.endswith("bench"):
        return "Dataset"
    if head in _MODEL_HEADS:
        return "Model"
    return "Method"


def _name_at(text: str, pos: int) -> tuple[int, int] | None:
    """A proposed name starting at ``pos``: a name token, or a Title Case run of 2–5 words."""
    m = _NAME.match(text, pos)
    if not m:
        return None
    token = m.group(0)
    if _is_name_token(token):
        return m.start(), m.end()
    run = re.match(r"(?:[A-Z][\w\-]*\s+){1,4}[A-Z][\w\-]*", text[pos:])
    if run and run.group(0).split()[0] not in _STOP_NAMES:
        return pos, pos + run.end()
    return None


def _is_name_token(token: str) -> bool:
    if token in _STOP_NAMES or len(token) < 2 or _NOT_NAMES_RE.match(token):
        return False
    return any(ch.isupper() for ch in token[1:]) or any(ch.isdigit() for ch in token)


def _proposals(ex: Extractor, d: _Doc) -> str | None:
    text = d.text
    label: str | None = None
    found: list[tuple] = []  # start, end, type, description, strength of the type evidence
    for cue in _PROPOSE_CUE.finditer(text):
        det = _DETERMINERS.match(text, cue.end())
        pos = det.end() if det else cue.end()
        named = _name_at(text, pos)
        rest_start = named[1] if named else pos
        if named is None:
            # lowercase noun phrase before ", a novel …": "we introduce model folding, a novel"
            np_ = re.match(r"([a-z][\w\-]*(?:\s+[a-z][\w\-]*){0,3})(?=\s*(?:\([^)]{1,15}\))?,\s+"
                           r"(?:a|an)\s)", text[pos:])
            if np_ and _APPOSITIVE.match(text, pos + np_.end()):
                named = (pos, pos + np_.end())
                rest_start = named[1]
        if named is None:
            naming = _NAMING_CUE.search(text, pos, min(len(text), pos + 200))
            if naming and "." not in text[pos:naming.start()]:
                named = _name_at(text, naming.end())
                if named:
                    found.append((*named, _head_type(text[pos:naming.start()]),
                                  text[pos:naming.start()].strip(" ,"), 2))
            continue
        tail = text[rest_start:rest_start + 160]
        appos = _APPOSITIVE.match(tail) or re.match(r"\s*(?:\([^)]{1,80}\)\s*)?,\s+(?:a|an)\s",
                                                     tail)
        description = ""
        if appos:
            description = re.split(r"[.;]", tail[appos.start():].lstrip(" ,"), maxsplit=1)[0]
            description = re.sub(r"^\([^)]*\)\s*,?\s*", "", description).strip(" ,")
        after = re.match(r"\s+([A-Za-z]+)", text[named[1]:named[1] + 30])
        if description:
            type_, strength = _head_type(description), 2
        elif after and singular(after.group(1).lower()) in (_DATASET_HEADS | _MODEL_HEADS |
                                                             _GENERIC_HEADS):
            type_, strength = _head_type(after.group(1)), 2  # "the W4NT3D benchmark"
        else:  # "a Latent Structural Diffusion Model": the name's own head word
            type_ = _head_type(text[named[0]:named[1]].split()[-1])
            strength = 2 if type_ != "Method" else 0
        found.append((*named, type_, description, strength))
    # "X, a novel …" anywhere, and "dubbed X"
    for m in d.names:
        appos = _APPOSITIVE.match(text, m.end())
        if appos:
            description = re.split(r"[.;]", text[appos.start():appos.start() + 160].lstrip(" ,"),
                                   maxsplit=1)[0]
            found.append((m.start(), m.end(), _head_type(description), description.strip(" ,"),
                          2))
    for m in _NAMING_CUE.finditer(text):
        named = _name_at(text, m.end())
        if (named and _is_name_token(text[named[0]:named[1]].split()[0])) or (
            named and " " in text[named[0]:named[1]]
        ):
            sent = d.sentence_of(m.start())
            found.append((*named, _head_type(text[sent.start:m.start()][-60:]), "", 1))
    title = d.paper.title
    if title:
        head = re.match(r"\s*([A-Za-z][\w\-.]*(?:\s[A-Z][\w\-.]*){0,2})\s*:\s+(\S.*)", title)
        if head and any(_is_name_token(w) for w in head.group(1).split()):
            found.append((head.start(1), head.end(1), _head_type(head.group(2)),
                          head.group(2).strip(), 1))
    for m in d.names:
        sent = d.sentence_of(m.start())
        before = text[max(sent.start, m.start() - 60):m.start()]
        head_m = _HEAD_BEFORE_NAME.search(before)
        if (head_m and _PROPOSE_WORD.search(text[sent.start:m.start()])) or (
            head_m and re.search(r"\b(?:our|the proposed)\s+\w*\s*$",
                                 before[:head_m.start()], re.IGNORECASE)
        ):
            found.append((m.start(), m.end(), _head_type(head_m.group("head")), "", 2))
    # One type per proposed name, from the strongest evidence: how the abstract uses it
    # ("Sheared-LLaMA models") > how it describes it ("X, a benchmark") > the title > Method.
    # A short form and its long form ("SemiReward" / "Semi-supervised Reward") are one name.
    group = {label_key(c.span.text): label_key(c.long_form) for c in d.candidates
             if c.rule == "acronym-definition" and c.long_form and c.concept is None}
    best: dict[str, tuple[int, int, str]] = {}
    for start, end, type_, _, strength in found:
        key = label_key(text[start:end].strip())
        key = group.get(key, key)
        rank = (strength, type_ != "Method")
        if key not in best or rank > best[key][:2]:
            best[key] = (*rank, type_)  # type: ignore[assignment]
    for key in best:
        used = _usage_type(text, key, found)
        if used:
            best[key] = (3, True, used)  # type: ignore[assignment]
    typed = {key: value[2] for key, value in best.items()}
    typed.update({short: typed[long] for short, long in group.items() if long in typed})
    for short, long in group.items():
        if short in typed and long not in typed:
            typed[long] = typed[short]
    found = [(s_, e_, typed[label_key(text[s_:e_].strip())], desc)
             for s_, e_, _, desc, _ in found]
    seen: set[tuple[int, int]] = set()
    for start, end, type_, description in found:
        name = text[start:end].strip()
        end = start + len(name)
        if (start, end) in seen or not name or name.lower() in ("it", "this", "them"):
            continue
        seen.add((start, end))
        labels = ex.index.lookup(name)
        concept = next((lab.concept for lab in labels if lab.type == type_), None)
        d.candidates.append(Candidate(d.span(start, end), type_, "proposed-name", concept, 0.85))
        d.proposed.add(label_key(name))
        if label is None:
            label = f"{name}: {description}" if description else name
    # An acronym defined for a proposed name takes the name's type ("RETSim (Resilient and
    # Efficient Text Similarity), a … model").
    for i, c in enumerate(d.candidates):
        if c.rule == "acronym-definition" and c.concept is None:
            for form in (c.span.text, c.long_form or ""):
                if label_key(form) in typed and typed[label_key(form)] != c.type:
                    d.candidates[i] = replace(c, type=typed[label_key(form)])
    return label


def _usage_type(text: str, key: str, found: list[tuple]) -> str | None:
    """"Sheared-LLaMA models", "the W4NT3D benchmark": the word after a use of the name."""
    for start, end, *_ in found:
        if label_key(text[start:end].strip()) != key:
            continue
        name = text[start:end].strip()
        flexible = re.sub(r"[\s\-]+", r"[\\s\\-]?", re.escape(name).replace("\\ ", " "))
        for m in re.finditer(r"(?<![\w\-])" + flexible + r"(?![\w\-])", text):
            after = text[m.end():m.end() + 30]
            if _MODEL_AFTER.match(after):
                return "Model"
            if _DATASET_AFTER.match(after):
                return "Dataset"
        return None
    return None


# ---------------------------------------------------------------- context patterns


_TASK_HEADS = ("generation|synthesis|classification|estimation|recognition|detection|segmentation|"
               "reasoning|manipulation|regression|prediction|forecasting|translation|retrieval|"
               "captioning|summarization|tracking|localization|navigation|reconstruction|"
               "completion|answering")
_TASK_PHRASE = re.compile(
    r"(?<![\w\-])((?:(?:[a-z][a-z0-9\-]*|[1-9]D)\s+){1,2})(" + _TASK_HEADS + r")\b")
_TASK_STOP = set("""
a an the of for in on and or to with by from as at via into over under between across than is
are be been was were this that these those our their its his her such which whose what
efficient effective accurate robust better improved existing downstream various many several
multiple different other new novel challenging complex real-world large-scale fine-grained
high-quality low-quality high low fast faster scalable general generic standard proposed based
learned trained training test testing inference joint end-to-end simple more most less first
second final overall each all both any some further future prior previous precise reliable
strong stronger weak zero-shot few-shot one-shot open-ended do does not can could may might
will would should must also only even then thus hence enable enables enabling achieve achieves
improve improves improving perform performs
""".split())  # noqa: SIM905 (a word list reads better as text)


def _task_phrases(d: _Doc) -> None:
    """Task-shaped noun phrases the vocabulary lacks: "talking portrait synthesis",
    "causal effect estimation" (1–2 modifiers + a task head), never over a vocabulary match."""
    taken = [(c.span.start, c.span.end) for c in d.candidates]
    for m in _TASK_PHRASE.finditer(d.text):
        words = m.group(1).split()
        while words and (words[0] in _TASK_STOP or words[0].endswith("ly")):
            words.pop(0)
        if not words or any(w in _TASK_STOP or w.endswith(("ly", "ed")) for w in words):
            continue
        if len(words) == 2 and "-" in words[0]:  # "human-level video reasoning": an adjective
            words.pop(0)
        # English compounds take singular, non-verbal modifiers: "enhances recognition" and
        # "generating reasoning" are clauses, "time series forecasting" is a compound.
        if len(words[-1]) < 2 or words[-1].endswith("ing") or (
            words[-1].endswith("s") and not words[-1].endswith(("ics", "ss", "us", "series"))
        ):
            continue
        start = m.end(1) - len(" ".join(words)) - (len(m.group(1)) - len(m.group(1).rstrip()))
        end = m.end(2)
        if any(s < end and start < e for s, e in taken):
            continue
        d.candidates.append(Candidate(d.span(start, end), "Task", "task-phrase", None, 0.6))


# A coined name: a lower-case letter followed by a capital inside the word (not "iPhone").
_CAMEL = re.compile(r"^[A-Z][A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*$")
_CAMEL_STOP = set("""
GitHub PyTorch TensorFlow OpenAI DeepMind YouTube JavaScript LaTeX TypeScript HuggingFace
LinkedIn PayPal PowerPoint MatLab MATLAB NumPy SciPy JaX McDonald McCulloch MacBook
WordPress DeepSeek ChatBot AutoML PhD PhDs NeurIPS ICLR ICML CoRL OpenReview ArXiv
""".split())  # noqa: SIM905


def _list_types(chosen: list[Candidate], text: str) -> list[Candidate]:
    """A coined name listed with known models takes their type: "such as Pythia, INCITE,
    OpenLLaMA and TinyLlama models"."""
    out = list(chosen)
    for i, c in enumerate(out):
        if c.rule != "named-entity":
            continue
        for j in (i - 1, i + 1):
            if 0 <= j < len(out) and out[j].concept and out[j].type in ("Model", "Dataset"):
                a, b = sorted((out[i], out[j]), key=lambda x: x.span.start)
                if re.fullmatch(r"(?:\s*,\s*[A-Z][\w\-.]*)*\s*(?:,|and|or|, and|, or)\s*",
                                text[a.span.end:b.span.start]):
                    out[i] = replace(c, type=out[j].type)
                    break
    return out


def _context_names(ex: Extractor, d: _Doc) -> None:
    text = d.text
    last_dataset_end = -1
    for m in d.names:
        token = m.group(0)
        if any(label.type == "Model" for label in ex.index.lookup_name(token)[0]):
            continue  # a known model family ("GPT-style"): the vocabulary match stands
        after = text[m.end():m.end() + 40]
        before = text[max(0, m.start() - 40):m.start()]
        span = d.span(m.start(), m.end())
        listed = last_dataset_end >= 0 and re.fullmatch(
            r"\s*(?:,|and|or|, and|, or)\s*", text[last_dataset_end:m.start()]) is not None
        if _HARDWARE_CONTEXT.match(after) and re.search(r"\d", token):
            d.candidates.append(Candidate(span, "Hardware", "context-hardware", None, 0.7))
        elif _SIZE.search(token) or (_MODEL_AFTER.match(after) and not token.isupper()):
            d.candidates.append(Candidate(span, "Model", "context-model", None, 0.65))
        elif _CAMEL.match(token) and token not in _CAMEL_STOP:
            # FlexMatch, MinHash, OpenLLaMA, LipSDP: a coined name, most often a method
            d.candidates.append(Candidate(span, "Method", "named-entity", None, 0.5))
        elif _NUMBER_FORMAT.match(token):
            continue
        elif _DATASET_AFTER.match(after) or (
            (_DATASET_BEFORE.search(before) or listed) and re.search(r"\d|Bench|bench|.QA$", token)
        ):
            d.candidates.append(Candidate(span, "Dataset", "context-dataset", None, 0.7))
            last_dataset_end = m.end()


def _trained_candidates(ex: Extractor, d: _Doc) -> None:
    doc = ex.ner(d.paper.text)
    for ent in doc.ents:
        if ent.label_ in ("PRODUCT", "ORG") and _is_name_token(ent.text):
            d.candidates.append(Candidate(d.span(ent.start_char, ent.end_char), "Method",
                                          "named-entity", None, 0.5))


# ---------------------------------------------------------------- selection and links


def _rank(c: Candidate) -> tuple:
    return (-(c.span.end - c.span.start), -RULE_PRIORITY.get(c.rule, 0), c.type, c.concept or "")


def _select(candidates: list[Candidate]) -> list[Candidate]:
    """Longest candidate wins an overlap; then rule priority. Same span, several concepts: all."""
    chosen: list[Candidate] = []
    for cand in sorted(candidates, key=_rank):
        s, e = cand.span.start, cand.span.end
        clash = [c for c in chosen if c.span.start < e and s < c.span.end]
        if not clash:
            chosen.append(cand)
            continue
        same = [c for c in clash if (c.span.start, c.span.end) == (s, e)]
        if same and len(same) == len(clash) and all(
            RULE_PRIORITY.get(c.rule, 0) == RULE_PRIORITY.get(cand.rule, 0) for c in same
        ) and all(c.type == cand.type and c.concept != cand.concept for c in same):
            chosen.append(cand)
    return sorted(chosen, key=lambda c: (c.span.start, c.span.end, c.type, c.concept or ""))


def _inside_new_names(candidates: list[Candidate], chosen: list[Candidate]) -> list[Candidate]:
    """A new name built from known terms mentions them too: "Annealing Self-Distillation
    Rectification" uses self-distillation. Only inside names the vocabulary does not know."""
    names = [c for c in chosen if c.concept is None and c.type in ("Method", "Model")
             and " " in c.span.text]
    if not names:
        return chosen
    inner = [c for c in candidates if c.rule == "vocabulary" and c.type != "Method" and any(
        n.span.start <= c.span.start and c.span.end <= n.span.end and c.span != n.span
        for n in names)]
    if not inner:
        return chosen
    return sorted({*chosen, *inner}, key=lambda c: (c.span.start, c.span.end, c.type,
                                                     c.concept or ""))


def _propagate(d: _Doc, chosen: list[Candidate]) -> list[Candidate]:
    """Later uses of a defined acronym or a proposed name become mentions too."""
    extra: list[Candidate] = []
    for cand in chosen:
        if cand.rule not in ("acronym-definition", "proposed-name"):
            continue
        surface = cand.span.text
        flags = 0 if any(ch.isupper() for ch in surface) else re.IGNORECASE
        pattern = re.compile(r"(?<![\w\-])" + re.escape(surface) + r"s?(?![\w\-])", flags)
        rule = "acronym-use" if cand.rule == "acronym-definition" else "proposed-name-use"
        for m in pattern.finditer(d.text):
            extra.append(Candidate(d.span(m.start(), m.start() + len(surface)), cand.type, rule,
                                   cand.concept, TYPE_CONFIDENCE[rule], cand.long_form))
    if not extra:
        return chosen
    return _select([*chosen, *extra])


def _links(d: _Doc, chosen: list[Candidate]) -> list[Link]:
    links: list[Link] = []
    proposed: set[int] = set()
    for key in sorted(d.proposed):
        first = next((i for i, c in enumerate(chosen) if key in
                      (label_key(c.span.text), label_key(c.long_form or ""))), None)
        if first is not None:
            proposed.add(first)
    proposed_keys = {label_key(chosen[i].long_form or chosen[i].span.text) for i in proposed} | \
        {label_key(chosen[i].span.text) for i in proposed}
    for i in proposed:
        c = chosen[i]
        links.append(Link(None, "proposes", i, d.sentence_of(c.span.start), "propose-cue", 0.85))
    first_of: dict[tuple, int] = {}
    for i, c in enumerate(chosen):
        key = (c.type, c.concept or label_key(c.long_form or c.span.text))
        first_of.setdefault(key, i)
    for key, i in sorted(first_of.items(), key=lambda kv: kv[1]):
        c = chosen[i]
        is_proposed = i in proposed or label_key(c.span.text) in proposed_keys or \
            label_key(c.long_form or "") in proposed_keys
        if is_proposed:
            continue
        predicate = PREDICATE_FOR_TYPE[c.type]
        cue = _USE_CUE if predicate in ("usesTechnique", "usesModel", "runsOn") else _EVAL_CUE
        same = [j for j, o in enumerate(chosen)
                if (o.type, o.concept or label_key(o.long_form or o.span.text)) == key]
        best = next((j for j in same if cue.search(d.sentence_of(chosen[j].span.start).text)),
                    None)
        j = best if best is not None else i
        evidence = d.sentence_of(chosen[j].span.start)
        confidence = round(min(c.confidence, 0.9 if best is not None else 0.6), 2)
        links.append(Link(None, predicate, j, evidence,
                          f"{predicate}:{'cue' if best is not None else 'mention'}", confidence))
    # outperforms / extends inside one sentence: proposed (or first Method) → later entity
    for start, end in d.sentences:
        sentence = d.text[start:end]
        in_sent = [i for i, c in enumerate(chosen) if start <= c.span.start < end]
        for regex, predicate in ((_OUTPERFORM, "outperforms"), (_EXTEND, "extends")):
            m = regex.search(sentence)
            if not m:
                continue
            pivot = start + m.start()
            subjects = [i for i in in_sent if chosen[i].span.end <= pivot
                        and chosen[i].type in ("Method", "Model")]
            subject = subjects[-1] if subjects else next(iter(sorted(proposed)), None)
            if subject is None:
                continue
            for j in in_sent:
                o = chosen[j]
                if o.span.start < start + m.end() or o.type not in ("Method", "Model"):
                    continue
                gap = d.text[start + m.end():o.span.start]
                # "outperforms X on/in/with Y": Y is where, not whom.
                if re.search(r"\b(?:in|on|across|using|for|with|of|at|by|under)\b", gap) or \
                        label_key(o.span.text) == label_key(chosen[subject].span.text):
                    continue
                links.append(Link(subject, predicate, j, d.span(start, end), f"{predicate}-cue",
                                  0.7))
                if predicate == "extends":
                    break
    return links


def relabel(paper: Paper, extraction: Extraction) -> Paper:
    """An untitled paper's label from what it proposes ("LOTOS: a new training paradigm…")."""
    if paper.title or not extraction.label:
        return paper
    label = " ".join(extraction.label.split())
    if len(label) > 90:
        label = label[:89].rsplit(" ", 1)[0] + "…"
    return replace(paper, label=label)
