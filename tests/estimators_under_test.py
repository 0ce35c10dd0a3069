"""The estimators every hardening test runs on: add new estimators here.

Each entry is ``(name, factory)``; ``factory(**params)`` returns a fresh estimator
with a public ``data_norm`` and no data-dependent constant (nothing spent on them),
so the tests can watch the accountant.
"""

from skdpminimax import DPAUCMaximizer
from skdpminimax.solvers import NoisySGDA


def _auc(**params):
    defaults = dict(epsilon=1.0, delta=1e-5, data_norm=3.0, pos_ratio=0.5,
                    solver=NoisySGDA(batch_size=8, n_iter=20), random_state=0)
    defaults.update(params)
    return DPAUCMaximizer(**defaults)


def _auc_private_ratio(**params):
    # Spends a slice of the budget on the class ratio: the budget check must cover it.
    return _auc(**{"pos_ratio": None, **params})


ESTIMATORS = [("DPAUCMaximizer", _auc), ("DPAUCMaximizer-private-ratio", _auc_private_ratio)]


def estimators_under_test():
    """``[(name, factory), ...]`` for ``pytest.mark.parametrize``."""
    return list(ESTIMATORS)
