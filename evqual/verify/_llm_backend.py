"""The ``llm`` backend: factoids, mutations and verdicts from an OpenAI-compatible model.

Three objects share one :class:`~evqual.verify.LLMClient` (and so its cache,
retries, concurrency limit and usage accounting):

* :class:`LLMFactoidExtractor` - seed 000's A.1 prompt: the answer's atomic
  factoids, each located in the answer;
* :class:`LLMMutator` - A.2: synonym and antonym variants of a factoid;
* :class:`LLMJudge` - A.3 (``mode="factoid"``: YES / NO / NOT SURE) or seed
  003's claim verification (``mode="claim"``: SUPPORTED / REFUTED /
  NO_EVIDENCE with a probability, as JSON).

Nothing here raises for one bad model reply: a judge returns a
:class:`~evqual.verify.Judgement` with ``error`` set (and verdict
``NO_EVIDENCE``, probability 0.5) for an unparsable reply, a wrong label or a
request that failed after its retries.  The extractor and the mutator raise
:class:`~evqual.verify.LLMError` when the request fails or (extractor) the
reply is not a JSON array, so that the caller records an error for that one
answer instead of scoring it as if it had no factoids.

Cost per answer: wrap the calls for one answer in ``with client.usage_scope()
as usage:``; every object here also exposes the client's running total as
``usage``.
"""

from __future__ import annotations

import contextvars
import json
import math
import re
from concurrent.futures import ThreadPoolExecutor

from ..text import content_tokens, split_sentences, tokenize
from ._llm import LLMClient, LLMError, quoted
from ._prompts import load_prompt
from ._types import MUTATION_KINDS, VERDICTS, Judgement

__all__ = ["LLMFactoidExtractor", "LLMJudge", "LLMMutator", "JUDGE_MODES"]

JUDGE_MODES = ("claim", "factoid")
_ANSWER_VERDICT = {"YES": ("SUPPORTED", 1.0), "NO": ("REFUTED", 0.0), "NOT SURE": ("NO_EVIDENCE", 0.5)}
_DEFAULT_PROBABILITY = {"SUPPORTED": 1.0, "REFUTED": 0.0, "NO_EVIDENCE": 0.5}
_LABEL_ALIASES = {"NOT_ENOUGH_INFO": "NO_EVIDENCE", "NOT_ENOUGH_INFORMATION": "NO_EVIDENCE"}
_SHOWN = 80  # characters of a bad reply quoted in an error


def _quote(text) -> str:
    text = " ".join(str(text).split())
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "...")


def _show(value) -> str:
    return _quote(value) if isinstance(value, str) else repr(value)[:_SHOWN]


def _strip_fences(text: str) -> str:
    text = text.strip()
    m = re.match(r"^```[\w-]*\s*\n?(.*?)\n?```\s*$", text, flags=re.S)
    return m.group(1).strip() if m else text


def _first_json(text: str, kind: type):
    """The first JSON value of type ``kind`` in ``text`` (or ``None``); never raises."""
    text = _strip_fences(text)
    try:
        value = json.loads(text)
        if isinstance(value, kind):
            return value
    except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        pass
    opener = "{" if kind is dict else "["
    decoder = json.JSONDecoder()
    pos, tries = text.find(opener), 0
    while pos >= 0 and tries < 50:
        try:
            value, _ = decoder.raw_decode(text, pos)
            if isinstance(value, kind):
                return value
        except (ValueError, RecursionError):
            pass
        pos, tries = text.find(opener, pos + 1), tries + 1
    return None


def parse_factoid_reply(text) -> tuple:
    """``(answer, reason, error)`` of a reply to the A.3 prompt; exactly one of answer/error is set.

    >>> parse_factoid_reply("NOT SURE. The passages do not say.")
    ('NOT SURE', 'The passages do not say.', None)
    >>> parse_factoid_reply("Answer: **yes** - stated in passage 1")
    ('YES', 'stated in passage 1', None)
    >>> parse_factoid_reply("MAYBE.")[2]
    "the verifier must answer YES, NO or NOT SURE; got 'MAYBE.'"
    """
    if not isinstance(text, str) or not text.strip():
        return None, None, "the verifier's reply is empty"
    body = re.sub(r"^[\s*_`\"'>#]*(?:answer\s*:)?[\s*_`\"']*", "", text, flags=re.I)
    m = re.match(r"(NOT[\s_-]+SURE|YES|NO)(?![\w])", body, flags=re.I)
    if not m:
        return None, None, f"the verifier must answer YES, NO or NOT SURE; got {_quote(text)}"
    answer = "NOT SURE" if m.group(1).upper().startswith("NOT") else m.group(1).upper()
    reason = body[m.end():].strip().lstrip("*_`\"'.,:;-– ").strip() or None
    return answer, quoted(reason), None


def parse_claim_reply(text, n_passages: int = 0) -> tuple:
    """``(verdict, probability, cited, reason, error)`` of a reply to the claim prompt; never raises.

    ``cited`` are 0-based indexes of the passages the model named (numbers
    outside ``1..n_passages`` are dropped).  A missing ``probability`` takes
    the label's default (1, 0, 0.5); a wrong label or an unusable
    probability sets ``error``.

    >>> parse_claim_reply('{"label": "REFUTED", "probability": 0.1, "evidence": [2, 9]}', 2)
    ('REFUTED', 0.1, [1], None, None)
    >>> parse_claim_reply('{"label": "MAYBE", "probability": 0.4}', 2)[4]
    "the verifier's label must be one of SUPPORTED, REFUTED, NO_EVIDENCE; got 'MAYBE'"
    """
    if not isinstance(text, str) or not text.strip():
        return None, None, [], None, "the verifier's reply is empty"
    data = _first_json(text, dict)
    if data is None:
        return None, None, [], None, f"the verifier's reply is not a JSON object: {_quote(text)}"
    label = data.get("label", data.get("verdict"))
    if not isinstance(label, str):
        return None, None, [], None, f"the verifier's reply has no 'label' string: {_quote(text)}"
    norm = re.sub(r"[\s-]+", "_", label.strip().upper())
    norm = _LABEL_ALIASES.get(norm, norm)
    if norm not in VERDICTS:
        return None, None, [], None, f"the verifier's label must be one of {', '.join(VERDICTS)}; got {_quote(label)}"
    p = data.get("probability")
    if p is None:
        p = _DEFAULT_PROBABILITY[norm]
    else:
        if isinstance(p, str):
            try:
                p = float(p.strip())
            except ValueError:
                p = None
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or not 0.0 <= p <= 1.0:
            return None, None, [], None, (f"the verifier's probability must be a number in [0, 1]; "
                                          f"got {_show(data.get('probability'))}")
        p = float(p)
    cited = []
    raw = data.get("evidence")
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, str) and item.strip().lstrip("[").rstrip("]").isdigit():
            item = int(item.strip().lstrip("[").rstrip("]"))
        if isinstance(item, int) and not isinstance(item, bool) and 1 <= item <= n_passages \
                and item - 1 not in cited:
            cited.append(item - 1)
    reason = data.get("reason")
    return norm, p, cited, (quoted(str(reason)) if reason is not None else None), None


def _norm(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .!?;:,\"'")


def parse_variants(text, factoid: str, n: int) -> list:
    """Up to ``n`` distinct variants from a reply to an A.2 prompt (one per line, or a JSON array).

    Bullets, numbers, quotes and ``Synonym:``-style labels are stripped; the
    factoid itself and repeats (ignoring case, spacing and end punctuation)
    are dropped.

    >>> parse_variants("1. Paris is France's capital.\\n- paris is france's capital\\nParis is the capital of France.",
    ...                "Paris is the capital of France.", 3)
    ["Paris is France's capital."]
    """
    if not isinstance(text, str) or n < 1:
        return []
    items = None
    stripped = _strip_fences(text)
    if stripped.startswith("["):
        value = _first_json(stripped, list)
        if value is not None:
            items = [v for v in value if isinstance(v, str)]
    if items is None:
        items = stripped.splitlines()
    seen = {_norm(factoid)}
    out = []
    for item in items:
        item = re.sub(r"^\s*(?:[-*•>]+|\(?\d+[.)]|#+)\s*", "", item)
        item = re.sub(r"^(?:good\s+|bad\s+)?(?:synonym|antonym|negation|paraphrase)s?\s*\d*\s*:\s*", "", item,
                      flags=re.I)
        item = item.strip().strip("\"'`").strip()
        key = _norm(item)
        if not key or key in seen or not any(c.isalnum() for c in key):
            continue
        seen.add(key)
        out.append(quoted(item))
        if len(out) == n:
            break
    return out


def parse_factoids(text) -> list | None:
    """The factoid strings of a reply to the A.1 prompt (a JSON array of strings), ``None`` if it is not one.

    >>> parse_factoids('```json\\n["A is B.", " ", "C is D."]\\n```')
    ['A is B.', 'C is D.']
    """
    if not isinstance(text, str):
        return None
    value = _first_json(text, list)
    if value is None or not all(isinstance(v, str) for v in value):
        return None
    return [quoted(v.strip()) for v in value if v.strip()]


def align_span(answer: str, factoid: str, units=None) -> tuple:
    """The ``(start, end)`` in ``answer`` a factoid came from.

    A factoid found verbatim (without its final full stop) gives its exact
    span; otherwise the sentence of ``answer`` (:func:`evqual.text.split_sentences`)
    that contains the largest share of the factoid's content tokens (then
    of all its tokens; ties: the larger share of the sentence's tokens, then
    the earlier sentence).  With no token in common, the whole answer.

    >>> a = "The bridge opened in 1932. It was closed in 1990 for repairs."
    >>> s, e = align_span(a, "The bridge was closed for repairs.")
    >>> a[s:e]
    'It was closed in 1990 for repairs.'
    """
    stripped = factoid.strip().rstrip(".")
    if stripped:
        i = answer.find(stripped)
        if i >= 0:
            return i, i + len(stripped)
    units = units if units is not None else split_sentences(answer)
    lead = len(answer) - len(answer.lstrip())
    full = (lead, max(lead, len(answer.rstrip())))  # (n, n) for an all-blank answer
    if not units:
        return full
    best, best_key = None, None
    for tokens_of in (content_tokens, tokenize):
        f = set(tokens_of(factoid))
        if not f:
            continue
        for idx, (s, e) in enumerate(units):
            u = set(tokens_of(answer[s:e]))
            common = len(f & u)
            if not common:
                continue
            key = (common / len(f), common / max(1, len(u)), -idx)
            if best_key is None or key > best_key:
                best, best_key = (s, e), key
        if best is not None:
            return best
    return full


def _map(client: LLMClient, fn, items) -> list:
    """``[fn(x) for x in items]`` on up to ``client.concurrency`` threads, in order, usage scopes kept."""
    items = list(items)
    if len(items) <= 1 or client.concurrency <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(client.concurrency, len(items))) as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, x) for x in items]
        return [f.result() for f in futures]


class _LLMPart:
    name = "llm"

    def __init__(self, client: LLMClient, *, prompts_dir=None):
        if not isinstance(client, LLMClient):
            raise TypeError(f"{type(self).__name__}: client must be an LLMClient; got {type(client).__name__}")
        self.client = client
        self.prompts_dir = prompts_dir

    @property
    def usage(self):
        """The client's running :class:`~evqual.verify.Usage` (use ``client.usage_scope()`` per answer)."""
        return self.client.usage


class LLMJudge(_LLMPart):
    """A :class:`~evqual.verify.Judge` that asks an LLM.

    Parameters
    ----------
    client : LLMClient
    mode : {"claim", "factoid"}, default="claim"
        ``claim``: seed 003's labels from the ``verify_claim`` prompt (JSON
        with a label, a probability and the passages used).  ``factoid``:
        seed 000's A.3 prompt; YES / NO / NOT SURE become SUPPORTED /
        REFUTED / NO_EVIDENCE with probability 1 / 0 / 0.5 and ``answer`` set.
    prompts_dir : path-like, optional
        A folder of edited prompts (see :func:`evqual.verify.load_prompt`).

    Notes
    -----
    Each statement is checked against its own evidence passages; a statement
    with none is checked against all ``chunks``; with neither, it gets
    ``NO_EVIDENCE`` (probability 0.5, answer NOT SURE in factoid mode) without
    a request.  Statements are sent in parallel, up to the client's
    ``concurrency``.  A failed request or an unusable reply gives that
    statement ``verdict="NO_EVIDENCE"``, ``probability=0.5``,
    ``answer=None`` and ``error`` saying what went wrong.
    """

    def __init__(self, client: LLMClient, *, mode: str = "claim", prompts_dir=None):
        super().__init__(client, prompts_dir=prompts_dir)
        if mode not in JUDGE_MODES:
            raise ValueError(f"LLMJudge: mode must be one of {JUDGE_MODES}; got {mode!r}")
        self.mode = mode
        self._template = load_prompt("verify_claim" if mode == "claim" else "verify_factoid", prompts_dir)

    def judge(self, statements, evidence, *, query: str = "", chunks=()) -> list:
        """One :class:`~evqual.verify.Judgement` per statement, in order."""
        statements, evidence, chunks = list(statements), list(evidence), [str(c) for c in chunks]
        if len(evidence) != len(statements):
            raise ValueError(f"LLMJudge.judge: {len(statements)} statements but {len(evidence)} evidence lists")
        return _map(self.client, lambda pair: self._one(pair[0], pair[1], query, chunks),
                    list(zip(statements, evidence)))

    def _one(self, statement, passages, query, chunks) -> Judgement:
        passages = list(passages or [])
        texts = [e.text for e in passages] or chunks
        shown = passages if passages else []
        if not texts:
            return Judgement("NO_EVIDENCE", 0.5, [], reason="no evidence passages",
                             answer="NOT SURE" if self.mode == "factoid" else None)
        if self.mode == "claim":
            prompt = self._template.substitute(
                question=query or "(no question given)", claim=statement,
                passages="\n".join(f"[{i}] {' '.join(t.split())}" for i, t in enumerate(texts, 1)))
        else:
            prompt = self._template.substitute(context="\n\n".join(texts), statement=statement)
        try:
            reply = self.client.complete(prompt)
        except LLMError as exc:
            return Judgement("NO_EVIDENCE", 0.5, shown, error=str(exc))
        if self.mode == "factoid":
            answer, reason, error = parse_factoid_reply(reply.text)
            if error:
                return Judgement("NO_EVIDENCE", 0.5, shown, error=error)
            verdict, p = _ANSWER_VERDICT[answer]
            return Judgement(verdict, p, shown, reason=reason, answer=answer)
        verdict, p, cited, reason, error = parse_claim_reply(reply.text, len(texts))
        if error:
            return Judgement("NO_EVIDENCE", 0.5, shown, error=error)
        if shown and cited:
            shown = [shown[i] for i in cited]
        return Judgement(verdict, p, shown, reason=reason)


class LLMMutator(_LLMPart):
    """A :class:`~evqual.verify.Mutator` with seed 000's A.2 prompts.

    ``mutate(factoid, kind, n, question=...)`` asks for ``n`` variants of
    ``kind`` (``synonym`` or ``antonym``) and returns up to ``n`` distinct
    ones, never the factoid itself (fewer when the model repeats itself).
    The question, when given, is the context the seed's prompts ask for.

    Raises :class:`~evqual.verify.LLMError` when the request fails after its retries.
    """

    def __init__(self, client: LLMClient, *, prompts_dir=None):
        super().__init__(client, prompts_dir=prompts_dir)
        self._templates = {kind: load_prompt(kind, prompts_dir) for kind in MUTATION_KINDS}

    def mutate(self, factoid: str, kind: str, n: int, *, question: str = "") -> list:
        if kind not in MUTATION_KINDS:
            raise ValueError(f"LLMMutator.mutate: kind must be one of {MUTATION_KINDS}; got {kind!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"LLMMutator.mutate: n must be an int >= 0; got {n!r}")
        if n == 0 or not factoid.strip():
            return []
        prompt = self._templates[kind].substitute(count=n, question=question or "(no question given)",
                                                  factoid=factoid)
        return parse_variants(self.client.complete(prompt).text, factoid, n)


class LLMFactoidExtractor(_LLMPart):
    """Seed 000's A.1 factoid decomposition, each factoid located in the answer.

    ``extract(answer)`` returns ``[(start, end, factoid), ...]``: the factoid
    is the model's standalone sentence (what the mutator and judge see) and
    ``answer[start:end]`` the part of the answer it came from - the factoid
    itself when it occurs verbatim, else the sentence of the answer with the
    best token overlap (:func:`align_span`).

    Raises :class:`~evqual.verify.LLMError` when the request fails after its
    retries or the reply is not a JSON array of strings (the message quotes
    its start), so that the answer is reported as not verified rather than as
    free of factoids.
    """

    def __init__(self, client: LLMClient, *, prompts_dir=None):
        super().__init__(client, prompts_dir=prompts_dir)
        self._template = load_prompt("factoids", prompts_dir)

    def extract(self, answer: str) -> list:
        if not isinstance(answer, str):
            raise TypeError(f"LLMFactoidExtractor.extract: answer must be a str; got {type(answer).__name__}")
        if not answer.strip():
            return []
        reply = self.client.complete(self._template.substitute(text=answer))
        factoids = parse_factoids(reply.text)
        if factoids is None:
            raise LLMError("factoid extraction: the model's reply is not a JSON array of strings: "
                           f"{_quote(reply.text)}", url=self.client.endpoint, attempts=reply.attempts)
        units = split_sentences(answer)
        out = []
        for f in factoids:
            s, e = align_span(answer, f, units)
            out.append((s, e, f))
        return out
