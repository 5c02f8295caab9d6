"""pytest plugin (entry point ``pytest11``): every invariant × case × dtype as its own test item.

    pytest --verify-attention mypkg.attention:my_sdpa [--verify-attention-dtype bfloat16]
           [--verify-attention-thorough] [--verify-attention-seed N] [--verify-attention-no-backward]
           [--verify-attention-invariant NAME] [--verify-attention-case NAME] [-k EXPRESSION]

collects items with node ids ``verify-attention[<target>]::<invariant>[<case>-<dtype>]`` (e.g.
``verify-attention[mypkg.attention:my_sdpa]::reference-agreement[long-causal-bfloat16]``): a
failure shows the discrepancy and its bound; an invariant the impl cannot be judged by (it lacks
attn_mask, dropout_p, or a switched-off feature) is skipped with "not applicable" and the reason.
``-k`` selects among them like any other items, and a node id copied from a report runs that
check alone (``pytest 'verify-attention[mypkg.attention:my_sdpa]::reference-agreement'`` runs the
invariant's every case and dtype; the target comes from the id, no --verify-attention needed).
Without either the plugin adds nothing and imports nothing heavy. From a test file,
:func:`attention_checks` gives the same checks to ``pytest.mark.parametrize``.
"""
from __future__ import annotations

import re

import pytest

OPTION = "--verify-attention"
PREFIX = "verify-attention"  # a node id's first part: verify-attention[MODULE:FUNCTION]
_NODE_ID = re.compile(rf"^(?:::)?{PREFIX}\[([^\]]+)\](?:::(.+))?$")  # pytest 9 may print a leading "::"


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
                    help="only this invariant (repeat or comma-separate)")
    group.addoption(f"{OPTION}-case", action="append", default=None, metavar="NAME",
                    help="only this case, default or thorough (repeat or comma-separate)")


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
                     thorough=False, invariants=None, cases=None) -> list[AttentionCheck]:
    """The checks ``verify_attention`` would run, one object each, in its order. ``cases``: names of
    cases (default or thorough) to run instead of the default or thorough set."""
    from kernels.harness.cases import DEFAULT_CASES, THOROUGH_CASES
    from kernels.harness.cli import cases_named
    from kernels.harness.features import check_signature, offered
    from kernels.harness.verify import _invariant_names, _validated, planned

    device, dtypes = _validated(impl, device, dtypes)
    check_signature(impl)
    only = _invariant_names(invariants)
    chosen = cases_named(cases) or (THOROUGH_CASES if thorough else DEFAULT_CASES)
    features = offered(impl, causal=causal, gqa=gqa, backward=backward)
    subjects: dict = {}
    return [AttentionCheck(impl, item, dtype, device, seed, subjects) for dtype in dtypes
            for item in planned(chosen, dtype, features, causal=causal, gqa=gqa, only=only)]


class AttentionItem(pytest.Item):
    def __init__(self, *, check: AttentionCheck, **kwargs):
        super().__init__(**kwargs)
        self.check = check

    def runtest(self):
        from kernels.threads import one_thread

        with one_thread():
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
        from kernels.harness.cli import listed, load_target

        opt = self.config.getoption
        try:
            impl = load_target(self.target)
            checks = attention_checks(impl, device=opt(f"{OPTION}-device"), dtypes=listed(opt(f"{OPTION}-dtype")),
                                      backward=not opt(f"{OPTION}-no-backward"), seed=opt(f"{OPTION}-seed"),
                                      thorough=opt(f"{OPTION}-thorough"),
                                      invariants=listed(opt(f"{OPTION}-invariant")),
                                      cases=listed(opt(f"{OPTION}-case")))
        except (ValueError, TypeError) as exc:
            raise pytest.UsageError(f"{OPTION} {self.target}: {exc}") from None
        for check in checks:
            yield AttentionItem.from_parent(self, name=check.id, check=check)


def pytest_configure(config):
    """Take this plugin's node ids out of the paths pytest will collect (it would refuse them as
    files not found) and keep them to select by; with only such ids given, pytest collects nothing
    else."""
    ids = [arg for arg in config.args if _NODE_ID.match(arg)]
    config.stash[_SELECTED] = [i.removeprefix("::") for i in ids]
    if ids:
        config.args[:] = [arg for arg in config.args if arg not in ids]


_SELECTED = pytest.StashKey[list]()


def _targets(config) -> list[str]:
    named = [_NODE_ID.match(i).group(1) for i in config.stash.get(_SELECTED, [])]
    return list(dict.fromkeys(list(config.getoption(OPTION)) + named))


def _chosen(nodeid: str, ids: list[str]) -> bool:
    """The item is one of ``ids``, or in a collector or invariant one of them names."""
    return any(nodeid == i or nodeid.startswith(i + "::") or nodeid.startswith(i + "[") for i in ids)


# tryfirst: the items must exist before -k, -m and --deselect (other plugins' modifyitems) choose among them
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    ids = config.stash.get(_SELECTED, [])
    for target in _targets(config):
        name = f"{PREFIX}[{target}]"  # also its node id: pytest 9 would prefix "::" to a child of the session
        collector = AttentionCollector.from_parent(session, name=name, nodeid=name, target=target)
        collected = list(collector.collect())
        if ids and any(i.startswith(collector.nodeid) for i in ids):
            collected = [item for item in collected if _chosen(item.nodeid, ids)]
        # reported as collected, so the terminal's "collected N items / M deselected" counts them
        session.ihook.pytest_collectreport(report=pytest.CollectReport(collector.nodeid, "passed", None, collected))
        items.extend(collected)
    missing = [i for i in ids if not any(_chosen(item.nodeid, [i]) for item in items)]
    if missing:
        raise pytest.UsageError(f"not found: {', '.join(missing)} (no such check with these options; a thorough "
                                f"case needs {OPTION}-thorough, or name it with {OPTION}-case)")
