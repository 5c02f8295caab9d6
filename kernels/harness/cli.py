"""``attention-proofs verify MODULE:FUNCTION``: judge an attention implementation from the shell.

``proofs/cli.py`` hands its arguments to :func:`main`; the exit status is 0 when every check
passed, 1 when one failed, 2 for bad input (which the message names).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys


def build_parser(prog: str = "attention-proofs verify") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Check an SDPA-compatible attention implementation "
                                "against the derived invariants and print invariants × cases.")
    p.add_argument("target", metavar="MODULE:FUNCTION",
                   help="e.g. torch.nn.functional:scaled_dot_product_attention or kernels:flash_attention")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--dtype", action="append", metavar="DTYPE",
                   help="float32, float16 or bfloat16; repeat or comma-separate "
                        "(default: float32, float16, bfloat16 where the device supports them)")
    p.add_argument("--no-backward", action="store_true", help="skip gradient checks")
    p.add_argument("--no-gqa", action="store_true", help="skip grouped-query attention")
    p.add_argument("--no-causal", action="store_true", help="skip causal masking")
    p.add_argument("--thorough", action="store_true", help="more and larger cases (minutes)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--invariant", action="append", metavar="NAME",
                   help="only this invariant; repeat or comma-separate (default: every one)")
    p.add_argument("--case", action="append", metavar="NAME",
                   help="only this case (a name from the table's legend, default or thorough); repeat or "
                        "comma-separate")
    p.add_argument("--first-failure", action="store_true",
                   help="end each dtype's drawn problems at their first failure (a quick verdict while fixing)")
    return p


def listed(values) -> list[str] | None:
    """A repeatable option's values, each possibly comma-separated, as one list (None when not given)."""
    if not values:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def cases_named(names) -> list | None:
    """The cases (default or thorough) with these names, in the order given; ValueError naming any unknown."""
    if names is None:
        return None
    from kernels.harness.cases import THOROUGH_CASES

    by_name = {c.name: c for c in THOROUGH_CASES}
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        raise ValueError(f"case {', '.join(unknown) or names!r} unknown or empty; known: {', '.join(by_name)}")
    return [by_name[n] for n in dict.fromkeys(names)]


def parsed(parser: argparse.ArgumentParser, argv):
    """(the parsed arguments, None), or (None, exit code) for --help or arguments argparse refused
    (it has printed why): a CLI's main returns the code instead of raising SystemExit."""
    try:
        return parser.parse_args(argv), None
    except SystemExit as exc:
        return None, int(exc.code or 0)


def load_target(target: str):
    """The object named by "package.module:attribute" (dots after the colon walk attributes).

    The module is looked for in the current directory too, as ``python -m`` looks (a console script
    such as ``attention-proofs`` or ``pytest`` puts only its own directory on sys.path)."""
    if not isinstance(target, str) or target.count(":") != 1 or not all(target.split(":")):
        raise ValueError(f"target {target!r} must look like MODULE:FUNCTION, "
                         "e.g. torch.nn.functional:scaled_dot_product_attention")
    module_name, attr = target.split(":")
    _current_directory_importable()
    from kernels.harness import edges  # (torch with it: torch's own import is not the target's)

    # The process state around the target's first import: what the import itself changes (TF32 switched on, a
    # fuser flag) is named by global-state-unchanged and put back; a module imported earlier is not judged so.
    with edges.process_watched() as changed:
        try:
            obj, failed = importlib.import_module(module_name), None
        except Exception as exc:  # ImportError, or anything the module raises while importing
            failed = exc
    if failed is not None:
        raise ValueError(f"module {module_name!r} does not import: {type(failed).__name__}: {failed}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{module_name}:{attr}: {getattr(obj, '__name__', obj)!s} has no attribute {part!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{target} is a {type(obj).__name__}, not a callable attention function")
    edges.imported(obj, module_name, changed)
    return obj


def _current_directory_importable() -> None:
    cwd = os.getcwd()
    if not any(os.path.abspath(p or os.curdir) == cwd for p in sys.path):
        sys.path.insert(0, cwd)


def main(argv=None, prog: str = "attention-proofs verify") -> int:
    args, code = parsed(build_parser(prog), argv)
    if args is None:
        return code
    try:
        impl = load_target(args.target)
        from kernels.harness.report import progress_shown
        from kernels.harness.verify import verify_attention

        cases = cases_named(listed(args.case))
        with progress_shown():
            report = verify_attention(impl, device=args.device, dtypes=listed(args.dtype), causal=not args.no_causal,
                                      gqa=not args.no_gqa, backward=not args.no_backward, seed=args.seed,
                                      thorough=args.thorough, cases=cases, invariants=listed(args.invariant),
                                      first_failure=args.first_failure)
    except (ValueError, TypeError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    report.impl = args.target  # the name the user gave, not e.g. torch._C._nn's
    print(report)
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
