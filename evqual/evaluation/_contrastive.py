"""The contrastive development suite: faithful/hallucinated answer pairs that differ in one edit.

Each suite line (JSONL) is one *pair*: a query and its context with two
answers, ``faithful`` (supported by the context) and ``hallucinated`` (the
same answer with one unsupported edit, ``error`` being the edited text).  A
detector should give the hallucinated answer the higher risk, flag it, and
leave the faithful one alone, even when the faithful answer paraphrases the
context (``paraphrase``) or the context holds a distracting near-miss
(``distractor``).

A line holds exactly these keys:

================  ==========================================================
key               value
================  ==========================================================
``pair``          unique id of the pair (across every file of the suite)
``type``          the kind of edit (``"number"``, ``"entity"``, ...)
``task_type``     ``"QA"``, ``"Summary"``, ``"Data2txt"`` (or another string)
``domain``        subject area (``"healthcare"``, ...)
``query``         the request
``context``       a string, a list of passage strings or a (Data2txt) record
``faithful``      the supported answer
``hallucinated``  the answer with the edit
``error``         the edited text, a substring of ``hallucinated``
``paraphrase``    bool: the faithful answer rewords the context
``distractor``    bool: the context holds a distracting near-miss
``note``          what was changed, in words
================  ==========================================================

Strings are non-empty; booleans are JSON ``true``/``false``.

Examples
--------
>>> import json, tempfile
>>> from pathlib import Path
>>> pair = {"pair": "p1", "type": "number", "task_type": "QA", "domain": "travel",
...         "query": "When does the museum open?", "context": ["The museum opens at 9 am daily."],
...         "faithful": "It opens at 9 am.", "hallucinated": "It opens at 10 am.", "error": "10 am",
...         "paraphrase": False, "distractor": False, "note": "9 -> 10"}
>>> path = Path(tempfile.mkdtemp()) / "pairs.jsonl"
>>> _ = path.write_text(json.dumps(pair) + "\\n", encoding="utf-8")
>>> [ex.id for ex in pairs_to_examples(load_pairs(path))]
['p1/faithful', 'p1/hallucinated']
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, is_dataclass
from pathlib import Path

import numpy as np

from ..errors import DataIssue, EvqualDataError

__all__ = ["load_pairs", "pairs_to_examples", "evaluate_contrastive", "contrastive_markdown", "error_span",
           "PAIR_KEYS"]

PAIR_KEYS = ("pair", "type", "task_type", "domain", "query", "context", "faithful", "hallucinated", "error",
             "paraphrase", "distractor", "note")
"""The keys of a suite line, in the order they are written."""

_STRING_KEYS = ("pair", "type", "task_type", "domain", "query", "faithful", "hallucinated", "error", "note")
_BOOL_KEYS = ("paraphrase", "distractor")
_WHICH = ("faithful", "hallucinated")
_FLAG_RULE = "decision != 'show'"


# ---------------------------------------------------------------------------------------------- loading


def load_pairs(paths) -> list[dict]:
    """Read and validate the pairs of one or more suite files.

    Parameters
    ----------
    paths : str, path-like, or a list of them
        JSONL files; a folder stands for every ``*.jsonl`` file in it, in
        sorted order.  Blank lines are skipped and a UTF-8 byte order mark
        at the start of a file is accepted.

    Returns
    -------
    list of dict
        One dict per pair (the keys of :data:`PAIR_KEYS`), in file and line
        order.

    Raises
    ------
    evqual.errors.EvqualDataError
        A :class:`ValueError` listing every bad line (file, line and field):
        invalid JSON or not an object (E101), a missing key (E102), an
        unknown key, a value of the wrong type, an empty string, an
        ``error`` that is not a substring of ``hallucinated`` or identical
        answers (E103), a pair id seen before in any of the files (E108), or
        a file that cannot be read or is not UTF-8 (E109).

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> pair = {"pair": "p1", "type": "number", "task_type": "QA", "domain": "travel",
    ...         "query": "When does the museum open?", "context": ["The museum opens at 9 am daily."],
    ...         "faithful": "It opens at 9 am.", "hallucinated": "It opens at 10 am.", "error": "10 am",
    ...         "paraphrase": False, "distractor": False, "note": "9 -> 10"}
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.jsonl").write_text(json.dumps(pair) + "\\n\\n", encoding="utf-8")
    >>> [p["pair"] for p in load_pairs(folder)]
    ['p1']
    >>> _ = (folder / "b.jsonl").write_text(json.dumps(dict(pair, error="11 am")) + "\\n", encoding="utf-8")
    >>> load_pairs(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evqual.errors.EvqualDataError: 1 bad row:
      [E103] ...b.jsonl, line 1, field 'error': '11 am' is not a substring of 'hallucinated'
    """
    issues: list[DataIssue] = []
    pairs: list[dict] = []
    seen: dict[str, str] = {}  # pair id -> "file line n" of its first occurrence
    for path in _expand(paths, issues):
        for line_no, obj in _read_jsonl(path, issues):
            before = len(issues)
            _check_pair(obj, str(path), line_no, issues)
            if len(issues) > before:
                continue
            where = f"{path} line {line_no}"
            if obj["pair"] in seen:
                issues.append(DataIssue("E108", str(path), line_no, "pair",
                                        f"duplicate pair id {obj['pair']!r} (first seen at {seen[obj['pair']]})"))
                continue
            seen[obj["pair"]] = where
            pairs.append({k: obj[k] for k in PAIR_KEYS})
    if issues:
        raise EvqualDataError(issues, n_ok=None)
    return pairs


def _expand(paths, issues) -> list[Path]:
    """The files ``paths`` stands for (folders expanded to their sorted ``*.jsonl``)."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        p = Path(os.fsdecode(p))
        if p.is_dir():
            found = sorted(q for q in p.glob("*.jsonl") if q.is_file())
            if not found:
                issues.append(DataIssue("E107", str(p), None, None, "the folder holds no *.jsonl file"))
            out.extend(found)
        else:
            out.append(p)
    return out


def _read_jsonl(path: Path, issues):
    """Yield ``(line_no, dict)`` for every non-blank line of ``path`` that is a JSON object."""
    from ..data import DepthError, loads_bounded

    try:
        data = path.read_bytes()
    except OSError as exc:
        issues.append(DataIssue("E109", str(path), None, None,
                                "file not found" if isinstance(exc, FileNotFoundError)
                                else f"cannot read the file: {exc.strerror or exc}"))
        return
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for line_no, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            issues.append(DataIssue("E109", str(path), line_no, None,
                                    f"line is not valid UTF-8 ({exc.reason} at byte {exc.start + 1})"))
            continue
        try:
            obj = loads_bounded(text)
        except ValueError as exc:
            if isinstance(exc, DepthError):
                msg, fld = f"JSON {exc}", exc.field
            else:
                msg = f"invalid JSON: {exc.msg} at column {exc.colno}" if hasattr(exc, "colno") else \
                    f"invalid JSON: {exc}"
                fld = None
            issues.append(DataIssue("E101", str(path), line_no, fld, msg))
            continue
        if not isinstance(obj, dict):
            issues.append(DataIssue("E101", str(path), line_no, None,
                                    f"expected a JSON object, got {type(obj).__name__}"))
            continue
        yield line_no, obj


def _check_pair(obj, file: str, line, issues) -> None:
    """Append the first problem of one pair record to ``issues`` (nothing when it is valid)."""
    from ..data import chunk_context
    from ..data import check_value

    def bad(code, fld, message):
        issues.append(DataIssue(code, file, line, fld, message))

    if not isinstance(obj, dict):
        return bad("E101", None, f"expected a JSON object, got {type(obj).__name__}")
    for key in PAIR_KEYS:
        if key not in obj:
            return bad("E102", key, f"missing required field {key!r}")
    for key in obj:
        if key not in PAIR_KEYS:
            return bad("E103", str(key), f"unknown field {str(key)!r}; a pair holds exactly {', '.join(PAIR_KEYS)}")
    for key in _STRING_KEYS:
        value = obj[key]
        if not isinstance(value, str):
            return bad("E103", key, f"must be a string; got {_describe(value)}")
        if not value.strip():
            return bad("E103", key, "must be a non-empty string")
    for key in _BOOL_KEYS:
        if not isinstance(obj[key], bool):
            return bad("E103", key, f"must be true or false; got {_describe(obj[key])}")
    ctx = obj["context"]
    if isinstance(ctx, list):
        if not ctx:
            return bad("E103", "context", "must hold at least one passage")
        for i, passage in enumerate(ctx):
            if not isinstance(passage, str):
                return bad("E103", f"context[{i}]", f"must be a string; got {_describe(passage)}")
            if not passage.strip():
                return bad("E103", f"context[{i}]", "must be a non-empty string")
    elif isinstance(ctx, dict):
        if not ctx:
            return bad("E103", "context", "must be a non-empty record")
    elif isinstance(ctx, str):
        if not ctx.strip():
            return bad("E103", "context", "must be a non-empty string")
    else:
        return bad("E103", "context", f"must be a string, a list of strings or a record; got {_describe(ctx)}")
    for key in PAIR_KEYS:
        problem = check_value(obj[key], key)
        if problem is not None:
            fld, _, message = problem.partition(": ")
            return bad("E103", fld, message)
    try:
        chunk_context(ctx, obj["task_type"])
    except (TypeError, ValueError) as exc:
        return bad("E103", "context", f"cannot be chunked: {exc}")
    if obj["error"] not in obj["hallucinated"]:
        return bad("E103", "error", f"{_clip(obj['error'])!r} is not a substring of 'hallucinated'")
    if obj["faithful"] == obj["hallucinated"]:
        return bad("E103", "hallucinated", "is identical to 'faithful'")
    return None


def _describe(value) -> str:
    if value is None:
        return "null"
    name = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)
    return f"{name} ({_clip(repr(value))})"


def _clip(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _validated(pairs) -> list[dict]:
    """``pairs`` checked as :func:`load_pairs` checks lines (location ``pairs[i]``)."""
    if isinstance(pairs, (str, bytes, os.PathLike)):
        raise TypeError("pairs must be a list of pair dicts; read files with load_pairs()")
    pairs = list(pairs)
    issues, seen = [], {}
    for i, pair in enumerate(pairs):
        before = len(issues)
        _check_pair(pair, f"pairs[{i}]", None, issues)
        if len(issues) == before:
            if pair["pair"] in seen:
                issues.append(DataIssue("E108", f"pairs[{i}]", None, "pair",
                                        f"duplicate pair id {pair['pair']!r} (first at pairs[{seen[pair['pair']]}])"))
            seen.setdefault(pair["pair"], i)
    if issues:
        raise EvqualDataError(issues)
    return pairs


def error_span(pair: dict) -> tuple[int, int]:
    """Character offsets of ``pair["error"]`` in ``pair["hallucinated"]``.

    When the error text occurs more than once, the occurrence nearest to
    the part where the two answers differ (their common prefix and suffix
    removed) is taken, the first of equally near ones.

    Examples
    --------
    >>> error_span({"faithful": "9 am, not 10 am.", "hallucinated": "10 am, not 10 am.", "error": "10 am"})
    (0, 5)
    >>> error_span({"faithful": "9 am or 11 am.", "hallucinated": "9 am or 10 am.", "error": "am"})
    (11, 13)
    """
    fa, ha, err = pair["faithful"], pair["hallucinated"], pair["error"]
    p = 0
    while p < min(len(fa), len(ha)) and fa[p] == ha[p]:
        p += 1
    s = 0
    while s < min(len(fa), len(ha)) - p and fa[-1 - s] == ha[-1 - s]:
        s += 1
    lo, hi = p, len(ha) - s  # ha[lo:hi] is what the edit put in (empty for a pure deletion)
    starts, k = [], ha.find(err)
    while k >= 0:
        starts.append(k)
        k = ha.find(err, k + 1)
    if not starts:
        raise ValueError(f"error {err!r} is not a substring of the hallucinated answer")
    best = min(starts, key=lambda k: max(0, k - hi, lo - (k + len(err))))  # first of the nearest
    return best, best + len(err)


# ---------------------------------------------------------------------------------------------- examples


def pairs_to_examples(pairs) -> list:
    """Two :class:`~evqual.data.Example` per pair: the faithful and the hallucinated answer.

    Parameters
    ----------
    pairs : list of dict
        Pairs as :func:`load_pairs` returns them (checked the same way).

    Returns
    -------
    list of evqual.data.Example
        In pair order, the faithful answer first: ids ``"<pair>/faithful"``
        (``label=0``, no spans) and ``"<pair>/hallucinated"`` (``label=1``,
        one gold span over the ``error`` text, see :func:`error_span`, with
        the pair's ``note`` as its ``meta``).  Both carry the pair id as
        ``source_id``, so grouped splits keep a pair together.

    Examples
    --------
    >>> pair = {"pair": "p1", "type": "number", "task_type": "QA", "domain": "travel",
    ...         "query": "When does the museum open?", "context": ["The museum opens at 9 am daily."],
    ...         "faithful": "It opens at 9 am.", "hallucinated": "It opens at 10 am.", "error": "10 am",
    ...         "paraphrase": False, "distractor": False, "note": "9 -> 10"}
    >>> faithful, hallucinated = pairs_to_examples([pair])
    >>> faithful.label, faithful.spans, hallucinated.label
    (0, (), 1)
    >>> span = hallucinated.spans[0]
    >>> span.start, span.end, hallucinated.output[span.start:span.end]
    (12, 17, '10 am')
    """
    from ..data import Span, make_example

    out = []
    for pair in _validated(pairs):
        start, end = error_span(pair)
        common = dict(query=pair["query"], context=pair["context"], task_type=pair["task_type"],
                      source_id=pair["pair"])
        out.append(make_example(output=pair["faithful"], id=f"{pair['pair']}/faithful", label=0, spans=(),
                                **common))
        span = Span(start, end, text=pair["error"], meta=pair["note"])
        out.append(make_example(output=pair["hallucinated"], id=f"{pair['pair']}/hallucinated", label=1,
                                spans=(span,), **common))
    return out


# ---------------------------------------------------------------------------------------------- evaluation


def evaluate_contrastive(scorer, pairs, *, policy=None) -> dict:
    """Score both answers of every pair and summarize how well the detector tells them apart.

    Parameters
    ----------
    scorer : evqual.scoring.Scorer
        Anything with ``score_batch(examples, policy=...)`` returning
        :class:`~evqual.scoring.ScoreResult`-like objects (``risk``,
        ``decision``, ``sentences``) in input order.
    pairs : list of dict
        Pairs from :func:`load_pairs`.
    policy : evqual.scoring.Policy, optional
        Decision policy (default ``Policy()``).

    Returns
    -------
    dict
        JSON-ready:

        * ``overall``, ``by_type`` (one entry per edit type) and ``by_task``
          (one per task type), each with ``n_pairs``, ``n_paraphrase``,
          ``auroc`` (risk of the hallucinated answers against the faithful
          ones; ``None`` when undefined), ``pair_accuracy`` (share of pairs
          whose hallucinated answer has the higher risk; a tie counts 0.5),
          ``recall`` (share of hallucinated answers flagged),
          ``false_alarm`` (share of faithful answers flagged),
          ``false_alarm_paraphrase`` (the same among pairs with
          ``paraphrase`` true; ``None`` without any), ``mean_risk_faithful``
          and ``mean_risk_hallucinated``;
        * ``reasons``: per reason code, the number of ``faithful`` and
          ``hallucinated`` answers with a sentence carrying it (flagged or
          not), ``precision`` = hallucinated / (hallucinated + faithful),
          and ``at_error``: hallucinated answers where it sits on a sentence
          overlapping the ``error`` text;
        * ``rows``: one dict per answer (``pair``, ``type``, ``task_type``,
          ``which``, ``risk``, ``decision``, ``flagged``, ``reasons``);
        * ``model``: the scoring model's :class:`~evqual.scoring.ModelInfo`
          fields and, when the detector was loaded from disk, its
          ``prediction_fingerprint`` (``{}`` when unknown);
        * ``policy``: the policy's :meth:`~evqual.scoring.Policy.to_dict`;
          ``flag_rule``: ``"decision != 'show'"``.

    Notes
    -----
    An answer counts as *flagged* when the policy's decision is anything but
    ``"show"`` (``warn``, ``regenerate``, ``abstain`` or ``escalate``): the
    user would not see it unqualified.  Under the default policy this
    includes the uncertain band ``[0.35, 0.65)``, which is escalated even
    below the 0.5 threshold, so it differs from ``ScoreResult.flagged``
    (``risk >= threshold``).

    Examples
    --------
    >>> from evqual.scoring import Scorer
    >>> pair = {"pair": "p1", "type": "number", "task_type": "QA", "domain": "travel",
    ...         "query": "When does the museum open?", "context": ["The museum opens at 9 am daily."],
    ...         "faithful": "It opens at 9 am.", "hallucinated": "It opens at 10 am.", "error": "10 am",
    ...         "paraphrase": False, "distractor": False, "note": "9 -> 10"}
    >>> res = evaluate_contrastive(Scorer.load(), [pair])
    >>> res["overall"]["n_pairs"], sorted(res["by_type"]), [r["which"] for r in res["rows"]]
    (1, ['number'], ['faithful', 'hallucinated'])
    >>> res["overall"]["pair_accuracy"] in (0.0, 0.5, 1.0), res["model"]["name"]
    (True, 'default')
    """
    pairs = _validated(pairs)
    examples = pairs_to_examples(pairs)
    results = list(scorer.score_batch(examples, policy=policy)) if examples else []
    if len(results) != len(examples):
        raise ValueError(f"the scorer returned {len(results)} results for {len(examples)} answers")
    rows, reasons = [], {}
    for i, pair in enumerate(pairs):
        e_start, e_end = error_span(pair)
        for which, r in zip(_WHICH, results[2 * i: 2 * i + 2]):
            risk = float(r.risk)
            if math.isnan(risk):
                raise ValueError(f"the detector returned a NaN risk for {pair['pair']}/{which}")
            sentences = tuple(getattr(r, "sentences", ()) or ())
            codes = list(dict.fromkeys(c.code for s in sentences for c in s.reasons))
            at_error = {c.code for s in sentences if s.start < e_end and e_start < s.end for c in s.reasons}
            for code in codes:
                entry = reasons.setdefault(code, {"faithful": 0, "hallucinated": 0, "at_error": 0})
                entry[which] += 1
                if which == "hallucinated" and code in at_error:
                    entry["at_error"] += 1
            rows.append({"pair": pair["pair"], "type": pair["type"], "task_type": pair["task_type"],
                         "which": which, "risk": risk, "decision": str(r.decision),
                         "flagged": str(r.decision) != "show", "reasons": codes})
    for entry in reasons.values():
        entry["precision"] = entry["hallucinated"] / (entry["hallucinated"] + entry["faithful"])
    paraphrase = [bool(p["paraphrase"]) for p in pairs]
    out = {
        "overall": _group_metrics(rows, paraphrase, range(len(pairs))),
        "by_type": _grouped(pairs, rows, paraphrase, "type"),
        "by_task": _grouped(pairs, rows, paraphrase, "task_type"),
        "reasons": {code: reasons[code] for code in sorted(reasons)},
        "rows": rows,
        "model": _model_info(scorer, results),
        "policy": _policy_dict(policy),
        "flag_rule": _FLAG_RULE,
    }
    return out


def _grouped(pairs, rows, paraphrase, key) -> dict:
    groups: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        groups.setdefault(str(pair[key]), []).append(i)
    return {g: _group_metrics(rows, paraphrase, idx) for g, idx in sorted(groups.items())}


def _group_metrics(rows, paraphrase, idx) -> dict:
    """Metrics of the pairs at positions ``idx`` (``rows[2i]`` faithful, ``rows[2i + 1]`` hallucinated)."""
    from sklearn.metrics import roc_auc_score

    idx = list(idx)
    rf = np.array([rows[2 * i]["risk"] for i in idx], dtype=float)
    rh = np.array([rows[2 * i + 1]["risk"] for i in idx], dtype=float)
    ff = np.array([rows[2 * i]["flagged"] for i in idx], dtype=bool)
    fh = np.array([rows[2 * i + 1]["flagged"] for i in idx], dtype=bool)
    para = np.array([paraphrase[i] for i in idx], dtype=bool)
    n = len(idx)

    def share(mask):
        return float(mask.mean()) if mask.size else None

    auroc = None
    if n:
        y = np.r_[np.zeros(n), np.ones(n)]
        auroc = float(roc_auc_score(y, np.r_[rf, rh]))
    return {
        "n_pairs": n,
        "n_paraphrase": int(para.sum()),
        "auroc": auroc,
        "pair_accuracy": float(np.mean(np.where(rh > rf, 1.0, np.where(rh == rf, 0.5, 0.0)))) if n else None,
        "recall": share(fh),
        "false_alarm": share(ff),
        "false_alarm_paraphrase": share(ff[para]),
        "mean_risk_faithful": float(rf.mean()) if n else None,
        "mean_risk_hallucinated": float(rh.mean()) if n else None,
    }


def _model_info(scorer, results) -> dict:
    info = {}
    model = getattr(results[0], "model", None) if results else None
    if model is not None and is_dataclass(model):
        info.update(asdict(model))
    meta = getattr(getattr(scorer, "detector", scorer), "meta_", None) or {}
    if isinstance(meta, dict) and meta.get("prediction_fingerprint") is not None:
        info["prediction_fingerprint"] = meta["prediction_fingerprint"]
    return info


def _policy_dict(policy):
    if policy is None:
        from ..scoring import Policy

        policy = Policy()
    to_dict = getattr(policy, "to_dict", None)
    return to_dict() if callable(to_dict) else None


# ---------------------------------------------------------------------------------------------- report


def contrastive_markdown(result: dict) -> str:
    """A markdown summary of :func:`evaluate_contrastive`: by edit type, by task, and reason codes.

    Parameters
    ----------
    result : dict
        What :func:`evaluate_contrastive` returned (or its JSON round trip).

    Returns
    -------
    str
        A table with one row per edit type and an overall row (pairs,
        AUROC, pair accuracy, recall, false alarms overall and on
        paraphrases), the same by task type, and a table of reason codes
        (answers carrying each, precision); undefined values read ``n/a``.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> class Stub:  # a detector: risk 0.9 (warn) for hallucinated answers, 0.1 (show) for faithful ones
    ...     def score_batch(self, examples, policy=None):
    ...         return [NS(risk=0.9 if ex.label else 0.1, decision="warn" if ex.label else "show", sentences=())
    ...                 for ex in examples]
    >>> pair = {"pair": "p1", "type": "number", "task_type": "QA", "domain": "travel",
    ...         "query": "When does the museum open?", "context": ["The museum opens at 9 am daily."],
    ...         "faithful": "It opens at 9 am.", "hallucinated": "It opens at 10 am.", "error": "10 am",
    ...         "paraphrase": False, "distractor": False, "note": "9 -> 10"}
    >>> print(contrastive_markdown(evaluate_contrastive(Stub(), [pair])))
    ### Contrastive suite by edit type
    <BLANKLINE>
    | type | pairs | AUROC | pair acc | recall | false alarms | false alarms (paraphrase) |
    | --- | --- | --- | --- | --- | --- | --- |
    | number | 1 | 1.000 | 1.000 | 1.000 | 0.000 | n/a |
    | **overall** | 1 | 1.000 | 1.000 | 1.000 | 0.000 | n/a |
    <BLANKLINE>
    ### By task
    <BLANKLINE>
    | task | pairs | AUROC | pair acc | recall | false alarms | false alarms (paraphrase) |
    | --- | --- | --- | --- | --- | --- | --- |
    | QA | 1 | 1.000 | 1.000 | 1.000 | 0.000 | n/a |
    <BLANKLINE>
    ### Reason codes
    <BLANKLINE>
    No reason codes.
    <BLANKLINE>
    Flagged: decision != 'show'.
    """
    import pandas as pd

    from .._markdown import markdown_table
    from .._markdown import md_inline as _md_inline

    def num(v):
        return "n/a" if v is None else float(v)

    def metric_rows(groups, label_fmt=_md_inline):
        return [[label_fmt(name), int(m.get("n_pairs", 0)), num(m.get("auroc")), num(m.get("pair_accuracy")),
                 num(m.get("recall")), num(m.get("false_alarm")), num(m.get("false_alarm_paraphrase"))]
                for name, m in groups]

    cols = ["pairs", "AUROC", "pair acc", "recall", "false alarms", "false alarms (paraphrase)"]
    parts = []
    model = result.get("model") or {}
    if model.get("name") or model.get("sha256"):
        sha = str(model.get("sha256", ""))[:12]
        parts.append(f"Model: {_md_inline(model.get('name', ''))} ({_md_inline(model.get('method', ''))}, "
                     f"sha256 {_md_inline(sha)}), evqual {_md_inline(model.get('version', ''))}.\n")
    by_type = metric_rows(sorted((result.get("by_type") or {}).items()))
    by_type += metric_rows([("**overall**", result.get("overall") or {})], label_fmt=str)
    parts.append("### Contrastive suite by edit type\n")
    parts.append(markdown_table(pd.DataFrame(by_type, columns=["type", *cols], dtype=object)) + "\n")
    if result.get("by_task"):
        parts.append("### By task\n")
        rows = metric_rows(sorted(result["by_task"].items()))
        parts.append(markdown_table(pd.DataFrame(rows, columns=["task", *cols], dtype=object)) + "\n")
    parts.append("### Reason codes\n")
    reasons = result.get("reasons") or {}
    if reasons:
        rows = [[_md_inline(code), int(r["faithful"]), int(r["hallucinated"]), num(r.get("precision")),
                 int(r.get("at_error", 0))]
                for code, r in sorted(reasons.items(), key=lambda kv: (-kv[1]["hallucinated"] - kv[1]["faithful"],
                                                                       kv[0]))]
        parts.append(markdown_table(pd.DataFrame(
            rows, columns=["reason", "faithful", "hallucinated", "precision", "at error"], dtype=object)) + "\n")
    else:
        parts.append("No reason codes.\n")
    parts.append(f"Flagged: {_md_inline(result.get('flag_rule', _FLAG_RULE))}.")
    return "\n".join(parts)
