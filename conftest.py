"""Test-session set-up shared by every package's tests.

Triton's interpreter must be switched on before anything imports triton, so this runs
first: when the machine has no NVIDIA GPU, kernels run interpreted on the CPU.

Two tiers. The default run leaves out the *long tier*: interpreted kernel sweeps, the
thorough harness, the mutant sweep, slow statistics and fresh-process runs. ``--long`` (or ``ATTENTION_PROOFS_LONG=1``) runs it too;
CI does. A test is in the long tier when it is marked ``@pytest.mark.long("<tier>")`` (or the
older ``@pytest.mark.slow``), or when its node id matches a pattern of :data:`LONG_TIER` below:
a new test goes there by name, a new file by its own marker. Left-out tests are deselected,
never skipped silently: the header names the tiers and the summary counts them.

A run a person starts uses every core (pytest-xdist's ``-n auto``, the ``test`` extra's) unless it is given
``-n`` itself (``-n 0``: one process); the header says how many workers ran.
"""
import fnmatch
import importlib.util
import os

import pytest

LONG_ENV = "ATTENTION_PROOFS_LONG"
LONG_OPTION = "--long"

# The long tier by rule: its part's name -> node-id patterns (fnmatch, relative to the repository root).
# Chosen by measuring (`pytest PKG --durations=0`); README's "Tests" section quotes both tiers' times.
LONG_TIER: dict[str, tuple[str, ...]] = {
    # The kernels run through the harness (flash ≈ 430 CPU-s interpreted, decode 12 CPU-s), every
    # half-precision parametrization of the kernels' own tests (float32 stays in the default tier),
    # the GPU tile shapes run interpreted (11 CPU-s) and the drawn random shapes (6 CPU-s): the
    # fixed float32 shapes of test_flash.py and test_decode.py stay.
    "interpreted kernel sweeps": ("kernels/tests/test_flash_conformance.py::*",
                                  "kernels/tests/test_decode.py::test_passes_verify_attention_forward_invariants",
                                  "kernels/tests/test_flash.py::test_gpu_tile_shapes_run_interpreted*",
                                  "kernels/tests/test_flash.py::test_random_shapes*",
                                  "kernels/tests/test_flash*.py::*float16*",
                                  "kernels/tests/test_decode*.py::*float16*",
                                  "kernels/tests/test_rounding_bound.py::*float16*",
                                  # The ports of upstream tests: FlashAttention's on its FA2 pairs (113–128 ×
                                  # 203–256, with dropout: 6–10 CPU-s each, interpreted) and Triton's tutorial at
                                  # batch 4 and 48 heads. Their first eight cases (every dtype, head layout, head
                                  # dim and causal kind, the empty rows of 239 × 1) and the tutorial at batch 1,
                                  # 2 heads stay, with each port's rule tests.
                                  "kernels/tests/test_peer_flash_attn.py::test_flash_attn_output[[]1[0-2][0-9]x2[0-9][0-9]-*",
                                  "kernels/tests/test_peer_flash_attn.py::test_flash_attn_output[[]113x128-*",
                                  "kernels/tests/test_peer_triton_tutorial.py::test_op[[]Z4-*",
                                  "kernels/tests/test_peer_triton_tutorial.py::test_op[[]Z1-H48-*"),
    # The harness's larger cases, and every test that runs an implementation through the whole
    # harness (every invariant × case × dtype, with backward: ≈ 90 CPU-s each; SDPA's took 93.7 s in
    # CI). The default tier keeps narrowed runs that pass (test_harness_cli's float32 run of the
    # float64 reference, test_narrowing_*) and ones that must fail (test_error_just_above_*, ...).
    "thorough harness": ("*thorough*",
                         "kernels/tests/test_harness.py::test_sdpa_passes_except_for_its_zero_scale_causal_bug",
                         "kernels/tests/test_harness.py::test_no_false_alarms*",
                         "kernels/tests/test_mutants.py::test_the_correct_implementations_the_mutants_are_cut_from_pass"
                         "[[][!s]*"),  # all but split-kv-decode (one case, forward only)
    # Every mutant × every dtype through its targeted invariant (1–3 CPU-s each), the drawn
    # problems against the mutants only they reach (a run over the mutant's dtypes: 0.2–63 s each). The regime
    # families' mutants (test_regime_mutants.py) are marked there, all but one. test_generate.py
    # keeps a drawn problem failing, shrinking and reproducing in the default tier.
    "mutant sweep": ("kernels/tests/test_mutants.py::test_mutant_is_refused_by_the_invariant_it_targets_in_every_dtype*",
                     "kernels/tests/test_mutants.py::test_generated_problems_of_a_run_over_the_mutants_dtypes_refuse*"),
    # The power and false-alarm rates at the default sample sizes; the interpreted kernel's
    # unbiasedness over 200 dropout seeds (one module fixture for both tests: 200 interpreted
    # calls). The kernel's kept-fraction tests, and their rejection of a 1% bias, stay.
    "slow statistics": ("numeric/tests/test_power_and_false_alarms.py::*",
                        "kernels/tests/test_flash_dropout.py::test_dropout_is_unbiased",
                        "kernels/tests/test_flash_dropout.py::test_unbiasedness_test_rejects_a_missing_rescale"),
    # Parts whose tests join by their marker, @pytest.mark.long("<part>"), named here so the header lists them:
    # every claim's derivation with each conjunct perturbed (test_statements.py keeps three claims) and the
    # whole catalogue's report scanned for SymPy text, or derived for a README count (about 35 CPU-s each).
    "perturbation sweep": (),
    "whole-catalogue report": (),
    # Tests that start fresh pytest or Python processes importing torch and the harness: ≈ 9 CPU-s
    # per process here (measured: a plugin run that only refuses a bad signature took 9.3 CPU-s).
    # The default tier keeps one plugin run end to end (test_each_check_is_an_item_*: items, a
    # failure naming its law, a not-applicable skip) and the plugin's in-process API tests; and
    # test_checker's replay of a good, a bad and a junk certificate by `check` in a fresh process
    # (4 CPU-s), where the whole catalogue's replay takes 14.
    # The ecosystem survey's adapters for JAX, Keras and tinygrad, each checked against its library (JAX and
    # Keras in a fresh process, where they may not share one that forks: 9-16 CPU-s each, 91 CPU-s in all,
    # measured 2026-12-02). The survey runs in CI (its torch, transformers and onnxruntime peers), and without the peers extra these tests skip;
    # the default tier keeps the torch, FlexAttention, transformers and onnxruntime adapters and the
    # survey's own checks (faithfulness, bottom-right, table cells).
    "peer libraries": ("kernels/tests/test_ecosystem.py::test_adapter_is_faithful[[]jax[]]",
                       "kernels/tests/test_ecosystem.py::test_adapter_is_faithful[[]keras-*",
                       "kernels/tests/test_ecosystem.py::test_adapter_is_faithful[[]tinygrad[]]",
                       "kernels/tests/test_ecosystem.py::test_keras_*",
                       "kernels/tests/test_ecosystem.py::test_jax_*"),
    "fresh-process runs": ("proofs/tests/test_catalogue.py::test_every_certificate_replays_in_a_fresh_process",
                           "kernels/tests/test_harness_plugin.py::test_a_correct_impl_passes_and_a_bad_target_is_a_usage_error",
                           "kernels/tests/test_harness_plugin.py::test_a_copied_node_id_runs_that_check_alone*",
                           "kernels/tests/test_harness_plugin.py::test_a_wrong_signature_is_a_usage_error",
                           "kernels/tests/test_harness_plugin.py::test_the_case_filter_option",
                           "kernels/tests/test_harness_plugin.py::test_k_selects_among_the_items",
                           "kernels/tests/test_harness_plugin.py::test_without_the_option_the_plugin_adds_nothing",
                           "kernels/tests/test_contract.py::test_the_registry_is_the_same_whatever_is_imported_first",
                           # the benchmark's --tiny run end to end (12 CPU-s); its report checker's tests stay
                           "kernels/tests/test_bench.py::test_tiny_run_end_to_end"),
}
MARKED = "marked long or slow"  # a test marked without naming its part of the tier

from kernels.interpreter import use_triton_interpreter_without_gpu

use_triton_interpreter_without_gpu()

# xdist runs one worker per core already: BLAS threads on top only contend (the interpreter's tile
# products ran 2× the CPU time with OpenBLAS's two threads; see kernels.harness.verify). threadpoolctl
# is the `cpu` extra's; without it the BLAS keeps its threads.
if os.environ.get("PYTEST_XDIST_WORKER") and importlib.util.find_spec("threadpoolctl"):
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("ci", derandomize=True, max_examples=20, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("dev", max_examples=50, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
except ImportError:  # hypothesis is a test extra; the proofs tests do not need it
    pass


def pytest_addoption(parser):
    parser.addoption(LONG_OPTION, action="store_true",
                     help=f"also run the long tier ({', '.join(LONG_TIER)}); the same as {LONG_ENV}=1")


def long_tier_on(config) -> bool:
    value = os.environ.get(LONG_ENV, "")
    if value not in ("", "0", "1"):
        raise pytest.UsageError(f"{LONG_ENV} must be 0 or 1, got {value!r}")
    return bool(config.getoption(LONG_OPTION)) or value == "1"


def long_part(item) -> str | None:
    """The long tier's part this test belongs to, or None for the default tier."""
    marker = item.get_closest_marker("long")
    if marker is not None:
        return str(marker.args[0]) if marker.args else MARKED
    for part, patterns in LONG_TIER.items():
        if any(fnmatch.fnmatchcase(item.nodeid, p) for p in patterns):
            return part
    return MARKED if item.get_closest_marker("slow") else None


# Both cores by default: the default tier is ≈ 2× faster on this project's 2-core machine (README, Tests).
# Only for a run a person started: a pytest that a test starts (PYTEST_CURRENT_TEST is inherited) or an
# xdist worker keeps to one process, and an explicit -n (0: one process) or -p no:xdist wins.
DEFAULT_WORKERS = "auto"


def default_workers(config) -> bool:
    """Whether this run gets ``-n auto`` because nothing asked otherwise."""
    return (getattr(config.option, "numprocesses", False) is None and not config.option.collectonly
            and "PYTEST_CURRENT_TEST" not in os.environ and "PYTEST_XDIST_WORKER" not in os.environ)


@pytest.hookimpl(tryfirst=True)  # before xdist's own (registered earlier), which turns "auto" into a count
def pytest_cmdline_main(config):
    if default_workers(config):
        config.option.numprocesses = DEFAULT_WORKERS
        config.stash[_DEFAULTED] = True


_DEFAULTED = pytest.StashKey[bool]()


def pytest_configure(config):
    long_tier_on(config)  # a bad ATTENTION_PROOFS_LONG is refused before anything runs


def pytest_report_header(config):
    lines = []
    workers = getattr(config.option, "numprocesses", None)
    if config.stash.get(_DEFAULTED, False):
        lines.append(f"workers: {workers} (pytest-xdist's -n {DEFAULT_WORKERS}, the default here; -n 0 runs in "
                     "one process)")
    if long_tier_on(config):
        return lines + [f"tiers: default and long ({', '.join(LONG_TIER)})"]
    return lines + [f"tiers: default only; the long tier ({', '.join(LONG_TIER)}) is left out: "
                    f"run it too with {LONG_OPTION} or {LONG_ENV}=1 (README, Tests)"]


def _select_tier(config, items):
    parts = {}
    for item in items:
        part = long_part(item)
        if part is not None:
            item.add_marker(pytest.mark.long(part))
            parts[item] = part
    left_out = {} if long_tier_on(config) else parts
    if left_out:
        items[:] = [item for item in items if item not in left_out]
        config.hook.pytest_deselected(items=list(left_out))
    counts = {}
    for part in left_out.values():
        counts[part] = counts.get(part, 0) + 1
    config.stash[_LEFT_OUT] = counts
    if hasattr(config, "workeroutput"):  # an xdist worker: the controller prints the summary
        config.workeroutput["long_tier_left_out"] = counts


_LEFT_OUT = pytest.StashKey[dict]()


def pytest_terminal_summary(terminalreporter, config):
    counts = config.stash.get(_LEFT_OUT, None)
    if counts is None:  # the xdist controller collects nothing: its workers' counts (all collect the same items)
        counts = getattr(config, "_long_tier_from_workers", None)
    if long_tier_on(config):
        terminalreporter.write_line("long tier: run (--long or ATTENTION_PROOFS_LONG=1)")
    elif counts:
        listed = ", ".join(f"{n} {part}" for part, n in counts.items())
        terminalreporter.write_line(f"long tier left out (deselected): {listed}; "
                                    f"run them with {LONG_OPTION} or {LONG_ENV}=1")


if importlib.util.find_spec("xdist"):
    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(node, error):
        counts = getattr(node, "workeroutput", {}).get("long_tier_left_out")
        if counts is not None:
            node.config._long_tier_from_workers = counts


@pytest.hookimpl(tryfirst=True)  # the long markers are in place before -m long / -m "not long" filters
def pytest_collection_modifyitems(config, items):
    _select_tier(config, items)
    if any(item.get_closest_marker("gpu") for item in items):
        try:
            import torch

            cuda = torch.cuda.is_available()
        except ImportError:
            cuda = False
        if not cuda:
            skip = pytest.mark.skip(reason="needs a CUDA GPU; this machine has none (tests run interpreted instead)")
            for item in items:
                if item.get_closest_marker("gpu"):
                    item.add_marker(skip)
