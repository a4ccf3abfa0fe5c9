"""The term rule: multi-word terms no vocabulary lists, gated so they do not flood.

A phrase of one to three modifiers and a technique or metric head ("action chunking …" no;
"hierarchical policy learning", "sample efficiency") is a *pending* term. The paper keeps it
when the context is strong — in the title, one of the paper's author keywords, used twice in
the abstract, or right after "we use / leverage / based on / via …". Otherwise the term waits
for the corpus: ``promote_recurring`` keeps it when another paper of the same run uses the same
term, because a term two papers use is exactly what links them.

>>> from kg.model import Paper
>>> doc = Document.of(Paper(id="p", title="Hierarchical Policy Learning for Robots",
...     abstract="We study hierarchical policy learning with latent skill priors."))
>>> [(c.span.text, strong) for c, strong in term_candidates(doc, [])]
[('Hierarchical Policy Learning', True), ('hierarchical policy learning', True)]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from kg.extract.document import Document, sentence_at
from kg.extract.text import match_key
from kg.extract.words import HEAD_TYPES, NOT_USED_BEFORE, TASK_STOP
from kg.model import PREDICATE_FOR_TYPE, Candidate, EntityType, Extraction, Link

# "rate" is left out: "learning rate", "dropout rate" and "sampling rate" are settings, and the
# rates papers report (success rate, error rate) are in the vocabulary.
_HEADS = sorted((h for h, t in HEAD_TYPES.items()
                 if t in (EntityType.TECHNIQUE, EntityType.METRIC) and h != "rate"),
                key=len, reverse=True)
# Heads first, then the words before them: much faster than one pattern tried at every word.
_HEAD = re.compile(r"(?<![\w\-])(?:" + "|".join(re.escape(h) for h in _HEADS) + r")(?![\w\-])",
                   re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]*")
# Participles and gerunds that are nouns or adjectives in a term ("federated learning",
# "contrastive learning", "sampling efficiency"); any other -ed/-ing word makes a clause.
_ED_OK = set("""supervised federated distributed constrained structured weighted randomized guided
conditioned informed grounded augmented regularized layered""".split())  # noqa: SIM905
_ING_OK = set("""learning training sampling modeling modelling planning reasoning matching
clustering embedding encoding decoding prompting tracking computing processing programming
scheduling routing scaling""".split())  # noqa: SIM905
# Pronouns, verbs and generic adjectives that end up before a head word in running text:
# "we leverage search", "introduce additional training", "stable training".
_MORE_STOP = set("""model models method methods approach approaches framework data task tasks
performance results result paper work works problem problems setting settings way ways
strong good high low best better large small new novel key main overall we us it they them
he she i you one current currently machine deep standard additional extra stable unstable
leverage leverages propose proposes introduce introduces provide provides overcome overcomes
augment augments prioritize prioritizes use uses enable enables require requires perform
performs show shows study studies allow allows make makes improve improves boost boosts
reduce reduces achieve achieves yield yields need needs help helps guide guides valuable
powerful crafty smaller larger faster slower simpler single multiple naive vanilla typical
traditional conventional classical popular common modern recent advanced sophisticated
general specific particular certain various diverse
expensive costly cheap heavy light lightweight expert offline online after before during
throughout within without across resource-intensive data-driven end-to-end""".split())  # noqa: SIM905
_STRONG_BEFORE = re.compile(
    r"\b(?:use[sd]?|using|leverag\w+|employ\w*|adopt\w*|appl(?:y|ies|ied|ying)|via|through|"
    r"based\s+on|rel(?:y|ies|ying)\s+on|incorporat\w+|combin\w+\s+with|built\s+on|"
    r"powered\s+by|driven\s+by|enabled\s+by)\s+(?:the\s+|a\s+|an\s+)?$", re.IGNORECASE)
TERM_CONFIDENCE = 0.6
# A paradigm named after "for", "in" or "on" in a title is the problem the paper works on.
_PROBLEM_HEADS = {"learning", "optimization", "adaptation", "generalization"}
_TITLE_PROBLEM = re.compile(r"\b(?:for|in|on)\s+$", re.IGNORECASE)
# Heads that combine with anything ("robot training", "batch inference", "neural network
# optimization"): such a term is kept in a strong context only, never for recurring.
_WEAK_HEADS = {"training", "inference", "optimization"}


def _words_before(text: str, pos: int) -> list[tuple[int, str]]:
    """Up to three words right before ``pos`` (spaces or tabs between), with their starts.

    >>> text = "we use hierarchical policy learning"
    >>> [w for _, w in _words_before(text, text.index("learning"))]
    ['use', 'hierarchical', 'policy']
    """
    words: list[tuple[int, str]] = []
    j = pos
    while len(words) < 3:
        k = j
        while k > 0 and text[k - 1] in " \t":
            k -= 1
        if k == j:
            break
        end = k
        while k > 0 and (text[k - 1].isalnum() or text[k - 1] in "-_"):
            k -= 1
        if not _WORD.fullmatch(text, k, end):
            break
        words.insert(0, (k, text[k:end]))
        j = k
    return words


def term_candidates(d: Document, prior: Sequence[Candidate]) -> list[tuple[Candidate, bool]]:
    """Every term the rule sees, with whether its context is strong enough on its own."""
    taken = [(c.span.start, c.span.end) for c in prior]
    title_end = len(d.paper.title) if d.paper.title else -1
    keywords = {match_key(k) for k in d.paper.keywords}
    found: list[tuple[int, int, str]] = []
    for m in _HEAD.finditer(d.text):
        placed = _words_before(d.text, m.start())
        while placed and (placed[0][1].lower() in TASK_STOP or placed[0][1].lower() in _MORE_STOP
                          or placed[0][1].endswith("ly")):
            placed.pop(0)
        words = [w for _, w in placed]
        if not words or not _modifiers_ok(words):
            continue
        head = m.group(0)
        start = placed[0][0]
        end = m.end()
        if d.text[start:end] != " ".join([*words, head]) or any(
                s < end and start < e for s, e in taken):
            continue
        type_ = HEAD_TYPES[head.lower()]
        if start < title_end and type_ == "Technique" and head.lower() in _PROBLEM_HEADS and \
                _TITLE_PROBLEM.search(d.text, 0, start):
            # "… for Molecular Learning", "… in Online Continual Learning": what the title
            # says the work is for is the problem it addresses
            type_ = "Task"
        found.append((start, end, type_))
    counts = Counter(match_key(d.text[s:e]) for s, e, _ in found)
    out: list[tuple[Candidate, bool]] = []
    for start, end, type_ in found:
        key = match_key(d.text[start:end])
        sentence = d.sentence_of(start)
        strong = (start < title_end or key in keywords or counts[key] > 1
                  or bool(_STRONG_BEFORE.search(d.text[max(sentence.start, start - 40):start])))
        out.append((Candidate(d.span(start, end), type_, "term", None, TERM_CONFIDENCE), strong))
    return out


def _modifiers_ok(words: list[str]) -> bool:
    for word in words:
        lower = word.lower()
        if lower in TASK_STOP or lower in _MORE_STOP or lower.endswith("ly") or len(word) < 2:
            return False
        if lower.endswith("ed") and lower not in _ED_OK and not lower.endswith("-based"):
            return False
        if lower.endswith("ing") and lower.split("-")[-1] not in _ING_OK:
            return False
        if word[0].isupper() and not word.isupper() and not word.istitle():
            return False  # CamelCase: a name, which other rules handle
    last = words[-1].lower()
    # English compounds take singular modifiers: "policy learning", not "policies learning".
    return not (last.endswith("s") and not last.endswith(("ics", "ss", "us", "series", "sis")))


def recurring_keys(ex: Extraction) -> set[str]:
    """The term keys ``ex`` counts for (once per paper, whether kept there or pending)."""
    keys = {match_key(c.span.text) for c in ex.pending}
    keys |= {match_key(c.span.text) for c in ex.candidates if c.rule == "term"}
    return keys


def keepable(c: Candidate) -> bool:
    """Whether a pending term may be kept at all (a weak head never is)."""
    return c.span.text.rsplit(" ", 1)[-1].lower() not in _WEAK_HEADS


def promote_recurring(extractions: Sequence[Extraction]) -> list[Extraction]:
    """Keep each pending term that another paper of the run uses too (pure, order-free).

    A term counts once per paper, whether kept or pending there; a kept term is appended to
    its paper's candidates with a link of its type's predicate (``mentions`` when negated).
    """
    papers_with: Counter[str] = Counter()
    for ex in extractions:
        papers_with.update(recurring_keys(ex))
    return [promote(ex, [i for i, c in enumerate(ex.pending)
                         if papers_with[match_key(c.span.text)] >= 2 and keepable(c)])
            for ex in extractions]


def promote(ex: Extraction, kept: Sequence[int]) -> Extraction:
    """``ex`` with its pending terms ``kept`` (indices, in order) made candidates."""
    if not kept:
        return replace(ex, pending=()) if ex.pending else ex
    candidates = list(ex.candidates)
    links = list(ex.links)
    linked: set[str] = set()
    for c in (ex.pending[i] for i in kept):
        candidates.append(c)
        key = match_key(c.span.text)
        if key in linked:
            continue
        linked.add(key)
        sentence = sentence_at(ex, c.span.start)
        window = ex.paper.text[max(sentence.start, c.span.start - 80):c.span.start]
        negated = NOT_USED_BEFORE.search(window) is not None
        predicate = "mentions" if negated else PREDICATE_FOR_TYPE[c.type]
        links.append(Link(None, predicate, len(candidates) - 1, sentence,
                          f"{predicate}:recurring-term", TERM_CONFIDENCE))
    return replace(ex, candidates=tuple(candidates), links=tuple(links), pending=())
