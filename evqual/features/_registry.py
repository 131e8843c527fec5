"""The feature registry: stable, versioned names grouped into families.

A feature name is ``<family>.<what>[.<aggregate>].v<N>``; the version is bumped
whenever a definition changes, so a saved model can refuse features computed
differently from the ones it was trained on.  Families can be switched on and
off as a group (for ablations); ``meta`` (generator identity, temperature and
quality) is opt-in so that content-only models stay the default.

Definitions (``S`` = the output's sentences, ``c*`` = a sentence's nearest
chunk, the chunk with the highest TF-IDF cosine; tokens are content tokens,
see :func:`evqual.text.content_tokens`):

=========================  ==================================================
family                     what it measures
=========================  ==================================================
``coverage``               token-set overlap between output, query, context
``support``                per-sentence share of tokens found in the context
``semantic``               TF-IDF support blended with coverage (seed 002)
``chain``                  seed 004's evidence-chain measures per sentence
                           against its chunks, and the Evidence-Chain Score
``entity``                 entities of the output absent from the context
``number``                 numbers of the output absent from the context
                           (time-aware since v2)
``structure``              field-by-field checks against a structured record
``novelty``                novel tokens, bigrams and runs of novel tokens
``negation``               negation or antonym reversals against the nearest chunk
``check``                  claim-aligned contradiction checks (numbers, units,
                           dates, negation, antonyms, entities, role swaps,
                           quantifiers; see :mod:`evqual.features._checks`)
``evidence``               the evidence engine (:mod:`evqual.evidence`): each
                           claim aligned to its evidence sentence and the
                           difference read by class; the answer and each
                           sentence take the max (for alignment strength the
                           min) over their claims
``refusal``                refusal wording
``length``                 sizes and ratios of output, context, query
``task``                   one-hot task indicator
``meta``                   generator, quality, temperature (opt-in)
=========================  ==================================================

Run ``python -m evqual.features`` (or see :func:`describe_features`) for the
full table with ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "FeatureSpec",
    "FEATURES",
    "FAMILIES",
    "CONTENT_FAMILIES",
    "EVIDENCE_MIN",
    "TASKS",
    "list_features",
    "feature_spec",
    "describe_features",
    "meta_feature_name",
]

TASKS = ("QA", "Summary", "Data2txt")
INF = float("inf")


@dataclass(frozen=True)
class FeatureSpec:
    """Metadata of one feature.

    Attributes
    ----------
    name : str
        Versioned name, e.g. ``"support.min.v1"``.
    family : str
        Group used to switch features on and off.
    level : str
        ``"response"`` or ``"sentence"``.
    low, high : float
        Documented range; every value lies in ``[low, high]``.
    description : str
        One-line definition.
    """

    name: str
    family: str
    level: str
    low: float
    high: float
    description: str


_R, _S = "response", "sentence"

_SPECS = [
    # ---- coverage (seed 002 lexical coverage)
    ("coverage.output_context.v1", "coverage", _R, 0, 1,
     "share of the output's distinct tokens found in the context (1 if the output has none)"),
    ("coverage.query_context.v1", "coverage", _R, 0, 1,
     "share of the query's distinct tokens found in the context (0 if the query has none)"),
    ("coverage.query_output.v1", "coverage", _R, 0, 1,
     "share of the query's distinct tokens found in the output (0 if the query has none)"),
    # ---- support (seed 002 sentence support)
    ("support.mean.v1", "support", _R, 0, 1,
     "mean over sentences of the share of the sentence's distinct tokens found in the context"),
    ("support.min.v1", "support", _R, 0, 1, "minimum sentence support"),
    ("support.max.v1", "support", _R, 0, 1, "maximum sentence support"),
    ("support.margin.v1", "support", _R, 0, 1, "max minus min sentence support (0 for one sentence)"),
    ("support.entropy.v1", "support", _R, 0, 1,
     "Shannon entropy of sentence supports normalised to sum 1, divided by log(n); "
     "1 = evenly supported (also for one sentence), 0 = all support in one sentence or none at all"),
    # ---- semantic (seed 002)
    ("semantic.support.v1", "semantic", _R, 0, 1,
     "0.5 * mean sentence TF-IDF support + 0.5 * coverage.output_context"),
    # ---- chain (seed 004)
    ("chain.jaccard.mean.v1", "chain", _R, 0, 1, "mean over sentences of the max Jaccard overlap with any chunk"),
    ("chain.jaccard.min.v1", "chain", _R, 0, 1, "min over sentences of the max Jaccard overlap"),
    ("chain.recall.mean.v1", "chain", _R, 0, 1,
     "mean response-token recall: share of a sentence's tokens present in its nearest chunk"),
    ("chain.recall.min.v1", "chain", _R, 0, 1, "min response-token recall"),
    ("chain.precision.mean.v1", "chain", _R, 0, 1,
     "mean source-token precision: share of the nearest chunk's tokens present in the sentence"),
    ("chain.bm25.mean.v1", "chain", _R, 0, 1,
     "mean normalised BM25 support: best chunk's BM25Okapi score / the sentence's score against itself"),
    ("chain.bm25.min.v1", "chain", _R, 0, 1, "min normalised BM25 support"),
    ("chain.tfidf.mean.v1", "chain", _R, 0, 1, "mean max local TF-IDF cosine (IDF fitted on the context's chunks)"),
    ("chain.tfidf.min.v1", "chain", _R, 0, 1, "min max local TF-IDF cosine"),
    ("chain.ecs.mean.v2", "chain", _R, 0, 1, "mean Evidence-Chain Score"),
    ("chain.ecs.min.v2", "chain", _R, 0, 1, "min Evidence-Chain Score"),
    ("chain.ecs.max.v2", "chain", _R, 0, 1, "max Evidence-Chain Score"),
    # ---- entity drift
    ("entity.count.v1", "entity", _R, 0, INF, "entity mentions in the output"),
    ("entity.unsupported_count.v1", "entity", _R, 0, INF,
     "entity mentions with a token absent from the context"),
    ("entity.unsupported_rate.v1", "entity", _R, 0, 1, "unsupported / all entity mentions (0 if none)"),
    # ---- number drift
    ("number.count.v2", "number", _R, 0, INF, "number mentions in the output"),
    ("number.unsupported_count.v2", "number", _R, 0, INF, "number mentions whose value is not in the context"),
    ("number.new_rate.v2", "number", _R, 0, 1, "unsupported / all number mentions (0 if none)"),
    ("number.conflict.v2", "number", _R, 0, 1,
     "1 if some sentence has an unsupported number while its nearest chunk has a number the sentence lacks"),
    # ---- structure (Data2txt field checks)
    ("structure.conflict.v1", "structure", _R, 0, INF,
     "mentions of a false/no field without negation, or of a true field with negation"),
    ("structure.null.v1", "structure", _R, 0, INF, "mentions of a field whose value is null"),
    ("structure.absent.v1", "structure", _R, 0, INF,
     "mentions of a common business attribute the record does not have"),
    # ---- novelty
    ("novelty.tokens.v1", "novelty", _R, 0, INF, "distinct content tokens in neither the context nor the query"),
    ("novelty.bigram_rate.v1", "novelty", _R, 0, 1, "share of content-token bigrams absent from the context"),
    ("novelty.run.max.v1", "novelty", _R, 0, INF, "longest run of consecutive novel content tokens"),
    # ---- check (claim-aligned contradictions)
    ("check.number.v1", "check", _R, 0, INF, "most number findings in one sentence"),
    ("check.unit.v1", "check", _R, 0, INF, "most unit findings in one sentence"),
    ("check.date.v1", "check", _R, 0, INF, "most date findings in one sentence"),
    ("check.negation.v1", "check", _R, 0, INF, "most negation findings in one sentence"),
    ("check.antonym.v1", "check", _R, 0, INF, "most antonym findings in one sentence"),
    ("check.entity.v1", "check", _R, 0, INF, "most entity findings in one sentence"),
    ("check.role.v1", "check", _R, 0, INF, "most role findings in one sentence"),
    ("check.quantifier.v1", "check", _R, 0, INF, "most quantifier findings in one sentence"),
    ("check.field.v1", "check", _R, 0, INF, "most record-field findings in one sentence"),
    ("check.displaced.v1", "check", _R, 0, INF, "most displaced-name findings in one sentence"),
    ("check.unsupported.v1", "check", _R, 0, INF, "most unsupported claim units in one sentence"),
    ("check.any.v1", "check", _R, 0, 11, "most different checks firing in one sentence"),
    ("check.sentences.v1", "check", _R, 0, INF, "sentences with at least one finding"),
    # ---- negation
    ("negation.mismatch.v1", "negation", _R, 0, 1,
     "1 if some sentence and its nearest chunk disagree on negation while sharing half the sentence's tokens"),
    ("negation.antonym.v1", "negation", _R, 0, 1,
     "1 if some sentence uses a word whose antonym (not the word) is in its nearest chunk"),
    # ---- refusal
    ("refusal.any.v1", "refusal", _R, 0, 1, "1 if any sentence uses refusal wording"),
    ("refusal.rate.v1", "refusal", _R, 0, 1, "share of sentences with refusal wording"),
    # ---- length
    ("length.output_tokens.v1", "length", _R, 0, INF, "tokens in the output"),
    ("length.context_tokens.v1", "length", _R, 0, INF, "tokens in the context chunks"),
    ("length.query_tokens.v1", "length", _R, 0, INF, "tokens in the query"),
    ("length.output_context_ratio.v1", "length", _R, 0, INF, "output tokens / max(1, context tokens)"),
    ("length.sentences.v1", "length", _R, 0, INF, "sentences in the output"),
    ("length.mean_sentence_tokens.v1", "length", _R, 0, INF, "output tokens / max(1, sentences)"),
    ("length.chunks.v1", "length", _R, 0, INF, "evidence chunks in the context"),
    # ---- task
    ("task.qa.v1", "task", _R, 0, 1, "1 for task QA"),
    ("task.summary.v1", "task", _R, 0, 1, "1 for task Summary"),
    ("task.data2txt.v1", "task", _R, 0, 1, "1 for task Data2txt"),
    # ================= sentence level
    ("sent.chain.jaccard.v1", "chain", _S, 0, 1, "max Jaccard overlap with any chunk"),
    ("sent.chain.recall.v1", "chain", _S, 0, 1, "share of the sentence's tokens in its nearest chunk"),
    ("sent.chain.precision.v1", "chain", _S, 0, 1, "share of the nearest chunk's tokens in the sentence"),
    ("sent.chain.bm25.v1", "chain", _S, 0, 1, "normalised BM25 support"),
    ("sent.chain.tfidf.v1", "chain", _S, 0, 1, "max local TF-IDF cosine"),
    ("sent.chain.ecs.v2", "chain", _S, 0, 1, "Evidence-Chain Score"),
    ("sent.support.v1", "support", _S, 0, 1, "share of the sentence's tokens found anywhere in the context"),
    ("sent.entity.count.v1", "entity", _S, 0, INF, "entity mentions in the sentence"),
    ("sent.entity.unsupported_count.v1", "entity", _S, 0, INF, "unsupported entity mentions"),
    ("sent.entity.unsupported_rate.v1", "entity", _S, 0, 1, "unsupported / all entity mentions (0 if none)"),
    ("sent.number.count.v2", "number", _S, 0, INF, "number mentions in the sentence"),
    ("sent.number.unsupported_count.v2", "number", _S, 0, INF, "unsupported number mentions"),
    ("sent.number.new_rate.v2", "number", _S, 0, 1, "unsupported / all number mentions (0 if none)"),
    ("sent.number.conflict.v2", "number", _S, 0, 1,
     "1 if the sentence has an unsupported number and its nearest chunk a number the sentence lacks"),
    ("sent.structure.conflict.v1", "structure", _S, 0, INF, "conflicting field mentions"),
    ("sent.structure.null.v1", "structure", _S, 0, INF, "mentions of null fields"),
    ("sent.structure.absent.v1", "structure", _S, 0, INF, "mentions of attributes absent from the record"),
    ("sent.novelty.tokens.v1", "novelty", _S, 0, INF, "distinct content tokens in neither context nor query"),
    ("sent.novelty.bigram_rate.v1", "novelty", _S, 0, 1, "share of content bigrams absent from the context"),
    ("sent.novelty.run.v1", "novelty", _S, 0, INF, "longest run of consecutive novel content tokens"),
    ("sent.check.number.v1", "check", _S, 0, INF, "number findings of the sentence's claims"),
    ("sent.check.unit.v1", "check", _S, 0, INF, "unit findings of the sentence's claims"),
    ("sent.check.date.v1", "check", _S, 0, INF, "date findings of the sentence's claims"),
    ("sent.check.negation.v1", "check", _S, 0, INF, "negation findings of the sentence's claims"),
    ("sent.check.antonym.v1", "check", _S, 0, INF, "antonym findings of the sentence's claims"),
    ("sent.check.entity.v1", "check", _S, 0, INF, "entity findings of the sentence's claims"),
    ("sent.check.role.v1", "check", _S, 0, INF, "role findings of the sentence's claims"),
    ("sent.check.quantifier.v1", "check", _S, 0, INF, "quantifier findings of the sentence's claims"),
    ("sent.check.field.v1", "check", _S, 0, INF, "record-field findings of the sentence's claims"),
    ("sent.check.displaced.v1", "check", _S, 0, INF, "displaced-name findings of the sentence's claims"),
    ("sent.check.unsupported.v1", "check", _S, 0, INF, "claim units of the sentence the context does not support"),
    ("sent.check.any.v1", "check", _S, 0, 11, "how many different checks fired in the sentence"),
    ("sent.negation.mismatch.v1", "negation", _S, 0, 1, "negation differs from the nearest chunk (recall >= 0.5)"),
    ("sent.negation.antonym.v1", "negation", _S, 0, 1, "a word's antonym, not the word, is in the nearest chunk"),
    ("sent.refusal.v1", "refusal", _S, 0, 1, "1 if the sentence uses refusal wording"),
    ("sent.length.tokens.v1", "length", _S, 0, INF, "tokens in the sentence"),
    ("sent.length.position.v1", "length", _S, 0, 1, "sentence index / max(1, sentences - 1)"),
    ("sent.length.sentences.v1", "length", _S, 0, INF, "sentences in the response"),
    ("sent.length.chunks.v1", "length", _S, 0, INF, "evidence chunks in the context"),
    ("sent.task.qa.v1", "task", _S, 0, 1, "1 for task QA"),
    ("sent.task.summary.v1", "task", _S, 0, 1, "1 for task Summary"),
    ("sent.task.data2txt.v1", "task", _S, 0, 1, "1 for task Data2txt"),
]

EVIDENCE_MIN = frozenset({"align.recall.v1", "align.recall2.v1", "align.recall_context.v1", "align.subject.v1",
                          "align.margin.v1", "align.evidence_items.v1", "order.tau.v1"})
"""Claim features whose answer (and sentence) value is the minimum over claims (the weakest claim); the
others take the maximum."""


def _claim_range(name: str) -> tuple[float, float]:
    if name == "order.tau.v1":
        return -1.0, 1.0
    share = name.endswith(("unsupported_share.v1", "negated.v1"))
    if (name.startswith("align.") and name not in ("align.competitors.v1", "align.evidence_items.v1")) or share \
            or (".conflict" in name and name.startswith("logic.")):
        return 0.0, 1.0
    return 0.0, INF


def _evidence_specs():
    from ..evidence import CLAIM_FEATURE_TABLE

    rows = [("evidence.claims.v1", "evidence", _R, 0, INF, "claims of the answer read by the evidence engine")]
    for level, prefix in ((_R, "evidence."), (_S, "sent.evidence.")):
        where = "the answer's" if level == _R else "the sentence's"
        for name, desc in CLAIM_FEATURE_TABLE:
            agg = "min" if name in EVIDENCE_MIN else "max"
            lo, hi = _claim_range(name)
            rows.append((prefix + name, "evidence", level, lo, hi, f"{agg} over {where} claims: {desc}"))
    return rows


_SPECS += _evidence_specs()

FEATURES: dict[str, FeatureSpec] = {
    name: FeatureSpec(name, fam, lvl, float(lo), float(hi), desc) for name, fam, lvl, lo, hi, desc in _SPECS
}
"""Every static feature, by name, in canonical (output) order."""

CONTENT_FAMILIES = ("coverage", "support", "semantic", "chain", "entity", "number", "structure", "novelty",
                    "negation", "check", "evidence", "refusal", "length", "task")
FAMILIES = CONTENT_FAMILIES + ("meta",)

META_NUMERIC = (
    ("meta.temperature.v1", "generation temperature (0 when unknown)", 0.0, INF),
    ("meta.temperature_missing.v1", "1 when the temperature is unknown", 0.0, 1.0),
)


def meta_feature_name(field: str, value: str, level: str = "response") -> str:
    """Name of a one-hot metadata feature, e.g. ``meta.model[gpt-4-0613].v1``."""
    prefix = "sent." if level == "sentence" else ""
    return f"{prefix}meta.{field}[{value}].v1"


def feature_spec(name: str) -> FeatureSpec:
    """The :class:`FeatureSpec` of ``name`` (metadata one-hots included).

    Raises
    ------
    KeyError
        For an unknown name.
    """
    if name in FEATURES:
        return FEATURES[name]
    level = "sentence" if name.startswith("sent.") else "response"
    bare = name[5:] if level == "sentence" else name
    for n, desc, lo, hi in META_NUMERIC:
        if bare == n:
            return FeatureSpec(name, "meta", level, lo, hi, desc)
    if bare.startswith("meta.") and bare.endswith("].v1") and "[" in bare:
        field = bare[5:bare.index("[")]
        return FeatureSpec(name, "meta", level, 0.0, 1.0, f"1 when {field} is {bare[bare.index('[') + 1:-4]!r}")
    raise KeyError(f"unknown feature {name!r}")


def list_features(level: str = "response", families=None) -> list[str]:
    """Static feature names of ``level`` in canonical order, optionally by family.

    Examples
    --------
    >>> list_features(families=["support"])[:2]
    ['support.mean.v1', 'support.min.v1']
    """
    fams = set(families) if families is not None else None
    return [s.name for s in FEATURES.values() if s.level == level and (fams is None or s.family in fams)]


def describe_features(level: str | None = None) -> str:
    """A plain-text table of every static feature: name, family, range, definition."""
    rows = []
    for s in FEATURES.values():
        if level is None or s.level == level:
            hi = "inf" if s.high == INF else f"{s.high:g}"
            rows.append(f"{s.name:<36} {s.family:<9} [{s.low:g}, {hi}]  {s.description}")
    return "\n".join(rows)
