"""Benchmark functions behind ``scripts/bench.py`` (kept in the library so they are tested)."""

from __future__ import annotations

import json
import contextlib
import os
import platform
import resource
import time

__all__ = ["hostile_texts", "bench_featurize", "bench_score", "bench_stages", "bench_fit", "bench_sizes", "bench_startup", "bench_trees",
           "synthetic_sentences",
           "tokenize_floor", "peak_rss_mb", "rss_mb", "pin_one_core", "bench_batch"]


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


@contextlib.contextmanager
def _collections_timed():
    """``{"seconds", "count"}`` of the garbage collector's collections while the block runs
    (``gc.callbacks``: the time from each collection's start to its stop)."""
    import gc

    got = {"seconds": 0.0, "count": 0}
    started = []

    def callback(phase, info):
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            got["seconds"] += time.perf_counter() - started.pop()
            got["count"] += 1

    gc.callbacks.append(callback)
    try:
        yield got
    finally:
        gc.callbacks.remove(callback)


def bench_score(data=None, model=None, *, limit: int | None = None, batch_repeat: int = 3,
                batch_size: int = 64, new_contexts: bool = False) -> dict:
    """Latency of scoring one answer at a time with a saved model: the full result.

    Each answer is scored alone with ``detector.score_batch([example])``: its
    features, the response and sentence models, the span tagger, the reasons
    and explanations of every sentence, topics and the policy decision: the
    same :class:`~evqual.scoring.ScoreResult` that ``evqual score`` writes.
    Each call is timed with ``time.perf_counter``; the first call is a warm-up
    and not counted.  Batch throughput scores all answers with
    ``score_batch(examples, batch_size=batch_size)`` (best of
    ``batch_repeat``).  ``risk_only_ms_p50`` times ``predict_proba`` alone
    (the issue-3 measure) for comparison.  ``new_contexts=True`` keeps only the
    first answer to each context (before ``limit``), so every answer brings a
    context evqual has not indexed yet.

    Returns
    -------
    dict
        ``{"responses", "ms_p50", "ms_p95", "ms_mean", "responses_per_s",
        "batch_responses_per_s", "risk_only_ms_p50", "gc_ms_per_response",
        "gc_collections", "peak_rss_mb", "model", "method", "span_tagger"}``;
        ``responses_per_s`` is one-at-a-time throughput, ``gc_ms_per_response``
        the time Python's cyclic garbage collector took during the one-at-a-time
        calls (``gc.callbacks``), per answer, and ``gc_collections`` how many
        collections ran then.
    """
    import warnings

    import numpy as np

    from .data import load_data, sample_path
    from .models import default_model_path
    from .scoring import Scorer

    scorer = Scorer.load(model or default_model_path())
    det = scorer.detector
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(sample_path() if data is None else data).examples
    if new_contexts:
        seen: set = set()
        examples = [e for e in examples if not (e.context in seen or seen.add(e.context))]
    if limit:
        examples = examples[:limit]
    scorer.score_batch(examples[:1])  # warm-up
    times = []
    with _collections_timed() as collections:
        for ex in examples:
            start = time.perf_counter()
            scorer.score_batch([ex])
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
        scorer.score_batch(examples, batch_size=batch_size)
        batch.append(time.perf_counter() - start)
    return {
        "responses": len(examples),
        "new_contexts": bool(new_contexts),
        "ms_p50": round(float(np.percentile(ms, 50)), 3),
        "ms_p95": round(float(np.percentile(ms, 95)), 3),
        "ms_mean": round(float(ms.mean()), 3),
        "responses_per_s": round(len(examples) / float(np.sum(times)), 1),
        "batch_responses_per_s": round(len(examples) / min(batch), 1),
        "batch_size": batch_size,
        "risk_only_ms_p50": round(float(np.percentile(np.array(risk_only) * 1000.0, 50)), 3),
        "gc_ms_per_response": round(collections["seconds"] * 1000.0 / max(1, len(examples)), 3),
        "gc_collections": collections["count"],
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "model": str(model or default_model_path()),
        "method": det.method,
        "span_tagger": getattr(det, "span_tagger_", None) is not None,
    }


def bench_stages(data=None, model=None, *, limit: int | None = 500) -> dict:
    """Where the time of scoring one answer goes: p50 milliseconds of each stage, one answer at a time.

    Stages, in the order :meth:`evqual.scoring.Scorer.score_examples` runs them:
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
    from .explain import citation_for, sentence_reasons
    from .features import token_block
    from .models import default_model_path
    from .scoring import Policy, Scorer

    scorer = Scorer.load(model or default_model_path(), policy=Policy())
    det = scorer.detector
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        examples = load_data(sample_path() if data is None else data).examples
    if limit:
        examples = examples[:limit]
    scorer.score_batch(examples[:1])
    rf, builder, policy = det.builder_.response_featurizer_, det.builder_, scorer.policy
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
        scorer.score_batch([ex])
        t8 = time.perf_counter()
        # the frame stage re-runs the features: report what it adds
        parts = (t1 - t0, (t2 - t1) - (t1 - t0), t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7)
        for k, v in zip(names, parts):
            times[k].append(v * 1000.0)
    return {"responses": len(examples), "model": str(model or default_model_path()),
            "ms_p50": {k: round(float(np.percentile(v, 50)), 3) for k, v in times.items()},
            "ms_mean": {k: round(float(np.mean(v)), 3) for k, v in times.items()}}


def _boosted_models(detector) -> dict:
    """The fitted binary histogram-boosting models of a detector, by where they sit."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = detector.model_
    found = {"response": getattr(model, "response_model_", None),
             "sentence": getattr(getattr(model, "sentence_model_", None), "estimator_", None),
             "claim": getattr(getattr(model, "claim_model_", None), "estimator_", None),
             "span": getattr(getattr(detector, "span_tagger_", None), "estimator_", None)}
    return {k: v for k, v in found.items() if isinstance(v, HistGradientBoostingClassifier)}


def _tree_rows(est, n: int, rng):
    """``n`` rows for ``est`` that walk its trees as real rows do: each feature drawn among its own bin
    thresholds (and just outside them), a few missing."""
    import numpy as np

    cols = []
    for thresholds in est._bin_mapper.bin_thresholds_:
        t = np.asarray(thresholds, dtype=float)
        pool = np.concatenate([t, [t.min() - 1.0, t.max() + 1.0]]) if len(t) else np.array([0.0])
        col = rng.choice(pool, size=n)
        col[rng.random(n) < 0.02] = np.nan
        cols.append(col)
    return np.column_stack(cols)


def bench_trees(model=None, *, rows=(1, 8, 64, 256, 1024, 4096), budget_s: float = 0.5) -> dict:
    """Exact tree inference: evqual's numpy walker against scikit-learn's ``predict_proba``.

    For each histogram-boosting model of the detector (response, sentence,
    claim and span models) and each batch size, the best of repeated calls
    of :func:`evqual.models.hgb_proba` (every tree at once with numpy) and of
    the estimator's own ``predict_proba`` (one compiled call per tree), on
    rows drawn among the model's own thresholds.  Both results are compared
    bit for bit; ``identical`` is false if any differs.  Detections use the
    walker up to :data:`evqual.models.SMALL_BATCH` rows and scikit-learn
    above (``fast_proba``).

    Returns
    -------
    dict
        ``{"models": {name: {"trees", "features", "rows": [{"n", "walker_ms",
        "sklearn_ms"}, ...]}}, "identical", "small_batch"}``.
    """
    import numpy as np

    from .models import SMALL_BATCH, Detector, default_model_path, hgb_proba

    det = Detector.load(model or default_model_path())
    rng = np.random.default_rng(0)
    out, identical = {}, True

    def best(fn, X):
        times, spent = [], 0.0
        while len(times) < 3 or (spent < budget_s and len(times) < 200):
            start = time.perf_counter()
            fn(X)
            times.append(time.perf_counter() - start)
            spent += times[-1]
        return min(times) * 1000.0

    for name, est in _boosted_models(det).items():
        table = []
        for n in rows:
            X = _tree_rows(est, n, rng)
            identical &= bool(np.array_equal(hgb_proba(est, X), est.predict_proba(X)))
            table.append({"n": n, "walker_ms": round(best(lambda Z: hgb_proba(est, Z), X), 4),
                          "sklearn_ms": round(best(est.predict_proba, X), 4)})
        out[name] = {"trees": len(est._predictors), "features": int(est.n_features_in_), "rows": table}
    return {"models": out, "identical": identical, "small_batch": SMALL_BATCH}


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


_LOAD_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
from evqual.models import Detector
t1 = time.perf_counter()
Detector.load(sys.argv[1] if len(sys.argv) > 1 else None)
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1}))
"""


_SCORER_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
from evqual.scoring import Scorer
t1 = time.perf_counter()
Scorer.load(sys.argv[1] if len(sys.argv) > 1 else None)
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "sklearn": "sklearn" in sys.modules}))
"""


def bench_startup(model=None, *, repeat: int = 10, load_repeat: int = 5) -> dict:
    """Start-up times, each the median of fresh processes: ``evqual --version``, importing
    :mod:`evqual.models` and :meth:`Detector.load` of ``model`` (default: models/default), importing
    :mod:`evqual.scoring` and :meth:`Scorer.load`, and a one-line ``evqual score`` end to end.

    ``version_s`` is the wall time of ``python -m evqual --version`` (what the
    ``evqual`` script runs) from spawn to exit; ``python_s`` the same for
    ``python -c pass``, the interpreter's own floor.  ``import_s`` and
    ``load_s`` are timed inside a fresh process: ``from evqual.models import
    Detector`` then ``Detector.load()`` (the full load: scikit-learn's
    objects, every check of the trust model).  ``scorer_import_s`` and
    ``scorer_load_s``: ``from evqual.scoring import Scorer`` then
    ``Scorer.load()`` (the lean load, no scikit-learn; the same checks);
    ``scorer_imports_sklearn`` says whether that process imported it.
    ``score_one_line_s``: ``python -m evqual score`` of a one-line JSONL file
    from spawn to exit.  Every process runs with Python's bytecode caches
    written (an untimed run first; ``PYTHONDONTWRITEBYTECODE`` is dropped from
    the environment), as a user's second run of evqual does.

    Examples
    --------
    >>> r = bench_startup(repeat=1, load_repeat=1)
    >>> sorted(k for k in r if k.endswith("_s"))  # doctest: +NORMALIZE_WHITESPACE
    ['import_and_load_s', 'import_s', 'load_s', 'python_s', 'score_one_line_s', 'scorer_import_and_load_s',
     'scorer_import_s', 'scorer_load_s', 'version_s']
    >>> r["scorer_imports_sklearn"]
    False
    """
    import statistics
    import subprocess
    import sys

    # a user's second run: Python's bytecode caches written (PYTHONDONTWRITEBYTECODE, set in some containers,
    # would make every timed process compile evqual's sources again), by one untimed run of each command
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def wall(argv) -> float:
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        return time.perf_counter() - start

    wall([sys.executable, "-c", "import evqual.cli, evqual.models, evqual.scoring"])

    python = [wall([sys.executable, "-c", "pass"]) for _ in range(repeat)]
    version = [wall([sys.executable, "-m", "evqual", "--version"]) for _ in range(repeat)]
    def timed(script) -> list:
        runs = []
        argv = [sys.executable, "-c", script] + ([str(model)] if model is not None else [])
        for _ in range(load_repeat):
            out = subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout
            runs.append(json.loads(out.strip().splitlines()[-1]))
        return runs

    runs, scorer = timed(_LOAD_SCRIPT), timed(_SCORER_SCRIPT)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        line = os.path.join(tmp, "one.jsonl")
        with open(line, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"id": "1", "query": "When did the bridge open?", "context": "The bridge opened in "
                                 "1932 after four years of work.", "output": "The bridge opened in 1932."}) + "\n")
        argv = [sys.executable, "-m", "evqual", "score", line, "--out", os.path.join(tmp, "out.jsonl"),
                "--no-progress"] + (["--model", str(model)] if model is not None else [])
        wall(argv)  # untimed: its own bytecode caches
        one_line = [wall(argv) for _ in range(load_repeat)]
    med = statistics.median
    return {"model": str(model) if model is not None else "models/default", "repeat": repeat,
            "load_repeat": load_repeat, "python_s": round(med(python), 3), "version_s": round(med(version), 3),
            "import_s": round(med(r["import"] for r in runs), 3), "load_s": round(med(r["load"] for r in runs), 3),
            "import_and_load_s": round(med(r["import"] + r["load"] for r in runs), 3),
            "scorer_import_s": round(med(r["import"] for r in scorer), 3),
            "scorer_load_s": round(med(r["load"] for r in scorer), 3),
            "scorer_import_and_load_s": round(med(r["import"] + r["load"] for r in scorer), 3),
            "scorer_imports_sklearn": any(r["sklearn"] for r in scorer),
            "score_one_line_s": round(med(one_line), 3),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            # other processes slow every number down; the 1-minute load average when the run ended says how much
            "load_average_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}


# ---------------------------------------------------------------- synthetic inputs of any size
_SYLLABLES = ("ba be bi bo bu da de di do du fa fe fi ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu "
              "ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo za ze zi zo ar er in on or en an ul el "
              "str pl gr tr").split()
_STOPS = ("the a of in and to was is for on with by at from as that it its their has had been were").split()
_REAL = ("report reported city council river bridge company market price growth study team season game player "
         "school hospital patient doctor court judge police officer building station road train airport "
         "government minister election vote law project budget million billion percent year month week day "
         "increase decrease rose fell higher lower open closed won lost early late north south first last "
         "support oppose strong weak always never available unavailable").split()
_NEGATIONS = ("not", "never", "no", "without")
_UNITS = ("percent", "million", "people", "dollars", "miles", "years")


def synthetic_sentences(n: int, *, seed: int = 0, vocabulary: int = 20_000) -> list[str]:
    """``n`` short, varied English-like sentences (deterministic for a given ``seed``).

    Sentences have 6 to 14 words: stop words, common words, made-up words
    drawn Zipf-like from ``vocabulary`` pseudo-words (so the distinct-token
    count grows with ``n``), capitalised names, numbers with units, years and
    the odd negation, so every feature family has something to do.

    Examples
    --------
    >>> s = synthetic_sentences(3, seed=1)
    >>> len(s), all(x.endswith(".") for x in s), s == synthetic_sentences(3, seed=1)
    (3, True, True)
    """
    import random

    rng = random.Random(seed)
    words_rng = random.Random(12345)  # the pseudo-word list is the same for every seed
    pseudo = []
    seen = set()
    while len(pseudo) < vocabulary:
        w = "".join(words_rng.choice(_SYLLABLES) for _ in range(words_rng.randint(2, 4)))
        if w not in seen:
            seen.add(w)
            pseudo.append(w)
    out = []
    for _ in range(n):
        words = []
        for _ in range(rng.randint(6, 14)):
            r = rng.random()
            if r < 0.30:
                words.append(rng.choice(_STOPS))
            elif r < 0.50:
                words.append(rng.choice(_REAL))
            elif r < 0.80:
                # Zipf-like: low ranks much more often
                words.append(pseudo[min(int(rng.paretovariate(1.1)) - 1, vocabulary - 1)
                                    if rng.random() < 0.7 else rng.randrange(vocabulary)])
            elif r < 0.88:
                words.append(rng.choice(pseudo[:2000]).capitalize())
            elif r < 0.94:
                words.append(f"{rng.randint(1, 999)} {rng.choice(_UNITS)}")
            elif r < 0.97:
                words.append(str(rng.randint(1900, 2030)))
            else:
                words.append(rng.choice(_NEGATIONS))
        text = " ".join(words)
        out.append(text[0].upper() + text[1:] + ".")
    return out


# ---------------------------------------------------------------- scaling with input size
SIZE_CASES = ("answer_1k", "answer_10k", "answer_20k", "answer_100k", "context_1mb", "context_10mb", "context_100mb",
              "product_3kx2k", "product_30kx2k", "product_3kx20k", "product_30kx20k",
              "numbers_122kb", "numbers_3mb", "numbers_cap", "salad_7mb", "salad_cap")
"""The cases of :func:`bench_sizes`: answers of N sentences against a modest context, contexts of N MB
against a short answer, answers of N thousand sentences against M thousand passages (``product_NkxMk``:
where cost once grew with N x M), and the hostile shapes of issue 39: number-dense text with no sentence end
(``numbers_*``) and word salad with no punctuation (``salad_*``), up to the size caps (``*_cap``: a context
of 10,000,000 characters and an answer of 1,000,000)."""

_HOSTILE_SIZES = {"numbers_122kb": (95_000, 20_800), "numbers_3mb": (2_550_000, 550_000),
                  "numbers_cap": (10_000_000, 1_000_000), "salad_7mb": (6_200_000, 1_000_000),
                  "salad_cap": (10_000_000, 1_000_000)}
"""Characters of (context, answer) of the hostile size cases."""


def hostile_texts(kind: str, context_chars: int, output_chars: int, seed: int = 0) -> tuple:
    """``(context, output)`` of a hostile shape (issue 39), deterministic.

    ``"numbers"``: a context of short clauses with no sentence end ("it was 12.5 km it was 7.3 km ...")
    and an answer of short sentences ("It was 12 m."), the shape of the request that stopped the service
    for minutes.  ``"salad"``: words of :func:`synthetic_sentences` in random order, no punctuation at all,
    on both sides.

    >>> ctx, out = hostile_texts("numbers", 60, 30)
    >>> ctx.startswith("it was "), ctx.endswith(" km"), out.startswith("It was "), out.endswith(" m.")
    (True, True, True, True)
    """
    import random

    rng = random.Random(seed)

    def fill(n, make):
        parts, size = [], 0
        while size < n:
            p = make()
            parts.append(p)
            size += len(p) + 1
        return " ".join(parts)

    if kind == "numbers":
        return (fill(context_chars, lambda: f"it was {rng.randint(1, 999)}.{rng.randint(0, 9)} km"),
                fill(output_chars, lambda: f"It was {rng.randint(1, 999)} m."))
    if kind == "salad":
        words = " ".join(synthetic_sentences(3000, seed=seed)).replace(".", "").split()
        return fill(context_chars, lambda: rng.choice(words)), fill(output_chars, lambda: rng.choice(words))
    raise ValueError(f"unknown hostile shape {kind!r}; expected 'numbers' or 'salad'")

_MODEST_CONTEXT = 200  # context sentences (10 passages) for the answer cases
_SENTENCE_CHARS = 62  # mean length of a synthetic sentence, with its space


def size_case_example(case: str):
    """The :class:`~evqual.data.Example` of one :data:`SIZE_CASES` case (deterministic).

    ``answer_Nk``: an answer of N thousand synthetic sentences
    (:func:`synthetic_sentences`) against a QA context of 200 sentences in
    10 passages.  ``context_Nmb``: a QA context string of N MB (chunked by
    sentence, about 16,000 chunks per MB) against a four-sentence answer
    (two sentences of the context, one with an unsupported number, one
    made up).  ``product_NkxMk``: an answer of N thousand synthetic
    sentences against M thousand passages of one synthetic sentence each.
    ``numbers_*`` and ``salad_*``: :func:`hostile_texts` at the sizes of
    :data:`_HOSTILE_SIZES`, the context as one string.

    Examples
    --------
    >>> ex = size_case_example("answer_1k")
    >>> len(ex.chunks), ex.output.count(".") >= 1000
    (10, True)
    """
    from .data import make_example

    kind, _, size = case.partition("_")
    if kind == "answer" and size.endswith("k"):
        n = int(size[:-1]) * 1000
        ctx = synthetic_sentences(_MODEST_CONTEXT, seed=1)
        passages = [" ".join(ctx[i:i + 20]) for i in range(0, len(ctx), 20)]
        output = " ".join(synthetic_sentences(n, seed=0))
        return make_example(query="What did the council report about the bridge?", context=passages,
                            output=output, task_type="QA", id=case)
    if kind == "context" and size.endswith("mb"):
        target = int(size[:-2]) * 1_000_000
        sents = synthetic_sentences(target // _SENTENCE_CHARS + 1, seed=1)
        context = " ".join(sents)
        output = " ".join([sents[3], sents[len(sents) // 2],
                           "The council opened the bridge in 1935 without Kavabu support.",
                           synthetic_sentences(2, seed=9)[1]])
        return make_example(query="When did the bridge open?", context=context, output=output, task_type="QA",
                            id=case)
    if case in _HOSTILE_SIZES:
        context, output = hostile_texts(kind, *_HOSTILE_SIZES[case])
        return make_example(query="q?", context=context, output=output, task_type="QA", id=case)
    if kind == "product" and "x" in size:
        n, m = (int(part[:-1]) * 1000 for part in size.split("x"))
        passages = synthetic_sentences(m, seed=1)  # one sentence per passage
        output = " ".join(synthetic_sentences(n, seed=0))
        return make_example(query="What did the council report about the bridge?", context=passages,
                            output=output, task_type="QA", id=case)
    raise ValueError(f"unknown size case {case!r}; expected one of {SIZE_CASES}")


def _size_case_main(case: str) -> dict:
    """Run one size case in this process (pinned to one core): build, score once, report time and memory."""
    pin_one_core()
    from .data import make_example
    from .scoring import Scorer

    scorer = Scorer.load()
    scorer.score_examples([make_example(query="q?", context=["The bridge opened."], output="It opened.",
                                      task_type="QA")])  # warm-up: compiled trees, caches
    t0 = time.perf_counter()
    ex = size_case_example(case)
    build = time.perf_counter() - t0
    rss_before = peak_rss_mb()
    start = time.perf_counter()
    result = scorer.score_examples([ex])[0]
    seconds = time.perf_counter() - start
    return {"case": case, "status": "ok", "seconds": round(seconds, 3), "peak_rss_mb": round(peak_rss_mb(), 1),
            "rss_before_scoring_mb": round(rss_before, 1), "build_seconds": round(build, 3),
            "output_chars": len(ex.output), "sentences": len(result.sentences), "context_chars": len(ex.context),
            "chunks": len(ex.chunks), "spans": len(result.spans), "risk": round(result.risk, 6)}


def rss_mb(pid: int) -> float:
    """Current resident set size of process ``pid`` in MiB (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def bench_sizes(cases=SIZE_CASES, *, timeout: float = 900.0, max_rss_gb: float = 16.0, progress=None) -> dict:
    """Time and peak memory of scoring one very long answer, or one answer against a very long context.

    Each case of :data:`SIZE_CASES` (see :func:`size_case_example`) runs in
    a fresh Python process pinned to one core (one BLAS thread): it loads the
    shipped detector, scores a warm-up answer, builds the case's
    :class:`~evqual.data.Example` with :func:`evqual.data.make_example` and
    scores it once with :meth:`evqual.scoring.Scorer.score_examples` (the
    production path, without the size caps of the loaders and of
    :meth:`~evqual.scoring.Scorer.score`).  ``seconds`` times that call;
    ``peak_rss_mb`` is the process's peak resident set size (model and input
    included; ``rss_before_scoring_mb`` is the peak before scoring).  A case
    still running after ``timeout`` seconds, or above ``max_rss_gb``, is
    stopped and reported with ``status`` ``"stopped"`` and what it reached.

    Returns
    -------
    dict
        ``{"cases": [...], "python", "platform", "timeout_s", "max_rss_gb"}``.
    """
    import json
    import subprocess
    import sys

    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    out = []
    for case in cases:
        if case not in SIZE_CASES:
            raise ValueError(f"unknown size case {case!r}; expected some of {SIZE_CASES}")
        code = ("import json, sys; from evqual.bench import _size_case_main; "
                f"json.dump(_size_case_main({case!r}), sys.stdout)")
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, text=True)
        seen, reason = 0.0, None
        while proc.poll() is None:
            seen = max(seen, rss_mb(proc.pid))
            elapsed = time.perf_counter() - start
            if elapsed > timeout:
                reason = f"still running after {timeout:.0f} s"
            elif seen > max_rss_gb * 1024:
                reason = f"resident memory above {max_rss_gb:g} GB"
            if reason:
                proc.kill()
                break
            time.sleep(0.2)
        stdout, stderr = proc.communicate()
        if reason:
            row = {"case": case, "status": "stopped", "reason": reason,
                   "seconds_reached": round(time.perf_counter() - start, 1), "rss_reached_mb": round(seen, 1)}
        elif proc.returncode != 0:
            row = {"case": case, "status": "failed", "returncode": proc.returncode,
                   "stderr": stderr.strip().splitlines()[-5:]}
        else:
            row = json.loads(stdout)
            row["process_seconds"] = round(time.perf_counter() - start, 1)
        out.append(row)
        if progress is not None:
            progress(row)
    return {"cases": out, "timeout_s": timeout, "max_rss_gb": max_rss_gb, "python": platform.python_version(),
            "platform": platform.platform()}


# ---------------------------------------------------------------------------- batch scoring on several cores
BATCH_ENGINES = ("jobs", "dask", "spark")


def _batch_frame(path, limit=None):
    """The answers of a JSONL as a pandas frame of score() arguments (list contexts as their chunks)."""
    import pandas as pd

    from .data import iter_records

    rows = []
    for _, ex, _ in iter_records(path):
        if ex is None:
            continue
        context = [ex.context[c.start:c.end] for c in ex.chunks] if len(ex.chunks) > 1 else ex.context
        rows.append({"id": ex.id, "query": ex.query, "context": context, "output": ex.output,
                     "task_type": ex.task_type})
        if limit is not None and len(rows) >= limit:
            break
    return pd.DataFrame(rows)


def _first_lines(path, n: int, folder) -> str:
    """A copy of the first ``n`` lines of ``path`` in ``folder`` (its source_info.jsonl beside it, when any)."""
    import shutil
    from pathlib import Path

    path, folder = Path(path), Path(folder)
    with open(path, encoding="utf-8") as fh, open(folder / path.name, "w", encoding="utf-8") as out:
        for k, line in enumerate(fh):
            if k >= n:
                break
            out.write(line)
    src = path.with_name("source_info.jsonl")
    if src.is_file() and path.name != src.name:
        shutil.copyfile(src, folder / src.name)
    return str(folder / path.name)


def _timed_cli(args) -> tuple[float, int]:
    """Wall seconds and exit status of ``python -m evqual ARGS``."""
    import subprocess
    import sys

    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "evqual", *args], check=False, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, done.returncode


def _bench_jobs(path, workers: int, small: str) -> dict:
    """``evqual score --jobs N`` as a user runs it (a fresh process); start-up: the same on one answer."""
    startup, _ = _timed_cli(["score", small, "--jobs", str(workers), "--out", os.devnull, "--no-progress"])
    wall, status = _timed_cli(["score", str(path), "--jobs", str(workers), "--out", os.devnull, "--no-progress"])
    return {"startup_s": round(startup, 2), "wall_s": round(wall, 2), "exit_status": status}


def _bench_dask(frame, workers: int) -> dict:
    """A LocalCluster of ``workers`` single-threaded processes; start-up includes the model load on each."""
    import warnings

    import dask
    import dask.dataframe as dd
    import distributed

    from .engines import score_dask

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        client.run(_load_default_model)  # once per worker process, as score_frame does on its first call
        startup = time.perf_counter() - start
        with dask.config.set({"dataframe.convert-string": False}):
            ddf = dd.from_pandas(frame, npartitions=8 * workers)
        ddf = client.persist(ddf)
        distributed.wait(ddf)
        start = time.perf_counter()
        out = score_dask(ddf).compute()
        wall = time.perf_counter() - start
    finally:
        client.close()
        cluster.close()
    return {"startup_s": round(startup, 2), "wall_s": round(wall, 2), "errors": int(out["error"].notna().sum())}


def _load_default_model():
    """Load the shipped model in this process as :func:`~evqual.scoring.score_frame` does (once per process)."""
    import pandas as pd

    from .scoring import score_frame

    score_frame(pd.DataFrame({"context": ["It opened in 1932."], "output": ["It opened in 1932."]}))
    return os.getpid()


def _warm_batches(batches):
    import pandas as pd

    _load_default_model()
    for pdf in batches:
        yield pd.DataFrame({"n": [len(pdf)]})


def _bench_spark(frame, workers: int) -> dict:
    """Spark ``local[workers]``; start-up: the session plus one task per worker that loads the model."""
    import sys
    import warnings

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from .engines import score_spark

    warnings.simplefilter("ignore")
    start = time.perf_counter()
    spark = (SparkSession.builder.master(f"local[{workers}]").appName("evqual-bench")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.enabled", "false").config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.range(workers, numPartitions=workers).mapInPandas(_warm_batches, "n long").collect()
        startup = time.perf_counter() - start
        sdf = spark.createDataFrame(frame).repartition(8 * workers).cache()
        sdf.count()
        start = time.perf_counter()
        sdf_out = score_spark(sdf)
        n_err = sdf_out.filter("error is not null").count()  # scores every row (the count needs each row's error)
        wall = time.perf_counter() - start
    finally:
        spark.stop()
    return {"startup_s": round(startup, 2), "wall_s": round(wall, 2), "errors": int(n_err)}


def bench_batch(data=None, *, workers=(1, 2), engines=BATCH_ENGINES, limit: int | None = None) -> dict:
    """Answers per second of batch scoring with 1 and 2 workers: ``evqual score --jobs``, Dask and Spark.

    ``--jobs`` runs ``evqual score`` in a fresh process, as a user does:
    its start-up is the wall time of the same command on a one-answer file
    (Python, imports, model load, worker pool), and its answers/s is
    ``answers / (wall - start-up)``.  Dask (a ``LocalCluster`` of
    single-threaded worker processes) and Spark (``local[N]``) are timed
    from a started cluster/session whose workers have loaded the model
    (that is their start-up), scoring a frame already in the cluster.

    Returns
    -------
    dict
        ``{"answers", "cpu_count", "results": {engine: {workers: {...}}}, "loadavg_before", ...}``.
    """
    import tempfile
    from pathlib import Path

    from .data import sample_path

    path = Path(data) if data is not None else sample_path() / "response.jsonl"
    if path.is_dir():
        path = path / "response.jsonl"
    result = {"data": str(path), "cpu_count": os.cpu_count(), "loadavg_before": [round(x, 2) for x in os.getloadavg()],
              "results": {}}
    with tempfile.TemporaryDirectory() as tmp:
        src = path
        if limit is not None:
            (Path(tmp) / "limit").mkdir()
            src = Path(_first_lines(path, limit, Path(tmp) / "limit"))
        (Path(tmp) / "one").mkdir()
        small = _first_lines(path, 1, Path(tmp) / "one")
        frame = _batch_frame(src)
        n = len(frame)
        result["answers"] = n
        for engine in engines:
            rows = {}
            for w in workers:
                load = os.getloadavg()[0]
                if engine == "jobs":
                    row = _bench_jobs(src, w, small)
                    steady = max(row["wall_s"] - row["startup_s"], 1e-9)
                elif engine == "dask":
                    row = _bench_dask(frame, w)
                    steady = row["wall_s"]
                else:
                    row = _bench_spark(frame, w)
                    steady = row["wall_s"]
                row["answers_per_s"] = round(n / steady, 1)
                row["loadavg_1min_at_start"] = round(load, 2)
                rows[str(w)] = row
            if len(workers) > 1:
                first, last = rows[str(workers[0])], rows[str(workers[-1])]
                rows["speedup"] = round(last["answers_per_s"] / first["answers_per_s"], 2)
            result["results"][engine] = rows
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    return result
