"""attention-proofs: derive, confirm and check the mathematics of attention.

  attention-proofs report [--out DIR] [--format html,md,json] [--quick | --full] [--seed N] [--only ID ...]
  attention-proofs derive [CLAIM_ID ...]
  attention-proofs --version
  attention-proofs verify MODULE:FUNCTION [--device cuda] [--dtype ...] [--no-backward] [--no-gqa] [--thorough]
  attention-proofs survey [--only NAME ...] [--out DIR] [--seed N]
  attention-proofs check FILE ...

(also ``python -m proofs ...``). Exit status: 0 when every claim holds, 1 when any fails
(the failing claims are listed last), 2 for bad usage.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import time


def choose_where_kernels_run() -> None:
    """The kernel layer's policy (compiled on a GPU, else Triton's interpreter), applied before triton is
    imported; without the kernel layer there is nothing to choose."""
    try:
        from kernels.interpreter import use_triton_interpreter_without_gpu
    except ImportError:
        return
    use_triton_interpreter_without_gpu()


def _formats(text: str) -> tuple[str, ...]:
    from proofs.report import FORMATS

    return _choices(text, FORMATS, "format")


def _layers(text: str) -> tuple[str, ...]:
    from proofs.report.model import LAYERS

    return _choices(text, LAYERS, "layer")


def _choices(text: str, allowed, what: str) -> tuple[str, ...]:
    """A comma-separated list of names from ``allowed``: an empty item (``html,,md``) is refused, not dropped."""
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise argparse.ArgumentTypeError(f"empty {what} in {text!r}; give a comma-separated list from "
                                         f"{','.join(allowed)}")
    bad = [x for x in items if x not in allowed]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(bad)}; choose from {','.join(allowed)}")
    return tuple(dict.fromkeys(items))


@contextlib.contextmanager
def _progress():
    """A live line on a terminal for the long steps; nothing when stdout is not a terminal."""
    if not sys.stdout.isatty():
        yield lambda _: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("starting", total=None)
        yield lambda message: bar.update(task, description=message)


def _table(report) -> str:
    from proofs.report import fmt
    from proofs.report.model import LAYERS

    width = max([len(c.id) for c in report.claims] + [5])
    words = [[fmt.evidence_word(x, c.layer(x)).split(" (")[0] for x in LAYERS] for c in report.claims]
    column = max([len(w) for row in words for w in row] + [len(x) for x in LAYERS]) + 2
    head = f"{'claim':<{width}}  " + "".join(f"{x:<{column}}" for x in LAYERS) + "verdict"
    rows = [f"{c.id:<{width}}  " + "".join(f"{w:<{column}}" for w in row) + fmt.overall(c.verdict)
            for c, row in zip(report.claims, words)]
    return "\n".join([head, *rows])


def _cmd_report(args) -> int:
    from proofs.report import FILE_NAMES, Options, check_target, gather, render_files, write_report

    options = Options(mode=args.mode, seed=args.seed, only=tuple(args.only) if args.only else None,
                      layers=args.layers, survey=_survey_dir(args))
    check_target(args.out, force=args.force, only=options.only)  # refuse before the long run, not after it
    start = time.perf_counter()
    with _progress() as progress:
        report = gather(options, progress)
        progress("rendering")
        files = render_files(report, args.format)
        progress("writing")
        out = write_report(args.out, files, force=args.force, only=options.only)
    seconds = time.perf_counter() - start
    print(_table(report))
    written = ", ".join(f"{out / name} ({len(files[name].encode()) / 1024:.0f} KiB)"
                        for name in FILE_NAMES.values() if name in files)
    figures = sum(1 for name in files if name.startswith("figures/"))
    print(f"\nwrote {written}" + (f" and {figures} figures in {out / 'figures'}" if figures else "")
          + f" in {seconds:.1f} s (--{options.mode}, seed {options.seed})")
    summary = report.summary()
    print(f"{summary['passed']} of {summary['claims']} claims hold, {summary['failed']} fail"
          + (f", {summary['not_checked']} not checked" if summary["not_checked"] else ""))
    for cid in summary["failing"]:  # last, where a terminal leaves them in sight
        print(f"FAILED: {cid}")
    return 1 if summary["failing"] else 0


def _cmd_derive(args) -> int:
    from proofs import CLAIMS, claim, derive

    ids = list(dict.fromkeys([*args.claim_ids, *(args.only or [])])) or [c.id for c in CLAIMS]
    for cid in ids:
        claim(cid)  # every id checked before the first derivation prints: a clear error naming it
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


def _delegate(module: str, what: str, extras: str, argv: list[str], **kwargs) -> int:
    """Run ``module.main(argv)`` from the kernel layer (imported only now: proofs stays below it),
    or say which extra to install when that layer is missing."""
    try:
        main = importlib.import_module(module).main
    except ImportError as exc:
        print(f"attention-proofs: error: {what} is not available ({exc}); install {extras}", file=sys.stderr)
        return 2
    return main(argv, **kwargs)


def _cmd_verify(argv: list[str]) -> int:
    return _delegate("kernels.harness.cli", "the kernel layer's harness", "the 'kernels' extra", argv)


def _cmd_survey(argv: list[str]) -> int:
    return _delegate("kernels.ecosystem.__main__", "the ecosystem survey",
                     "the 'kernels' extra (and 'peers' for the libraries it surveys)", argv,
                     prog="attention-proofs survey")


def _cmd_check(argv: list[str]) -> int:
    """Check proof certificates (the JSON a report's "certificates" holds) with the independent checker."""
    try:
        from proofs.check_cli import main as check_main
    except ImportError as exc:
        print(f"attention-proofs: error: the certificate checker (proofs.check_cli) is not available in this "
              f"version: {exc}", file=sys.stderr)
        return 2
    return check_main(argv)


def _survey_dir(args) -> str | None:
    """--survey DIR, or the survey's default output directory when a survey has been written there;
    with --only, --survey DIR alone: the survey is no claim's work, and finding its default directory
    imports the kernel layer (torch: ≈ 3.6 CPU-s, a quarter of a one-claim report)."""
    if args.no_survey:
        return None
    if args.survey is not None:
        return args.survey
    if args.only:
        return None
    try:
        from kernels.ecosystem.table import DEFAULT_OUT, FILE_NAME
    except ImportError:  # no kernel layer: no survey either
        return None
    return DEFAULT_OUT if os.path.exists(os.path.join(DEFAULT_OUT, FILE_NAME)) else None


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("attention-proofs")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


def _claim_list() -> str:
    from proofs import CLAIMS

    width = max(len(c.id) for c in CLAIMS)
    return "claims:\n" + "\n".join(f"  {c.id:<{width}}  {c.title}" for c in CLAIMS)


def build_parser() -> argparse.ArgumentParser:
    claims = _claim_list()
    p = argparse.ArgumentParser(prog="attention-proofs", description=__doc__, epilog=claims,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"attention-proofs {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    rep = sub.add_parser("report", help="derive, confirm and check every claim; write HTML, Markdown and JSON")
    rep.add_argument("--out", default="report", metavar="DIR", help="output directory (default: report/)")
    rep.add_argument("--format", type=_formats, default=("html", "md", "json"), metavar="html,md,json",
                     help="formats to write (default: all three)")
    mode = rep.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick",
                      help="small samples and a small float32 kernel check: about 100 s on 2 CPU cores (default)")
    mode.add_argument("--full", dest="mode", action="store_const", const="full",
                      help="the layers' large sample sizes and the thorough kernel checks")
    rep.set_defaults(mode="quick")
    rep.add_argument("--seed", type=int, default=0, help="random seed for the Monte Carlo and kernel layers")
    rep.add_argument("--only", nargs="+", metavar="CLAIM_ID", help="report these claims only")
    rep.add_argument("--layers", type=_layers, default=("proofs", "numeric", "kernels"),
                     metavar="proofs,numeric,kernels", help="run only these layers (the others say 'not checked')")
    rep.add_argument("--force", action="store_true",
                     help="write into a non-empty directory that holds no earlier report, or replace a report of "
                          "every claim with an --only one")
    surveyed = rep.add_mutually_exclusive_group()
    surveyed.add_argument("--survey", metavar="DIR", help="include the ecosystem survey written in DIR (by `attention-"
                          "proofs survey --out DIR`) as a section (default: survey/ when it holds one, except with --only)")
    surveyed.add_argument("--no-survey", action="store_true", help="leave the survey section out")
    rep.set_defaults(func=_cmd_report)

    der = sub.add_parser("derive", help="print the named derivations (default: every claim) as text",
                         epilog=claims, formatter_class=argparse.RawDescriptionHelpFormatter)
    der.add_argument("claim_ids", nargs="*", metavar="CLAIM_ID", help="the claims to derive (default: all)")
    der.add_argument("--only", nargs="+", metavar="CLAIM_ID", help="the same as naming them (kept for old scripts)")
    der.set_defaults(func=_cmd_derive)

    ver = sub.add_parser("verify", add_help=False,
                         help="check an SDPA-compatible implementation against the derived invariants "
                              "(MODULE:FUNCTION; see `verify --help`)")
    ver.add_argument("args", nargs=argparse.REMAINDER)
    sur = sub.add_parser("survey", add_help=False,
                         help="run the invariants on other libraries' attention (the 'peers' extra) and write the "
                              "implementation × invariant table (see `survey --help`)")
    sur.add_argument("args", nargs=argparse.REMAINDER)
    chk = sub.add_parser("check", help="check proof certificates with the independent checker (FILE ...)")
    chk.add_argument("paths", nargs="+", metavar="FILE", help="certificate files (JSON)")
    chk.set_defaults(func=lambda args: _cmd_check(args.paths))
    return p


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    choose_where_kernels_run()
    if argv[:1] == ["verify"]:
        return _cmd_verify(argv[1:])  # the harness owns its arguments, --help included
    if argv[:1] == ["survey"]:
        return _cmd_survey(argv[1:])  # kernels.ecosystem owns its arguments, --help included
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"attention-proofs: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `attention-proofs check F | head`: the reader left; no traceback, and none at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
