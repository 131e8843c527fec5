"""Rebuild the embedded sample ``evqual/data/sample`` from a RAGTruth copy.

Picks, per task, the first sources (in file order) of the test split that
have responses from all six generators and a mix of labels, and copies those
source rows and all their responses verbatim (original schema).

    python scripts/make_sample.py --data ../shared/data/ragtruth --per-task 4
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/ragtruth", help="RAGTruth folder")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "evqual" / "data" / "sample"))
    ap.add_argument("--per-task", type=int, default=4, help="sources per task (default 4)")
    args = ap.parse_args(argv)
    data, out = Path(args.data), Path(args.out)
    src_lines = (data / "source_info.jsonl").read_text(encoding="utf-8").splitlines()
    resp_lines = (data / "response.jsonl").read_text(encoding="utf-8").splitlines()
    by_source = defaultdict(list)
    for line in resp_lines:
        r = json.loads(line)
        if r["split"] == "test":
            by_source[r["source_id"]].append((line, r))
    chosen, per_task = [], defaultdict(int)
    for line in src_lines:
        s = json.loads(line)
        rs = by_source.get(s["source_id"], [])
        labels = {bool(r["labels"]) for _, r in rs}
        if len(rs) == 6 and labels == {True, False} and per_task[s["task_type"]] < args.per_task:
            per_task[s["task_type"]] += 1
            chosen.append((line, rs))
    out.mkdir(parents=True, exist_ok=True)
    (out / "source_info.jsonl").write_text("".join(line + "\n" for line, _ in chosen), encoding="utf-8")
    (out / "response.jsonl").write_text("".join(l + "\n" for _, rs in chosen for l, _ in rs), encoding="utf-8")
    (out / "LICENSE").write_text((data / "LICENSE").read_text(encoding="utf-8"), encoding="utf-8")
    print(f"{len(chosen)} sources, {sum(len(rs) for _, rs in chosen)} responses -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
