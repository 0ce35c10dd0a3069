"""Private saddle-point solvers, selectable by name or passed as objects (``solver=``)."""

from skdpminimax.solvers.base import (
    SOLVERS,
    PrivateSolver,
    SolverResult,
    register_solver,
    resolve_solver,
)
from skdpminimax.solvers.oracle import NoisyGradientOracle
from skdpminimax.solvers.sgda import NoisySGDA
from skdpminimax.solvers.base_solvers import (
    CertificationError,
    CertifiedSolution,
    Extragradient,
    ProjectedGDA,
    SVRGExtragradient,
)
from skdpminimax.solvers.output_perturbation import OutputPerturbation, PhasedOutputPerturbation

register_solver("sgda", NoisySGDA)
register_solver("gda", lambda: NoisySGDA(batch_size=None, n_iter=500))
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
    "OutputPerturbation",
    "PhasedOutputPerturbation",
    "ProjectedGDA",
    "Extragradient",
    "SVRGExtragradient",
    "CertifiedSolution",
    "CertificationError",
]
