"""The word lists and patterns the rules share, defined once.

>>> is_name_token("LLaMA-2"), is_name_token("However"), is_name_token("ResNet")
(True, False, True)
"""

from __future__ import annotations

import re

# A "name token": starts with a letter, may contain digits, dots, hyphens, slashes.
# "/" joins only a patch size after a capital (ViT-B/16); "CIFAR-10/100" is two names.
NAME = re.compile(r"(?<![\w\-/.])[A-Za-z][A-Za-z0-9]*(?:[\-.][A-Za-z0-9]+|(?<=[A-Z])/\d+)*"
                   r"(?![\w\-])")
# Only names with a digit or a capital after the first letter can be versioned/new names.
MARKED_NAME = re.compile(r"(?<![\w\-/.])[A-Za-z](?=[A-Za-z0-9\-./]*?[A-Z0-9])[A-Za-z0-9]*"
                          r"(?:[\-.][A-Za-z0-9]+|(?<=[A-Z])/\d+)*(?![\w\-])")
VERSION_TAIL = re.compile(r"^(?:[\-.]?(?:v?\d+(?:\.\d+)*[A-Za-z]?|[BbMmKk]|XL|XXL|o|mini|Turbo|"
                          r"Instruct|Chat|Base|Large|Small|Tiny|Pro|Plus|Lightning|Flash|Coder|"
                          r"Math|VL|Vision|Omni|Ultra|Nano|Max|Medium|Huge|XS|Distill))+$")
# "CIFAR10/100", "CIFAR-10/100": a numbered name and more numbers of the same family.
COORDINATED = re.compile(r"(?<![\w\-/])([A-Za-z][A-Za-z\-]*?)(-?)(\d+)((?:/\d+)+)(?![\w\-/])")
SIZE = re.compile(r"\d+(?:\.\d+)?[BMK]$")
ACRONYM_PAREN = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9\-]{0,11}?)(?:s)?\s*(?:;[^)]*)?\)")
WORD = re.compile(r"[A-Za-z0-9][\w\-']*")

PROPOSE_CUE = re.compile(
    r"\b(?:we|this\s+(?:paper|work)|our\s+(?:paper|work))\s+(?:(?:first|further|then|also|"
    r"hereby|here|instead|therefore|thus|hence|now|finally|additionally)\s+)?"
    r"(?:propose|introduce|present|develop|design|devise|build|create|release|"
    r"construct|curate|contribute|offer|formulate)[sd]?\b"
    # "… and propose Maestro, a …", "by presenting Vocos, a …" (we, said before)
    r"|\b(?:and|by)\s+(?:propos(?:e|es|ing)|introduc(?:e|es|ing)|present(?:s|ing)?)\b",
    re.IGNORECASE,
)
PROPOSE_WORD = re.compile(r"\b(?:propos|introduc|present|design|develop|devis)\w*", re.I)
# "Our method, LGA", "the proposed framework CAV2vec", "a novel algorithm MFTPL-P"
HEAD_BEFORE_NAME = re.compile(
    r"\b(?P<head>method|approach|framework|model|algorithm|technique|system|benchmark|dataset|"
    r"suite|architecture|network|agent|pipeline|strategy|MLLM|LLM|VLM|tool|library|toolkit|"
    r"solver|optimizer|paradigm)s?\s*(?:\([A-Za-z\-]{2,10}\))?\s*[,:]?\s*$", re.IGNORECASE)
NAMING_CUE = re.compile(
    r"\b(?:called|named|dubbed|termed|coined|namely|entitled)\s*[:,]?\s+(?:as\s+)?",
    re.IGNORECASE)  # ("dubbed as DeSA")
APPOSITIVE = re.compile(
    r"\s*(?:\([^)]{1,80}\)\s*)?,\s+(?:a|an|the)\s+(?:novel|new|simple|first|general|unified|"
    r"principled|efficient|effective|lightweight|scalable|large-scale|comprehensive|"
    r"challenging|training-free|plug-and-play|data-free|flexible|versatile|powerful|robust|"
    r"fast|practical|theoretically|generic|modular|open-source|holistic|systematic)\b",
    re.IGNORECASE,
)
DETERMINERS = re.compile(
    r"\s+(?:(?:a|an|the|our|two|three|several)\s+)?(?:(?:novel|new|simple|general|unified|"
    r"principled|efficient|effective|lightweight|scalable|first|generic|modular|practical|"
    r"large-scale|comprehensive|powerful|training-free|plug-and-play)\s+)*",
    re.IGNORECASE,
)
def named_by_cue(text: str, start: int) -> bool:
    """Whether the long form starting at ``start`` is what "we propose / introduce …" or
    "… namely / called" names.

    >>> t = "We propose differentially private bias-term fine-tuning (DP-BiTFiT)."
    >>> named_by_cue(t, 11), named_by_cue("We use bias-term fine-tuning (BiTFiT).", 7)
    (True, False)
    >>> named_by_cue("a control approach, namely Control with Patterns (CWP)", 27)
    True
    """
    before = text[max(0, start - 60):start]
    return any(cue.end() == len(before) or DETERMINERS.fullmatch(before, cue.end())
               for cue in PROPOSE_CUE.finditer(before)) or any(
        cue.end() == len(before) for cue in NAMING_CUE.finditer(before))


HEAD_STOP = {
    "that", "which", "for", "to", "of", "designed", "with", "in", "on", "by", "where", "and",
    "from", "using", "based", "via", "capable", "able", "built", "tailored", "consisting",
    "specifically", "aimed", "inspired", "grounded", "leveraging", "named", "called", "dubbed",
    "including", "containing", "comprising", "featuring", "spanning", "covering", "whose",
    "across", "over", "at", "as", "into", "under", "within", "between", "through",
}
DATASET_HEADS = {"benchmark", "dataset", "corpus", "suite", "testbed", "collection",
                  "leaderboard", "bench", "data", "arena"}
MODEL_HEADS = {"model", "llm", "network", "architecture", "transformer", "backbone",
                "foundation", "encoder", "decoder", "vlm", "mllm", "vla", "gnn", "cnn", "rnn",
                "net"}

# The type a head word gives a phrase: "causal effect estimation" is a Task, "contrastive
# learning" a Technique, "success rate" a Metric. Used by the acronym, task and term rules.
HEAD_TYPES: dict[str, str] = {}
for _type, _heads in {
    "Task": "recognition generation classification detection segmentation prediction estimation "
            "translation answering retrieval summarization forecasting captioning synthesis "
            "tracking localization parsing reconstruction completion planning navigation "
            "manipulation editing reasoning regression locomotion grasping servoing",
    "Dataset": "dataset benchmark corpus suite testbed",
    "Metric": "score error accuracy ratio rate regret",
    "Technique": "learning training optimization attention distillation regularization sampling "
                 "decoding tuning fine-tuning pruning quantization alignment augmentation "
                 "embedding encoding normalization inference compression caching prompting "
                 "pretraining pre-training adaptation minimization maximization control "
                 "modeling modelling guidance filtering matching smoothing masking tokenization "
                 "search programming",
    "Model": "network networks transformer autoencoder model",
}.items():
    for _head in _heads.split():
        HEAD_TYPES[_head] = _type
TASK_HEADS = "|".join(sorted(h for h, t in HEAD_TYPES.items() if t == "Task"))

HARDWARE_CONTEXT = re.compile(r"^\s+(?:GPUs?|TPUs?|chips?|accelerators?|cards?)\b")
NUMBER_FORMAT = re.compile(r"^(?:FP|INT|BF|UINT|W\d+A)\d+$")
DATASET_AFTER = re.compile(r"^\s+(?:dataset|benchmark|corpus|suite|datasets|benchmarks|"
                            r"test\s+set|validation\s+set|split)\b", re.IGNORECASE)
DATASET_BEFORE = re.compile(r"\b(?:on|using|across|from)\s+(?:the\s+)?(?:challenging\s+|"
                             r"popular\s+|standard\s+|widely[- ]used\s+)?$", re.IGNORECASE)
# "experiments on X", "we evaluate on X", "results on the X": an evaluation on a name.
EVALUATED_ON = re.compile(r"\b(?:experiments?|results|evaluat(?:e|ed|ing|ions?)|tested)"
                          r"\s+(?:\w+\s+){0,2}?on\s+(?:the\s+)?$", re.IGNORECASE)
MODEL_AFTER = re.compile(r"^\s*(?:-?\s*(?:based\s+)?(?:models?|LLMs?|backbones?|"
                          r"architectures?|checkpoints?|family|families|series)\b)")
OUTPERFORM = re.compile(r"\b(?:outperform(?:s|ed|ing)?|surpass(?:es|ed|ing)?|beat(?:s|ing)?|"
                         r"exceed(?:s|ed|ing)?|better\s+than|superior\s+to)\b", re.IGNORECASE)
EXTEND = re.compile(r"\b(?:extend(?:s|ed|ing)?|build(?:s|ing)?\s+(?:up)?on|built\s+(?:up)?on|"
                     r"generaliz(?:e|es|ed|ing)|an\s+extension\s+of|based\s+on)\b", re.IGNORECASE)
USE_CUE = re.compile(r"\b(?:us(?:e|es|ed|ing)|employ|leverag|utiliz|apply|appl(?:ies|ied)|"
                      r"adopt|incorporat|integrat|combin|via|through|with|based\s+on|built\s+on|"
                      r"propos|introduc)", re.IGNORECASE)
EVAL_CUE = re.compile(r"\b(?:on|evaluat|experiment|benchmark|test|results?|achiev|"
                       r"state-of-the-art|outperform|improv)", re.IGNORECASE)

STOP_NAMES = {
    "We", "Our", "In", "This", "The", "However", "It", "To", "For", "Code", "Experiments",
    "Results", "Further", "Finally", "Moreover", "Specifically", "Additionally", "First",
    "Second", "Third", "Thus", "Therefore", "Existing", "Recent", "Previous", "Empirically",
    "Furthermore", "Extensive", "Through", "Based", "Unlike", "While", "As", "By", "With",
    "Given", "These", "Such", "Theoretically", "Notably", "Overall", "Here", "A", "An", "Not",
    "Yes", "No", "AI", "ML", "DL", "NN", "NNs", "II", "III", "IV", "OOD", "SOTA", "API", "APIs",
    "ID", "IID", "iid", "CV", "NLP", "USA", "UK", "EU", "TL", "DR", "PhD", "LaTeX", "URL",
}
NOT_NAMES_RE = re.compile(r"^(?:[A-Z]\d?|\d.*|[ivx]+|[A-Z][a-z]+|[a-z].*|.*\d{4}.*|"
                           r"[A-Z][a-z]+(?:-[A-Za-z][a-z]+)+)$")



GENERIC_HEADS = {"method", "approach", "framework", "technique", "algorithm", "module",
                  "strategy", "scheme", "mechanism", "paradigm", "pipeline", "system"}
# "the MAgg method": a use of a name that says it is a method.
METHOD_AFTER = re.compile(r"^\s+(?:" + "|".join(sorted(GENERIC_HEADS)) + r")s?\b")


# A task phrase: one or two modifiers before a task head ("causal effect estimation"). The
# head is found first and the words before it after, which is much faster than one pattern.
TASK_HEAD = re.compile(r"(?<=\s)(?:" + TASK_HEADS + r")\b")
TASK_MODIFIERS = re.compile(r"(?<![\w\-])(?:(?:[a-z][a-z0-9\-]*|[1-9]D)\s+){1,2}$")
TASK_STOP = set("""
a an the of for in on and or to with by from as at via into over under between across than is
are be been was were this that these those our their its his her such which whose what
efficient effective accurate robust better improved existing downstream various many several
two three four five six seven eight nine ten numerous useful why how when where showing
demonstrating including using leveraging allowing requiring supporting yielding achieving
performing providing making
multiple different other new novel challenging complex real-world large-scale fine-grained
high-quality low-quality high low fast faster scalable general generic standard proposed based
learned trained training test testing inference joint end-to-end simple more most less first
second final overall each all both any some further future prior previous precise reliable
strong stronger weak zero-shot few-shot one-shot open-ended do does not can could may might
will would should must also only even then thus hence enable enables enabling achieve achieves
improve improves improving perform performs through upon within without toward towards
demonstrate demonstrates show shows study studies studying allow allows make makes require
requires support supports facilitate facilitates yield yields provide provides impressive
remarkable promising superior excellent outstanding significant substantial competitive
optimal complete fixed-size online offline accurate precise reliable stable proficient
arbitrary specific particular certain typical successful successive subsequent
""".split())  # noqa: SIM905 (a word list reads better as text)


# A coined name: a lower-case letter followed by a capital inside the word (not "iPhone").
CAMEL = re.compile(r"^[A-Z][A-Za-z0-9]*[a-z][A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*$")
CAMEL_STOP = set("""
GitHub PyTorch TensorFlow OpenAI DeepMind YouTube JavaScript LaTeX TypeScript HuggingFace
LinkedIn PayPal PowerPoint MatLab MATLAB NumPy SciPy JaX McDonald McCulloch MacBook
WordPress DeepSeek ChatBot AutoML PhD PhDs NeurIPS ICLR ICML CoRL OpenReview ArXiv
""".split())  # noqa: SIM905


# "LLM-based", "BERT-style", "IO-aware", "CLIP-Guided": a name made an adjective, not a name.
ADJECTIVE_TAIL = re.compile(r"-(?:[a-z]+ed|based|like|style|driven|aware|free|wise|level|"
                            r"scale|specific|type)$", re.IGNORECASE)
# "GP-UCB", "PO-RLHF", "SNLI-VE": parts each a name, joined by hyphens.
HYPHEN_NAME = re.compile(r"[A-Z0-9][A-Za-z0-9]*(?:-[A-Z0-9][A-Za-z0-9]*)+")


# Which rule wins an overlap of equal length, and how sure each rule is of its type.
RULE_PRIORITY = {
    # (a paper's own acronym wins its later uses from the vocabulary: "importance sampling
    # (IS) … IS baselines" is not the Inception Score)
    "acronym-definition": 6, "proposed-name": 5, "acronym-use": 5, "vocabulary": 4,
    "vocabulary-version": 4, "proposed-name-use": 3, "context-model": 2, "context-dataset": 2,
    "context-hardware": 2, "context-method": 2, "context-metric": 2, "named-entity": 1,
    "task-phrase": 1, "term": 1,
}
TYPE_CONFIDENCE = {"vocabulary": 0.9, "vocabulary-version": 0.85, "acronym-definition": 0.85,
                   "acronym-use": 0.8, "proposed-name": 0.85, "proposed-name-use": 0.8,
                   "context-model": 0.65, "context-dataset": 0.7, "context-hardware": 0.7,
                   "context-method": 0.65, "context-metric": 0.6,
                   "named-entity": 0.5, "task-phrase": 0.6, "term": 0.6}


def is_name_token(token: str) -> bool:
    """A token that can be a name: a capital after the first letter, or a digit."""
    if token in STOP_NAMES or len(token) < 2 or NOT_NAMES_RE.match(token):
        return False
    return any(ch.isupper() for ch in token[1:]) or any(ch.isdigit() for ch in token)


# Uses versus mentions: an occurrence right after one of these, in the same clause, is negated
# ("requires neither caching", "without fine-tuning") or contrasted ("unlike X", "rather than
# X", "faster than X"): the paper does not use it there.
NOT_USED_BEFORE = re.compile(
    r"(?:\b(?:without|neither|nor|instead\s+of|rather\s+than|unlike|in\s+contrast\s+to|"
    r"as\s+opposed\s+to|contrary\s+to|free\s+(?:of|from)|no\s+need\s+(?:for|of)|"
    r"not\s+necessarily|"
    r"(?:does|do|did|is|are|was|were|can|could|need|needs|should)\s+not(?!\s+only)"
    r"(?:\s+(?:\w+|\([^()]{1,30}\))){0,2}|never(?:\s+\w+)?|(?:the\s+)?(?:lack|absence)\s+of|"
    r"avoid(?:s|ing|ed)?(?:\s+the\s+need\s+for)?|"
    r"eliminat\w*\s+(?:the\s+)?need\s+for|obviat\w*\s+(?:the\s+)?need\s+for|"
    r"bypass\w*|circumvent\w*|dispens\w+\s+with|alternatives?\s+to|replac(?:e|es|ed|ing)|"
    r"compared\s+(?:to|with)|in\s+comparison\s+(?:to|with)|than|no)"
    r"(?:\s+(?:relying|depending|requiring|using|needing|resorting|recourse|need|needs|for|on|"
    r"to|of|the|a|an|any|such|further|more|model|models|parameters?|weights?|human|manual|"
    r"costly|expensive|explicit|additional|extra|full|standard|"
    r"conventional|traditional|existing|prior|previous|vanilla|naive|heavy|large|complex|"
    r"separate|dedicated|external|specialized|local|global|per-\w+|[a-z]+(?:-[a-z]+)+))*"
    r"\s+$)",
    re.IGNORECASE)
# A title that opens, or goes on after a colon, with "No X" or "Without X" ("No Cache, No
# Problem: …") negates X: a title is a phrase, so NOT_USED_BEFORE's clause rules do not apply.
TITLE_NEGATION = re.compile(r"(?:^|[:;,.!?]\s*)(?:no|without)\s+$", re.IGNORECASE)
# "No Quantization Left Behind" includes it: the idiom is not a negation.
LEFT_BEHIND = re.compile(r"\s+left\s+behind\b", re.IGNORECASE)
# "Existing methods rely on X, which …", "Previous works such as X": prior work only.
PRIOR_WORK_SENTENCE = re.compile(
    r"^\W*(?:(?:however|yet|but|unfortunately|nevertheless|notably)\W+)?(?:most\s+|many\s+|"
    r"some\s+|several\s+|these\s+|such\s+|a\s+|an\s+)?(?:existing|previous|prior|conventional|"
    r"traditional|classical|earlier|current|popular|mainstream|standard|recent|typical|"
    r"common)\s+(?:[\w\-]+\s+){0,3}?(?:methods?|approaches|works?|studies|techniques|"
    r"solutions|frameworks|algorithms|systems|literature|research|attempts|efforts|baselines|"
    r"pipelines|paradigms|strategies|designs|practices?|schemes)\b"
    r"|^\W*(?:these|those)\s+(?:methods|approaches|works|techniques)\b"
    r"|^\W*(?:traditionally|historically|previously|conventionally|classically|for\s+(?:a\s+)?"
    r"(?:very\s+)?long\s+time|for\s+decades)\b"
    # "Recently, a variety of algorithms … have been proposed.": no "we" in it, someone else's.
    r"|^\W*recently\W+(?:(?!\b(?:we|our|this)\b)[^;:])*?\b(?:(?:have|has)\s+been|was|were)\s+"
    r"(?:proposed|developed|introduced|established|shown)\b",
    re.IGNORECASE)
# Within a sentence, what follows "prior work has …", "… have been proposed that use", "inspired
# by the success of" is someone else's work.
PRIOR_WORK_BEFORE = re.compile(
    r"\b(?:(?:prior|previous|existing|earlier|past|traditional|conventional|other)\s+"
    r"(?:works?|methods?|approaches|studies|research|literature|efforts|attempts|techniques)\s+"
    r"(?:has|have|had|typically|usually|often|mostly|either|rely|relied|use|used|employ|"
    r"adopt|focus|require)|researchers\s+(?:have|had)|(?:have|has)\s+been\s+(?:proposed|"
    r"developed|introduced|studied|explored)|(?:is|are)\s+(?:commonly|widely|often|typically|"
    r"usually)\s+used\s+(?:to|for|in)|proposed\s+(?:so\s+far|previously|in\s+the\s+"
    r"literature)|et\s+al\.?\s*(?:\(\d{4}\w?\))?\s*,?\s+(?:who|which)|(?:was|were|(?:has|have)\s+"
    r"been)\s+(?:only\s+)?(?:partially|previously)\s+(?:verified|validated|confirmed|shown|"
    r"tested|studied|observed|demonstrated)"
    # "… (not we) often rely on X": what others generally need
    r"|^(?:(?!\b(?:we|our|this|here)\b)[^;:])*?\b(?:often|typically|usually|conventionally|"
    r"traditionally|generally|commonly)\s+(?:rel(?:y|ies)\s+on|requires?|depends?\s+on))\b",
    re.IGNORECASE)
# Background: a sentence about the field, not this paper ("LLMs have shown…", "RL has been
# applied to…", "Recent advances in X…"). What it names as its subject is a mention: hub
# techniques (large language models, RL, fine-tuning) linked every paper that opened so.
BACKGROUND_OPENER = re.compile(
    r"^\W*(?:(?:in\s+)?recent\s+years\W+|recently\W+|nowadays\W+)?(?:with\s+)?(?:the\s+)?"
    r"(?:(?:recent|rapid|remarkable|significant|tremendous|impressive)\s+)*(?:advances?|"
    r"advancements?|progress|developments?|breakthroughs?|success(?:es)?|rise|advent|emergence|"
    r"popularity|proliferation)\s+(?:in|of)\s+[^,;:]{0,80}", re.IGNORECASE)
BACKGROUND_VERB = re.compile(
    # (the subject may hold an acronym in parentheses: "Recent large language models (LLMs)")
    r"^\W*(?:(?:in\s+)?recent\s+years\W+|recently\W+|nowadays\W+)?(?:(?!\b(?:we|our|this|"
    r"here|in)\b)(?:[^,;:()]|\([A-Za-z\-]{2,12}\)))+?\s(?:ha(?:s|ve)\s+(?:recently\s+|also\s+|"
    r"already\s+)?(?:shown|witnessed|seen|"
    r"demonstrated|achieved|emerged|become|gained|attracted|revolutioni[sz]ed|transformed|made|"
    r"exhibited|proven|garnered|enabled|been\s+(?:widely\s+|successfully\s+|increasingly\s+|"
    r"extensively\s+)?(?:applied|used|adopted|deployed|employed|studied|explored))|(?:are|is)\s+"
    r"(?:increasingly|widely|commonly)\s+(?:used|adopted|deployed|employed|applied)|(?:show|"
    r"exhibit|demonstrate|achieve)s?\s+(?:remarkable|impressive|great|strong|promising|"
    r"exceptional|outstanding|significant|tremendous|substantial)|excels?\s+(?:at|in)|"
    # "RL usually relies on …", "Diffusion models often require …": what a field generally does
    r"(?:often|typically|usually|conventionally|traditionally|generally|commonly)\s+"
    r"(?:rel(?:y|ies)|requires?|depends?))\b"
    # "As LLMs become commonplace, …", "As diffusion models grow in size, …"
    r"|^\W*as\s+(?:(?!\b(?:we|our|this)\b)[^,;:])+?\s(?:becomes?|grows?|gains?|continues?|"
    r"are\s+increasingly|is\s+increasingly)\b",
    re.IGNORECASE)
# A negated reliance reaches over its object's clause: "does not rely on the assumption that
# the operator is L-Lipschitz", "does not require access to a KV cache" (not past "and", "but",
# "after"…: "does not require retraining after pruning" prunes).
NEGATED_RELIANCE = re.compile(
    r"\b(?:does|do|did|need|needs|can|could|should)\s+not\s+(?:rely|depend|require|need|assume|"
    r"make\s+use|resort)\w*(?:\s+(?:on|upon|of|to))?(?:\s+(?!(?:and|but|while|whereas|yet|"
    r"instead|which|thus|hence|we|our|it|so|rather|only|after|before|during|when|once|since|"
    r"because|as|like|unlike)\b)[\w\-()$\\]+){0,10}?\s*-?$",
    re.IGNORECASE)
# Said of an assumption after it: "Lipschitz continuity assumptions … are restrictive and do
# not hold in many problems".
REJECTED_AFTER = re.compile(
    r"[^.;]{0,60}?\b(?:assumptions?|conditions?)\b[^.;]{0,40}?\b(?:(?:is|are)\s+(?:often\s+|too\s+|"
    r"overly\s+)?(?:restrictive|unrealistic|violated)|(?:do|does|may|might|need)\s+not\s+hold|"
    r"fails?\s+to\s+hold)",
    re.IGNORECASE)
INSPIRED_BY = re.compile(r"\binspired\s+by\b[^,;]*$", re.IGNORECASE)
CONTRAST_CUE = re.compile(r"(?i)unlike|in\s+contrast|as\s+opposed|contrary|compared|"
                          r"in\s+comparison|than|rather|instead|alternative|replac")
COORDINATION = re.compile(r"\s*(?:,|and|or|nor|, and|, or)\s*")


# Aliases that are also everyday phrases, or have another sense: (the alias, any case; the
# words before it, after it, or anywhere in the paper that show the other sense). A match in
# that context is not the concept: "GPU L2 cache misses" are hardware, not caching; "quantizing
# Markov chains" in a quantum paper is quantum computing; "1-bit matrix completion" is about
# binary observations. An alias listed with ``needs`` counts only in a paper that also says
# it: transfer learning's "feature reuse" is not caching unless the paper speaks of computation.
OTHER_SENSE = (
    (re.compile(r"caches?", re.I),
     re.compile(r"(?:\bL[123]|\b[GC]PU|on-chip|accelerator'?s?|processor'?s?|\bfast|last-level|"
                r"\b(?:size|capacity)\s+of)\s+$", re.I),
     re.compile(r"(?:\s|-)*(?:miss(?:es)?|hits?|lines?|hierarchy|mismatch)\b", re.I), None),
    (re.compile(r"1-bit", re.I), None,
     re.compile(r"\s+(?:(?:matrix|tensor)\s+(?:completion|sensing|recovery)|compressed\s+sensing)",
                re.I), None),
    (re.compile(r"quantiz(?:e|es|ing)", re.I), None, None, re.compile(r"\bquantum\b", re.I)),
    # "coarsely quantized feature maps": a resolution, not a technique.
    (re.compile(r"quantized", re.I), re.compile(r"\b(?:coarsely|finely)\s+$", re.I), None, None),
    # "VQ Diffusion" is a model a paper may run; its name does not make the paper quantize.
    (re.compile(r"VQ"), None, re.compile(r"[\s-]*Diffusion\b"), None),
)
NEEDS_CONTEXT = {
    "feature reuse": re.compile(r"\b(?:comput|forward\s+pass|latency|accelerat|speed|redundan|"
                                r"cach|throughput|inference\s+cost)", re.I),
}
