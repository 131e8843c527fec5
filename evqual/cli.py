"""The ``evqual`` command line.

Every command is a thin wrapper over a library function; ``main`` returns an
exit status instead of calling ``sys.exit`` so that tests can call it.

Exit status: 0 success, 1 data errors (bad rows: the good rows are still
processed and written, the bad ones are listed on stderr), 2 usage errors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._version import __version__
from .errors import EvqualDataError, MissingDependencyError

EXIT_OK, EXIT_DATA, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evqual",
        description="Evidence-quality features and detectors for RAG hallucination detection.",
    )
    parser.add_argument("--version", action="version", version=f"evqual {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    fz = sub.add_parser(
        "featurize",
        help="write one row of evidence-quality features per response (or per sentence)",
        description=(
            "Featurize a dataset: one row per response (or per output sentence) with ids, split, task, "
            "model, the gold label(s) and every feature. Without --data, the sample embedded in the "
            "package is used. Data errors are listed on stderr; the good rows are still written and "
            "the exit status is 1."
        ),
    )
    fz.add_argument("--data", metavar="DIR_OR_FILE",
                    help="RAGTruth folder, generic .jsonl, or RAGTruth-processed .csv/.parquet "
                         "(default: the embedded sample)")
    fz.add_argument("--out", required=True, metavar="FILE", help="output file, .csv or .parquet")
    fz.add_argument("--level", choices=["response", "sentence"], default="response",
                    help="one row per response (default) or per output sentence")
    fz.add_argument("--entity-backend", choices=["regex", "spacy"], default="regex",
                    help="entity extractor: regex (default) or spacy (needs the 'ner' extra)")
    fz.add_argument("--metadata", action="store_true",
                    help="add the opt-in metadata features (generator, quality, temperature)")
    fz.add_argument("--families", metavar="NAMES",
                    help="comma-separated content families to keep (default: all)")
    fz.add_argument("--split", action="append", metavar="NAME",
                    help="keep only this split (repeatable; RAGTruth layout only)")
    fz.add_argument("--exclude-implicit-true", action="store_true",
                    help="drop spans flagged implicit_true from the targets")
    fz.add_argument("--strict", action="store_true", help="stop at the first bad row (exit 1)")
    fz.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    fz.set_defaults(func=cmd_featurize)

    ft = sub.add_parser("features", help="list every feature with its family, range and definition",
                        description="Print the feature registry.")
    ft.add_argument("--level", choices=["response", "sentence"], default=None)
    ft.set_defaults(func=cmd_features)
    return parser


def _report_issues(result) -> None:
    if result.issues:
        print(result.report(max_shown=10), file=sys.stderr)


def cmd_featurize(args) -> int:
    import warnings

    from .data import load_data, sample_path
    from .features import EvidenceFeaturizer
    from ._progress import Progress

    out = Path(args.out)
    if out.suffix.lower() not in (".csv", ".parquet"):
        print(f"evqual featurize: error: --out must end in .csv or .parquet; got {out.name!r}", file=sys.stderr)
        return EXIT_USAGE
    if args.data is None:
        data_path = sample_path()
        print(f"evqual: no --data given; using the embedded sample {data_path}", file=sys.stderr)
    else:
        data_path = Path(args.data)
    families = [f.strip() for f in args.families.split(",") if f.strip()] if args.families else None
    fz = EvidenceFeaturizer(level=args.level, families=families, include_metadata=args.metadata,
                            entity_backend=args.entity_backend)
    try:
        fz._check_params()
    except ValueError as exc:
        print(f"evqual featurize: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    kwargs = {"splits": args.split} if args.split else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = load_data(data_path, strict=args.strict, **kwargs)
    except EvqualDataError as exc:
        print(f"evqual featurize: data error: {exc}", file=sys.stderr)
        return EXIT_DATA
    except TypeError as exc:
        print(f"evqual featurize: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    _report_issues(result)
    progress = None if args.no_progress else Progress(len(result), label="featurize")
    try:
        fz.fit(result)
        df = fz.frame(result, exclude_implicit_true=args.exclude_implicit_true, progress=progress)
    except MissingDependencyError as exc:
        print(f"evqual featurize: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        if out.suffix.lower() == ".parquet":
            try:
                df.to_parquet(out, index=False)
            except ImportError:
                print('evqual featurize: error: writing parquet needs pyarrow: pip install "evqual[parquet]"',
                      file=sys.stderr)
                return EXIT_USAGE
        else:
            df.to_csv(out, index=False)
    except OSError as exc:
        print(f"evqual featurize: error: cannot write {out}: {exc}", file=sys.stderr)
        return EXIT_DATA
    print(f"evqual: wrote {len(df)} rows x {fz.n_features_out_} features to {out}", file=sys.stderr)
    return EXIT_DATA if result.issues else EXIT_OK


def cmd_features(args) -> int:
    from .features import describe_features

    print(describe_features(args.level))
    return EXIT_OK


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 0 for --help/--version, 2 for usage errors
        return int(exc.code or 0)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
