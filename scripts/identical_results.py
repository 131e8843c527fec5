"""Dump every result ``evqual score`` gives, and compare two dumps (issue 23: speed must not change what evqual says).

    python scripts/identical_results.py dump --data ../shared/data/ragtruth --out /tmp/before
    ... optimise ...
    python scripts/identical_results.py dump --data ../shared/data/ragtruth --out /tmp/after
    python scripts/identical_results.py compare /tmp/before /tmp/after
    python scripts/identical_results.py pin        # rewrite tests/data/identical/expected.jsonl

``dump`` runs the real command line, ``evqual score --no-context --no-progress``, on the shared RAGTruth copy's
``response.jsonl`` (6,027 answers) and on both hand-written development suites (each pair's faithful and
hallucinated answer as a line of generic JSONL), so that everything a user reads is in the dump: risk,
decision, thresholds, sentence risks, spans, reasons with their evidence, warnings.  It writes one file per
input and ``manifest.json`` with each file's SHA-256 and line count.  ``compare`` reports, per file, how
many lines differ and, for the first ones, which fields (``sentences[2].risk``, ``spans`` ...); exit
status 1 when any line differs.  ``pin`` scores ``tests/data/identical/input.jsonl`` (a fixed subset of
answers) and rewrites the expected output the test ``tests/test_identical_results.py`` compares with;
run it only when a change of results has been explained, measured on quality and committed on its own.

Exit status 2 on usage errors and unreadable inputs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("contrastive", "heldout_types")
PINNED_INPUT = ROOT / "tests" / "data" / "identical" / "input.jsonl"
PINNED_EXPECTED = ROOT / "tests" / "data" / "identical" / "expected.jsonl"


def suite_lines(folder) -> list[str]:
    """Generic JSONL lines of a suite: ``<pair>/faithful`` then ``<pair>/hallucinated``, in pair order."""
    from evqual.evaluation import load_pairs

    out = []
    for p in load_pairs([folder]):
        for key in ("faithful", "hallucinated"):
            out.append(json.dumps({"id": f"{p['pair']}/{key}", "query": p["query"], "context": p["context"],
                                   "output": p[key], "task_type": p["task_type"]}, ensure_ascii=False))
    return out


def score_file(path, out, *, jobs: int = 1) -> None:
    """``evqual score`` of ``path`` into ``out`` (the command line itself, in a fresh process)."""
    cmd = [sys.executable, "-m", "evqual", "score", str(path), "--out", str(out), "--no-context", "--no-progress",
           "--jobs", str(jobs)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1):  # 1: some line failed, which the dump records as it is
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")


def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def dump(data, out, *, jobs: int = 1, log=print) -> dict:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    inputs = {}
    response = Path(data) / "response.jsonl"
    if not response.is_file():
        raise FileNotFoundError(f"{response}: no RAGTruth response.jsonl there")
    inputs["ragtruth"] = response
    for name in SUITES:
        path = out / f"{name}.input.jsonl"
        path.write_text("\n".join(suite_lines(ROOT / "tests" / "data" / name)) + "\n", encoding="utf-8")
        inputs[name] = path
    manifest = {}
    for name, path in inputs.items():
        target = out / f"{name}.jsonl"
        score_file(path, target, jobs=jobs)
        with open(target, "rb") as fh:
            n = sum(1 for _ in fh)
        manifest[name] = {"input": str(path), "lines": n, "sha256": _sha256(target)}
        log(f"{name}: {n} lines, sha256 {manifest[name]['sha256'][:16]}...")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def _diff_fields(a, b, path="") -> list[str]:
    """The paths at which two decoded JSON values differ (values compared exactly, floats included)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}".lstrip("."))
            else:
                out.extend(_diff_fields(a[k], b[k], f"{path}.{k}"))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}[len {len(a)} != {len(b)}]".lstrip(".")]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(_diff_fields(x, y, f"{path}[{i}]"))
        return out
    return [] if (type(a) is type(b) and a == b) else [path.lstrip(".") or "<value>"]


def _drop(value, path: str):
    """``value`` (decoded JSON) without the dotted field ``path`` (``model.sha256``), when it has it."""
    head, _, rest = path.partition(".")
    if not isinstance(value, dict) or head not in value:
        return value
    out = dict(value)
    if rest:
        out[head] = _drop(value[head], rest)
    else:
        del out[head]
    return out


def compare_files(a, b, *, show: int = 10, ignore=()) -> dict:
    """Line-by-line comparison of two ``evqual score`` outputs: lines that differ and the fields in them.

    ``ignore`` lists dotted fields left out of the comparison (``model.sha256``
    when only the model file's bytes changed); every other field is compared
    exactly.
    """
    with open(a, encoding="utf-8") as fa, open(b, encoding="utf-8") as fb:
        la, lb = fa.read().splitlines(), fb.read().splitlines()
    differing, first = 0, []
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else None
        y = lb[i] if i < len(lb) else None
        if x == y:
            continue
        if ignore and x is not None and y is not None:
            dx, dy = json.loads(x), json.loads(y)
            for path in ignore:
                dx, dy = _drop(dx, path), _drop(dy, path)
            if not _diff_fields(dx, dy):
                continue
        differing += 1
        if len(first) < show:
            if x is None or y is None:
                fields = ["<missing line>"]
            else:
                dx, dy = json.loads(x), json.loads(y)
                for path in ignore:
                    dx, dy = _drop(dx, path), _drop(dy, path)
                fields = _diff_fields(dx, dy)
            first.append({"line": i + 1, "fields": fields[:12]})
    return {"lines": [len(la), len(lb)], "differing": differing, "first": first}


def compare(a, b, *, log=print, ignore=()) -> bool:
    same = True
    names = sorted(p.name for p in Path(a).glob("*.jsonl") if not p.name.endswith(".input.jsonl"))
    if not names:
        raise FileNotFoundError(f"{a}: no dump there (expected ragtruth.jsonl ...)")
    for name in names:
        other = Path(b) / name
        if not other.is_file():
            log(f"{name}: missing in {b}")
            same = False
            continue
        res = compare_files(Path(a) / name, other, ignore=ignore)
        if res["differing"] == 0 and res["lines"][0] == res["lines"][1]:
            log(f"{name}: identical ({res['lines'][0]} lines)"
                + (f", leaving out {', '.join(ignore)}" if ignore else ""))
            continue
        same = False
        log(f"{name}: {res['differing']} of {max(res['lines'])} lines differ")
        for d in res["first"]:
            log(f"  line {d['line']}: {', '.join(d['fields'])}")
    return same


def pin(*, log=print) -> None:
    score_file(PINNED_INPUT, PINNED_EXPECTED)
    with open(PINNED_EXPECTED, "rb") as fh:
        n = sum(1 for _ in fh)
    log(f"wrote {PINNED_EXPECTED.relative_to(ROOT)} ({n} lines)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="score RAGTruth and both suites with evqual score")
    d.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "ragtruth"))
    d.add_argument("--out", required=True, help="folder for the dump")
    d.add_argument("--jobs", type=int, default=1, help="evqual score --jobs (the output is the same for every N)")
    c = sub.add_parser("compare", help="compare two dumps; exit 1 when they differ")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--ignore", action="append", default=[], metavar="FIELD",
                   help="a dotted field left out of the comparison, such as model.sha256 when only the model "
                        "file's bytes changed (repeatable)")
    sub.add_parser("pin", help="rewrite tests/data/identical/expected.jsonl from input.jsonl")
    args = ap.parse_args(argv)
    try:
        if args.command == "dump":
            if args.jobs < 0:
                ap.error("--jobs must be >= 0")
            dump(args.data, args.out, jobs=args.jobs)
            return 0
        if args.command == "compare":
            return 0 if compare(args.before, args.after, ignore=tuple(args.ignore)) else 1
        pin()
        return 0
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"identical_results: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
