"""The ``evqual`` command line.

Every command is a thin wrapper over a library function; ``main`` returns an
exit status instead of calling ``sys.exit`` so that tests can call it.

Exit status: 0 success, 1 data errors (bad rows: the good rows are still
processed and written, the bad ones are listed on stderr), 2 usage errors
(including an input, model, policy or output that cannot be opened: nothing
was written), 3 the run stopped because an output could not be written (a full
disk, a closed pipe; what was written before is complete and valid).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ._version import __version__
from .errors import EvqualDataError, MissingDependencyError, ResponseLevelFallbackWarning

EXIT_OK, EXIT_DATA, EXIT_USAGE, EXIT_IO = 0, 1, 2, 3

# Choices and defaults of the options, as literals: building the parser (``evqual --version``, ``--help``)
# must not import scikit-learn, pandas or numpy.  tests/test_cli.py checks that they equal the library's
# (evqual.models.CALIBRATIONS, THRESHOLD_RULES, evqual.data.DEFAULT_LIMITS, AUGMENT_VERSIONS, ...).
CALIBRATIONS = ("sigmoid", "isotonic", "none")
THRESHOLD_RULES = ("f1", "seed002")
AUGMENT_VERSIONS = ("contrastive.v1",)
COMPOSITIONS = ("bounds", "none")
ENTITY_BACKENDS = ("regex", "spacy")
DEFAULT_MAX_OUTPUT_CHARS = 1_000_000
DEFAULT_MAX_CONTEXT_CHARS = 10_000_000


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value):
    r"""A text cell that a spreadsheet will not run as a formula (OWASP's CSV-injection advice).

    Text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'``
    (Excel and LibreOffice then show it as text); other values are returned as they are.

    >>> csv_safe('=HYPERLINK("http://x")'), csv_safe("-2+3"), csv_safe("q1"), csv_safe(-2.5)
    ('\'=HYPERLINK("http://x")', "'-2+3", 'q1', -2.5)
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _to_csv(df, out) -> None:
    """Write ``df`` as CSV with every text field quoted (an id holding a carriage return or a new line,
    untrusted input, must not split its row for the reader) and no text cell a spreadsheet would run as
    a formula (:func:`csv_safe`); written whole to a temporary file, then renamed onto ``out``."""
    import csv

    from ._files import AtomicFile

    import pandas as pd

    df = df.copy()
    for col in df.columns:
        if df[col].dtype == object or pd.api.types.is_string_dtype(df[col].dtype):
            df[col] = df[col].map(csv_safe)
    with AtomicFile(out) as fh:
        df.to_csv(fh, index=False, quoting=csv.QUOTE_NONNUMERIC)


def _refuse_clash(command: str, inputs, outputs) -> bool:
    """Print an error and return True when an output is an input or another output (see
    :func:`evqual._files.clashing_paths`)."""
    from ._files import clashing_paths

    problem = clashing_paths(inputs, outputs)
    if problem:
        print(f"evqual {command}: error: {problem}", file=sys.stderr)
        return True
    return False


def _open_output(path):
    """``path`` for writing: an :class:`~evqual._files.AtomicFile` (whole or not at all) for a regular or new
    file, the file itself for anything else (a pipe, ``/dev/stdout``)."""
    import stat

    from ._files import AtomicFile

    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        special = False
    if special:
        return open(path, "w", encoding="utf-8", newline="\n")
    return AtomicFile(path)

def _add_limit_options(parser) -> None:
    """--max-output-chars and --max-context-chars, shared by every command that reads answers."""
    parser.add_argument("--max-output-chars", type=int, default=DEFAULT_MAX_OUTPUT_CHARS, metavar="N",
                        help=f"refuse (as a bad row) answers longer than N characters "
                             f"(default {DEFAULT_MAX_OUTPUT_CHARS:,}; 0 = no limit)")
    parser.add_argument("--max-context-chars", type=int, default=DEFAULT_MAX_CONTEXT_CHARS, metavar="N",
                        help=f"refuse (as a bad row) contexts longer than N characters "
                             f"(default {DEFAULT_MAX_CONTEXT_CHARS:,}; 0 = no limit)")


def _limits(args, command):
    """The :class:`~evqual.data.Limits` of the command line; ``None`` after printing a usage error."""
    from .data import Limits

    values = {}
    for name in ("max_output_chars", "max_context_chars"):
        v = getattr(args, name)
        if v < 0:
            print(f"evqual {command}: error: --{name.replace('_', '-')} must be >= 0 (0 = no limit); got {v}",
                  file=sys.stderr)
            return None
        values[name] = v or None
    return Limits(**values)


def _why(exc: BaseException) -> str:
    """An OSError in words: its strerror when it has one."""
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _crossfit_arg(value: str) -> int:
    """argparse type of --crossfit: an integer of at least 2."""
    try:
        k = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2; got {value[:40]!r}") from None
    if k < 2:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2 (folds); got {k}")
    return k


def _sha256_arg(value: str) -> str:
    """argparse type of --model-sha256: 64 hexadecimal characters, lower-cased."""
    import re

    if not re.fullmatch(r"[0-9a-fA-F]{64}", value.strip()):
        raise argparse.ArgumentTypeError(f"expected a SHA-256 (64 hexadecimal characters); got {value[:80]!r}")
    return value.strip().lower()


def _add_model_options(parser, what: str = "model folder (default: models/default)") -> None:
    """--model and --model-sha256, shared by every command that loads a model."""
    parser.add_argument("--model", metavar="DIR", help=what)
    parser.add_argument("--model-sha256", type=_sha256_arg, metavar="HEX",
                        help="refuse to load unless the model file (model.evqpack) has this SHA-256 (checked before anything else "
                             "is read; default: $EVQUAL_MODEL_SHA256 when set)")


def _load_model(args, command):
    """The detector of --model / --model-sha256; ``None`` after printing a one-line error."""
    from .models import ModelLoadError, default_model_path, load_detector

    try:
        return load_detector(Path(args.model) if args.model else default_model_path(), sha256=args.model_sha256,
                             lean=True)
    except (ModelLoadError, MissingDependencyError) as exc:
        print(f"evqual {command}: error: cannot load model: {' '.join(str(exc).split())}", file=sys.stderr)
        return None


def _has_module(name: str) -> bool:
    """Whether ``name`` can be imported (without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # set to None in sys.modules, a broken package
        return False


def _dependencies_ok(command: str, *, parquet=(), entity_backend: str = "regex") -> bool:
    """Check, before any data is read, the optional packages the command will need: pyarrow for each
    ``.parquet`` path of ``parquet``, spaCy and its pipeline for ``entity_backend="spacy"``.
    ``False`` after printing the error with both install commands."""
    for path in parquet:
        if path and Path(path).suffix.lower() == ".parquet" and not _has_module("pyarrow"):
            exc = MissingDependencyError(f"{path}: parquet", "parquet", "pyarrow")
            print(f"evqual {command}: error: {exc}", file=sys.stderr)
            return False
    if entity_backend == "spacy":
        from .text import require_spacy

        try:
            require_spacy("--entity-backend spacy")
        except MissingDependencyError as exc:
            print(f"evqual {command}: error: {exc}", file=sys.stderr)
            return False
    return True


def _add_fit_options(parser) -> None:
    """--calibration and --threshold-rule, shared by `evaluate` and `train`."""
    parser.add_argument("--calibration", choices=CALIBRATIONS, default="sigmoid",
                        help="calibration of the scores on the validation part (default sigmoid)")
    parser.add_argument("--threshold-rule", choices=THRESHOLD_RULES, default="f1",
                        help="f1: maximise validation F1 (seed 004); seed002: seed 002's rule on 0.20..0.80")
    parser.add_argument("--augment", choices=AUGMENT_VERSIONS, default=None,
                        help="add minimally edited hallucinations of the fitting rows' grounded answers to the "
                             "fitting side only (evqual.data.augment_contrastive; default: none)")
    parser.add_argument("--no-evidence-floor", action="store_true",
                        help="do not floor the risk of answers where a claim-aligned contradiction check fires "
                             "(Detector(evidence_floor=False))")
    parser.add_argument("--compose", choices=COMPOSITIONS, default="bounds",
                        help="bounds: keep an answer's risk between its riskiest sentence's calibrated risk and "
                             "their sum (default); none: the calibrated answer risk alone (Detector(compose=...))")
    parser.add_argument("--crossfit", type=_crossfit_arg, default=None, metavar="K",
                        help="cross-fit calibration and thresholds: K models each score a fold of the validation "
                             "split out of fold, the maps are fitted on all of it, the final model on every row "
                             "(K+1 fits; Detector(crossfit=K); default: one validation part)")


def _add_verify_options(parser) -> None:
    """The verification backend's options, shared by `verify` and `score --verify`."""
    parser.add_argument("--backend", choices=("rules", "llm"), default="rules",
                        help="rules: the claim-level model and checks, no LLM (default); llm: an "
                             "OpenAI-compatible chat-completions server")
    parser.add_argument("--llm-base-url", metavar="URL",
                        help="the LLM server's base URL, e.g. http://127.0.0.1:8000/v1 (default: "
                             "$EVQUAL_LLM_BASE_URL)")
    parser.add_argument("--llm-model", metavar="NAME", help="the LLM's model name (default: $EVQUAL_LLM_MODEL); "
                                                            "the API key comes from $EVQUAL_LLM_API_KEY")
    parser.add_argument("--mutations", type=int, default=5, metavar="N",
                        help="metarag: N synonym and N antonym variants per factoid (default 5)")
    parser.add_argument("--tau", type=float, default=None, metavar="T",
                        help="claims: a claim is SUPPORTED at p_supported >= T (default 0.75); metarag: flagged "
                             "at H >= T (default topic-aware: 0.5, 0.3 for sensitive topics)")
    parser.add_argument("--retriever", choices=("sparse", "dense", "hybrid", "rrf"), default="sparse",
                        help="evidence per claim: BM25 (default), sentence embeddings (the embeddings extra), "
                             "their min-max fusion 0.6/0.4, or reciprocal rank fusion")


def _verifier(args, command, method):
    """The verifier of the parsed options, or ``None`` after printing the error."""
    from .verify import make_verifier

    try:
        return make_verifier(method, args.backend, tau=args.tau, mutations=args.mutations,
                             retriever=args.retriever, llm_base_url=args.llm_base_url, llm_model=args.llm_model)
    except (ValueError, TypeError, ImportError) as exc:
        print(f"evqual {command}: error: {exc}", file=sys.stderr)
        return None


class _VersionAction(argparse.Action):
    """``--version``: the version and the reading path, looked up only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from ._build import describe

        parser._print_message(f"evqual {__version__}\n{describe()}\n", sys.stdout)
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evqual",
        description="Evidence-quality features and detectors for RAG hallucination detection.",
    )
    parser.add_argument("--version", action=_VersionAction, help="show evqual's version and which reading path "
                        "runs (compiled or pure Python), then exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    fz = sub.add_parser(
        "featurize",
        help="write one row of evidence-quality features per response (or per sentence)",
        description=(
            "Featurize a dataset: one row per response (or per output sentence) with ids, split, task, "
            "model, the gold label(s) and every feature. Without --data, the sample embedded in the "
            "package is used. Data errors are listed on stderr; the good rows are still written and "
            "the exit status is 1."
        ),
    )
    fz.add_argument("--data", metavar="DIR_OR_FILE",
                    help="RAGTruth folder, generic .jsonl, or RAGTruth-processed .csv/.parquet "
                         "(default: the embedded sample)")
    fz.add_argument("--out", required=True, metavar="FILE", help="output file, .csv or .parquet")
    fz.add_argument("--level", choices=["response", "sentence"], default="response",
                    help="one row per response (default) or per output sentence")
    fz.add_argument("--entity-backend", choices=ENTITY_BACKENDS, default="regex",
                    help="entity extractor: regex (default) or spacy (needs the 'ner' extra)")
    fz.add_argument("--metadata", action="store_true",
                    help="add the opt-in metadata features (generator, quality, temperature)")
    fz.add_argument("--families", metavar="NAMES",
                    help="comma-separated content families to keep (default: all)")
    fz.add_argument("--split", action="append", metavar="NAME",
                    help="keep only this split (repeatable; RAGTruth layout only)")
    fz.add_argument("--exclude-implicit-true", action="store_true",
                    help="drop spans flagged implicit_true from the targets")
    fz.add_argument("--strict", action="store_true", help="stop at the first bad row (exit 1)")
    fz.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _add_limit_options(fz)
    fz.set_defaults(func=cmd_featurize)

    ev = sub.add_parser(
        "evaluate", help="evaluate a method under a protocol and write a report folder",
        description=("Evaluate one method under cv5 (grouped 5-fold CV over the test split, each fold also "
                     "trained on the train split), official (fit on train, test on test) or transfer (several "
                     "sources: each held out in turn, never trained on). Thresholds and "
                     "calibration are tuned on a grouped validation part of each training side. Writes "
                     "metrics.json, metrics.md, CSV tables and PNG figures to --out."))
    ev.add_argument("--data", metavar="SOURCE", action="append",
                    help="dataset (default: the embedded sample); repeat for several sources, each "
                         "PATH[:split=S,weight=W,name=N] (see `Several sources` in README.md)")
    ev.add_argument("--protocol", choices=["cv5", "official", "transfer"], default="cv5",
                    help="cv5 (default), official, or transfer: leave each source (and each task of a "
                         "source of several tasks) out in turn; needs two --data sources or more")
    ev.add_argument("--heldout-split", default="test", metavar="NAME",
                    help="transfer: the split of a held-out source that is scored (default test; dev while "
                         "developing)")
    ev.add_argument("--method", default="evqual", help="method name (see `evqual methods`); default evqual")
    ev.add_argument("--out", required=True, metavar="REPORT_DIR", help="report folder to write")
    _add_fit_options(ev)
    ev.add_argument("--folds", type=int, default=5, help="folds for cv5 (default 5; fewer for tiny data)")
    ev.add_argument("--no-importance", action="store_true", help="skip the permutation importance")
    ev.set_defaults(func=cmd_evaluate)

    tr = sub.add_parser(
        "train", help="fit a method on all given data and save it with meta.json",
        description=("Fit a method on all given data, holding out a grouped validation part for calibration "
                     "and threshold (25% of the test split's sources when the data has one, else 20% of all "
                     "sources), then save model.evqpack and a validated meta.json to --out."))
    tr.add_argument("--data", metavar="SOURCE", action="append",
                    help="dataset (default: the embedded sample); repeat for several sources, each "
                         "PATH[:split=S,weight=W,name=N] (see `Several sources` in README.md)")
    tr.add_argument("--method", default="evqual", help="method name (default evqual)")
    tr.add_argument("--out", required=True, metavar="DIR", help="model folder to write, e.g. models/evqual")
    _add_fit_options(tr)
    tr.add_argument("--entity-backend", choices=ENTITY_BACKENDS, default="regex")
    tr.add_argument("--metrics", metavar="IN_METRICS.json",
                    help="input: an existing metrics.json (from `evqual evaluate`) whose figures are copied into the "
                         "model's meta.json; it is read, never written")
    tr.add_argument("--validation-split", metavar="NAME", default="test",
                    help="draw the calibration/threshold part from rows of this split when present, several "
                         "joined by + (test+dev) (default: test, as cv5 does); otherwise 20%% of all sources")
    tr.set_defaults(func=cmd_train)

    rp = sub.add_parser(
        "reproduce", help="run every method under both protocols and regenerate docs/RESULTS.md tables",
        description="Evaluate every method under cv5 and official, write reports and the RESULTS block.")
    rp.add_argument("--data", metavar="DIR_OR_FILE", help="dataset (default: ../shared/data/ragtruth)")
    rp.add_argument("--out", default="docs/reports", help="report root (default docs/reports)")
    rp.add_argument("--results", default="docs/RESULTS.md", help="RESULTS file whose generated block is rewritten")
    rp.add_argument("--methods", help="comma-separated subset of methods (default: all)")
    rp.add_argument("--protocols", default="cv5,official", help="comma-separated protocols")
    rp.add_argument("--no-ablation", action="store_true", help="skip the feature-group ablation")
    rp.set_defaults(func=cmd_reproduce)

    pr = sub.add_parser(
        "predict", help="risk and flag per response with a saved model (default: models/default)",
        description=("Score every response of a dataset with a saved detector: one row per response with its "
                     "calibrated risk, the model's threshold, the flag and the gold label when known. Without "
                     "--data the embedded sample is used; without --model the shipped models/default."))
    pr.add_argument("--data", metavar="DIR_OR_FILE", help="dataset (default: the embedded sample)")
    _add_model_options(pr)
    pr.add_argument("--out", required=True, metavar="FILE", help="output .csv or .jsonl")
    _add_limit_options(pr)
    pr.set_defaults(func=cmd_predict)

    sc = sub.add_parser(
        "score", help="score a JSONL of answers: risk, decision, sentences, spans and reasons per line",
        description=("Stream IN.jsonl (the generic JSONL of RAG logs, or a RAGTruth response.jsonl with its "
                     "source_info.jsonl beside it) and write exactly one JSON line per input line, in order: "
                     "the scored answer (risk, flagged, decision, threshold, topics, sentences with reasons and "
                     "evidence, spans, model) or an error record with the line number and the reason. Exit "
                     "status 1 if any line failed, 0 otherwise, 2 on usage errors."))
    sc.add_argument("input", metavar="IN.jsonl", nargs="?",
                    help="answers to score; - reads generic JSONL from standard input (default: the RAGTruth "
                         "sample embedded in the package)")
    _add_model_options(sc, "model folder (default: the shipped models/default)")
    sc.add_argument("--out", metavar="OUT.jsonl", help="output file (default: standard output)")
    sc.add_argument("--policy", metavar="FILE", help="decision policy TOML (default: the built-in policy; see "
                                                   "evqual/scoring/policy_example.toml)")
    sc.add_argument("--audit-log", metavar="FILE", help="append one audit record per answer to this JSONL")
    sc.add_argument("--flag-rate", type=float, default=None, metavar="R",
                    help="flag-rate budget: set the general threshold and escalate band so that a share R (0 < R < "
                         "1) of answers is flagged or escalated, from the risks of the first --budget-rows answers "
                         "of IN.jsonl (no label needed; not with standard input); default: the policy's "
                         "[budget] flag_rate, else none")
    sc.add_argument("--budget-rows", type=int, default=500, metavar="N",
                    help="answers the flag-rate budget is fitted on: the first N of IN.jsonl (default 500; "
                         "scored once more in the run)")
    sc.add_argument("--batch-size", type=int, default=16, metavar="N", help="answers featurized together (16)")
    sc.add_argument("--jobs", type=int, default=1, metavar="N",
                    help="worker processes (1; 0: every core; at most the usable cores and the blocks of lines); "
                         "the output is the same for every N")
    sc.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    sc.add_argument("--no-context", action="store_true",
                    help="leave each answer's context out of its result (smaller output; reports cannot show it)")
    sc.add_argument("--verify", choices=("claims", "metarag"), default=None,
                    help="verify the answers the policy escalates with this method and record both stages "
                         "(default: no verification)")
    _add_verify_options(sc)
    _add_limit_options(sc)
    sc.set_defaults(func=cmd_score)

    vf = sub.add_parser(
        "verify", help="verify answers claim by claim (seed 003) or by metamorphic testing (MetaRAG)",
        description=("Stream IN.jsonl and write exactly one JSON line per input line, in order: the answer's "
                     "verification (claims with spans, verdicts SUPPORTED/REFUTED/NO_EVIDENCE, p_supported (the "
                     "probability that the claim is supported, whatever its verdict) and evidence; or MetaRAG "
                     "factoids with their variants, answers and penalties), its score in "
                     "[0, 1] (the hallucination rate for claims, H for metarag), flagged and tier "
                     "(accept/revise/reject) and warnings (W001: the answer or context looks non-English; W003: "
                     "MetaRAG made fewer variants than asked), or an error record naming the line. Exit status 1 if "
                     "any line failed, 0 otherwise, 2 on usage errors."))
    vf.add_argument("input", metavar="IN.jsonl", nargs="?",
                    help="answers to verify; - reads generic JSONL from standard input (default: the RAGTruth "
                         "sample embedded in the package)")
    vf.add_argument("--out", metavar="OUT.jsonl", help="output file (default: standard output)")
    vf.add_argument("--method", choices=("claims", "metarag"), default="claims",
                    help="claims: atomic claims checked against retrieved evidence (default); metarag: factoids, "
                         "synonym and antonym mutations, penalties (seed 000)")
    _add_verify_options(vf)
    vf.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    _add_limit_options(vf)
    vf.set_defaults(func=cmd_verify)

    sv = sub.add_parser(
        "serve", help="run evqual as an HTTP service (the server extra): /v1/score, /v1/verify, /v1/model, ...",
        description=("Serve the model over HTTP (FastAPI and uvicorn; pip install -e \".[server]\"): POST /v1/score "
                     "and /v1/verify take one item or {\"items\": [...]} and return what `evqual score` and "
                     "`evqual verify` write for the same lines; GET /v1/model, /healthz, /readyz, /metrics "
                     "(Prometheus) and /openapi.json. Listens on 127.0.0.1 unless --host says otherwise. Bearer-token "
                     "authentication is on when $EVQUAL_API_TOKENS (comma-separated) or --tokens-file is set. Stops "
                     "on Ctrl-C or SIGTERM after the requests in flight finish. Exit status 2 on usage errors."))
    sv.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1: this machine only)")
    sv.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    sv.add_argument("--workers", type=int, default=1, metavar="N",
                    help="scoring workers: 1 (default) scores on a thread of the server process; N > 1 in N "
                         "scoring processes, each loading and auditing the model once, a request going to the one "
                         "its context hashes to or the least busy (0: every usable core; at most the usable cores)")
    _add_model_options(sv, "model folder (default: the shipped models/default)")
    sv.add_argument("--policy", metavar="FILE", help="decision policy TOML (default: the built-in policy)")
    sv.add_argument("--audit-log", metavar="FILE",
                    help="append one audit record per scored answer and refused item, with its request id")
    sv.add_argument("--tokens-file", metavar="FILE",
                    help="bearer tokens, one per line (# comments); with $EVQUAL_API_TOKENS, either turns auth on")
    sv.add_argument("--max-body-bytes", type=int, default=8_000_000, metavar="N",
                    help="larger request bodies get 413 (default 8000000)")
    sv.add_argument("--max-batch", type=int, default=64, metavar="N", help="items per request, at most (64; more: 422)")
    sv.add_argument("--request-timeout", type=float, default=30.0, metavar="S",
                    help="seconds a request may wait and run; then 503, and its job stops (default 30)")
    sv.add_argument("--max-queue", type=int, default=64, metavar="N",
                    help="requests being read, waiting or scored, at most (64; more: 503 at once, before the "
                         "body is read)")
    sv.add_argument("--body-timeout", type=float, default=30.0, metavar="S",
                    help="seconds to receive a request's body; then 408 and the connection closed (default 30)")
    sv.add_argument("--header-timeout", type=float, default=10.0, metavar="S",
                    help="seconds a connection has to send a complete request head; then it is closed (default 10)")
    sv.add_argument("--keep-alive-timeout", type=float, default=5.0, metavar="S",
                    help="seconds an idle keep-alive connection stays open (default 5)")
    sv.add_argument("--max-connections", type=int, default=256, metavar="N",
                    help="open connections, at most; more are closed at once (default 256)")
    sv.add_argument("--policy-overrides", choices=("off", "stricter", "any"), default="off",
                    help="what a request's 'policy' key may do: off (default: refused with 403), stricter (only "
                         "overrides that flag at least what the service's policy flags), any")
    sv.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                    help="allow this origin by CORS (repeatable; default: no CORS)")
    sv.add_argument("--verify-backend", choices=("rules", "llm"), default="rules",
                    help="backend of verification requests (default rules; llm reads $EVQUAL_LLM_*)")
    sv.add_argument("--no-context", action="store_true", help="leave each answer's context out of its result")
    sv.add_argument("--log-level", choices=("critical", "error", "warning", "info", "debug"), default="info",
                    help="uvicorn's log level (default info)")
    sv.set_defaults(func=cmd_serve)

    xp = sub.add_parser(
        "explain", help="write an auditor's report (HTML and/or markdown) of scored answers",
        description=("Render a self-contained report, one card per answer: risk, decision and the rule that "
                     "decided, both thresholds explained, the gold/user label against the decision, the answer "
                     "with flagged sentences and spans marked (notes in shown answers), every sentence's reasons "
                     "beside the evidence they name, the full context; filters by decision and topic, sorting "
                     "by risk. Lines that could not be scored get their own cards. IN.jsonl is either the "
                     "output of `evqual score` or raw answers (then scored first with --model and --policy)."))
    xp.add_argument("input", metavar="IN.jsonl", help="`evqual score` output, or answers to score")
    xp.add_argument("--html", metavar="FILE", help="write the HTML report here")
    xp.add_argument("--markdown", metavar="FILE", help="write the markdown report here")
    _add_model_options(xp, "model for raw answers (default: models/default)")
    xp.add_argument("--policy", metavar="FILE", help="decision policy TOML for raw answers")
    xp.add_argument("--title", default="evqual report", help="report title")
    xp.add_argument("--sort", choices=("input", "risk"), default="input",
                    help="order of the answers: input order (default) or risk high to low")
    _add_limit_options(xp)
    xp.set_defaults(func=cmd_explain)

    ad = sub.add_parser(
        "adapt", help="adapt a model to a few labelled answers of your own logs (seconds, one core)",
        description=("Adapt a saved model to labelled answers of your own domain (25 to 1,000; about 100 is a good "
                     "start): refit calibration and the decision threshold, and a regularised top layer over the "
                     "model's risk and features whose strength is chosen by cross-validation on your labels (never "
                     "worse than the model as it was under that cross-validation). Writes the adapted model "
                     "(model.evqpack, meta.json recording the parent model's SHA-256 and the data's size and "
                     "SHA-256) and its report (adaptation.md, adaptation.json: cross-validated precision and recall "
                     "at the adapted decision with bootstrap intervals, a learning curve over k) to --out. Every row "
                     "must be valid and labelled. Exit status 2 on bad data or usage errors."))
    _add_model_options(ad, "model folder to adapt (default: models/default)")
    ad.add_argument("--data", required=True, metavar="LABELLED",
                    help="your labelled answers: generic .jsonl (label 0/1 on every line), a RAGTruth folder or "
                         "a .csv/.parquet table")
    ad.add_argument("--out", required=True, metavar="NEW_DIR", help="folder to write the adapted model to")
    ad.add_argument("--seed", type=int, default=0, help="seed of the folds, the bootstrap and the draws (default 0)")
    ad.add_argument("--learning-curve", default="25,50,100,200", metavar="K,...",
                    help="sizes k of the learning curve (default 25,50,100,200; below the number of answers); "
                         "'none' skips it")
    ad.add_argument("--draws", type=int, default=5, metavar="N",
                    help="random draws of k answers per point of the learning curve (default 5)")
    ad.set_defaults(func=cmd_adapt)

    me = sub.add_parser("methods", help="list the detection methods", description="List every method by name.")
    me.set_defaults(func=cmd_methods)

    ft = sub.add_parser("features", help="list every feature with its family, range and definition",
                        description="Print the feature registry.")
    ft.add_argument("--level", choices=["response", "sentence"], default=None)
    ft.set_defaults(func=cmd_features)
    return parser


def _report_issues(result) -> None:
    if result.issues:
        print(result.report(max_shown=10), file=sys.stderr)


def cmd_featurize(args) -> int:
    from .features import EvidenceFeaturizer
    from ._progress import Progress

    out = Path(args.out)
    if out.suffix.lower() not in (".csv", ".parquet"):
        print(f"evqual featurize: error: --out must end in .csv or .parquet; got {out.name!r}", file=sys.stderr)
        return EXIT_USAGE
    if not _dependencies_ok("featurize", parquet=(args.out, args.data), entity_backend=args.entity_backend):
        return EXIT_USAGE
    if _refuse_clash("featurize", [("input", args.data)], [("--out", args.out)]):
        return EXIT_USAGE
    families = [f.strip() for f in args.families.split(",") if f.strip()] if args.families else None
    fz = EvidenceFeaturizer(level=args.level, families=families, include_metadata=args.metadata,
                            entity_backend=args.entity_backend)
    try:
        fz._check_params()
    except ValueError as exc:
        print(f"evqual featurize: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    kwargs = {"splits": args.split} if args.split else {}
    limits = _limits(args, "featurize")
    if limits is None:
        return EXIT_USAGE
    try:
        result, _ = _load(args.data, strict=args.strict, limits=limits, **kwargs)
    except EvqualDataError as exc:
        print(f"evqual featurize: data error: {exc}", file=sys.stderr)
        return EXIT_DATA
    except TypeError as exc:
        print(f"evqual featurize: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    progress = None if args.no_progress else Progress(len(result), label="featurize")
    try:
        fz.fit(result)
        df, failed = _row_by_row_on_error(
            lambda exs: fz.frame(exs, exclude_implicit_true=args.exclude_implicit_true,
                                 progress=progress if len(exs) > 1 else None),
            result, "featurizing")
    except MissingDependencyError as exc:
        print(f"evqual featurize: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if failed:
        import pandas as pd

        df = pd.concat(df, ignore_index=True) if df else fz.frame([], exclude_implicit_true=True)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.suffix.lower() == ".parquet":
            try:
                df.to_parquet(out, index=False)
            except ImportError:  # checked before featurizing; kept for a pyarrow that fails to import
                print(f"evqual featurize: error: {MissingDependencyError('writing parquet', 'parquet', 'pyarrow')}",
                      file=sys.stderr)
                return EXIT_USAGE
        else:
            _to_csv(df, out)
    except OSError as exc:
        print(f"evqual featurize: error: cannot write {out}: {_why(exc)}", file=sys.stderr)
        return EXIT_IO
    print(f"evqual: wrote {len(df)} rows x {fz.n_features_out_} features to {out}", file=sys.stderr)
    return EXIT_DATA if result.issues or failed else EXIT_OK


def _row_by_row_on_error(fn, result, what: str):
    """``(fn(examples), 0)``; when that raises, ``fn`` row by row: ``([outputs of good rows], n_failed)``.

    A failing row is reported on stderr (E110, file and line) and left out; the others are kept."""
    from .errors import DataIssue

    examples = list(result)
    try:
        return fn(examples), 0
    except MissingDependencyError:
        raise
    except Exception:  # noqa: BLE001 - find the row that fails, keep the others
        pass
    outputs, failed = [], 0
    for ex in examples:
        try:
            outputs.append(fn([ex]))
        except MissingDependencyError:
            raise
        except Exception as exc:  # noqa: BLE001
            failed += 1
            where, _, line = (ex.origin or "?").rpartition(":")
            issue = DataIssue("E110", where or ex.origin or "?", int(line) if line.isdigit() else None, None,
                              f"{what} failed (id {ex.id!r}): {type(exc).__name__}: {exc}"[:500])
            print(f"evqual: {issue}", file=sys.stderr)
    return outputs, failed


def _load(path, strict=False, limits=None, *, all_rows=False, **kwargs):
    """Load a dataset (default: the embedded sample); returns (result, label) or raises EvqualDataError.

    ``path`` may be a list of source specs (``--data`` repeated, or one with options): read with
    :func:`evqual.data.load_sources` (``all_rows`` as there).  Bad rows are listed on stderr; extra keyword
    arguments go to the loader (``splits``)."""
    import warnings

    from .data import load_data, load_sources, plain_path, sample_path

    if isinstance(path, list) and not plain_path(path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = load_sources(path, strict=strict, limits=limits, all_rows=all_rows)
        _report_issues(result)
        return result, " + ".join(path)
    if isinstance(path, list):
        path = path[0]
    data_path = Path(path) if path else sample_path()
    if path is None:
        print(f"evqual: no --data given; using the embedded sample {data_path}", file=sys.stderr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = load_data(data_path, strict=strict, limits=limits, **kwargs)
    _report_issues(result)
    return result, str(data_path)


def _source_specs(args, command):
    """The ``--data`` source specs when there are several or one has options (None: one plain path or
    none); False after printing the error of a bad spec."""
    from .data import parse_source, plain_path

    data = args.data or []
    try:
        if not data or plain_path(data):
            return None
        for spec in data:
            parse_source(spec)
    except ValueError as exc:
        print(f"evqual {command}: error: --data {exc}", file=sys.stderr)
        return False
    return list(data)


def _check_method(name) -> bool:
    from .models import METHODS

    if name not in METHODS:
        print(f"evqual: error: unknown method {name!r}; choose one of: {', '.join(METHODS)}", file=sys.stderr)
        return False
    return True


def cmd_evaluate(args) -> int:
    import warnings

    from .evaluation import build_frame, evaluate, write_report

    if not _check_method(args.method) or not _dependencies_ok("evaluate", parquet=tuple(args.data or ())):
        return EXIT_USAGE
    if args.folds < 2:
        print("evqual evaluate: error: --folds must be at least 2", file=sys.stderr)
        return EXIT_USAGE
    specs = _source_specs(args, "evaluate")
    if specs is False:
        return EXIT_USAGE
    if args.protocol == "transfer" and (specs is None or len(specs) < 2):
        print("evqual evaluate: error: --protocol transfer needs two --data sources or more (each is held out "
              "in turn)", file=sys.stderr)
        return EXIT_USAGE
    try:
        result, label = _load(specs if specs is not None else args.data, all_rows=args.protocol == "transfer")
    except EvqualDataError as exc:
        print(f"evqual evaluate: data error: {exc}", file=sys.stderr)
        return EXIT_DATA
    trainable = copies = None
    if specs is not None:
        from .data import group_copies, trainable_rows

        trainable = trainable_rows(result.examples, specs)
        copies = group_copies([ex.dataset for ex in result.examples],
                              [ex.source_id for ex in result.examples], specs, seed=42)
    frame, builder, seconds = build_frame(result)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("ignore")
            warnings.simplefilter("always", ResponseLevelFallbackWarning)
            res = evaluate(result, method=args.method, protocol=args.protocol, frame=frame, featurize_seconds=seconds,
                           calibration=args.calibration, threshold_rule=args.threshold_rule, n_splits=args.folds,
                           augment=args.augment, builder=builder, evidence_floor=not args.no_evidence_floor,
                           compose=args.compose, crossfit=args.crossfit, heldout_split=args.heldout_split,
                           trainable=trainable, copies=copies)
    except ValueError as exc:
        print(f"evqual evaluate: error: {exc}", file=sys.stderr)
        return EXIT_DATA
    finally:
        _fallback_note(caught, "evaluate")
    write_report(res, args.out, frame=None if args.no_importance else frame, data_note=f"Data: {label}.")
    r = res.metrics["response"]
    for unit, m in (res.metrics.get("transfer") or {}).items():
        print(f"evqual: {unit} held out ({m['n']} answers): F1 {m['f1']:.3f}, AUROC {m['auroc'] or 0:.3f}, "
              f"faithful flagged {m['faithful_flagged']:.1%}", file=sys.stderr)
    print(f"evqual: {args.method} under {args.protocol}: F1 {r['f1']:.3f}, AUROC {r['auroc'] or 0:.3f}; "
          f"report in {args.out}", file=sys.stderr)
    return EXIT_DATA if result.issues else EXIT_OK


def _fallback_note(caught, cmd: str) -> None:
    """One stderr line for a response-level fallback (however many folds warned)."""
    seen = {str(w.message) for w in caught or () if issubclass(w.category, ResponseLevelFallbackWarning)}
    for msg in sorted(seen):
        print(f"evqual {cmd}: note: {msg}", file=sys.stderr)


def cmd_train(args) -> int:
    import json
    import warnings

    from .models import fit_detector, save_detector, training_data_info

    if not _check_method(args.method) or \
            not _dependencies_ok("train", parquet=tuple(args.data or ()), entity_backend=args.entity_backend):
        return EXIT_USAGE
    specs = _source_specs(args, "train")
    if specs is False:
        return EXIT_USAGE
    try:
        result, label = _load(specs if specs is not None else args.data)
    except EvqualDataError as exc:
        print(f"evqual train: data error: {exc}", file=sys.stderr)
        return EXIT_DATA
    examples = result.examples
    if specs is not None:
        from .data import weigh_sources

        examples = weigh_sources(examples, specs, seed=42)
    metrics = {}
    if args.metrics:
        try:
            metrics = json.loads(Path(args.metrics).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"evqual train: error: cannot read --metrics {args.metrics}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResponseLevelFallbackWarning)
            det = fit_detector(examples, method=args.method, calibration=args.calibration,
                               threshold_rule=args.threshold_rule, entity_backend=args.entity_backend,
                               validation_split=args.validation_split, augment=args.augment,
                               evidence_floor=not args.no_evidence_floor, compose=args.compose,
                               crossfit=args.crossfit)
    except MissingDependencyError as exc:
        print(f"evqual train: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:
        print(f"evqual train: error: {exc}", file=sys.stderr)
        return EXIT_DATA
    for w in caught:  # other warnings as Python would show them; the fallback as one line
        if not issubclass(w.category, ResponseLevelFallbackWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    _fallback_note(caught, "train")
    info = training_data_info(result, label, validation_split=args.validation_split, sources=specs)
    folder = save_detector(det, args.out, training_data=info, metrics=metrics)
    print(f"evqual: saved {det.method} to {folder} (threshold {det.threshold_:.3f})", file=sys.stderr)
    return EXIT_DATA if result.issues else EXIT_OK


def cmd_adapt(args) -> int:
    from .errors import TrainingDataError
    from .models import ModelLoadError, adapt_model, default_model_path

    if args.learning_curve.strip().lower() == "none":
        ks = ()
    else:
        try:
            ks = tuple(int(k) for k in args.learning_curve.split(",") if k.strip())
        except ValueError:
            ks = None
        if ks is None or any(k < 1 for k in ks):
            print(f"evqual adapt: error: --learning-curve must be sizes like 25,50,100 or 'none'; got "
                  f"{args.learning_curve!r}", file=sys.stderr)
            return EXIT_USAGE
    if not 1 <= args.draws <= 100:
        print(f"evqual adapt: error: --draws must be in 1..100; got {args.draws}", file=sys.stderr)
        return EXIT_USAGE
    if not _dependencies_ok("adapt", parquet=(args.data,)):
        return EXIT_USAGE
    data = Path(args.data)
    if not data.exists():
        print(f"evqual adapt: error: {data}: no such file or folder", file=sys.stderr)
        return EXIT_USAGE
    model = Path(args.model) if args.model else default_model_path()
    try:
        folder, report = adapt_model(model, data, args.out, sha256=args.model_sha256, random_state=args.seed,
                                     learning_curve=ks, draws=args.draws)
    except ModelLoadError as exc:
        print(f"evqual adapt: error: cannot load model: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    except EvqualDataError as exc:
        print(f"evqual adapt: data error: {exc}\nnothing was written: adaptation uses every row of --data, so "
              "fix or remove the rows named above", file=sys.stderr)
        return EXIT_USAGE
    except (TrainingDataError, ValueError) as exc:
        print(f"evqual adapt: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    a, b = report.after, report.before
    ci = a.get("ci", {})
    print(f"evqual adapt: {report.rows} labelled answers ({report.positives} hallucinated) in {report.seconds:.1f} s; "
          f"chosen: {report.kind}" + (f" (C={report.C})" if report.C is not None else "")
          + f"; threshold {report.threshold_before:.3f} -> {report.threshold:.3f}", file=sys.stderr)
    print(f"evqual adapt: cross-validated on your labels: AUROC {b['auroc']:.3f} -> {a['auroc']:.3f}, "
          f"precision {a['precision']:.3f} [{ci['precision'][0]:.3f}, {ci['precision'][1]:.3f}], "
          f"recall {a['recall']:.3f} [{ci['recall'][0]:.3f}, {ci['recall'][1]:.3f}] at the adapted decision "
          f"(before: precision {b['precision']:.3f}, recall {b['recall']:.3f})", file=sys.stderr)
    print(f"evqual adapt: wrote {folder} (report: {folder / 'adaptation.md'})", file=sys.stderr)
    return EXIT_OK


def cmd_reproduce(args) -> int:
    from .data import default_ragtruth_path
    from .evaluation import reproduce
    from .models import METHODS

    methods = [m.strip() for m in args.methods.split(",")] if args.methods else None
    for m in methods or []:
        if m not in METHODS:
            _check_method(m)  # prints the error naming the known methods
            return EXIT_USAGE
    protocols = tuple(p.strip() for p in args.protocols.split(",") if p.strip())
    if any(p not in ("cv5", "official") for p in protocols):
        print("evqual reproduce: error: --protocols takes cv5 and/or official", file=sys.stderr)
        return EXIT_USAGE
    path = args.data or str(default_ragtruth_path())
    if not _dependencies_ok("reproduce", parquet=(path,)):
        return EXIT_USAGE
    try:
        result, label = _load(path)
    except EvqualDataError as exc:
        print(f"evqual reproduce: data error: {exc}", file=sys.stderr)
        return EXIT_DATA
    reproduce(result, out_dir=args.out, results_md=args.results, methods=methods, protocols=protocols,
              ablation=not args.no_ablation, data_label=f"`{label}` ({len(result)} responses)",
              log=lambda msg: print(msg, file=sys.stderr))
    return EXIT_OK


def cmd_predict(args) -> int:
    import warnings

    out = Path(args.out)
    if out.suffix.lower() not in (".csv", ".jsonl"):
        print(f"evqual predict: error: --out must end in .csv or .jsonl; got {out.name!r}", file=sys.stderr)
        return EXIT_USAGE
    if not _dependencies_ok("predict", parquet=(args.data,)):
        return EXIT_USAGE
    if _refuse_clash("predict", [("input", args.data)], [("--out", args.out)]):
        return EXIT_USAGE
    det = _load_model(args, "predict")
    if det is None:
        return EXIT_USAGE
    limits = _limits(args, "predict")
    if limits is None:
        return EXIT_USAGE
    try:
        result, _ = _load(args.data, limits=limits)
    except EvqualDataError as exc:
        print(f"evqual predict: data error: {exc}", file=sys.stderr)
        return EXIT_DATA
    import numpy as np
    import pandas as pd

    def predict(exs):
        return [(ex, float(r)) for ex, r in zip(exs, det.predict_proba(exs))]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows, failed = _row_by_row_on_error(predict, result, "predicting") if len(result) else ([], 0)
    if failed:
        rows = [pair for part in rows for pair in part]
    risk = np.array([r for _, r in rows], dtype=float)
    kept = [ex for ex, _ in rows]
    df = pd.DataFrame({"id": [ex.id for ex in kept], "task_type": [ex.task_type for ex in kept],
                       "risk": risk, "threshold": det.threshold_,
                       "predicted": [bool(r >= det.threshold_) for r in risk],
                       "label": pd.array([ex.label for ex in kept], dtype="Int64")})
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.suffix.lower() == ".csv":
            _to_csv(df, out)
        else:
            from ._files import AtomicFile

            with AtomicFile(out) as fh:
                df.to_json(fh, orient="records", lines=True)
    except OSError as exc:
        print(f"evqual predict: error: cannot write {out}: {_why(exc)}", file=sys.stderr)
        return EXIT_IO
    print(f"evqual: {int(df['predicted'].sum())} of {len(df)} responses predicted hallucinated by {det.method} "
          f"(risk >= the model threshold {det.threshold_:.3f}, the general threshold of `evqual score`'s "
          f"default policy); wrote {out}", file=sys.stderr)
    return EXIT_DATA if result.issues or failed else EXIT_OK


def _scorer(args, command):
    """The :class:`~evqual.scoring.Scorer` of --model and --policy; ``(scorer, None)`` or ``(None, exit status)``."""
    from .scoring import Policy, Scorer, load_policy

    policy = Policy()
    if args.policy:
        try:
            policy = load_policy(args.policy)
        except (OSError, ValueError) as exc:
            print(f"evqual {command}: error: --policy: {exc}", file=sys.stderr)
            return None, EXIT_USAGE
    det = _load_model(args, command)
    if det is None:
        return None, EXIT_USAGE
    return Scorer(det, policy=policy), None


def _fit_budget(args, scorer, src, limits):
    """Fit the policy's flag-rate budget (``--flag-rate`` or the policy's ``[budget] flag_rate``) on the risks of
    the first ``--budget-rows`` answers of ``src``: ``scorer.policy`` becomes the fitted policy.  None, or the
    exit status after printing the error."""
    import warnings

    from .data import iter_records

    rate = args.flag_rate if args.flag_rate is not None else scorer.policy.flag_rate
    if not 0 < rate < 1:
        print(f"evqual score: error: --flag-rate must be in (0, 1), the share of answers to flag; got {rate}",
              file=sys.stderr)
        return EXIT_USAGE
    if args.budget_rows < 1:
        print(f"evqual score: error: --budget-rows must be >= 1; got {args.budget_rows}", file=sys.stderr)
        return EXIT_USAGE
    if src is None:
        print("evqual score: error: a flag-rate budget is fitted on the first answers of a file, read again to score "
              "them: give IN.jsonl, not standard input", file=sys.stderr)
        return EXIT_USAGE
    policy = scorer.policy
    examples = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _, ex, _ in iter_records(src, limits=limits):
            if ex is not None:
                examples.append(ex)
            if len(examples) >= args.budget_rows:
                break
    if not examples:
        print(f"evqual score: error: no valid answer in {src} to fit the flag-rate budget on", file=sys.stderr)
        return EXIT_DATA
    from .scoring import Policy

    base = Policy(**{**policy.get_params(), "flag_rate": None})
    results = scorer.score_examples(examples, policy=base)
    fitted = base.for_flag_rate([r.risk for r in results], rate, topics=[r.topics for r in results],
                                model_threshold=float(scorer.detector.threshold_),
                                reasons=[[x.code for s in r.sentences for x in s.reasons if "check" in x.details]
                                         for r in results],
                                ood=[any(w.get("code") == "W004" for w in r.warnings) for r in results])
    scorer.policy = fitted
    b = fitted.budget_
    band = fitted.escalate_band
    print(f"evqual score: flag-rate budget {rate:.1%}: general threshold {fitted.general_threshold:.3f}, escalate band "
          f"{'off' if band is None else f'[{band[0]:.3f}, {band[1]:.3f})'}; {b['flagged']:.1%} of the first "
          f"{b['rows']} answers flagged or escalated", file=sys.stderr)
    if b["relaxed"]:
        print(f"evqual score: warning: the policy's other rules alone flagged more than the budget; relaxed to meet "
              f"it: {', '.join(b['relaxed'])}", file=sys.stderr)
    if b["flagged"] > rate:
        print("evqual score: warning: the budget cannot be met on these answers (risks of 1); the threshold is 1",
              file=sys.stderr)
    return None


def _open_input(src: Path, command: str) -> bool:
    """Whether ``src`` can be opened for reading (an error is printed when not)."""
    try:
        with open(src, "rb"):
            pass
    except OSError as exc:
        print(f"evqual {command}: error: cannot read {src}: {_why(exc)}", file=sys.stderr)
        return False
    return True


def _input_file(arg, command):
    """The answers file of ``evqual score``/``verify``: ``arg`` (a folder means its ``response.jsonl``), or the
    embedded sample without it; ``None`` after printing the error when it is not a file."""
    from .data import sample_path

    src = Path(arg) if arg else sample_path() / "response.jsonl"
    if src.is_dir():
        src = src / "response.jsonl"
    if not src.is_file():
        print(f"evqual {command}: error: {src}: file not found", file=sys.stderr)
        return None
    return src


def _note_sample(args, command, src) -> None:
    """Say on stderr that the run uses the embedded sample (called once everything is set up: an error
    stays the only line a failed run prints)."""
    if not args.input:
        print(f"evqual {command}: no input given: using the RAGTruth sample embedded in the package ({src}); "
              "pass a file, or - for standard input", file=sys.stderr)


def cmd_score(args) -> int:
    import contextlib
    import warnings

    from ._files import AtomicFile
    from ._progress import Progress
    from .errors import EvqualDataError
    from .scoring import AuditLog, score_file_parallel
    from .scoring import StreamAborted, count_lines, score_file

    stdin = args.input == "-"
    src = None if stdin else _input_file(args.input, "score")
    if src is None and not stdin:
        return EXIT_USAGE
    if args.batch_size < 1:
        print(f"evqual score: error: --batch-size must be >= 1; got {args.batch_size}", file=sys.stderr)
        return EXIT_USAGE
    if args.jobs < 0:
        print(f"evqual score: error: --jobs must be >= 1, or 0 for every core; got {args.jobs}", file=sys.stderr)
        return EXIT_USAGE
    limits = _limits(args, "score")
    if limits is None or (not stdin and not _open_input(src, "score")):
        return EXIT_USAGE
    if _refuse_clash("score", [("input", None if stdin else src)],
                     [("--out", args.out), ("--audit-log", args.audit_log)]):
        return EXIT_USAGE
    scorer, status = _scorer(args, "score")
    if scorer is None:
        return status
    if args.flag_rate is not None or scorer.policy.flag_rate is not None:
        status = _fit_budget(args, scorer, None if stdin else src, limits)
        if status is not None:
            return status
    if args.verify:
        scorer.verifier = _verifier(args, "score", args.verify)
        if scorer.verifier is None:
            return EXIT_USAGE
    if stdin:
        src = sys.stdin.buffer
        progress = None
    else:
        progress = Progress(count_lines(src), "evqual score", enabled=False if args.no_progress else None)
    n_ok = n_bad = 0
    stats: dict = {}
    atomic_out = False  # --out written to a temporary file, renamed when whole
    input_error = None
    try:
        with contextlib.ExitStack() as stack:
            # every output is opened before --out is truncated: a bad --audit-log leaves --out as it was
            audit = None
            if args.audit_log:
                try:
                    audit = stack.enter_context(AuditLog(args.audit_log))
                except OSError as exc:
                    hint = " (its folder must exist)" if isinstance(exc, FileNotFoundError) else ""
                    print(f"evqual score: error: cannot open the audit log {args.audit_log}: {_why(exc)}{hint}",
                          file=sys.stderr)
                    return EXIT_USAGE
            if args.out:
                try:
                    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                    out = stack.enter_context(_open_output(args.out))  # renamed onto --out when whole
                    atomic_out = isinstance(out, AtomicFile)
                except OSError as exc:
                    print(f"evqual score: error: cannot write {args.out}: {_why(exc)}", file=sys.stderr)
                    return EXIT_USAGE
            else:
                out = sys.stdout
            _note_sample(args, "score", src)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    if args.jobs == 1:
                        n_ok, n_bad = score_file(src, out, scorer, audit=audit, progress=progress,
                                                 batch_size=args.batch_size, limits=limits,
                                                 include_context=not args.no_context, stats=stats)
                    else:
                        # fork: this process has only loaded the model (no threads, no OpenMP yet), so the
                        # workers start at once with the scorer in memory
                        n_ok, n_bad = score_file_parallel(src, out, scorer, audit=audit, progress=progress,
                                                          batch_size=args.batch_size, limits=limits, jobs=args.jobs,
                                                          include_context=not args.no_context, stats=stats,
                                                          start_method="fork" if sys.platform == "linux" else None)
                except EvqualDataError as exc:  # the input cannot be read further: the lines scored before
                    input_error = exc           # it are the run's result, and --out keeps them
        if input_error is not None:
            raise input_error
    except StreamAborted as exc:
        target = (args.out or "standard output") if exc.target == "output" else args.audit_log
        kept = f" (none of them to {args.out}, which was left as it was)" if atomic_out else ""
        print(f"evqual score: error: stopped: cannot write the {exc.target} {target} at input line {exc.line}: "
              f"{_why(exc.cause)}; {exc.n_written} lines were written before it{kept}", file=sys.stderr)
        return EXIT_IO
    except EvqualDataError as exc:
        print(f"evqual score: error: stopped: {exc.issues[0] if exc.issues else exc}", file=sys.stderr)
        return EXIT_IO
    except OSError as exc:  # closing --out (its last flush) failed
        print(f"evqual score: error: cannot write {args.out or 'standard output'}: {_why(exc)}", file=sys.stderr)
        return EXIT_IO
    n_ood = stats.get("warnings", {}).get("W004", 0)
    ood_note = ""
    if getattr(scorer.detector, "ood_", None) is not None:
        ood_note = (f"; {n_ood} ({n_ood / max(1, n_ok):.1%}) outside what the model knows (W004)"
                    + ("; consider `evqual adapt` with a few labelled answers" if n_ood > 0.2 * max(1, n_ok) else ""))
    print(f"evqual score: {_count(n_ok, 'answer')} scored, {_count(n_bad, 'line')} failed" + ood_note
          + (f"; wrote {args.out}" if args.out else ""), file=sys.stderr)
    return EXIT_DATA if n_bad else EXIT_OK


def cmd_serve(args) -> int:
    import os

    from .errors import MissingDependencyError as _Missing
    from .models import ModelLoadError
    from .scoring import usable_cores

    try:
        from .service import TOKENS_ENV, ServeConfig, load_tokens, serve
        import fastapi  # noqa: F401
        import prometheus_client  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "fastapi"
        package = {"prometheus_client": "prometheus-client"}.get(missing, missing)
        print(f"evqual serve: error: {_Missing('evqual serve', 'server', package)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        tokens = load_tokens(env=os.environ.get(TOKENS_ENV), tokens_file=args.tokens_file)
    except (OSError, ValueError) as exc:
        print(f"evqual serve: error: tokens: {_why(exc) if isinstance(exc, OSError) else exc}", file=sys.stderr)
        return EXIT_USAGE
    cores = usable_cores()
    workers = cores if args.workers == 0 else args.workers
    if workers > cores:
        print(f"evqual serve: warning: --workers {workers} capped at the {cores} usable cores", file=sys.stderr)
        workers = cores
    try:
        config = ServeConfig(host=args.host, port=args.port, workers=workers, model=args.model,
                             model_sha256=args.model_sha256, policy=args.policy, audit_log=args.audit_log,
                             max_body_bytes=args.max_body_bytes, max_batch=args.max_batch,
                             request_timeout=args.request_timeout, max_queue=args.max_queue,
                             body_timeout=args.body_timeout, header_timeout=args.header_timeout,
                             keep_alive_timeout=args.keep_alive_timeout, max_connections=args.max_connections,
                             policy_overrides=args.policy_overrides, cors_origins=tuple(args.cors_origin), verify_backend=args.verify_backend,
                             include_context=not args.no_context, tokens=tokens)
    except ValueError as exc:
        print(f"evqual serve: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if config.host not in ("127.0.0.1", "localhost", "::1") and not tokens:
        print(f"evqual serve: warning: listening on {config.host} without authentication: set $EVQUAL_API_TOKENS "
              "or --tokens-file", file=sys.stderr)
    try:
        serve(config, log_level=args.log_level)
    except (ModelLoadError, _Missing) as exc:
        print(f"evqual serve: error: cannot load model: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, ValueError) as exc:
        print(f"evqual serve: error: {_why(exc) if isinstance(exc, OSError) else exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def cmd_verify(args) -> int:
    from ._progress import Progress
    from .errors import EvqualDataError
    from .scoring import StreamAborted, count_lines
    from .verify import verify_file

    stdin = args.input == "-"
    src = None if stdin else _input_file(args.input, "verify")
    if src is None and not stdin:
        return EXIT_USAGE
    limits = _limits(args, "verify")
    if limits is None or (not stdin and not _open_input(src, "verify")):
        return EXIT_USAGE
    if _refuse_clash("verify", [("input", None if stdin else src)], [("--out", args.out)]):
        return EXIT_USAGE
    verifier = _verifier(args, "verify", args.method)
    if verifier is None:
        return EXIT_USAGE
    progress = None
    if stdin:
        src = sys.stdin.buffer
    else:
        progress = Progress(count_lines(src), "evqual verify", enabled=False if args.no_progress else None)
    try:
        if args.out:
            try:
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                out = _open_output(args.out)
            except OSError as exc:
                print(f"evqual verify: error: cannot write {args.out}: {_why(exc)}", file=sys.stderr)
                return EXIT_USAGE
        else:
            out = sys.stdout
        _note_sample(args, "verify", src)
        try:
            n_ok, n_bad = verify_file(src, out, verifier, limits=limits, progress=progress)
        except BaseException:
            if out is not sys.stdout:
                getattr(out, "discard", out.close)()  # an unfinished --out is never renamed onto the target
            raise
        if out is not sys.stdout:
            out.close()
    except StreamAborted as exc:
        print(f"evqual verify: error: stopped: cannot write {args.out or 'standard output'} at input line "
              f"{exc.line}: {_why(exc.cause)}; {exc.n_written} lines were written before it", file=sys.stderr)
        return EXIT_IO
    except EvqualDataError as exc:
        print(f"evqual verify: error: stopped: {exc.issues[0] if exc.issues else exc}", file=sys.stderr)
        return EXIT_IO
    except OSError as exc:
        print(f"evqual verify: error: cannot write {args.out or 'standard output'}: {_why(exc)}", file=sys.stderr)
        return EXIT_IO
    print(f"evqual verify: {_count(n_ok, 'answer')} verified, {_count(n_bad, 'line')} failed"
          + (f"; wrote {args.out}" if args.out else ""), file=sys.stderr)
    return EXIT_DATA if n_bad else EXIT_OK


def cmd_explain(args) -> int:
    import io
    import json
    import warnings

    from ._files import AtomicFile
    from .errors import EvqualDataError
    from .explain import iter_html, iter_markdown
    from .results import validate_result
    from .scoring import StreamAborted, parse_results, score_file

    if not args.html and not args.markdown:
        print("evqual explain: error: give --html FILE and/or --markdown FILE", file=sys.stderr)
        return EXIT_USAGE
    src = Path(args.input)
    if not src.is_file():
        print(f"evqual explain: error: {args.input}: file not found", file=sys.stderr)
        return EXIT_USAGE
    limits = _limits(args, "explain")
    if limits is None or not _open_input(src, "explain"):
        return EXIT_USAGE
    if _refuse_clash("explain", [("input", src)], [("--html", args.html), ("--markdown", args.markdown)]):
        return EXIT_USAGE
    is_results = False
    with open(src, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.strip():
                try:
                    first = json.loads(line)
                except (ValueError, RecursionError):
                    break
                is_results = isinstance(first, dict) and ("decision" in first or "error" in first)
                break
    n_bad = 0
    errors: list = []
    def renders(result):  # a record the report cannot show is an error card, never a half-written report
        validate_result(result)
        for render in (iter_html, iter_markdown):
            "".join(render([result])).encode("utf-8", "backslashreplace")

    if is_results:
        def bad_record(d):
            errors.append(d)
            if "line" in d and "decision" not in d:
                print(f"evqual explain: line {d.get('line')}: {d.get('error')}", file=sys.stderr)

        try:
            with open(src, encoding="utf-8", errors="surrogateescape", newline="\n") as fh:
                results = parse_results(fh, str(src), on_error=bad_record, check=renders)
        except OSError as exc:
            print(f"evqual explain: error: cannot read {src}: {_why(exc)}", file=sys.stderr)
            return EXIT_IO
    else:
        scorer, status = _scorer(args, "explain")
        if scorer is None:
            return status
        buf = io.StringIO()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, n_bad = score_file(src, buf, scorer, limits=limits)
        except (StreamAborted, EvqualDataError) as exc:
            print(f"evqual explain: error: stopped: {exc}", file=sys.stderr)
            return EXIT_IO
        # one record per "\n": a line may hold U+2028, U+2029 or U+0085 inside its strings (str.splitlines
        # would cut there)
        def on_error(d):
            errors.append(d)
            print(f"evqual explain: line {d.get('line')}: {d.get('error')}", file=sys.stderr)

        results = parse_results(buf.getvalue().split("\n"), on_error=on_error, check=renders)
    for target, render in ((args.html, iter_html), (args.markdown, iter_markdown)):
        if target:
            # written one card at a time: a report of thousands of answers is never held whole in memory
            pieces = render(results, title=args.title, errors=errors, sort=args.sort)
            try:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
                fh = AtomicFile(target)
            except OSError as exc:  # nothing written
                print(f"evqual explain: error: cannot write {target}: {_why(exc)}", file=sys.stderr)
                return EXIT_USAGE
            try:
                with fh:  # written to a temporary file beside the target, renamed onto it only when whole
                    for piece in pieces:
                        fh.write(piece)
            except OSError as exc:  # a full disk: the target is left as it was
                print(f"evqual explain: error: stopped: cannot write {target}: {_why(exc)}; {target} was not "
                      f"changed", file=sys.stderr)
                return EXIT_IO
            not_scored = f", {_count(len(errors), 'line')} not scored" if errors else ""
            print(f"evqual explain: {_count(len(results), 'answer')}{not_scored}; wrote {target}", file=sys.stderr)
    return EXIT_DATA if n_bad else EXIT_OK


def cmd_methods(args) -> int:
    from .models import METHODS

    for m in METHODS.values():
        meta = " (uses generator metadata)" if m.uses_metadata else ""
        level = "sentence->response" if m.sentence_level else "response"
        print(f"{m.name:<20} {m.source:<9} {level:<19} {m.description}{meta}")
    return EXIT_OK


def cmd_features(args) -> int:
    from .features import describe_features

    print(describe_features(args.level))
    return EXIT_OK


def _count(n: int, noun: str) -> str:
    """``"1 answer"``, ``"2 answers"``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def main(argv=None) -> int:
    """Run the command line; the exit status (3 when standard output was closed early, as by ``| head``)."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here when the output fitted in the buffer
        return status
    except BrokenPipeError:
        # the reader went away (``evqual features | head -1``): as the Python documentation recommends,
        # point standard output at devnull so that the interpreter's last flush at exit does not fail too
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # a stdout that is no file (tests)
            pass
        return EXIT_IO


def _main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 0 for --help/--version, 2 for usage errors
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
