"""Retrieval benchmark of the verification stage (issue 11, section 2), sparse retrieval so far.

Construction (known relevance, built from the shared RAGTruth copy): the corpus is
every passage of every QA source of ``source_info.jsonl`` (split as evqual chunks a
QA context, ``evqual.data.chunk_context(..., "QA")``); each source's question is a
query, and the passages of its own source are the relevant ones.  Passages
repeated verbatim across sources are kept once, relevant to every source that has
them.

    python scripts/retrieval_bench.py --data ../shared/data/ragtruth --json docs/bench/retrieval.json
"""

import argparse
import json
import sys
import time


def build(data: str):
    """``(passages, queries, relevant)`` of the QA sources of ``data``."""
    from pathlib import Path

    from evqual.data import chunk_context

    passages, index, queries, relevant = [], {}, [], []
    with open(Path(data) / "source_info.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            info = row.get("source_info")
            if row.get("task_type") != "QA" or not isinstance(info, dict):
                continue
            question, raw = info.get("question"), info.get("passages")
            if not isinstance(question, str) or not isinstance(raw, (str, list)):
                continue
            text, chunks = chunk_context(raw, "QA")
            rel = set()
            for c in chunks:
                p = text[c.start:c.end].strip()
                if p not in index:
                    index[p] = len(passages)
                    passages.append(p)
                rel.add(index[p])
            queries.append(question)
            relevant.append(rel)
    return passages, queries, relevant


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/ragtruth", help="RAGTruth folder (source_info.jsonl)")
    ap.add_argument("--json", help="write the metrics here")
    args = ap.parse_args(argv)
    from evqual.verify import SparseRetriever, retrieval_metrics

    try:
        passages, queries, relevant = build(args.data)
    except OSError as exc:
        print(f"error: cannot read {args.data}: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    retriever = SparseRetriever().fit(passages)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    rankings = [retriever.search(q, k=20).tolist() for q in queries]
    query_ms = (time.perf_counter() - t0) / max(1, len(queries)) * 1000
    out = {"corpus_passages": len(passages), "queries": len(queries),
           "sparse_bm25": retrieval_metrics(rankings, relevant), "fit_s": round(fit_s, 3),
           "query_ms": round(query_ms, 3)}
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
