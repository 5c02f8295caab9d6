"""``attention-proofs check FILE...``: re-check proof certificates, as a reviewer would.

A FILE is a report's ``report.json`` (its ``certificates`` key), one certificate, or a list of them.
Each certificate is replayed by :func:`proofs.checker.check`. A certificate whose claim id is in the
catalogue must state the catalogue's statement: a proof of something else under a catalogued id is
refused. Exit status 0 when every certificate is proved, 1 otherwise, 2 when a FILE is unreadable (the other
FILEs are still checked: one file's trouble never stops the rest).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Iterable


def certificates(doc: Any) -> list[dict]:
    """The certificates a JSON document holds."""
    if isinstance(doc, dict) and "certificates" in doc:
        certs = doc["certificates"]
        if not isinstance(certs, (dict, list)):
            raise ValueError(f"'certificates' must be a list or an object of certificates, got {type(certs).__name__}")
        return [c for c in (certs.values() if isinstance(certs, dict) else certs) if c is not None]
    if isinstance(doc, dict):
        return [doc]
    if isinstance(doc, list):
        return list(doc)
    raise ValueError("expected a certificate, a list of them, or a report with a 'certificates' key")


def judge(cert: dict) -> tuple[bool, str]:
    """(proved, one line): the checker's verdict, and the catalogue's statement for a catalogued id."""
    import sympy as sp

    from proofs import checker, claims

    if not isinstance(cert, dict):  # JSON text would be checked without the catalogue comparison below
        return False, f"?: failed: a certificate is a JSON object, got {type(cert).__name__}"
    verdict = checker.check(cert)
    entry = claims.catalogued(str(cert.get("claim", "")))
    # Both statements as the reader builds them (srepr's round trip), bound indices renamed canonically: SymPy
    # makes fresh Dummies for the indices of a matrix product's entry each time a statement is built.
    def canonical(statement):
        parts = checker.conjuncts(checker.read(checker.write(statement)))
        return sp.And(*[type(c)(*map(checker._canonical, c.args), evaluate=False) for c in parts], evaluate=False)

    if verdict.proved and entry is not None and \
            not checker._same_all(canonical(verdict.statement), canonical(entry.statement)):
        return False, f"{verdict.claim}: failed: the certificate states something other than the catalogue's claim"
    if verdict.proved:  # a cited certificate under a catalogued id reads as that claim: it must state it too
        for inner in _cited(cert):
            known = claims.catalogued(str(inner.get("claim", "")))
            if known is not None and not checker._same_all(canonical(checker.read(inner["statement"])),
                                                           canonical(known.statement)):
                return False, (f"{verdict.claim}: failed: it cites a certificate under the catalogued id "
                               f"{known.id}, which states something other than the catalogue's claim")
    # An id outside the catalogue (softmax-normalisation.v2) proves its own statement, not a catalogued claim.
    return verdict.proved, f"{verdict.claim}{'' if entry else ' (not a catalogued claim)'}: {verdict.line}"


def _cited(cert: dict) -> Iterable[dict]:
    """Every certificate ``cert`` cites, at any depth (the checker has replayed them all before this is asked)."""
    for step in cert.get("steps", []):
        inner = step.get("certificate") if isinstance(step, dict) else None
        if isinstance(inner, dict):
            yield inner
            yield from _cited(inner)


def _judge_one(job: tuple[str, Any]) -> tuple[bool, str]:
    path, cert = job
    try:
        return judge(cert)
    except Exception as exc:  # the catalogue comparison on a statement Python cannot write, say
        return False, f"{path}: failed: {type(exc).__name__}: {str(exc)[:300]}"


def _judge_all(jobs: list[tuple[str, Any]]) -> Iterable[tuple[bool, str]]:
    """Each certificate's verdict, in order. Certificates are independent, so several are replayed at once, one
    per core, in processes forked after the checker and the catalogue are imported (a report's 41 took 12 CPU-s
    in one process). Each verdict is still the checker's alone: a process only runs :func:`judge`."""
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers < 2:
        return map(_judge_one, jobs)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from proofs import checker, claims  # noqa: F401  imported once, before forking

    # Largest first (a certificate's JSON size is a fair proxy of its replay's cost): the last to start are small,
    # so both processes finish at about the same time. Verdicts are printed in the files' order.
    order = sorted(range(len(jobs)), key=lambda i: -len(json.dumps(jobs[i][1], default=str)))
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        done = dict(zip(order, pool.map(_judge_one, [jobs[i] for i in order])))
    return [done[i] for i in range(len(jobs))]


def main(paths: Iterable[str]) -> int:
    paths = list(paths)
    if not paths:
        print("check: give one or more FILEs (a report.json or certificate files)", file=sys.stderr)
        return 2
    total = bad = unreadable = 0
    jobs: list[tuple[str, Any]] = []
    for path in paths:  # one file's trouble never stops the others: each is reported, the exit status says it
        try:
            jobs += [(path, cert) for cert in certificates(json.loads(Path(path).read_text(encoding="utf-8")))]
        except (OSError, ValueError, RecursionError) as exc:
            print(f"check: {path}: {exc}", file=sys.stderr)
            unreadable += 1
    for ok, line in _judge_all(jobs):
        total += 1
        bad += not ok
        print(("ok    " if ok else "FAIL  ") + line)
    print(f"{total - bad} of {total} certificates proved" + (f"; {unreadable} file(s) unreadable" if unreadable else ""))
    return 2 if unreadable else 0 if bad == 0 and total else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
