"""``python -m kernels.ecosystem [--only NAME ...] [--out DIR] [--seed N]``: the ecosystem survey.

Runs verify_attention on every installed peer (kernels/ecosystem/adapters.py), prints the
invariant × implementation table and writes DIR/survey.md and DIR/survey.json. Exit status 0 when
every installed peer ran (a library failing a check is a finding, not an error), 1 when one crashed
or timed out (an adapter's fault until shown otherwise), 2 for bad usage.
"""
from __future__ import annotations

import argparse
import json
import sys

from kernels.ecosystem.adapters import BY_NAME, peer
from kernels.ecosystem.table import DEFAULT_OUT
from kernels.harness.cli import parsed


def build_parser(prog: str = "attention-proofs survey") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Judge the attention of other libraries by the derived "
                                "invariants and write the invariant × implementation table.")
    p.add_argument("--only", nargs="+", metavar="NAME", help=f"these implementations only: {', '.join(BY_NAME)}")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"where to write survey.md and survey.json "
                   f"(default: {DEFAULT_OUT}/)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--merge", nargs="+", metavar="JSON", help="run nothing: join earlier survey.json files "
                   "(a later file's record of a peer replaces an earlier one's) and write the table")
    # Internal: run one peer in this process and write its record (the survey starts one process per peer).
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--json-to", help=argparse.SUPPRESS)
    return p


def main(argv=None, prog: str = "attention-proofs survey") -> int:
    args, code = parsed(build_parser(prog), argv)
    if args is None:
        return code
    try:
        for name in (args.only or []) + ([args.one] if args.one else []):
            peer(name)
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if args.one:
        from kernels.ecosystem.survey import run_peer

        record = run_peer(peer(args.one), seed=args.seed)
        with open(args.json_to, "w") as f:
            json.dump(record, f)
        return 0
    from kernels.ecosystem import table
    from kernels.ecosystem.survey import survey

    if args.merge:
        try:
            doc = table.merge([table.load_or_fail(path) for path in args.merge])
        except ValueError as exc:
            print(f"{prog}: error: {exc}", file=sys.stderr)
            return 2
    else:
        doc = survey(args.only, seed=args.seed, progress=lambda line: print(line, flush=True))
    print()
    print(table.text(doc))
    md, js = table.write(doc, args.out)
    print(f"\nwrote {md} and {js}; {doc['seconds']} s")
    broken = [p["name"] for p in doc["peers"] if p["status"] in ("crashed", "timed out")]
    if broken:
        print(f"{prog}: did not run to the end: {', '.join(broken)}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    from kernels.ecosystem import exit_without_teardown

    exit_without_teardown(main())
