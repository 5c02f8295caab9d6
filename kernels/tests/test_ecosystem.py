"""The ecosystem survey: each adapter is faithful to its library, and the survey's own checks can fail.

The libraries come from the ``peers`` extra; without it their tests skip with the reason. The checks
of the survey itself (bottom-right claim, table cells, the faithfulness check) need torch only.
"""
from __future__ import annotations

import functools
import importlib.util
import json
import os
import subprocess
import sys

import pytest
import torch

from kernels.ecosystem import bottom_right, faithful, table
from kernels.ecosystem.adapters import BOTTOM_RIGHT, PEERS, TOP_LEFT, Unsupported, peer
from kernels.harness import reference as ref
from kernels.harness.cases import Case

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _needs(p):
    missing = [m for m in p.needs if not __import__("importlib.util").util.find_spec(m)]
    if missing:
        pytest.skip(f"{p.name} needs {', '.join(missing)}: install the peers extra (pip install -e '.[peers]')")


_CHILD = "ATTENTION_PROOFS_ISOLATED_TEST"


def _isolated(test):
    """Run the test in a fresh pytest process. JAX starts threads when imported, and a test process
    that has imported it must not fork afterwards (the report's tests fork workers): JAX warns that
    os.fork() "will likely lead to a deadlock", and under pytest-xdist that process runs them."""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        if os.environ.get(_CHILD):
            return test(*args, **kwargs)
        if importlib.util.find_spec("jax") is None:
            pytest.skip("needs jax: install the peers extra (pip install -e '.[peers]')")
        node = f"{os.path.relpath(__file__, ROOT)}::{test.__name__}"
        proc = subprocess.run([sys.executable, "-m", "pytest", node, "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                              # the long tier on: the test may be in it (its parent ran it, so it was selected)
                              env=dict(os.environ, **{_CHILD: "1", "ATTENTION_PROOFS_LONG": "1"}), capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == 0 and " passed" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]
    return wrapper


# ====================================================================== every adapter is faithful


@pytest.mark.parametrize("name", [p.name for p in PEERS])
def test_adapter_is_faithful(name):
    """One key: output = that value exactly; and float64 agreement, non-causal, causal in the declared
    alignment, explicit scale, GQA, on shapes whose every axis differs."""
    p = peer(name)
    _needs(p)
    if p.env or "jax" in p.needs:  # Keras reads its backend at import; JAX must not share a process that forks
        proc = subprocess.run([sys.executable, "-m", "kernels.ecosystem.faithful", name], cwd=ROOT,
                              env=dict(os.environ, **p.env), capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    else:
        assert faithful.peer_problems(p) == []


def test_keras_torch_is_sdpa_exactly():
    """keras.ops.dot_product_attention on the torch backend calls SDPA: the outputs agree bit for bit."""
    p = peer("keras-torch")
    _needs(p)
    code = ("import torch; from kernels.ecosystem.adapters import peer; impl = peer('keras-torch').build(); "
            "g = torch.Generator().manual_seed(0); q, k, v = (torch.randn(2, 3, 9, 16, generator=g) for _ in range(3)); "
            "a = impl(q, k, v, is_causal=True, scale=0.3); "
            "b = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3); "
            "assert torch.equal(a, b), (a - b).abs().max()")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, **p.env),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_transformers_sdpa_is_sdpa_with_the_models_mask():
    """transformers' sdpa path hands SDPA the mask masking_utils built: for a square causal call
    (mask skipped, is_causal) the output is SDPA's is_causal output bit for bit."""
    p = peer("transformers-sdpa")
    _needs(p)
    impl = p.build()
    q, k, v = faithful._inputs(n_k=faithful.NQ)
    a = impl(q, k, v, is_causal=True, enable_gqa=True)
    b = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert torch.equal(a, b)


@_isolated
def test_jax_gradients_come_through_the_bridge():
    """Backward through jax.vjp: gradients match float64 autograd (and are not None or zero)."""
    p = peer("jax")
    _needs(p)
    impl = p.build()
    q, k, v = (t.requires_grad_(True) for t in faithful._inputs())
    out = impl(q, k, v, is_causal=True, enable_gqa=True)
    dout = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    q64, k64, v64 = (t.detach().double().requires_grad_(True) for t in (q, k, v))
    gold = torch.autograd.grad(ref.attention(q64, k64, v64, is_causal=True, enable_gqa=True), (q64, k64, v64),
                               dout.double())
    for g, g64 in zip(grads, gold):
        assert (g.double() - g64).abs().max() < 1e-5 * (1 + g64.abs().max())


@_isolated
def test_jax_float16_runs_op_by_op_because_jit_raises_on_cpu():
    """The adapters run float16 op by op because jax 0.10.2 cannot jit it on CPU (FINDINGS.md, 6):
    the library still does so, and the op-by-op float16 output meets the same-precision rule."""
    p = peer("jax")
    _needs(p)
    import jax
    import jax.numpy as jnp

    from kernels.harness import tolerance as tol

    q, k, v = (t.half() for t in faithful._inputs())
    with pytest.raises(ValueError, match="F16_F16_F32"):  # if jax fixes this, the adapter may jit float16 again
        jax.jit(jax.nn.dot_product_attention)(*(jnp.asarray(t.transpose(1, 2).numpy()) for t in (q, k, v)))
    out = p.build()(q, k, v, is_causal=True, enable_gqa=True)
    kw = dict(is_causal=True, enable_gqa=True)
    gold = ref.attention64(q, k, v, **kw)
    bound = tol.bound(torch.float16, tol.max_abs_error(ref.attention(q, k, v, **kw), gold), gold)
    assert out.dtype == torch.float16 and tol.max_abs_error(out, gold) <= bound


def test_transformers_refuses_a_mask_with_is_causal():
    """The model passes a custom 4-D mask as-is and adds no causal mask: no counterpart, refused."""
    p = peer("transformers-sdpa")
    _needs(p)
    q, k, v = faithful._inputs()
    with pytest.raises(Unsupported, match="as-is"):
        p.build()(q, k, v, attn_mask=torch.ones(faithful.NQ, faithful.NK, dtype=torch.bool), is_causal=True,
                  enable_gqa=True)


def test_tinygrad_refuses_an_explicit_scale_as_not_applicable():
    p = peer("tinygrad")
    _needs(p)
    with pytest.raises(Unsupported, match="no scale"):
        p.build()(*faithful._inputs(), scale=0.5, enable_gqa=True)


# ====================================================================== the faithfulness check can fail


def _sdpa_mask(q, k, v, attn_mask, scale, enable_gqa):
    if attn_mask.dtype == torch.bool:
        attn_mask = attn_mask | ~attn_mask.any(-1, keepdim=True)  # keep the flipped mask's rows non-empty
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=scale,
                                                            enable_gqa=enable_gqa)


def _sdpa(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=scale,
                                                            enable_gqa=enable_gqa)


def test_faithfulness_check_passes_sdpa_and_the_bottom_right_reference():
    assert faithful.problems(_sdpa, TOP_LEFT) == []
    br = lambda q, k, v, *, is_causal=False, scale=None, enable_gqa=False: (  # noqa: E731
        bottom_right.attention(q, k, v, scale=scale, enable_gqa=enable_gqa) if is_causal
        else _sdpa(q, k, v, scale=scale, enable_gqa=enable_gqa))
    assert faithful.problems(br, BOTTOM_RIGHT) == []


@pytest.mark.parametrize("mistake", ["layout", "heads", "scale", "alignment", "mask-polarity"])
def test_faithfulness_check_rejects_a_wrong_adapter(mistake):
    def wrong(q, k, v, *, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
        if mistake == "mask-polarity" and attn_mask is not None and attn_mask.dtype == torch.bool:
            attn_mask = ~attn_mask  # True read as "masked out", as in some libraries
        if attn_mask is not None:
            return _sdpa_mask(q, k, v, attn_mask, scale, enable_gqa)
        if mistake == "layout":  # forgot to transpose the library's (B, N, H, D) result back
            return _sdpa(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa).transpose(1, 2)
        if mistake == "heads":  # KV heads tiled instead of interleaved: query head h reads h % Hkv
            hq = q.shape[1]
            k, v = k.repeat(1, hq // k.shape[1], 1, 1), v.repeat(1, hq // v.shape[1], 1, 1)
            return _sdpa(q, k, v, is_causal=is_causal, scale=scale)
        if mistake == "scale":  # scale dropped on the way to the library
            return _sdpa(q, k, v, is_causal=is_causal, enable_gqa=enable_gqa)
        return _sdpa(q, k, v, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)  # top-left, not bottom-right

    alignment = BOTTOM_RIGHT if mistake == "alignment" else TOP_LEFT
    assert faithful.problems(wrong, alignment) != []


# ====================================================================== bottom-right checks can fail


def test_bottom_right_mask_is_the_claims():
    m = bottom_right.visible(2, 5)  # query i sees keys j <= i + 3
    assert m.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    assert torch.equal(bottom_right.visible(4, 4), ref.causal_mask(4, 4))


def test_bottom_right_checks_pass_bottom_right_and_reject_top_left():
    def br(q, k, v, *, is_causal=False, scale=None, enable_gqa=False):
        if is_causal:
            return bottom_right.attention(q, k, v, scale=scale, enable_gqa=enable_gqa)
        return _sdpa(q, k, v, scale=scale, enable_gqa=enable_gqa)

    cases = (Case("br", 1, 4, 2, 5, 9, 16, True), Case("decode", 1, 2, 2, 1, 7, 16, True))
    good = bottom_right.bottom_right_checks(br, ["float32", "float16"], cases=cases)
    assert good and all(c.passed for c in good), [c.describe() for c in good if not c.passed]
    bad = bottom_right.bottom_right_checks(_sdpa, ["float32"], cases=cases)  # SDPA is top-left
    assert {c.invariant for c in bad if not c.passed} == {"bottom-right-agreement", "bottom-right-alignment"}


def test_bottom_right_checks_refuse_cases_outside_the_premise():
    with pytest.raises(ValueError, match="Nq <= Nk"):
        bottom_right.bottom_right_checks(_sdpa, ["float32"], cases=(Case("long-q", 1, 2, 2, 9, 5, 16, True),))


# ====================================================================== the table


def _check(invariant, passed, ratio=0.5, dtype="float32", error=None):
    return dict(invariant=invariant, claim_id=None, case="c: …", case_name="c", dtype=dtype, device="cpu",
                discrepancy=None if error else ratio, bound=1.0, passed=passed, error=error, detail="")


def test_cells_say_pass_fail_raised_and_not_applicable():
    assert table.cell([_check("x", True, 0.25), _check("x", True, 0.5)]) == "✓ 0.50"
    assert table.cell([_check("x", True), _check("x", False, 31.0, "float16")]) == "✗ 31 (fp16)"
    assert table.cell([_check("x", False, error="RuntimeError: no kernel", dtype="bfloat16")]) == "✗ raised (bf16)"
    assert table.cell([_check("x", False, error="Unsupported: no scale parameter")]) == "n/a"
    assert table.cell([dict(_check("x", True), status="not applicable")]) == "n/a"
    assert table.cell([dict(_check("x", True), status="not applicable"), _check("x", False, 3.0)]) == "✗ 3.00 (fp32)"
    assert table.cell([]) == "n/a"


def test_survey_document_round_trips_as_strict_json(tmp_path):
    doc = dict(date="d", seed=0, python="3", machine="m", torch="t", seconds=1.0, peers=[
        dict(name="a", library="torch", version="1", layout="(B, H, N, D)", causal=TOP_LEFT, backward=True,
             dtypes=["float32"], scale="explicit", mask="is_causal", source="", limits=[], status="ran",
             seconds=0.1, checks=[_check("reference-agreement", True), _check("extreme-logits", False, error="E"),
                                  _check("mixed-magnitude-rows", False, float("inf")),
                                  dict(_check("rounding-attention-forward", True, 0.0), bound=float("inf"))]),
        dict(name="b", library="x", version="not installed", layout="", causal=None, backward=False, dtypes=[],
             scale="", mask="", source="", limits=[], status="not installed", seconds=0.0, checks=[], error="needs x")])
    doc["peers"][0]["checks"][1]["discrepancy"] = float("inf")
    md, js = table.write(doc, str(tmp_path))
    loaded = json.loads(open(js).read())  # strict: no Infinity
    assert loaded["peers"][0]["checks"][1]["discrepancy"] is None
    text = open(md).read()
    assert "| reference-agreement |  | ✓ 0.50 | — |" in text
    assert "| checks passed |  | 2/4 | not installed |" in text
    assert "| rounding-attention-forward |  | ✓ 0.00 | — |" in text  # a vacuous (infinite) bound, null in the JSON
    assert "- b: needs x" in text
    assert table.report_section(str(tmp_path / "absent.json")) == []
    section = table.report_section(js)  # rendered from the strict JSON: inf came back as null
    assert section[0] == "## Ecosystem conformance survey"
    assert any("discrepancy non-finite > bound" in line for line in section)
    assert "| rounding-attention-forward |  | ✓ 0.00 | — |" in section


def test_cli_refuses_an_unknown_implementation(capsys):
    from kernels.ecosystem.__main__ import main

    assert main(["--only", "no-such-library"]) == 2
    assert "unknown implementation 'no-such-library'" in capsys.readouterr().err


def test_survey_starts_the_longest_peer_first_and_keeps_the_catalogue_order(monkeypatch):
    from kernels.ecosystem import survey

    started = []

    def fake(p, seed):
        started.append(p.name)
        return dict(name=p.name, status="ran", seconds=0.0, checks=[])

    monkeypatch.setattr(survey, "run_in_process", fake)
    doc = survey.survey(seed=0, progress=lambda line: None, workers=1)
    assert [p["name"] for p in doc["peers"]] == [p.name for p in PEERS]
    assert started == [p.name for p in sorted(PEERS, key=lambda p: -p.cpu_s)]
    assert started[0] != PEERS[0].name  # the order really changed: the check can fail


def test_torch_sdpa_and_flex_are_the_harness_wrappers():
    """SDPA and FlexAttention are wrapped once (kernels.harness.peers): the survey judges those."""
    import inspect

    from kernels.harness import peers

    assert peer("torch-flex-eager").build() is peers.flex_eager
    math_sdpa = peer("torch-sdpa-math").build()
    assert math_sdpa.__qualname__ == "sdpa[math]" and "dropout_p" not in inspect.signature(math_sdpa).parameters
    assert "dropout_p" in inspect.signature(peers.sdpa_math).parameters  # the harness's own peer keeps dropout
    q = torch.randn(1, 2, 5, 8)
    with pytest.raises(RuntimeError):  # forced onto flash, which has no Dv ≠ D: raises, never falls back
        peer("torch-sdpa-flash").build()(q, q, torch.randn(1, 2, 5, 4))
