"""What a decision policy does to held-out answers: the pre-filter's view of the numbers.

:func:`policy_summary` applies a :class:`~evqual.scoring.Policy` to pooled
out-of-fold risks (one per answer) and reports, per decision, how many answers
get it and how many of them are hallucinated, plus the two figures a team
running evqual in front of LLM verification needs: the share of answers sent
on to verification (``escalate``) and the share of hallucinated answers shown
to users unflagged (``show``).
"""

from __future__ import annotations

from ..scoring import DECISIONS

__all__ = ["policy_summary"]


def policy_summary(examples, predictions, policy=None) -> dict:
    """Decisions of ``policy`` on held-out risks.

    Parameters
    ----------
    examples : iterable of Example
        The answers (for their query and context: topics).
    predictions : DataFrame
        ``id``, ``risk`` and ``label`` per held-out answer (an evaluation's
        pooled predictions), and optionally ``threshold`` (each fold's tuned
        threshold: the general threshold of a policy that follows the model).
        Forced escalation by conflict reasons is not applied (predictions
        carry no reasons).
    policy : Policy, optional
        Default ``Policy()``.

    Returns
    -------
    dict
        ``{"n", "decisions": {decision: {"n", "share", "hallucinated", "hallucination_rate"}},
        "sensitive_share", "topics": {topic: n}, "escalated_share",
        "hallucinated_shown_share", "grounded_not_shown_share"}``.

    Examples
    --------
    >>> import pandas as pd
    >>> from evqual.data import make_example
    >>> ex = [make_example(id="a", query="q", context="c", output="o"),
    ...       make_example(id="b", query="q", context="c", output="o")]
    >>> preds = pd.DataFrame({"id": ["a", "b"], "risk": [0.1, 0.95], "label": [0, 1]})
    >>> s = policy_summary(ex, preds)
    >>> s["decisions"]["show"]["n"], s["decisions"]["abstain"]["n"], s["hallucinated_shown_share"]
    (1, 1, 0.0)
    """
    from ..scoring import Policy

    policy = policy if policy is not None else Policy()
    by_id = {ex.id: ex for ex in examples}
    counts = {d: [0, 0] for d in DECISIONS}
    topics: dict[str, int] = {}
    n = n_pos = n_neg = pos_shown = neg_not_shown = sensitive = 0
    thresholds = predictions["threshold"] if "threshold" in predictions else [None] * len(predictions)
    for rid, risk, label, thr in zip(predictions["id"], predictions["risk"], predictions["label"], thresholds):
        ex = by_id.get(rid)
        if ex is None:
            continue
        tags = policy.tag(ex.query, ex.context)
        for t in tags:
            topics[t] = topics.get(t, 0) + 1
        d = policy.decide(float(risk), tags, model_threshold=None if thr is None else float(thr))
        y = int(label) if label is not None else 0
        counts[d.decision][0] += 1
        counts[d.decision][1] += y
        n += 1
        sensitive += d.sensitive
        n_pos += y
        n_neg += 1 - y
        pos_shown += y and d.decision == "show"
        neg_not_shown += (1 - y) and d.decision != "show"
    return {
        "n": n,
        "decisions": {k: {"n": c, "share": c / n if n else 0.0, "hallucinated": h,
                          "hallucination_rate": h / c if c else None} for k, (c, h) in counts.items()},
        "sensitive_share": sensitive / n if n else 0.0,
        "topics": topics,
        "escalated_share": counts["escalate"][0] / n if n else 0.0,
        "hallucinated_shown_share": pos_shown / n_pos if n_pos else 0.0,
        "grounded_not_shown_share": neg_not_shown / n_neg if n_neg else 0.0,
        "policy": policy.to_dict(),
    }


def policy_table(summary: dict) -> str:
    """A markdown table of :func:`policy_summary` (one row per decision)."""
    import pandas as pd

    from .._markdown import markdown_table

    rows = [{"decision": d, "answers": v["n"], "share": f"{v['share']:.3f}", "hallucinated": v["hallucinated"],
             "hallucination rate": "" if v["hallucination_rate"] is None else f"{v['hallucination_rate']:.3f}"}
            for d, v in summary["decisions"].items()]
    return markdown_table(pd.DataFrame(rows))
