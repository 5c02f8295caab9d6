"""Hand-built certificate pieces for the red-team tests: the checker's JSON format written out directly, as a
forger would, so no Proof-API check stands between the test and the checker."""
import sympy as sp

from proofs import checker
from proofs.checker import write


def eq(a, b):
    return sp.Eq(a, b, evaluate=False)


def cert(statement, premises=(), steps=(), claim="t-forged"):
    return {"format": checker.FORMAT, "version": checker.VERSION, "claim": claim, "title": claim,
            "statement": write(statement), "premises": list(premises), "steps": list(steps)}


def step(sid, rule, conclusion, premises=(), **kw):
    return {"id": sid, "rule": rule, "conclusion": write(conclusion), "premises": list(premises), **kw}


def prem(pid, kind, rel, forall=(), **kw):
    return {"id": pid, "kind": kind, "statement": write(rel), "forall": [write(s) for s in forall], **kw}
