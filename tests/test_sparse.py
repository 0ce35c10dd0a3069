"""Sparse X: the built-in estimators take it (as CSR) and fit exactly as on dense X."""

import numpy as np
import pytest
import scipy.sparse as sp
from diffprivlib.accountant import BudgetAccountant
from sklearn.datasets import make_classification, make_regression

from skdpminimax import DPAUCMaximizer, DPGroupFairRegressor, DPRobustClassifier
from skdpminimax.privacy.mechanisms import clip_rows, row_norms, squared_row_norms
from skdpminimax.solvers import NoisyExtragradient, NoisySGDA


@pytest.fixture(autouse=True)
def sparse_path(monkeypatch):
    """Keep these fits on the sparse code path: small sparse X is otherwise fitted
    dense (see test_small_sparse_x_is_fitted_dense)."""
    monkeypatch.setattr("skdpminimax.base._DENSIFY_MAX_ENTRIES", 0)


def _sparse_data(n=400, d=25, seed=0):
    rng = np.random.default_rng(seed)
    X, y = make_classification(n, d, random_state=seed)
    X[rng.random(X.shape) < 0.7] = 0.0
    X[3] = 0.0  # an empty row
    return X, y, rng.integers(0, 3, n)


def _models():
    kw = dict(epsilon=2.0, data_norm=4.0, random_state=0)
    yield "auc", lambda **o: DPAUCMaximizer(pos_ratio=0.5, **kw, **o), {}
    yield "auc-mlp", lambda **o: DPAUCMaximizer(pos_ratio=0.5, scorer="mlp", hidden_units=8,
                                                **kw, **o), {}
    yield "robust", lambda **o: DPRobustClassifier(**kw, **o), {"groups": True}
    yield "fair", lambda **o: DPGroupFairRegressor(bounds=(-300.0, 300.0), **kw, **o), {
        "regression": True}
    yield "fair-parity", lambda **o: DPGroupFairRegressor(
        bounds=(-300.0, 300.0), constraint="demographic_parity", **kw, **o), {"regression": True}


MODELS = list(_models())


def _fit_args(spec, X, y, g):
    if spec.get("regression"):
        Xr, yr = make_regression(X.shape[0], X.shape[1], random_state=0)
        Xr[X == 0] = 0.0
        return Xr, yr, {"sensitive_features": g}
    if spec.get("groups"):
        return X, y, {"sensitive_features": g}
    return X, y, {}


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("name, make, spec", MODELS, ids=[m[0] for m in MODELS])
def test_sparse_fit_equals_dense_fit(name, make, spec, fmt):
    # Same seed, same batches and noise: the sparse linear algebra gives the same model
    # to rounding (and the numpy loop on sparse X the same as the compiled kernel).
    X, y, g = _sparse_data()
    Xd, yd, kw = _fit_args(spec, X, y, g)
    Xs = sp.csr_matrix(Xd).asformat(fmt)
    before = Xs.copy()
    dense, sparse = make().fit(Xd, yd, **kw), make().fit(Xs, yd, **kw)
    out = "decision_function" if hasattr(dense, "decision_function") else "predict"
    a, b = getattr(dense, out)(Xd), getattr(sparse, out)(Xs)
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9 * np.abs(a).max())
    np.testing.assert_allclose(getattr(sparse, out)(Xd), b, rtol=1e-12, atol=1e-12)
    assert (sparse.calibration_, sparse.n_iter_) == (dense.calibration_, dense.n_iter_)
    assert (Xs != before).nnz == 0 and Xs.format == fmt  # the caller's X is untouched


@pytest.mark.parametrize("solver", ["nseg", "nispp", "recursive", "phased_output_perturbation"])
def test_sparse_fit_equals_dense_fit_other_solvers(solver):
    X, y, _ = _sparse_data()
    make = lambda: DPAUCMaximizer(2.0, data_norm=4.0, pos_ratio=0.5, solver=solver,  # noqa: E731
                                  random_state=0)
    a = make().fit(X, y).decision_function(X)
    b = make().fit(sp.csr_matrix(X), y).decision_function(X)
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9 * np.abs(a).max())


@pytest.mark.parametrize("solver", [NoisySGDA(backend="numba"),
                                    NoisyExtragradient(mode="multi_pass", backend="numba")])
def test_numba_backend_with_sparse_x_is_refused_before_spending(monkeypatch, solver):
    X, y, _ = _sparse_data()
    acc = BudgetAccountant()
    model = DPAUCMaximizer(1.0, data_norm=4.0, pos_ratio=0.5, accountant=acc, solver=solver)
    with pytest.raises(ValueError, match="dense X"):
        model.fit(sp.csr_matrix(X), y)
    assert acc.spent_budget == [] and not hasattr(model, "coef_")
    # sparse X small enough to be densified too: which is refused must not follow the
    # row count, private under add/remove-one (a review: 4,096 rows fitted, 4,097 not)
    monkeypatch.setattr("skdpminimax.base._DENSIFY_MAX_ENTRIES", 1 << 22)
    with pytest.raises(ValueError, match="dense X"):
        model.fit(sp.csr_matrix(X[:20]), y[:20])
    assert acc.spent_budget == []


def test_sparse_row_helpers_match_dense():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(8, 6)) * (rng.random((8, 6)) < 0.4)
    X[[2, 7]] = 0.0  # empty rows, one of them last
    X[0, 0] = 1e300  # a norm beyond float range after squaring
    Xs = sp.csr_matrix(X)
    np.testing.assert_array_equal(row_norms(Xs), row_norms(X))
    assert row_norms(Xs)[0] == 1e300
    small = X[1:]
    np.testing.assert_allclose(squared_row_norms(sp.csr_matrix(small)),
                               np.einsum("ij,ij->i", small, small), rtol=1e-15)
    clipped = clip_rows(Xs, 1.0)
    assert sp.issparse(clipped)
    np.testing.assert_allclose(clipped.toarray(), clip_rows(X, 1.0), rtol=1e-15)
    assert row_norms(clipped).max() <= 1.0 + 1e-12
    np.testing.assert_array_equal(Xs.toarray(), X)  # not mutated


def test_small_sparse_x_is_fitted_dense(monkeypatch):
    # Small sparse X runs the dense path (compiled kernel, no CSR row slicing), with
    # the same model as the sparse path; above the limit it stays sparse.
    import skdpminimax.base as base

    X, y, _ = _sparse_data()
    Xs = sp.csr_matrix(X)
    seen = []
    original = base.SaddleData

    def recording(X, *args, **kwargs):
        seen.append(sp.issparse(X))
        return original(X, *args, **kwargs)

    monkeypatch.setattr(base, "SaddleData", recording)
    make = dict((m[0], m[1]) for m in MODELS)["auc"]
    sparse_path = make().fit(Xs, y)  # the fixture's limit 0: sparse
    monkeypatch.setattr(base, "_DENSIFY_MAX_ENTRIES", X.size)
    dense_path = make().fit(Xs, y)
    assert seen == [True, False]
    np.testing.assert_allclose(dense_path.decision_function(Xs),
                               sparse_path.decision_function(Xs), rtol=1e-9, atol=1e-9)
    monkeypatch.setattr(base, "_DENSIFY_MAX_ENTRIES", X.size - 1)
    make().fit(Xs, y)
    assert seen[-1] is True


def test_sparse_X_is_densified_by_its_shape_alone(monkeypatch):
    """A scale probe: a 5,000 x 3,000 CSR at 1% density (1.7 MB) was made dense (120 MB
    and more) under the limit of 2^24 entries, now 2^22. A review: the decision must not
    read the number of stored entries, which is private (it decides between the numba
    refusal and the runners): two CSR of one shape, 1% and 50% dense, go the same way."""
    import skdpminimax.base as base

    monkeypatch.setattr(base, "_DENSIFY_MAX_ENTRIES", 1 << 22)  # the module fixture's is 0
    for shape in ((200, 100), (5000, 3000)):
        ways = {sp.issparse(base._dense_if_small(
            sp.random(*shape, density=density, format="csr", random_state=0)))
            for density in (0.01, 0.5)}
        assert len(ways) == 1
    assert not sp.issparse(base._dense_if_small(sp.random(200, 100, density=0.01,
                                                          format="csr")))
    assert sp.issparse(base._dense_if_small(sp.random(5000, 3000, density=0.01,
                                                      format="csr")))


def test_row_norms_in_blocks_match_the_direct_computation(monkeypatch):
    """row_norms scales each row by its largest entry in blocks of rows (no X-sized
    temporaries); the norms are those of numpy, and huge finite rows do not overflow."""
    from skdpminimax.privacy import mechanisms

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 7)) * rng.uniform(0, 10, size=(1000, 1))
    X[3] = 0.0
    X[5, 2] = 1e300
    monkeypatch.setattr(mechanisms, "_ROW_BLOCK_ENTRIES", 50)  # 7 rows a block
    norms = mechanisms.row_norms(X)
    ok = np.arange(1000) != 5
    np.testing.assert_allclose(norms[ok], np.linalg.norm(X[ok], axis=1), rtol=1e-12)
    assert norms[5] == pytest.approx(1e300, rel=1e-12) and norms[3] == 0.0
    # clip_rows copies only when a row is clipped, and never edits the caller's X
    inside = X[ok][:10] / 1e3
    assert mechanisms.clip_rows(inside, 1e6) is inside or np.shares_memory(
        mechanisms.clip_rows(inside, 1e6), inside)
    before = X.copy()
    clipped = mechanisms.clip_rows(X, 1.0)
    np.testing.assert_array_equal(X, before)
    assert np.linalg.norm(clipped, axis=1).max() <= 1.0 + 1e-12


def test_sparse_row_norms_and_clip_make_no_copy_of_x(monkeypatch):
    """A scale probe: a fit on a 50,000 x 200,000 CSR at 1% density (1.2 GB) peaked at
    3.7 GB: row_norms made three X-sized temporaries (abs, a scaled copy, its square) and
    clip_rows kept a copy of X with no row to clip. Now the norms are computed in blocks
    of rows from the stored entries, and X with nothing to clip is shared read-only."""
    import tracemalloc

    from skdpminimax.privacy import mechanisms

    monkeypatch.setattr(mechanisms, "_ROW_BLOCK_ENTRIES", 1000)
    X = sp.random(2000, 5000, density=0.02, format="csr", random_state=0)  # 200,000 entries
    X.data -= 0.5
    expected = np.linalg.norm(X.toarray(), axis=1)
    before = X.copy()
    tracemalloc.start()
    try:
        norms = row_norms(X)
        clipped = clip_rows(X, 1e3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X.data.nbytes / 4
    np.testing.assert_allclose(norms, expected, rtol=1e-12)
    assert np.shares_memory(clipped.data, X.data) and not clipped.data.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        clipped.data[0] = 1.0
    assert (clipped != before).nnz == 0 and (X != before).nnz == 0
    # a row to clip: a clipped copy, X untouched
    clipped = clip_rows(X, 0.5)
    assert not np.shares_memory(clipped.data, X.data) and (X != before).nnz == 0
    np.testing.assert_allclose(row_norms(clipped), np.minimum(expected, 0.5), rtol=1e-12)
    # duplicate entries (summed), empty rows and blocks of one row: the dense norms
    monkeypatch.setattr(mechanisms, "_ROW_BLOCK_ENTRIES", 2)
    dup = sp.csr_matrix((np.array([3.0, 4.0, -1.0, 2.0, 2.0, 1e300]),
                         np.array([0, 0, 2, 1, 1, 3]), np.array([0, 3, 3, 5, 6])),
                        shape=(4, 4))
    np.testing.assert_allclose(row_norms(dup), [np.sqrt(50.0), 0.0, 4.0, 1e300], rtol=1e-15)


def test_sparse_squared_row_norms_make_no_copy_of_x(monkeypatch):
    """A memory trace of benchmarks/memory_scale.py: the AUC objective's prepare took the
    squared row norms of a sparse X as X.multiply(X), an X-sized temporary (240 MB for a
    120 MB X). Now in blocks of rows from the stored entries, as row_norms."""
    import tracemalloc

    from skdpminimax.privacy import mechanisms
    from skdpminimax.privacy.mechanisms import squared_row_norms

    monkeypatch.setattr(mechanisms, "_ROW_BLOCK_ENTRIES", 1000)
    X = sp.random(2000, 5000, density=0.02, format="csr", random_state=1)  # 200,000 entries
    X.data -= 0.5
    expected = np.einsum("ij,ij->i", X.toarray(), X.toarray())
    tracemalloc.start()
    try:
        sq = squared_row_norms(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X.data.nbytes / 4
    np.testing.assert_allclose(sq, expected, rtol=1e-12)
    # duplicate entries (summed), empty rows, blocks of one row, CSC and COO input
    monkeypatch.setattr(mechanisms, "_ROW_BLOCK_ENTRIES", 2)
    dup = sp.csr_matrix((np.array([3.0, 4.0, -1.0, 2.0, 2.0, 5.0]),
                         np.array([0, 0, 2, 1, 1, 3]), np.array([0, 3, 3, 5, 6])),
                        shape=(4, 4))
    for M in (dup, dup.tocsc(), dup.tocoo()):
        np.testing.assert_allclose(squared_row_norms(M), [50.0, 0.0, 16.0, 25.0], rtol=1e-15)
