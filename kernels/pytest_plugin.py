"""pytest plugin (entry point ``pytest11``): every invariant × case × dtype as its own test item.

    pytest --verify-attention mypkg.attention:my_sdpa [--verify-attention-dtype bfloat16]
           [--verify-attention-thorough] [--verify-attention-seed N] [--verify-attention-no-backward]
           [--verify-attention-invariant NAME]

collects items named ``verify-attention::<invariant>[<case>-<dtype>]`` (e.g.
``reference-agreement[long-causal-bfloat16]``): a failure shows the discrepancy and its bound;
an invariant the impl cannot be judged by (it lacks attn_mask, dropout_p, or a switched-off
feature) is skipped with "not applicable" and the reason. Without the option the plugin adds
nothing and imports nothing heavy. From a test file, :func:`attention_checks` gives the same
checks to ``pytest.mark.parametrize``.
"""
from __future__ import annotations

import pytest

OPTION = "--verify-attention"


def pytest_addoption(parser):
    group = parser.getgroup("verify-attention", "conformance of an SDPA-compatible attention implementation")
    group.addoption(OPTION, action="append", default=[], metavar="MODULE:FUNCTION",
                    help="judge this implementation: one test item per invariant × case × dtype")
    group.addoption(f"{OPTION}-dtype", action="append", default=None, metavar="DTYPE",
                    help="float32, float16 or bfloat16 (repeat; default: all the device supports)")
    group.addoption(f"{OPTION}-device", default="cpu")
    group.addoption(f"{OPTION}-seed", type=int, default=0)
    group.addoption(f"{OPTION}-thorough", action="store_true", help="the larger thorough case set")
    group.addoption(f"{OPTION}-no-backward", action="store_true", help="the impl has no backward")
    group.addoption(f"{OPTION}-invariant", action="append", default=None, metavar="NAME",
                    help="only this invariant (repeat)")


class AttentionCheck:
    """One invariant on one case in one dtype, runnable on its own (``run()`` raises on failure)."""

    def __init__(self, impl, item, dtype, device, seed, subjects):
        self.impl, self.item, self.dtype, self.device, self.seed, self._subjects = impl, item, dtype, device, seed, subjects

    @property
    def id(self) -> str:
        inv, case = self.item[0], self.item[1]
        return f"{inv.name}[{case.name}-{str(self.dtype).removeprefix('torch.')}]"

    __str__ = __repr__ = lambda self: self.id

    def run(self):
        """The Check; pytest.skip when not applicable, AssertionError naming discrepancy and bound when failed."""
        from kernels.harness.verify import run_item

        check = run_item(self.item, self.impl, self.dtype, self.device, self.seed, self._subjects)
        if not check.applicable:
            pytest.skip(f"not applicable: {check.detail}")
        if not check.passed:
            raise AssertionError(check.describe())
        return check


def attention_checks(impl, *, device="cpu", dtypes=None, causal=True, gqa=True, backward=True, seed=0,
                     thorough=False, invariants=None) -> list[AttentionCheck]:
    """The checks ``verify_attention`` would run, one object each, in its order."""
    from kernels.harness.cases import DEFAULT_CASES, THOROUGH_CASES
    from kernels.harness.features import offered
    from kernels.harness.verify import _invariant_names, _validated, planned

    device, dtypes = _validated(impl, device, dtypes)
    only = _invariant_names(invariants)
    features = offered(impl, causal=causal, gqa=gqa, backward=backward)
    subjects: dict = {}
    return [AttentionCheck(impl, item, dtype, device, seed, subjects) for dtype in dtypes
            for item in planned(THOROUGH_CASES if thorough else DEFAULT_CASES, dtype, features, causal=causal,
                                gqa=gqa, only=only)]


class AttentionItem(pytest.Item):
    def __init__(self, *, check: AttentionCheck, **kwargs):
        super().__init__(**kwargs)
        self.check = check

    def runtest(self):
        from kernels.harness.verify import _one_thread

        with _one_thread():
            self.check.run()

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, AssertionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"verify-attention: {self.name}"


class AttentionCollector(pytest.Collector):
    def __init__(self, *, target: str, **kwargs):
        super().__init__(**kwargs)
        self.target = target

    def collect(self):
        from kernels.harness.cli import load_target

        opt = self.config.getoption
        try:
            impl = load_target(self.target)
            checks = attention_checks(impl, device=opt(f"{OPTION}-device"), dtypes=opt(f"{OPTION}-dtype"),
                                      backward=not opt(f"{OPTION}-no-backward"), seed=opt(f"{OPTION}-seed"),
                                      thorough=opt(f"{OPTION}-thorough"), invariants=opt(f"{OPTION}-invariant"))
        except (ValueError, TypeError) as exc:
            raise pytest.UsageError(f"{OPTION} {self.target}: {exc}") from None
        for check in checks:
            yield AttentionItem.from_parent(self, name=check.id, check=check)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    for target in config.getoption(OPTION):
        collector = AttentionCollector.from_parent(session, name=f"verify-attention[{target}]", target=target)
        items.extend(collector.collect())
