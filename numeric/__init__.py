"""attention-proofs, Monte Carlo layer: empirical confirmations of what ``proofs`` derives.

``confirm(claim_id, ...)`` returns a :class:`Confirmation` (estimate, CI, p-value, verdict);
claimed values come from the SymPy results themselves (``sympy.lambdify``).
"""
from numeric.confirm import CONFIRMABLE, confirm
from numeric.curves import saturation_curves
from numeric.dot_product import confirm_dot_product_variance
from numeric.evidence import CONFIRMING_POWER, STATED_EFFECT, Confirmation, power_against
from numeric.sampling import dot_product_samples
from numeric.softmax import online_softmax_trace

__all__ = ["CONFIRMABLE", "CONFIRMING_POWER", "STATED_EFFECT", "power_against", "Confirmation", "confirm", "confirm_dot_product_variance", "dot_product_samples",
           "online_softmax_trace", "saturation_curves"]
