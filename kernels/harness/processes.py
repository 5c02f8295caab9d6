"""The impl in fresh processes (invariant fresh-process): what no check inside one process can see.

Every other check runs in the harness's process, or in a child forked from it that shares its hash seed and its CPU
dispatch. Two things differ between the processes of one program, and SDPA's answer depends on neither (contract
items "reproducibility" and "machine"):

* str hashing, randomised per process (PYTHONHASHSEED): torch.manual_seed reproduces SDPA's dropout in any process
  (measured: the same keep mask in a child as in the parent). A kernel mixing hash() of a name into its dropout seed
  passes every in-process law and the same-seed check (red team rt50).
* the CPU capability torch dispatches to (ATEN_CPU_CAPABILITY, read at torch's import: default, avx2, avx512): a
  machine without AVX-512 takes other kernels, torch's and a library's that reads
  torch.backends.cpu.get_cpu_capability(). SDPA math's answer is within its rounding bound under each (red team rt50:
  an AVX2 path dropping the head dim's tail past the last 8 channels, never taken on this AVX-512 machine).

The capability one below this machine's (AVX2 under AVX-512: the commonest server without it; the default one on an
AVX2 machine or elsewhere) runs in one child process with a hash seed other than this process's (one child: its start,
torch's import and the impl's, costs 2-3 s of the default run's 60): the contract case's seeded dropout call with V = I (its keep mask must be the parent's) and its forward calls, full and
causal, at the case's head dim and one channel less (odd: a vector loop's tail), judged against float64 by the
low-precision rule. The impl must be importable (a module-level name of an importable module); otherwise the check is
not applicable and says so.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import torch

from kernels.harness import dropout as drop
from kernels.harness.edges import _contract
from kernels.harness.features import offered
from kernels.harness.invariants import CAUSAL, DROPOUT, Invariant, register
from kernels.harness.rounding_bound import WRAPPED
from kernels.harness.subject import NotApplicable, Outcome, Subject, checked_output, measured, worst

# capabilities by rank on x86 (torch's names, lower case as ATEN_CPU_CAPABILITY takes them); elsewhere "default" alone
CAPABILITIES = ("default", "avx2", "avx512")
CHILD_SECONDS = 300

# The child: imports torch and the impl's module alone (not the harness), makes the calls, saves what they return.
_CHILD = r"""
import importlib, sys, torch
spec = torch.load(sys.argv[1])
torch.set_num_threads(1)
impl = getattr(importlib.import_module(spec["module"]), spec["name"])
out = {"capability": torch.backends.cpu.get_cpu_capability()}
for name, (q, k, v, kw, seed) in spec["calls"].items():
    q, k, v = (x.to(spec["device"]) for x in (q, k, v))
    try:
        with torch.no_grad():
            if seed is not None:
                torch.manual_seed(seed)
            out[name] = impl(q, k, v, **kw).detach().cpu()
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {exc}"[:300]
torch.save(out, sys.argv[2])
"""


def importable(impl) -> tuple[str, str]:
    """(module, name) by which a fresh process imports impl, or NotApplicable saying why not."""
    impl = getattr(impl, WRAPPED, impl)
    module = getattr(impl, "__module__", None)
    held = [n for n, value in vars(sys.modules[module]).items() if value is impl] if module in sys.modules else []
    if module in (None, "__main__") or not held:
        raise NotApplicable(f"the impl is not a module-level name of an importable module ({module or 'no module'}."
                            f"{getattr(impl, '__qualname__', '?')}): a fresh process cannot import it")
    return module, held[0]


def capability() -> str:
    """The CPU capability one below this machine's (on x86), or the default one."""
    here = torch.backends.cpu.get_cpu_capability().lower()
    return CAPABILITIES[max(0, CAPABILITIES.index(here) - 1)] if here in CAPABILITIES else "default"


def hash_seed() -> str:
    """A PYTHONHASHSEED other than this process's (unset here: a random one, other than 1 but by a 2⁻⁶⁴ chance)."""
    return "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"


def _calls(s: Subject) -> dict:
    """name -> (q, k, v, keyword arguments, manual_seed or None): the calls each child makes, on CPU tensors."""
    kw = s.kwargs()
    narrow = [x[..., :-1].contiguous() for x in (s.q, s.k)]  # (B, H, N, D - 1)
    calls = {"dropout": (s.q, s.k, drop.one_hot_values(s), {**kw, "dropout_p": drop.P_DROP}, s.seed * 1000),
             "full": (s.q, s.k, s.v, kw, None),
             "one channel less": (*narrow, s.v, kw, None)}
    if s.case.n_q > 1:
        calls["causal"] = (s.q, s.k, s.v, s.kwargs(is_causal=True), None)
    features = offered(s.impl)
    if DROPOUT not in features:
        calls.pop("dropout")
    if CAUSAL not in features:
        calls.pop("causal", None)
    return {n: (*(x.detach().cpu() for x in c[:3]), *c[3:]) for n, c in calls.items()}


def _child(module: str, name: str, calls: dict, device: str, env: dict):
    """The child's answers (or the text of its failure)."""
    with tempfile.TemporaryDirectory(prefix="attention-proofs-") as tmp:
        given, answer = os.path.join(tmp, "calls.pt"), os.path.join(tmp, "answers.pt")
        torch.save({"module": module, "name": name, "calls": calls, "device": device}, given)
        path = os.pathsep.join([os.getcwd()] + [p for p in sys.path if p and os.path.isdir(p)])
        try:
            done = subprocess.run([sys.executable, "-c", _CHILD, given, answer], env={
                **os.environ, **env, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, timeout=CHILD_SECONDS)
        except subprocess.TimeoutExpired:
            return f"no answer in {CHILD_SECONDS} s"
        if done.returncode != 0 or not os.path.exists(answer):
            return f"the process ended with {done.returncode}: {done.stderr.decode(errors='replace').strip()[-300:]}"
        return torch.load(answer)


def fresh_process(s: Subject) -> Outcome:
    module, name = importable(s.impl)
    calls = _calls(s)
    env = {"PYTHONHASHSEED": hash_seed(), "ATEN_CPU_CAPABILITY": capability()}
    where = f"a fresh process (PYTHONHASHSEED={env['PYTHONHASHSEED']}, CPU capability {env['ATEN_CPU_CAPABILITY']})"
    got = _child(module, name, calls, s.device, env)
    if isinstance(got, str):
        return Outcome(float("inf"), 0.0, f"{where}: {got}")
    outcomes, details = [], []
    for call, (q, k, v, kw, _) in calls.items():
        out = got[call]
        if isinstance(out, str):
            outcomes.append(Outcome(float("inf"), 0.0, f"{call}: raised {out} (not in this process)"))
        elif call == "dropout":
            with drop.seeded(s, 0), torch.no_grad():  # (this process's call, seeded as the child's: s.seed · 1000)
                here = checked_output(s.impl(s.q, s.k, v.to(s.device), **kw), s.q, v).cpu()
            counted = drop._probabilities(s) > drop.P_FLOOR
            outcomes.append(drop.same_keep_mask(out, here, counted, "the same manual_seed's keep mask"))
        else:
            checked_output(out, q, v)
            g = s.reference(q=q.to(s.device), k=k.to(s.device), v=v.to(s.device), **kw)
            o = measured(s, out, g.value, g.error, g.value, g.sensitivity, g.lse_size)
            outcomes.append(Outcome(o.discrepancy, o.bound, f"{call}: {o.figures}"))
    o = worst(outcomes, [x.detail for x in outcomes])
    return Outcome(o.discrepancy, o.bound, f"{where}: {o.detail}")


register(Invariant("fresh-process", None, fresh_process, _contract, dtypes=frozenset({torch.float32}),
                   bug_classes="dropout not reproduced by torch.manual_seed in another process (a seed mixed with "
                               "hash() of a str, randomised per process); a path of another CPU capability (AVX2, "
                               "none: ATEN_CPU_CAPABILITY) wrong (a vector loop dropping the head dim's tail)"))
