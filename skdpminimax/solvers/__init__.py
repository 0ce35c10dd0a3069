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

register_solver("sgda", NoisySGDA)
register_solver("gda", lambda: NoisySGDA(batch_size=None, n_iter=500))

__all__ = [
    "SOLVERS",
    "PrivateSolver",
    "SolverResult",
    "register_solver",
    "resolve_solver",
    "NoisyGradientOracle",
    "NoisySGDA",
]
