"""The proposed-name rule: names a paper introduces, typed by their strongest evidence.

"We propose FooNet, a novel …", "the proposed framework CAV2vec", "dubbed X", "X: …" titles.
A name's type comes from how the abstract uses it ("Sheared-LLaMA models") over how it
describes it ("X, a benchmark") over the title, else Method.

>>> _head_type("a large-scale benchmark for video reasoning")
'Dataset'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kg.extract.document import Document
from kg.extract.text import singular
from kg.extract.words import (
    ADJECTIVE_TAIL,
    APPOSITIVE,
    DATASET_AFTER,
    DATASET_HEADS,
    DETERMINERS,
    GENERIC_HEADS,
    HEAD_BEFORE_NAME,
    HEAD_STOP,
    METHOD_AFTER,
    MODEL_AFTER,
    MODEL_HEADS,
    NAME,
    NAMING_CUE,
    PROPOSE_CUE,
    PROPOSE_WORD,
    STOP_NAMES,
    is_name_token,
    named_by_cue,
)
from kg.labels import LabelIndex, label_key
from kg.model import Candidate


@dataclass(frozen=True)
class Proposals:
    """What the rule found: candidates, the type of every proposed name (by label key, for
    the acronyms defined for them), the proposed names' keys and the paper's label."""

    candidates: tuple[Candidate, ...]
    types: dict[str, str]
    proposed: frozenset[str]
    label: str | None


def _head_type(phrase: str) -> str:
    """The type the head noun of a description gives a name (Method unless it names a
    dataset or a model).

    >>> _head_type("a new score-based diffusion generative model guided by physics")
    'Model'
    >>> _head_type("a decoder-only transformer with dense self-attention")
    'Model'
    """
    words: list[str] = []
    for word in re.findall(r"[A-Za-z][\w\-]*", phrase):
        if word.lower() in HEAD_STOP or (word.endswith("ly") and len(word) > 4
                                          and "-" not in word):  # (not "decoder-only")
            break
        if words and words[-1] not in ("a", "an", "the") and word.endswith("ed") and \
                len(word) > 4 and "-" not in word:
            break  # "a … model guided by": the head ends; "An Advanced", "score-based" do not
        words.append(word.lower())
    head = singular(words[-1]) if words else ""
    if head in DATASET_HEADS or head.endswith("bench"):
        return "Dataset"
    if head in MODEL_HEADS:
        return "Model"
    return "Method"


# A release number written apart from its name ("Mega-TTS 2, a …", "ROS 2 is"): part of the
# name when punctuation or a verb follows, so "X 2 datasets" stays a count.
VERSION_APART = re.compile(r"\s\d{1,2}(?:\.\d)?(?=[,;:)]|\.\s|\s+\(|\s+(?:is|are|was|can|could|"
                           r"achieves?|outperforms?|uses?|improves?|enables?)\b)")
# "we present IN-CONTEXT PRETRAINING, a …": two to four words in capitals (the last not a
# one- or two-letter word: "LLMS IN RL" is not cut at "IN").
CAPS_RUN = re.compile(r"[A-Z][A-Z0-9\-]*(?:\s+[A-Z][A-Z0-9\-]*){1,3}(?<=[A-Z0-9]{3})(?![\w\-])")
# "we propose Decor, a variant of …", "we introduce Mol-Instructions, a …": one capitalised
# word (or hyphenated compound) that an appositive describes.
CAPITALISED = r"[A-Z][a-z]{2,}(?:-[A-Za-z][a-z]+)*"
WORD_APPOSITIVE = re.compile(CAPITALISED + r"(?=\s*(?:\([^)]{1,80}\)\s*)?,\s+(?:a|an|the)\s)")
# "an approach named Intra-Fusion, challenging …", "a solver called Kissat.": after a naming
# cue, such a word is a name where the noun phrase ends with it.
WORD_NAMED = re.compile(CAPITALISED + r"(?=\s*[,.;:(]|\s+(?:that|which|is|was)\b)")


def _name_at(text: str, pos: int, named: bool = False) -> tuple[int, int] | None:
    """A proposed name starting at ``pos``: a name token (with a release number written apart),
    a Title Case run of 2–8 words (for/of/with/and/in/on/to/via may join two), or one
    capitalised word an appositive describes or (after a naming cue: ``named``) that ends its
    noun phrase."""
    m = NAME.match(text, pos)
    if not m:
        return None
    token = m.group(0)
    if is_name_token(token):
        if ADJECTIVE_TAIL.search(token):  # "present GPT-generated explanations", "LLM-based"
            return None
        caps = CAPS_RUN.match(text, m.start()) if token.isupper() else None
        if caps:  # "IN-CONTEXT PRETRAINING": a name written in capitals, word by word
            return m.start(), caps.end()
        version = VERSION_APART.match(text, m.end())
        return m.start(), version.end() if version else m.end()
    # (a function word may join Title Case words: "Federated Learning for Global Flatness")
    run = re.match(r"(?:[A-Z][\w\-]*[ \t]+(?:(?:for|of|with|and|in|on|to|via)[ \t]+"
                   r"(?=[A-Z][a-z]))?){1,7}[A-Z][\w\-]*", text[pos:])
    if run and run.group(0).split()[0] not in STOP_NAMES:
        name = run.group(0)
        halves = name.split(" and ", 1)
        if len(halves) == 2 and min(len(h.split()) for h in halves) < 2:
            name = halves[0]  # "Hiera and ViTDet": two names; "Deep Sets and Quantile Pooling"
        if " " in name:
            return pos, pos + len(name)
    word = WORD_APPOSITIVE.match(text, pos) or (WORD_NAMED.match(text, pos) if named else None)
    if word and token not in STOP_NAMES:
        return pos, word.end()
    return None

def proposals(index: LabelIndex, d: Document, prior: Sequence[Candidate]) -> Proposals:
    """Names the paper introduces; ``prior`` holds the candidates of the earlier rules."""
    text = d.text
    # start, end, type, description, strength of the type evidence
    found = [*_after_cues(text), *_appositives(d), *_dubbed(d), *_title_name(d), *_headed(d)]
    typed = _types(text, found, prior)
    out: list[Candidate] = []
    proposed: set[str] = set()
    label: str | None = None
    seen: set[tuple[int, int]] = set()
    for start, end, _, description, _ in found:
        name = text[start:end].strip()
        if d.paper.text[start:start + len(name)] != name:
            continue  # markup inside: "Neur}$on $\underline{Rev}$italization" is not a name
        type_ = typed[label_key(name)]
        end = start + len(name)
        if (start, end) in seen or not name or name.lower() in ("it", "this", "them"):
            continue
        seen.add((start, end))
        labels = index.lookup(name)
        concept = next((lab.concept for lab in labels if lab.type == type_), None)
        out.append(Candidate(d.span(start, end), type_, "proposed-name", concept, 0.85))
        proposed.add(label_key(name))
        if label is None:
            label = f"{name}: {description}" if description else name
    # "We propose differentially private bias-term fine-tuning (DP-BiTFiT)": the long form an
    # acronym defines right after a proposing cue is the paper's too.
    proposed.update(label_key(c.span.text) for c in prior if c.rule == "acronym-definition"
                    and c.concept is None and c.long_form is None
                    and named_by_cue(text, c.span.start))
    return Proposals(tuple(out), typed, frozenset(proposed), label)


def _after_cues(text: str) -> list[tuple]:
    """What follows "we propose / introduce / present …"."""
    found: list[tuple] = []
    for cue in PROPOSE_CUE.finditer(text):
        det = DETERMINERS.match(text, cue.end())
        pos = det.end() if det else cue.end()
        named = _name_at(text, pos)
        if named is None:
            # lowercase noun phrase before ", a novel …": "we introduce model folding, a novel"
            np_ = re.match(r"([a-z][\w\-]*(?:\s+[a-z][\w\-]*){0,3})(?=\s*(?:\([^)]{1,15}\))?,\s+"
                           r"(?:a|an)\s)", text[pos:])
            if np_ and APPOSITIVE.match(text, pos + np_.end()):
                named = (pos, pos + np_.end())
        if named is None:
            # "we propose a new benchmark, called X"
            naming = NAMING_CUE.search(text, pos, min(len(text), pos + 200))
            if naming and "." not in text[pos:naming.start()]:
                named = _name_at(text, naming.end(), named=True)
                if named:
                    found.append((*named, _named_type(text, named, text[pos:naming.start()]),
                                  text[pos:naming.start()].strip(" ,"), 2))
            continue
        found.append((*named, *_described(text, named)))
    return found


def _named_type(text: str, named: tuple[int, int], before: str) -> str:
    """The type of a name given after a naming cue: its own head word when that says model or
    dataset ("a message-passing function called Multiset to Multiset GNN"), else the head of
    what the cue follows."""
    own = _head_type(text[named[0]:named[1]].split()[-1])
    return own if own != "Method" else _head_type(before)


def _described(text: str, named: tuple[int, int]) -> tuple[str, str, int]:
    """A proposed name's type, description and strength of the type evidence, from what
    follows it: ", a benchmark for …", "the W4NT3D benchmark", else its own head word."""
    tail = text[named[1]:named[1] + 160]
    appos = APPOSITIVE.match(tail) or re.match(r"\s*(?:\([^)]{1,80}\)\s*)?[,:]\s+(?:a|an)\s",
                                                 tail)  # "X, a …", "PAWS-Data: an … dataset"
    description = ""
    if appos:
        description = re.split(r"[.;]", tail[appos.start():].lstrip(" ,"), maxsplit=1)[0]
        description = re.sub(r"^\([^)]*\)\s*,?\s*", "", description).strip(" ,")
    after = re.match(r"\s+([A-Za-z]+)", text[named[1]:named[1] + 30])
    if description:
        return _head_type(description), description, 2
    if after and singular(after.group(1).lower()) in (DATASET_HEADS | MODEL_HEADS |
                                                       GENERIC_HEADS):
        return _head_type(after.group(1)), description, 2  # "the W4NT3D benchmark"
    # "a Latent Structural Diffusion Model": the name's own head word
    type_ = _head_type(text[named[0]:named[1]].split()[-1])
    return type_, description, 2 if type_ != "Method" else 0


def _appositives(d: Document) -> list[tuple]:
    """"X, a novel …" anywhere."""
    found: list[tuple] = []
    for m in d.names:
        appos = APPOSITIVE.match(d.text, m.end())
        if appos:
            description = re.split(r"[.;]", d.text[appos.start():appos.start() + 160].lstrip(
                " ,"), maxsplit=1)[0]
            found.append((m.start(), m.end(), _head_type(description), description.strip(" ,"),
                          2))
    return found


def _dubbed(d: Document) -> list[tuple]:
    """"dubbed X", "called X": names (or Title Case runs) after a naming cue."""
    text = d.text
    found: list[tuple] = []
    for m in NAMING_CUE.finditer(text):
        named = _name_at(text, m.end(), named=True)
        if named:
            sent = d.sentence_of(m.start())
            found.append((*named, _named_type(text, named, text[sent.start:m.start()][-60:]),
                          "", 1))
    return found


def _title_name(d: Document) -> list[tuple]:
    """"Name: what it is" titles."""
    title = d.paper.title
    if not title:
        return []
    head = re.match(r"\s*([A-Za-z][\w\-.]*(?:\s[A-Z][\w\-.]*){0,2}(?:\s\d{1,2}(?:\.\d)?)?)\s*:\s+"
                    r"(\S.*)", title)
    if head and any(is_name_token(w) for w in head.group(1).split()):
        return [(head.start(1), head.end(1), _head_type(head.group(2)), head.group(2).strip(), 1)]
    return []


def _headed(d: Document) -> list[tuple]:
    """"our framework X", "we propose a model, X": a name after a head word."""
    text = d.text
    found: list[tuple] = []
    for m in d.names:
        sent = d.sentence_of(m.start())
        before = text[max(sent.start, m.start() - 60):m.start()]
        head_m = HEAD_BEFORE_NAME.search(before)
        if head_m and (PROPOSE_WORD.search(text[sent.start:m.start()]) or re.search(
                r"\b(?:our|the proposed)\s+\w*\s*$", before[:head_m.start()], re.IGNORECASE)):
            found.append((m.start(), m.end(), _head_type(head_m.group("head")), "", 2))
    return found


def _types(text: str, found: list[tuple], prior: Sequence[Candidate]) -> dict[str, str]:
    """One type per proposed name (by label key), from the strongest evidence: how the abstract
    uses it ("Sheared-LLaMA models") > how it describes it ("X, a benchmark") > the title >
    Method. A short form and its long form ("SemiReward" / "Semi-supervised Reward") are one
    name."""
    group = {label_key(c.span.text): label_key(c.long_form) for c in prior
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
    return typed


def retype_acronyms(candidates: Sequence[Candidate], types: dict[str, str]) -> list[Candidate]:
    """An acronym defined for a proposed name takes the name's type ("RETSim (Resilient and
    Efficient Text Similarity), a … model")."""
    out = list(candidates)
    for i, c in enumerate(out):
        if c.rule == "acronym-definition" and c.concept is None:
            for form in (c.span.text, c.long_form or ""):
                if label_key(form) in types and types[label_key(form)] != c.type:
                    out[i] = replace(c, type=types[label_key(form)])
    return out


def _usage_type(text: str, key: str, found: list[tuple]) -> str | None:
    """"Sheared-LLaMA models", "the W4NT3D benchmark": the word after the name's uses, when
    they agree ("MAgg models metamorphic relations" and "the MAgg method": no answer; the
    description decides).

    >>> text = "We propose MAgg, a method. MAgg models relations. The MAgg method wins."
    >>> _usage_type(text, "magg", [(11, 15)]) is None
    True
    >>> _usage_type("We present the Sheared-LLaMA series.", "shearedllama", [(15, 28)])
    'Model'
    """
    for start, end, *_ in found:
        if label_key(text[start:end].strip()) != key:
            continue
        name = text[start:end].strip()
        flexible = r"[\s\-]?".join(map(re.escape, re.split(r"[\s\-]+", name)))
        seen = set()
        for m in re.finditer(r"(?<![\w\-])" + flexible + r"(?![\w\-])", text):
            after = text[m.end():m.end() + 30]
            if MODEL_AFTER.match(after):
                seen.add("Model")
            elif DATASET_AFTER.match(after):
                seen.add("Dataset")
            elif METHOD_AFTER.match(after):
                seen.add("Method")
        return seen.pop() if len(seen) == 1 and "Method" not in seen else None
    return None


# ---------------------------------------------------------------- context patterns

