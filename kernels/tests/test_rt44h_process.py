"""The families red team rt44h's escapes belong to, each closed by a design that covers the family.

A. Process-wide state outside the readings watched before: torch._C's zero-argument readings (TorchScript's fuser
flags among them), the values of every loaded torch config module (torch._dynamo.config, ...), the identity of torch's
public functions (SDPA patched with the impl), and what the target module's own import changes (judged through the
loader the CLI and the pytest plugin use). B. Concurrent callers whose arguments differ, and concurrent training
threads, each judged against its own float64 golden values. Each check rejects a bug of its family, puts the process
back, and passes the correct references and SDPA's math backend."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from kernels import mutants
from kernels.harness import cli, edges, peers, verify_attention
from kernels.harness.references import blocked_attention, full_attention
from kernels.harness.subject import ratio

GLOBAL = "global-state-unchanged"
CORRECT = {"sdpa_math": peers.sdpa_math, "full_attention": full_attention, "blocked_attention": blocked_attention}


ROOT = Path(__file__).resolve().parents[2]


def _python(code: str) -> str:
    """``code`` run in a fresh interpreter (this worktree on sys.path): its stdout's last line."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


# ------------------------------------------------------------------ A. the readings a sweep finds

def test_torch_c_readings_are_found_by_name_and_have_setters():
    found = edges._c_getters()
    for name in ("_jit_texpr_fuser_enabled", "_jit_can_fuse_on_cpu", "_jit_can_fuse_on_gpu", "_get_graph_executor_optimize",
                 "_jit_get_num_profiled_runs", "_get_blas_preferred_backend"):
        assert name in found, name
        assert edges._c_setter(name) is not None, name
    # setters and actions are never called; a switch already read under its public name is not read twice
    assert not any(part in edges._C_MUTATOR for name in found for part in name.strip("_").split("_"))
    assert not set(found) & edges._C_MIRRORS
    readings = edges._c_readings()
    assert readings == edges._c_readings()  # side-effect free: the same answer twice
    assert "torch._C._jit_set_profiling_mode" in readings  # (read through its setter, which returns the old value)


@pytest.mark.parametrize("change, named", [
    (lambda: torch._C._jit_set_texpr_fuser_enabled(not torch._C._jit_texpr_fuser_enabled()),
     "torch._C._jit_texpr_fuser_enabled()"),
    (lambda: torch._C._jit_override_can_fuse_on_cpu(not torch._C._jit_can_fuse_on_cpu()),
     "torch._C._jit_can_fuse_on_cpu()"),
    (lambda: torch._C._jit_set_profiling_mode(not torch._C._jit_set_profiling_mode(True)),
     "torch._C._jit_set_profiling_mode"),
    (lambda: setattr(torch.nn.functional, "scaled_dot_product_attention", full_attention),
     "torch.nn.functional.scaled_dot_product_attention"),
    (lambda: setattr(torch.Tensor, "softmax", lambda self, dim: self), "torch.Tensor.softmax"),
    (lambda: setattr(torch, "bmm", torch.matmul), "torch.bmm"),
])
def test_process_watched_names_and_puts_back_what_the_sweeps_find(change, named):
    before = edges._global_state()
    with edges.process_watched() as changed:
        change()
    assert changed == [named]
    assert not edges._changes(before, edges._global_state())


def test_config_values_are_watched_and_put_back():
    import torch._dynamo  # noqa: F401  (loaded before: a value set in the block is compared with the value before)

    config = torch._dynamo.config
    was = config.recompile_limit
    with edges.process_watched() as changed:
        config.cache_size_limit = was + 7  # (an alias of recompile_limit: named by the key it sets)
        config.suppress_errors = not config.suppress_errors
    assert changed == ["torch._dynamo.config.recompile_limit", "torch._dynamo.config.suppress_errors"]
    assert config.recompile_limit == was and not config.suppress_errors


def test_lazy_imports_and_compiling_change_nothing_and_a_config_set_after_its_import_is_named():
    """In a fresh interpreter (here torch._dynamo may be loaded already): importing torch._dynamo (which wraps
    torch.manual_seed in its own source), torch._inductor, torch._functorch and the harness's own lazy imports,
    and compiling a function, change nothing; a config module imported and then set in one block is named."""
    out = _python("""
        import torch
        from kernels.harness import edges
        with edges.process_watched() as quiet:
            import torch._dynamo, torch._inductor.config, torch._functorch.config, scipy.stats, sympy
            import torch.nn.attention.flex_attention, torch.fx.experimental.symbolic_shapes
            torch.compile(lambda x: x.cos() * 2, backend="eager")(torch.ones(3))
        with edges.process_watched() as inductor:
            torch.compile(lambda x: x.sin() * 2)(torch.ones(3))  # (loads torch._inductor.config_comms)
        print(quiet, inductor)
    """)
    # (inductor's first compile raises sys's recursion limit, a reading watched before rt44h; none of the new ones)
    assert out in ("[] []", "[] ['recursion limit']"), out
    out = _python("""
        import torch
        from kernels.harness import edges
        with edges.process_watched() as changed:
            import torch._dynamo
            torch._dynamo.config.suppress_errors = True
        print(changed, torch._dynamo.config.suppress_errors)
    """)
    assert out == "['torch._dynamo.config.suppress_errors'] False", out


@pytest.mark.parametrize("mutant, named", [
    (mutants.jit_fusion_flags_on_first_call, "torch._C._jit_texpr_fuser_enabled()"),
    (mutants.dynamo_config_on_first_call, "torch._dynamo.config.suppress_errors"),
    (mutants.sdpa_monkeypatched_on_first_call, "torch.nn.functional.scaled_dot_product_attention"),
])
def test_first_call_settings_are_named_in_every_dtype_and_put_back(mutant, named):
    before = edges._global_state()
    report = verify_attention(mutant, invariants=[GLOBAL])
    assert report.judged and {c.dtype for c in report.failures} == {"float32", "float16", "bfloat16"}, report
    assert all(named in c.detail for c in report.failures), report
    assert not edges._changes(before, edges._global_state(), edges._PER_CALL_SKIPPED + edges._RNG_STATES)


def test_a_module_whose_import_changes_the_process_fails_through_the_cli_and_the_loader(capsys):
    name = "kernels.mutants_import_time"
    precision, tf32 = torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32
    try:
        sys.modules.pop(name, None)
        assert cli.main([f"{name}:attention", "--invariant", GLOBAL]) == 1
        said = capsys.readouterr().out
        for reading in ("matmul precision", "torch.backends.cuda.matmul.allow_tf32"):
            assert f"{reading} (set by importing {name})" in said, said
        assert (torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32) == (precision, tf32)
        sys.modules.pop(name, None)  # the Python equivalent: the loader, then verify_attention
        impl = cli.load_target(f"{name}:attention")
        report = verify_attention(impl, invariants=[GLOBAL], dtypes=["float32"])
        assert report.failures and "set by importing" in report.failures[0].detail

        def calls(q, k, v, **kw):  # the same function's calls alone (its import judged above): they change nothing
            return impl(q, k, v, **kw)

        assert verify_attention(calls, invariants=[GLOBAL], dtypes=["float32"]).passed
    finally:
        sys.modules.pop(name, None)
        torch.set_float32_matmul_precision(precision)
        torch.backends.cuda.matmul.allow_tf32 = tf32
    assert (torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32) == (precision, tf32)


def test_the_loader_judges_nothing_in_a_module_that_changes_nothing():
    for target in ("kernels.harness.references:full_attention", "torch.nn.functional:scaled_dot_product_attention"):
        impl = cli.load_target(target)
        assert not [entry for entry in edges._IMPORTED if entry[0] is impl]


# ------------------------------------------------------------------ B. concurrent callers with arguments of their own

def test_the_mixed_threads_differ_in_every_argument():
    from kernels.harness.cases import CONTRACT_CASES
    from kernels.harness.subject import Subject

    s = Subject(full_attention, CONTRACT_CASES[0], torch.float32, "cpu", 0)
    calls = [edges._mixed_inputs(s, i) for i in range(len(edges.MIXED_ARGUMENTS))]
    assert len({kw["is_causal"] for *_, kw in calls}) == 2 and len({kw["scale"] for *_, kw in calls}) == 4
    masks = [kw.get("attn_mask") for *_, kw in calls]
    assert {None if m is None else m.dtype for m in masks} == {None, torch.float32, torch.bool}
    assert len({q.shape for q, *_ in calls}) == 2


@pytest.mark.parametrize("mutant, invariant", [(mutants.race_kwargs_global, "concurrent-calls-mixed"),
                                               (mutants.race_grad_workspace, "concurrent-training")])
def test_races_between_callers_with_their_own_arguments_are_caught_and_escape_the_old_check(mutant, invariant):
    for seed in (0, 1):
        report = verify_attention(mutant, invariants=[invariant], dtypes=["float32"], seed=seed, first_failure=True)
        assert report.judged and not report.passed, report
    # the same-arguments, no-grad threads of concurrent-calls do not see either race
    assert verify_attention(mutant, invariants=["concurrent-calls"], dtypes=["float32"]).passed


# ------------------------------------------------------------------ no false alarms

NEW = (GLOBAL, "concurrent-calls-mixed", "concurrent-training")


@pytest.mark.parametrize("design", list(CORRECT))
def test_correct_designs_pass_the_new_checks(design):
    """global-state-unchanged in float32, float16, bfloat16; the concurrent checks in float32 (they judge float32
    only: a race is in the impl's buffers, not its dtype); seeds 0-2."""
    worst = 0.0
    for seed in (0, 1, 2):
        report = verify_attention(CORRECT[design], invariants=list(NEW), seed=seed)
        assert report.judged and report.passed, "\n".join(report.failure_lines())
        assert {c.invariant for c in report.checks} == set(NEW)
        worst = max([worst] + [ratio(c) for c in report.checks if c.bound > 0])
    print(f"{design}: closest ratio of discrepancy to bound {worst:.3g}")
    assert worst < 1


def test_the_harness_oracle_is_torch_sdpa_even_while_the_functional_one_is_patched():
    """shape-contract asks sdpa_math which shapes SDPA accepts: a patched F.scaled_dot_product_attention must not
    become the oracle (it did, with sdpa_monkeypatched_on_first_call's patch left by an earlier run)."""
    q = torch.randn(1, 2, 3, 4)
    k = torch.randn(1, 2, 5, 6)  # a head dim other than q's: SDPA refuses it, a patched function need not
    original = torch.nn.functional.scaled_dot_product_attention
    try:
        torch.nn.functional.scaled_dot_product_attention = lambda *a, **kw: torch.zeros(())
        assert edges._sdpa_accepts(q, q, q, False) == (1, 2, 3, 4)
        assert edges._sdpa_accepts(q, k, k, False) is None
    finally:
        torch.nn.functional.scaled_dot_product_attention = original
