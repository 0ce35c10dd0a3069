"""Private saddle-point solvers, selectable by name or passed as objects (``solver=``).

Gradient perturbation: :class:`NoisySGDA` (``"sgda"``; ``"gda"`` is its full-batch form),
:class:`NoisyExtragradient` (``"nseg"``, ``"nseg_multipass"``),
:class:`NoisyInexactProximalPoint` (``"nispp"``). Frameworks around a subroutine:
:class:`RecursiveRegularization` (``"recursive"``), :class:`OutputPerturbation`
(``"output_perturbation"``) and :class:`PhasedOutputPerturbation`
(``"phased_output_perturbation"``) around the certified non-private base solvers
:class:`ProjectedGDA`, :class:`Extragradient` and :class:`SVRGExtragradient`.
"""

from skdpminimax.solvers.base import (
    SOLVERS,
    PrivateSolver,
    SolverResult,
    register_solver,
    resolve_solver,
)
from skdpminimax.solvers.base_solvers import (
    CertificationError,
    CertifiedSolution,
    Extragradient,
    ProjectedGDA,
    SVRGExtragradient,
)
from skdpminimax.solvers.extragradient import NoisyExtragradient
from skdpminimax.solvers.oracle import NoisyGradientOracle
from skdpminimax.solvers.output_perturbation import OutputPerturbation, PhasedOutputPerturbation
from skdpminimax.solvers.proximal_point import NoisyInexactProximalPoint
from skdpminimax.solvers.recursive import RecursiveRegularization
from skdpminimax.solvers.sgda import NoisySGDA

register_solver("sgda", NoisySGDA)
register_solver("gda", lambda: NoisySGDA(batch_size=None, n_iter=500))
register_solver("nseg", NoisyExtragradient)
register_solver("nseg_multipass", lambda: NoisyExtragradient(mode="multi_pass"))
register_solver("nispp", NoisyInexactProximalPoint)
register_solver("recursive", RecursiveRegularization)
register_solver("output_perturbation", OutputPerturbation)
register_solver("phased_output_perturbation", PhasedOutputPerturbation)

__all__ = [
    "SOLVERS",
    "PrivateSolver",
    "SolverResult",
    "register_solver",
    "resolve_solver",
    "NoisyGradientOracle",
    "NoisySGDA",
    "NoisyExtragradient",
    "NoisyInexactProximalPoint",
    "RecursiveRegularization",
    "OutputPerturbation",
    "PhasedOutputPerturbation",
    "ProjectedGDA",
    "Extragradient",
    "SVRGExtragradient",
    "CertifiedSolution",
    "CertificationError",
]
