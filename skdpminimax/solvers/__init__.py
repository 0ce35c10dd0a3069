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
from skdpminimax.solvers.extragradient import NoisyExtragradient
from skdpminimax.solvers.proximal_point import NoisyInexactProximalPoint
from skdpminimax.solvers.recursive import RecursiveRegularization

register_solver("sgda", NoisySGDA)
register_solver("gda", lambda: NoisySGDA(batch_size=None, n_iter=500))
register_solver("nseg", NoisyExtragradient)
register_solver("nseg_multipass", lambda: NoisyExtragradient(mode="multi_pass"))
register_solver("nispp", NoisyInexactProximalPoint)
register_solver("recursive", RecursiveRegularization)

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
]
