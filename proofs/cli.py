"""Command line: ``attention-proofs report`` (also ``python -m proofs report``)."""
from __future__ import annotations

import argparse
import sys


def _cmd_derive(args) -> int:
    from proofs import CLAIMS, derive

    ids = args.only or [c.id for c in CLAIMS]
    failed = []
    for cid in ids:
        d = derive(cid)
        print(d.to_text(), end="\n\n")
        if not d.verified:
            failed.append(cid)
    print(f"{len(ids) - len(failed)} of {len(ids)} claims proved")
    for cid in failed:
        print(f"FAILED: {cid}")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="attention-proofs", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="derive every claim and print its verdict")
    rep.add_argument("--only", nargs="+", metavar="CLAIM_ID")
    rep.set_defaults(func=_cmd_derive)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"attention-proofs: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
