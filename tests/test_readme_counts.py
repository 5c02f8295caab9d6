"""Every count the README states is the code's: a claim, perturbation, audit record, mutant or figure
added without updating the README fails here."""
from __future__ import annotations

import re
from collections import Counter

import pytest

from conftest import REPO
from proofs import CLAIMS

README = (REPO / "README.md").read_text(encoding="utf-8")


def _stated(pattern: str) -> tuple[int, ...]:
    found = re.search(pattern, README)
    assert found, f"the README no longer says {pattern!r}: update this test with the sentence that replaced it"
    return tuple(int(x) for x in found.groups())


def test_claims_and_perturbations():
    from proofs.tests.perturb import perturbations

    total = sum(len(perturbations(c.statement)) for c in CLAIMS)
    assert _stated(r"`proofs\.CLAIMS`, (\d+) claims") == (len(CLAIMS),)
    assert _stated(r"all (\d+) of (\d+), over the (\d+) claims") == (total, total, len(CLAIMS))
    assert _stated(r"\n(\d+) of (\d+) claims hold, 0 fail") == (len(CLAIMS), len(CLAIMS))


def test_mutants():
    from kernels.mutants import MUTANTS

    assert _stated(r"\(`kernels/mutants\.py`\): (\d+) wrong implementations") == (len(MUTANTS),)


def test_figures():
    from proofs.report.gather import FIGURES

    assert _stated(r"and (\d+) figures in report/figures") == (len(FIGURES),)


def test_audit_records():
    from proofs.seed_audit import VERDICTS, seed_audit

    records = seed_audit()
    counts = Counter(r.verdict for r in records)
    stated = re.search(r"\((\d+) records:\s+(.*?)\)", README, re.S)
    assert stated, "the README no longer counts the seed audit's records"
    assert int(stated.group(1)) == len(records)
    for verdict in VERDICTS:
        said = re.search(rf'(\d+) "{re.escape(verdict)}"', " ".join(stated.group(2).split()))
        assert said and int(said.group(1)) == counts[verdict], verdict


def test_claims_are_keyed_by_id_in_catalogue_order():
    assert CLAIMS["softmax-jacobian"].id == "softmax-jacobian" and "softmax-jacobian" in CLAIMS
    assert CLAIMS.ids() == tuple(c.id for c in CLAIMS) and CLAIMS[0].id == CLAIMS.ids()[0]
    assert CLAIMS.get("nope") is None and "nope" not in CLAIMS
    with pytest.raises(ValueError, match="claim_id 'nope' is not in the catalogue"):
        CLAIMS["nope"]
    assert Counter(CLAIMS.ids()).most_common(1)[0][1] == 1


@pytest.mark.long("whole-catalogue report")  # derives every claim: about 35 CPU-s
def test_claims_proved_by_rules_alone():
    from proofs import derive

    by_rules = sum(not derive(c.id).computations for c in CLAIMS)
    assert _stated(r"(\d+) of the (\d+) claims are proved by rules alone") == (by_rules, len(CLAIMS))
