"""Run every method under both protocols and regenerate docs/RESULTS.md (see `evqual reproduce --help`).

    python scripts/reproduce.py --data ../shared/data/ragtruth
"""

import sys

from evqual.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["reproduce", *sys.argv[1:]]))
