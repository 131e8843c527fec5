"""The top of a py-spy profile: the functions with the most samples, by self time and by inclusive time.

    py-spy record --rate 200 --format raw -o score.txt -- \\
        taskset -c 0 python scripts/bench.py score --data ../shared/data/ragtruth --limit 500 --json score.json
    python scripts/profile_top.py score.txt --top 12

``--format raw`` writes collapsed stacks, one per line (``frame;frame;... count``), each frame
``function (file:line)``.  Self time counts the innermost frame, inclusive time every distinct function on
the stack.  ``--only evqual`` keeps the inclusive list to evqual's own functions.  Prints markdown.
Exit status 2 when the file cannot be read or holds no samples.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter

_FRAME = re.compile(r"(.+?) \((.+?):\d+\)$")


def _name(frame: str) -> str:
    m = _FRAME.match(frame)
    if not m:
        return frame.strip() or "<unknown>"
    fn, path = m.groups()
    for cut in ("site-packages/", "/evqual/"):
        if cut in path:
            path = ("evqual/" if cut == "/evqual/" else "") + path.split(cut)[-1]
    return f"{fn} ({path})"


def tops(lines):
    """(total samples, self Counter, inclusive Counter) of collapsed-stack lines."""
    self_c, incl = Counter(), Counter()
    total = 0
    for i, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, n = line.rpartition(" ")
        try:
            n = int(n)
        except ValueError:
            raise ValueError(f"line {i}: expected 'frame;frame;... COUNT', got {line[:80]!r}") from None
        names = [_name(f) for f in stack.split(";")]
        total += n
        self_c[names[-1]] += n
        for x in set(names):
            incl[x] += n
    return total, self_c, incl


def markdown(total, self_c, incl, *, top: int = 12, only: str | None = None) -> str:
    rows = ["| self | function | | inclusive | function |", "|---|---|---|---|---|"]
    inc = [(x, v) for x, v in incl.most_common() if only is None or x.split("(")[-1].startswith(only)][:top]
    slf = self_c.most_common(top)
    for k in range(max(len(inc), len(slf))):
        a = f"{slf[k][1] / total:.1%} | `{slf[k][0]}`" if k < len(slf) else " | "
        b = f"{inc[k][1] / total:.1%} | `{inc[k][0]}`" if k < len(inc) else " | "
        rows.append(f"| {a} | | {b} |")
    return f"{total} samples\n\n" + "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile", help="py-spy record --format raw output")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--only", default="evqual", help="prefix of the paths kept in the inclusive list ('' for all)")
    args = ap.parse_args(argv)
    if args.top < 1:
        ap.error("--top must be >= 1")
    try:
        with open(args.profile, encoding="utf-8") as fh:
            total, self_c, incl = tops(fh)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        print(f"profile_top: error: {args.profile}: {exc}", file=sys.stderr)
        return 2
    if total == 0:
        print(f"profile_top: error: {args.profile}: no samples", file=sys.stderr)
        return 2
    print(markdown(total, self_c, incl, top=args.top, only=args.only or None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
