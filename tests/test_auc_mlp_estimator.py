"""DPAUCMaximizer(scorer="mlp")."""

import numpy as np
import pytest
from sklearn.datasets import make_circles, make_moons
from sklearn.metrics import roc_auc_score

from skdpminimax import DPAUCMaximizer
from skdpminimax.solvers import NoisySGDA


def _data():
    X, y = make_moons(n_samples=300, noise=0.2, random_state=0)
    return X - X.mean(axis=0), y


def test_mlp_defaults_to_last_iterate_and_fits_nonlinear_data():
    # Concentric circles: no linear score ranks them, a small MLP does (epsilon=inf).
    X, y = make_circles(n_samples=300, noise=0.1, factor=0.5, random_state=0)
    kw = dict(data_norm=3.0, pos_ratio=0.5, random_state=0,
              solver=NoisySGDA(n_epochs=50, step_size=0.3, clip_w=10.0, clip_v=10.0,
                               average="last"))
    linear = DPAUCMaximizer(np.inf, **kw).fit(X, y)
    mlp = DPAUCMaximizer(np.inf, scorer="mlp", hidden_units=16, **kw).fit(X, y)
    auc_lin = roc_auc_score(y, linear.decision_function(X))
    auc_mlp = roc_auc_score(y, mlp.decision_function(X))
    assert auc_lin < 0.7 and auc_mlp > 0.98
    assert not hasattr(mlp, "coef_") and hasattr(linear, "coef_")
    assert mlp.scorer_params_.shape == (16 * (2 + 2),)
    default = DPAUCMaximizer(1.0, scorer="mlp", hidden_units=4, data_norm=3.0, pos_ratio=0.5,
                             random_state=0).fit(X, y)
    assert default.solver_.average == "last"
    # the MLP has no public solution scale: its "scaled" step would be "auto" anyway
    assert default.objective_.typical_solution_norm() is None
    lin_default = DPAUCMaximizer(1.0, data_norm=3.0, pos_ratio=0.5, random_state=0).fit(X, y)
    assert (lin_default.solver_.average, lin_default.solver_.step_size,
            lin_default.solver_.n_epochs) == ("uniform", "scaled", "auto")


def test_init_scale_scales_the_starting_weights():
    # With a vanishing step the released last iterate is the starting point.
    X, y = _data()
    kw = dict(scorer="mlp", hidden_units=4, data_norm=3.0, pos_ratio=0.5, random_state=3,
              solver=NoisySGDA(n_epochs=1, step_size=1e-12, average="last"))
    full = DPAUCMaximizer(np.inf, **kw).fit(X, y)
    half = DPAUCMaximizer(np.inf, init_scale=0.5, **kw).fit(X, y)
    np.testing.assert_allclose(half.scorer_params_, 0.5 * full.scorer_params_, rtol=1e-6)
    with pytest.raises(ValueError, match="init_scale"):
        DPAUCMaximizer(np.inf, init_scale=0.0, **kw).fit(X, y)


def test_mlp_private_fit_is_reproducible_and_uses_clips():
    X, y = _data()
    kw = dict(scorer="mlp", hidden_units=8, data_norm=3.0, pos_ratio=0.5, random_state=1)
    a = DPAUCMaximizer(1.0, **kw).fit(X, y)
    b = DPAUCMaximizer(1.0, **kw).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    assert a.calibration_.noise_multiplier > 0


def test_mlp_without_clip_norm_fails_before_spending():
    from diffprivlib.accountant import BudgetAccountant

    X, y = _data()
    acc = BudgetAccountant()
    model = DPAUCMaximizer(1.0, scorer="mlp", hidden_units=4, data_norm=3.0, pos_ratio=0.5,
                           solver=NoisySGDA(clip_w=None), accountant=acc)
    with pytest.raises(ValueError, match="clip_w"):
        model.fit(X, y)
    assert acc.total()[0] == 0
