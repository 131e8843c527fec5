"""Character-span localisation: a token tagger and the sentence-projection baseline.

Seed 004 projects flagged sentences onto their characters (every character of
a flagged sentence is predicted hallucinated), which over-marks the supported
words of long sentences.  :class:`SpanTagger` instead scores every token of
the output with a gradient-boosted classifier over

* the token's own features (:data:`evqual.features.TOKEN_FEATURE_NAMES`:
  in the context or not, IDF, inside a novel bigram or run, part of an
  unsupported number or entity, position ...), and
* the features of the sentence holding it (support, chain, drift ...),
* with a claim model (:class:`~evqual.models.StackedEvidenceClassifier`), the
  risk of the claim holding the token and the highest claim risk of its
  sentence (the evidence engine's per-claim features themselves are left to
  the claim model: repeated on every token they would only widen the rows),

trained on the tokens of RAGTruth's span annotations (a token is positive
when it overlaps a gold span).  Tokens at or above a threshold (tuned on
validation for character F1 by :class:`~evqual.models.Detector`) are merged
into spans: consecutive flagged tokens of one sentence form one span, from the
first token's start to the last token's end; a span's risk is the mean of its
tokens'.
"""

from __future__ import annotations

import numpy as np
from .._estimator import BaseEstimator, check_is_fitted

from ..data import merge_intervals
from ._fasttrees import fast_proba
from ._frame import CLAIM, SENT, TOK

__all__ = ["SpanTagger", "tokens_to_spans", "project_sentences", "span_counts", "span_scores"]

_TOKEN_CHUNK = 4096  # token rows scored at once by SpanTagger.token_proba


def tokens_to_spans(offsets: np.ndarray, risks: np.ndarray, threshold: float, sentence=None
                    ) -> list[tuple[int, int, float]]:
    """Merge runs of consecutive tokens with ``risk >= threshold`` into ``(start, end, mean risk)``.

    With ``sentence`` (the sentence of each token), a run never crosses a
    sentence boundary: spans stay within sentences.

    Examples
    --------
    >>> offsets = np.array([[0, 3], [4, 6], [7, 9], [10, 12]])
    >>> tokens_to_spans(offsets, np.array([0.9, 0.7, 0.1, 0.8]), 0.5)
    [(0, 6, 0.8), (10, 12, 0.8)]
    >>> tokens_to_spans(offsets, np.array([0.9, 0.7, 0.1, 0.8]), 0.5, sentence=np.array([0, 1, 1, 1]))
    [(0, 3, 0.9), (4, 6, 0.7), (10, 12, 0.8)]
    """
    out = []
    on = np.asarray(risks) >= threshold
    same = (np.ones(len(on), dtype=bool) if sentence is None
            else np.r_[True, np.asarray(sentence)[1:] == np.asarray(sentence)[:-1]])
    j, n = 0, len(on)
    while j < n:
        if not on[j]:
            j += 1
            continue
        k = j
        while k + 1 < n and on[k + 1] and same[k + 1]:
            k += 1
        out.append((int(offsets[j, 0]), int(offsets[k, 1]), round(float(np.mean(risks[j:k + 1])), 6)))
        j = k + 1
    return out


def project_sentences(offsets, risks, threshold: float) -> list[tuple[int, int, float]]:
    """Seed 004's baseline: every sentence with ``risk >= threshold`` becomes a span."""
    return [(int(s), int(e), float(r)) for (s, e), r in zip(offsets, risks) if r >= threshold]


def span_counts(pred, gold) -> tuple[int, int, int]:
    """Character ``(tp, fp, fn)`` of one response: unions of predicted and gold ranges compared.

    >>> span_counts([(0, 10)], [(5, 15)])
    (5, 5, 5)
    """
    p = merge_intervals((s, e) for s, e, *_ in pred)
    g = merge_intervals((s, e) for s, e, *_ in gold)
    n_p = sum(e - s for s, e in p)
    n_g = sum(e - s for s, e in g)
    tp, i, j = 0, 0, 0
    while i < len(p) and j < len(g):
        lo, hi = max(p[i][0], g[j][0]), min(p[i][1], g[j][1])
        tp += max(0, hi - lo)
        if p[i][1] < g[j][1]:
            i += 1
        else:
            j += 1
    return tp, n_p - tp, n_g - tp


def span_scores(pred_list, gold_list) -> dict:
    """Micro-averaged character precision, recall and F1 over responses.

    Each response contributes the characters of the union of its predicted
    spans and of the union of its gold spans (seed 004's character level).

    >>> round(span_scores([[(0, 10)], []], [[(5, 15)], [(0, 4)]])["f1"], 4)
    0.4167
    """
    tp = fp = fn = 0
    for pred, gold in zip(pred_list, gold_list):
        a, b, c = span_counts(pred, gold)
        tp, fp, fn = tp + a, fp + b, fn + c
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f, "tp_chars": int(tp), "fp_chars": int(fp), "fn_chars": int(fn),
            "responses": len(gold_list)}


_ENGINE_PREFIX = "sent.evidence."  # the evidence engine's features: left out of token rows (see above)


def _token_claim_risks(tok, block, risks, *, n_sentences: int) -> np.ndarray:
    """Per token: the risk of the claim holding it (0 outside every claim) and the highest claim risk of its
    sentence."""
    n = len(tok.sentence)
    out = np.zeros((n, 2))
    if not n or not len(risks):
        return out
    starts, ends = block.offsets[:, 0], block.offsets[:, 1]
    k = np.searchsorted(starts, tok.offsets[:, 0], side="right") - 1
    inside = (k >= 0) & (tok.offsets[:, 0] < ends[np.maximum(k, 0)])
    out[inside, 0] = np.asarray(risks)[k[inside]]
    top = np.zeros(max(n_sentences, int(tok.sentence.max()) + 1))
    np.maximum.at(top, np.minimum(block.sentence, len(top) - 1), risks)
    out[:, 1] = top[tok.sentence]
    return out


class SpanTagger(BaseEstimator):
    """Token classifier that predicts hallucinated character spans.

    Parameters
    ----------
    estimator : classifier or None
        Fitted on token rows; default ``HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.1, max_leaf_nodes=31,
        min_samples_leaf=50, random_state=0)``.
    negative_share : float, default=0.5
        Share of the tokens of responses *without* any span kept for fitting
        (they are many and alike; their sample weight is scaled up to
        compensate).  1.0 keeps them all.
    random_state : int, default=0

    Attributes
    ----------
    estimator_ : classifier
    n_features_in_ : int
    """

    sentence_columns_ = None  # taggers saved before the attribute existed use every sentence feature
    uses_claim_risks_ = False

    def __init__(self, estimator=None, *, response_features: bool = True, negative_share: float = 0.5,
                 random_state: int = 0):
        self.estimator = estimator
        self.response_features = response_features
        self.negative_share = negative_share
        self.random_state = random_state

    def _rows(self, tok, sent, resp=None, srisk=None, claims=None) -> np.ndarray:
        cols = self.sentence_columns_
        values = sent.values if cols is None else sent.values[:, cols]
        S = values[tok.sentence] if len(tok.sentence) else np.zeros((0, values.shape[1]))
        parts = [tok.values.astype(np.float64), S]
        if resp is not None:
            parts.append(np.repeat(resp[None, :], len(S), axis=0))
        if srisk is not None:
            srisk = np.asarray(srisk, dtype=np.float64)
            top = srisk.max() if len(srisk) else 0.0
            own = srisk[tok.sentence] if len(tok.sentence) else np.zeros(0)
            parts.append(np.c_[own, np.full(len(own), top), own - top])
        if claims is not None:
            parts.append(_token_claim_risks(tok, *claims, n_sentences=len(sent.values)))
        return np.hstack(parts)

    def _response_matrix(self, frame):
        if not self.response_columns_:
            return [None] * len(frame)
        return frame[self.response_columns_].to_numpy(dtype=np.float64)

    def fit(self, frame, y=None, *, sentence_risks=None, claim_risks=None):
        """Fit on the token rows of the frame's responses whose spans are known.

        ``sentence_risks`` (one array per row, out-of-fold) adds each token's
        sentence risk, the response's highest sentence risk and their gap;
        ``claim_risks`` (one array per row over the frame's claims,
        out-of-fold) the risk of the token's claim and the highest claim risk
        of its sentence.
        """
        from ._estimators import select_names

        X, Y, W = [], [], []
        rng = np.random.default_rng(self.random_state)
        engine = {c for c in frame.columns if str(c).startswith("evidence.")}
        self.response_columns_ = select_names(frame.columns, exclude=engine) if self.response_features else []
        names = frame[SENT].iloc[0].names if len(frame) else ()
        self.sentence_columns_ = [j for j, n in enumerate(names) if not n.startswith(_ENGINE_PREFIX)]
        R = self._response_matrix(frame)
        self.uses_sentence_risks_ = sentence_risks is not None
        self.uses_claim_risks_ = claim_risks is not None and CLAIM in frame.columns
        SR = sentence_risks if sentence_risks is not None else [None] * len(frame)
        CR = self._claims(frame, claim_risks)
        for tok, sent, resp, sr, cr in zip(frame[TOK], frame[SENT], R, SR, CR):
            if tok.labels is None or not len(tok.labels):
                continue
            rows = self._rows(tok, sent, resp, sr, cr)
            w = 1.0
            if not tok.labels.any() and self.negative_share < 1.0:
                keep = rng.random(len(rows)) < self.negative_share
                rows = rows[keep]
                w = 1.0 / self.negative_share
                lab = np.zeros(len(rows), dtype=np.int8)
            else:
                lab = tok.labels
            X.append(rows)
            Y.append(lab)
            W.append(np.full(len(rows), w))
        if not X:
            raise ValueError("no tokens with span labels to fit the span tagger on.")
        X, Y, W = np.vstack(X), np.concatenate(Y), np.concatenate(W)
        if len(np.unique(Y)) < 2:
            raise ValueError("the span tagger needs tokens of both classes (some gold spans).")
        from sklearn.base import clone
        from sklearn.ensemble import HistGradientBoostingClassifier

        est = self.estimator if self.estimator is not None else HistGradientBoostingClassifier(
            max_iter=150, learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=50, random_state=0)
        self.estimator_ = clone(est).fit(X, Y, sample_weight=W)
        self.n_features_in_ = X.shape[1]
        return self

    def _claims(self, frame, claim_risks):
        if not self.uses_claim_risks_:
            return [None] * len(frame)
        return [(b, r) for b, r in zip(frame[CLAIM], claim_risks)]

    def token_proba(self, frame, sentence_risks=None, *, gate: float = 0.0, claim_risks=None) -> list[np.ndarray]:
        """Risk of every token, one array per response.

        With ``gate > 0`` (and sentence risks), tokens of sentences whose risk
        is below ``gate`` are not scored and get risk 0: a fast path for
        production, tuned by :class:`~evqual.models.Detector` on validation.
        """
        check_is_fitted(self, "estimator_")
        if self.uses_sentence_risks_ and sentence_risks is None:
            raise ValueError("this tagger was fitted with sentence risks; pass sentence_risks.")
        if self.uses_claim_risks_ and claim_risks is None:
            raise ValueError("this tagger was fitted with claim risks; pass claim_risks.")
        SR = sentence_risks if self.uses_sentence_risks_ else [None] * len(frame)
        CR = self._claims(frame, claim_risks)
        # token rows are built and scored a bounded number at a time (a row's risk does not depend on the
        # rows scored with it), so memory stays bounded for any answer length
        out, batch, n_batch = [], [], 0
        for tok, sent, resp, sr, cr in zip(frame[TOK], frame[SENT], self._response_matrix(frame), SR, CR):
            n_tok = len(tok.sentence)
            risk = np.zeros(n_tok)
            out.append(risk)
            if gate > 0 and sr is not None and n_tok:
                keep = np.flatnonzero(np.asarray(sr)[tok.sentence] >= gate)
            else:
                keep = np.arange(n_tok)
            for a in range(0, len(keep), _TOKEN_CHUNK):
                sel = keep[a:a + _TOKEN_CHUNK]
                batch.append((risk, sel, self._rows(tok._replace(values=tok.values[sel], sentence=tok.sentence[sel],
                                                                offsets=tok.offsets[sel]),
                                                    sent, resp, sr, cr)))
                n_batch += len(sel)
                if n_batch >= _TOKEN_CHUNK:
                    self._score_rows(batch)
                    batch, n_batch = [], 0
        if batch:
            self._score_rows(batch)
        return out

    def _score_rows(self, batch) -> None:
        rows = [r for _, _, r in batch if len(r)]
        if not rows:
            return
        p = fast_proba(self.estimator_, np.vstack(rows))[:, 1]
        pos = 0
        for risk, sel, r in batch:
            risk[sel] = p[pos:pos + len(r)]
            pos += len(r)

    def predict_spans(self, frame, threshold: float, sentence_risks=None, *, gate: float = 0.0, claim_risks=None):
        """``(start, end, risk)`` spans per response."""
        probs = self.token_proba(frame, sentence_risks, gate=gate, claim_risks=claim_risks)
        return [tokens_to_spans(tok.offsets, p, threshold, tok.sentence) for tok, p in zip(frame[TOK], probs)]
