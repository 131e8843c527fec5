"""Several data sources in one training or evaluation set.

A *source spec* names a dataset and how to use it::

    ../shared/data/ragtruth
    ../shared/data/transfer/halueval_dialogue.jsonl:split=dev
    logs/mine.jsonl:name=support,weight=2

``PATH`` is anything :func:`~evqual.data.load_data` reads; after a colon, comma-separated ``key=value``
options (only when ``PATH`` itself does not exist, so a file whose name holds a colon still loads):

* ``split=NAME[+NAME...]``: keep only rows of these splits (a generic file's ``split`` field; RAGTruth's
  ``train``/``test``);
* ``weight=W`` (default 1): how many times each of the source's groups is used in fitting, in
  expectation.  ``0.5`` keeps a seeded random half of its groups (``source_id``, or ``pair``), ``2``
  uses each twice, ``1.5`` each once and a random half twice.  Groups are kept whole, so a grouped
  split never puts copies of one item on both sides;
* ``name=NAME``: the source's name in tables (default: the file's stem, or the folder's name).

:func:`load_sources` reads every spec and returns one :class:`~evqual.data.LoadResult` whose examples
carry their source's name in :attr:`~evqual.data.Example.dataset` and a ``source_id`` prefixed with it
(``"halueval_dialogue/he-dial-6767"``), so groups of two sources never merge.

Examples
--------
>>> from evqual.data import parse_source, sample_path
>>> spec = parse_source(f"{sample_path()}:split=test,weight=0.5,name=sample")
>>> spec.name, spec.splits, spec.weight
('sample', ('test',), 0.5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ._loaders import LoadResult, load_data

__all__ = ["SourceSpec", "parse_source", "load_sources", "weigh_sources", "plain_path", "source_info",
           "trainable_rows", "group_copies"]

_KEYS = ("split", "weight", "name")
MAX_WEIGHT = 10.0


@dataclass(frozen=True)
class SourceSpec:
    """One source: where it is, which of its splits, its weight in fitting and its name."""

    path: Path
    splits: tuple | None = None
    weight: float = 1.0
    name: str = ""


def _default_name(path: Path) -> str:
    return (path.stem if path.suffix else path.name) or str(path)


def parse_source(spec) -> SourceSpec:
    """Read a source spec (``PATH[:split=S,weight=W,name=N]``); raise ValueError naming the bad part.

    >>> parse_source("logs.jsonl").weight
    1.0
    >>> parse_source("logs.jsonl:weight=-1")
    Traceback (most recent call last):
    ...
    ValueError: source 'logs.jsonl:weight=-1': weight must be a number in [0, 10]; got '-1'
    """
    if isinstance(spec, SourceSpec):
        return spec
    text = str(spec)
    path, options = text, ""
    if not Path(text).exists() and ":" in text:
        head, _, tail = text.rpartition(":")
        if tail and all("=" in part for part in tail.split(",")):
            path, options = head, tail
    out = {"path": Path(path), "name": _default_name(Path(path))}
    for part in filter(None, options.split(",")):
        key, _, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if key not in _KEYS:
            raise ValueError(f"source {text!r}: unknown option {key!r} (allowed: {', '.join(_KEYS)})")
        if key == "split":
            splits = tuple(s for s in value.split("+") if s)
            if not splits:
                raise ValueError(f"source {text!r}: split needs a name (split=dev, split=train+test)")
            out["splits"] = splits
        elif key == "weight":
            try:
                weight = float(value)
            except ValueError:
                weight = math.nan
            if not (math.isfinite(weight) and 0 <= weight <= MAX_WEIGHT):
                raise ValueError(f"source {text!r}: weight must be a number in [0, {MAX_WEIGHT:g}]; got {value!r}")
            out["weight"] = weight
        else:
            if not value or len(value) > 100 or any(c in value for c in "/\\:,\n\r\t"):
                raise ValueError(f"source {text!r}: name must be 1 to 100 characters without / \\ : , or "
                                 f"white space controls; got {value!r}")
            out["name"] = value
    return SourceSpec(**out)


def load_sources(specs, *, strict: bool = False, warn: bool = True, limits=None,
                 all_rows: bool = False) -> LoadResult:
    """Load several sources into one :class:`~evqual.data.LoadResult` (weights not applied: see
    :func:`weigh_sources`).

    Every example gets its source's name as :attr:`~evqual.data.Example.dataset` (unless its own row named
    one) and a ``source_id`` prefixed with that name; rows outside the spec's splits are left out.  Bad rows
    of any source are reported with their file and line, and never take other rows with them.  With
    ``all_rows``, rows outside a spec's splits are kept too (the ``transfer`` protocol scores a held-out
    source's test rows; :func:`trainable_rows` says which rows its spec keeps for training).  Raises
    ValueError for two sources of one name, :class:`~evqual.errors.EvqualDataError` for an unreadable path.

    >>> from evqual.data import load_sources, sample_path
    >>> data = load_sources([f"{sample_path()}:name=a,split=test", f"{sample_path()}:name=b"])
    >>> sorted({ex.dataset for ex in data}), data[0].source_id.startswith("a/")
    (['a', 'b'], True)
    """
    specs = [parse_source(s) for s in specs]
    if not specs:
        raise ValueError("no source given")
    names = [s.name for s in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"two sources are named {dup[0]!r}: give one of them another name (PATH:name=NAME)")
    examples, issues, paths, layouts = [], [], [], []
    for spec in specs:
        result = load_data(spec.path, strict=strict, warn=warn, limits=limits)
        issues += result.issues
        paths += result.paths
        layouts.append(result.layout)
        for ex in result.examples:
            if spec.splits is not None and ex.split not in spec.splits and not all_rows:
                continue
            sid = ex.source_id if ex.source_id is not None else ex.id
            examples.append(replace(ex, source_id=f"{spec.name}/{sid}", dataset=ex.dataset or spec.name))
    if len(specs) == 1:
        layout = layouts[0]
    else:
        layout = "sources"
    seen, clash = set(), 0
    for ex in examples:
        clash += ex.id in seen
        seen.add(ex.id)
    if clash:  # ids are per source; prefix them so that every row of the union keeps its own
        examples = [replace(ex, id=f"{ex.dataset}/{ex.id}") for ex in examples]
    return LoadResult(examples, issues, layout, paths)


def trainable_rows(examples, specs) -> np.ndarray:
    """One bool per example: whether its source's spec keeps it (its ``split=`` option, if any).

    >>> from evqual.data import load_sources, sample_path
    >>> specs = [f"{sample_path()}:name=a,split=test"]
    >>> data = load_sources(specs, all_rows=True)
    >>> bool(trainable_rows(data, specs).sum() == sum(ex.split == "test" for ex in data))
    True
    """
    splits = {s.name: s.splits for s in (parse_source(x) for x in specs)}
    return np.array([splits.get(ex.dataset) is None or ex.split in splits[ex.dataset] for ex in examples],
                    dtype=bool)


def group_copies(datasets, groups, specs, *, seed: int = 0) -> np.ndarray:
    """How many times each row is used in fitting under its source's weight (see :func:`weigh_sources`):
    ``floor(w)`` plus one with probability ``w - floor(w)``, drawn once per group (seeded)."""
    weights = {s.name: s.weight for s in (parse_source(x) for x in specs)}
    rng = np.random.default_rng(seed)
    drawn = {}
    out = np.empty(len(datasets), dtype=int)
    for i, key in enumerate(zip(datasets, groups)):
        if key not in drawn:
            w = weights.get(key[0], 1.0)
            whole = int(math.floor(w))
            drawn[key] = whole + int(w != whole and rng.random() < w - whole)
        out[i] = drawn[key]
    return out


def weigh_sources(examples, specs, *, seed: int = 0) -> list:
    """The examples with each source's ``weight`` applied by whole groups (fitting data only).

    A source of weight ``w`` keeps each of its groups ``floor(w)`` times, plus once more with probability
    ``w - floor(w)`` (seeded); copies get ids ``"<id>#<k>"`` and the same ``source_id``, so grouped splits
    keep them together.  Sources of weight 1 are returned as they are, in order.

    >>> from evqual.data import load_sources, sample_path
    >>> data = load_sources([f"{sample_path()}:name=a", f"{sample_path()}:name=b"]).examples
    >>> len(weigh_sources(data, ["x:name=a,weight=2", "x:name=b,weight=0"])) == len(data)
    True
    """
    weights = {s.name: s.weight for s in (parse_source(x) for x in specs)}
    if all(w == 1.0 for w in weights.values()):
        return list(examples)
    examples = list(examples)
    copies = group_copies([ex.dataset for ex in examples], [ex.source_id for ex in examples], specs, seed=seed)
    out = []
    for ex, n in zip(examples, copies.tolist()):
        out += [ex if k == 0 else replace(ex, id=f"{ex.id}#{k}") for k in range(n)]
    return out


def plain_path(specs) -> bool:
    """Whether ``specs`` is one source given as a bare path (no option): read it as
    :func:`~evqual.data.load_data` reads it, source ids unprefixed, exactly as before sources existed."""
    if isinstance(specs, (str, Path)):
        return True
    specs = list(specs)
    if len(specs) != 1:
        return False
    spec = parse_source(specs[0])
    return spec.splits is None and spec.weight == 1.0 and spec.name == _default_name(spec.path) and \
        str(spec.path) == str(specs[0])


def source_info(result, specs) -> list:
    """What ``meta.json`` records of each source: its spec, name, path, splits, weight and rows by label."""
    from collections import Counter

    specs = [parse_source(s) for s in specs]
    rows = Counter(ex.dataset for ex in result)
    pos = Counter(ex.dataset for ex in result if ex.label == 1)
    return [{"name": s.name, "path": str(s.path), "splits": list(s.splits) if s.splits else None,
             "weight": s.weight, "rows": rows.get(s.name, 0), "positives": pos.get(s.name, 0)} for s in specs]
