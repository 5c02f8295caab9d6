import re
import subprocess
import sys

import pytest

from proofs import CLAIMS, derive
from proofs.claims import SEED_SELF_ATTENTION, SEED_WITH_WEIGHTS
from proofs.tests.derived import derived


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_every_catalogued_claim_is_proved(claim):
    d = derived(claim.id)
    assert d.claim_id == claim.id
    failed = [(s.description, s.detail) for s in d.failed_steps]
    assert d.verified, failed
    assert d.checked_steps, "a derivation needs at least one checked step"


def test_every_certificate_replays_in_a_fresh_process(tmp_path):
    """What a reviewer runs: the certificates alone, re-checked by `attention-proofs check` in a new process."""
    for c in CLAIMS:
        (tmp_path / f"{c.id}.json").write_text(derived(c.id).certificate_json, encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "proofs.check_cli", *sorted(map(str, tmp_path.glob("*.json")))],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert f"{len(CLAIMS)} of {len(CLAIMS)} certificates proved" in out.stdout


def test_ids_are_unique_kebab_case_and_quote_a_seed_or_cite_a_reference():
    ids = [c.id for c in CLAIMS]
    assert len(ids) == len(set(ids))
    for c in CLAIMS:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", c.id), c.id
        assert c.prose and c.statement is not None and (c.seeds or any(r.strip() for r in c.references)), c.id
        assert all(s.file in (SEED_SELF_ATTENTION, SEED_WITH_WEIGHTS) for s in c.seeds)


def test_unknown_claim_id_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="claim_id 'no-such-claim'"):
        derive("no-such-claim")


def test_importing_proofs_does_not_import_torch_or_numpy_heavy_layers():
    code = ("import sys, proofs; proofs.derive('dot-product-variance'); "
            "bad = [m for m in ('torch', 'triton', 'scipy', 'numeric', 'kernels') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def _seed_dir():
    from pathlib import Path

    # CI lays shared/ beside the clone; a developer's checkout has it at the same place.
    return Path(__file__).resolve().parents[3] / "shared" / "seeds"


@pytest.mark.skipif(not _seed_dir().is_dir(), reason="the seed documents (../shared/seeds) are not beside this checkout")
@pytest.mark.parametrize("claim", CLAIMS, ids=lambda c: c.id)
def test_seed_quotes_are_verbatim(claim):
    def norm(text):
        return re.sub(r"\s+", " ", text).strip()

    for passage in claim.seeds:
        text = norm((_seed_dir() / passage.file).read_text(encoding="utf-8"))
        assert norm(passage.quote) in text, f"{passage.file}: {passage.quote!r}"


def test_a_claim_is_built_by_keyword_only():
    import pytest

    from proofs.claims import Claim

    with pytest.raises(TypeError):
        Claim("x", "A title", "Prose.", (), (), "proofs.theorems.dot_product:seed_variance")  # positional: refused
    c = Claim(id="x", title="A title", prose="Prose.", assumptions=(), seeds=(),
              theorem="proofs.theorems.dot_product:seed_variance")
    assert (c.id, c.theorem, c.topic) == ("x", "proofs.theorems.dot_product:seed_variance", "core")
