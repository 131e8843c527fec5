"""Benchmark functions behind ``scripts/bench.py`` (kept in the library so they are tested)."""

from __future__ import annotations

import os
import platform
import resource
import time

__all__ = ["bench_featurize", "bench_score", "bench_stages", "bench_fit", "tokenize_floor", "peak_rss_mb", "pin_one_core"]


def pin_one_core() -> None:
    """Restrict this process to one CPU (Linux); a no-op elsewhere."""
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[0]})


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024.0 if platform.system() != "Darwin" else rss / (1024.0 * 1024.0)


def tokenize_floor(examples) -> float:
    """Seconds to merely tokenize each example's query, context and output.

    This is the floor any lexical method pays: evqual's tokenizer run once
    over every text of every response, contexts included (no caching).
    """
    from .text import tokenize

    start = time.perf_counter()
    for ex in examples:
        tokenize(ex.query)
        tokenize(ex.context)
        tokenize(ex.output)
    return time.perf_counter() - start


def bench_featurize(data=None, *, entity_backend: str = "regex", repeat: int = 3) -> dict:
    """Featurize every response of ``data`` (default: the embedded sample) and time it.

    Each timed run uses a fresh featurizer and context cache, so contexts are
    indexed anew every run.  The best of ``repeat`` runs is reported, as is
    the usual practice for timing (the minimum is the least disturbed run).

    Returns
    -------
    dict
        ``{"responses", "seconds", "responses_per_s", "peak_rss_mb",
        "tokenize_floor_s", "floor_ratio", "entity_backend", "load_seconds",
        "python", "platform"}``.
    """
    import warnings

    from .data import load_data, sample_path
    from .features import EvidenceFeaturizer

    path = sample_path() if data is None else data
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(path).examples
    load_s = time.perf_counter() - t0
    floor = min(tokenize_floor(examples) for _ in range(max(1, repeat)))
    times = []
    for _ in range(max(1, repeat)):
        fz = EvidenceFeaturizer(entity_backend=entity_backend).fit(examples)
        start = time.perf_counter()
        fz.transform(examples)
        times.append(time.perf_counter() - start)
    best = min(times)
    return {
        "responses": len(examples),
        "seconds": round(best, 4),
        "responses_per_s": round(len(examples) / best, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "tokenize_floor_s": round(floor, 4),
        "floor_ratio": round(best / floor, 2) if floor > 0 else None,
        "entity_backend": entity_backend,
        "load_seconds": round(load_s, 3),
        "all_runs_s": [round(t, 4) for t in times],
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def bench_score(data=None, model=None, *, limit: int | None = None, batch_repeat: int = 3,
                batch_size: int = 64) -> dict:
    """Latency of scoring one answer at a time with a saved model: the full result.

    Each answer is scored alone with ``detector.score_batch([example])``: its
    features, the response and sentence models, the span tagger, the reasons
    and explanations of every sentence, topics and the policy decision: the
    same :class:`~evqual.scoring.ScoreResult` that ``evqual score`` writes.
    Each call is timed with ``time.perf_counter``; the first call is a warm-up
    and not counted.  Batch throughput scores all answers with
    ``score_batch(examples, batch_size=batch_size)`` (best of
    ``batch_repeat``).  ``risk_only_ms_p50`` times ``predict_proba`` alone
    (the issue-3 measure) for comparison.

    Returns
    -------
    dict
        ``{"responses", "ms_p50", "ms_p95", "ms_mean", "responses_per_s",
        "batch_responses_per_s", "risk_only_ms_p50", "peak_rss_mb", "model",
        "method", "span_tagger"}``; ``responses_per_s`` is one-at-a-time
        throughput.
    """
    import warnings

    import numpy as np

    from .data import load_data, sample_path
    from .models import default_model_path, load_detector

    det = load_detector(model or default_model_path())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(sample_path() if data is None else data).examples
    if limit:
        examples = examples[:limit]
    det.score_batch(examples[:1])  # warm-up
    times = []
    for ex in examples:
        start = time.perf_counter()
        det.score_batch([ex])
        times.append(time.perf_counter() - start)
    ms = np.array(times) * 1000.0
    risk_only = []
    for ex in examples[: min(len(examples), 1000)]:
        start = time.perf_counter()
        det.predict_proba([ex])
        risk_only.append(time.perf_counter() - start)
    batch = []
    for _ in range(max(1, batch_repeat)):
        start = time.perf_counter()
        det.score_batch(examples, batch_size=batch_size)
        batch.append(time.perf_counter() - start)
    return {
        "responses": len(examples),
        "ms_p50": round(float(np.percentile(ms, 50)), 3),
        "ms_p95": round(float(np.percentile(ms, 95)), 3),
        "ms_mean": round(float(ms.mean()), 3),
        "responses_per_s": round(len(examples) / float(np.sum(times)), 1),
        "batch_responses_per_s": round(len(examples) / min(batch), 1),
        "batch_size": batch_size,
        "risk_only_ms_p50": round(float(np.percentile(np.array(risk_only) * 1000.0, 50)), 3),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "model": str(model or default_model_path()),
        "method": det.method,
        "span_tagger": getattr(det, "span_tagger_", None) is not None,
    }


def bench_stages(data=None, model=None, *, limit: int | None = 500) -> dict:
    """Where the time of scoring one answer goes: p50 milliseconds of each stage, one answer at a time.

    Stages, in the order :func:`evqual.scoring._score.score_examples` runs them:
    ``features`` (context indexing and the response/sentence features),
    ``frame`` (assembling the pandas-free frame), ``models`` (sentence, text
    and response models, calibration), ``tokens`` (token features of the
    sentences the span tagger's gate lets through), ``tagger`` (span tagger),
    ``topics`` (topic tagging),
    ``reasons`` (reason codes, citations, explanations), and ``total`` (one
    whole ``score_batch([example])`` call, timed separately).
    """
    import warnings

    import numpy as np

    from .data import load_data, sample_path
    from .explain._reasons import citation_for, sentence_reasons
    from .features._token_features import token_block
    from .models import default_model_path, load_detector
    from .scoring._score import _default_policy

    det = load_detector(model or default_model_path())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(sample_path() if data is None else data).examples
    if limit:
        examples = examples[:limit]
    det.score_batch(examples[:1])
    rf, builder, policy = det.builder_.response_featurizer_, det.builder_, _default_policy()
    names = ("features", "frame", "models", "tokens", "tagger", "topics", "reasons", "total")
    times = {k: [] for k in names}
    gate = getattr(det, "span_gate_", 0.0)
    for ex in examples:
        t0 = time.perf_counter()
        rf.analyze([ex])
        t1 = time.perf_counter()
        frame, _, analyses = builder.transform_with_analyses([ex], with_targets=False, with_tokens=False, lite=True)
        t2 = time.perf_counter()
        _, sr = det.predict_proba_and_sentences_frame(frame)
        t3 = time.perf_counter()
        keep = np.asarray(sr[0]) >= gate if gate > 0 else None
        frame.set_column("__tok__", [token_block(ex.output, analyses[0], only_sentences=keep)])
        t4 = time.perf_counter()
        if det.span_tagger_ is not None:
            det.predict_spans_frame(frame, sr)
        t5 = time.perf_counter()
        policy.tag(ex.query, ex.context)
        t6 = time.perf_counter()
        for i in range(len(analyses[0].offsets)):
            sentence_reasons(ex, analyses[0], i, risk=0.5)
            citation_for(ex, analyses[0], i)
        t7 = time.perf_counter()
        det.score_batch([ex])
        t8 = time.perf_counter()
        # the frame stage re-runs the features: report what it adds
        parts = (t1 - t0, (t2 - t1) - (t1 - t0), t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7)
        for k, v in zip(names, parts):
            times[k].append(v * 1000.0)
    return {"responses": len(examples), "model": str(model or default_model_path()),
            "ms_p50": {k: round(float(np.percentile(v, 50)), 3) for k, v in times.items()},
            "ms_mean": {k: round(float(np.mean(v)), 3) for k, v in times.items()}}


def bench_fit(data=None, method: str = "evqual") -> dict:
    """Wall time to fit ``method`` on all of ``data`` as ``evqual train`` does (featurization included)."""
    import warnings

    from .data import load_data, sample_path
    from .models import Detector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(sample_path() if data is None else data).examples
        start = time.perf_counter()
        Detector(method).fit(examples, validation_pool="test")
        seconds = time.perf_counter() - start
    return {"method": method, "responses": len(examples), "fit_seconds": round(seconds, 2),
            "peak_rss_mb": round(peak_rss_mb(), 1)}
