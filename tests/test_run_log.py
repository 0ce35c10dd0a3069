"""The estimators compare what a solve's gradient oracles did with the calibration the
solver returns, and refuse a run that departs from it before releasing anything
(skdpminimax.solvers.run_log). The runs below are a user's solver written from the
docs, with one slip each, as an extension review measured them: three times the
recorded steps (epsilon 1.73 for a nominal 0.95), a batch doubled against the recorded
rate (2.04), the dual block's noise forgotten (infinity)."""

import dataclasses
import warnings

import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import PrivacyLeakWarning
from sklearn.datasets import make_classification

from skdpminimax import DPAUCMaximizer, DPGroupFairRegressor, DPRobustClassifier
from skdpminimax.privacy.samplers import make_sampler
from skdpminimax.solvers import NoisyGradientOracle, NoisySGDA, PrivateSolver, SolverResult
from skdpminimax.solvers.oracle import resolve_clip_norms
from skdpminimax.solvers.run_log import check_run_matches_record, oracle_log

BATCH, STEPS = 32, 40


class PlainSGDA(PrivateSolver):
    """Projected simultaneous SGDA from the library's parts, with an optional slip."""

    def __init__(self, slip=None):
        self.slip = slip

    def _recorder(self):
        return NoisySGDA(batch_size=BATCH, n_iter=STEPS, sampler="poisson", clip_w=1.0,
                         clip_v=1.0)

    def calibrate(self, objective, n_samples, budget):
        record = self._recorder().calibrate(objective, n_samples, budget)
        z_w, z_v = record.block_noise_multipliers
        if self.slip == "record's multiplier halved":  # and the run noised to match it
            return dataclasses.replace(record, noise_multiplier=record.noise_multiplier / 2,
                                       block_noise_multipliers=(z_w / 2, z_v / 2))
        if self.slip == "blocks split below the joint":
            return dataclasses.replace(record, block_noise_multipliers=(z_w, z_v / 2))
        if self.slip == "record rebuilt by hand":  # the same accounting: certifies
            return dataclasses.replace(record, pld_interval=0.0, composed_with=())
        return record

    def solve(self, objective, data, budget, rng, *, init=None):
        record = self.calibrate(objective, data.planning_size, budget)
        z_w, z_v = record.block_noise_multipliers
        if self.slip == "dual noise forgotten":
            z_v = 0.0
        batch = 2 * BATCH if self.slip == "batch doubled" else BATCH
        steps = 3 * STEPS if self.slip == "three times the steps" else STEPS
        sampler = make_sampler("poisson", data.planning_size, batch).over_rows(data.n_samples)
        clips = resolve_clip_norms(objective, 1.0, 1.0)
        oracle = NoisyGradientOracle(objective, data, sampler, (z_w, z_v), *clips, rng)
        w, v = objective.init_params(rng)
        for idx in sampler.batches(rng, steps):
            if self.slip == "noise skipped":
                g_w, g_v = oracle.noisy_grads(w, v, idx, None)
            else:
                g_w, g_v = oracle(w, v, idx)
            w = objective.primal_set.project(w - 0.1 * g_w)
            v = objective.dual_set.project(v + 0.1 * g_v)
        return SolverResult(w=w, v=v, n_iter=steps, calibration=record)


SLIPS = {
    "three times the steps": "released 120 noisy gradients where its calibration certifies 40",
    "batch doubled": "drew batches of 64",
    "dual noise forgotten": "noised the dual block at multiplier 0",
    "noise skipped": "without noise from an oracle",
    "record's multiplier halved": "but its multiplier .* over 40 steps certifies",
    "blocks split below the joint": "which combine to",
}


def _fit(model, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return model.fit(X, y, **kw)


def _problems(solver):
    X, y = make_classification(400, 5, random_state=0)
    groups = (X[:, 1] > 0).astype(int)
    def common():  # a ledger of its own per model
        return dict(epsilon=1.0, delta=1e-5, solver=solver, random_state=0,
                    accountant=BudgetAccountant())

    yield DPAUCMaximizer(data_norm=4.0, pos_ratio=0.5, **common()), X, y, {}
    yield DPRobustClassifier(data_norm=4.0, **common()), X, y, {}
    yield (DPGroupFairRegressor(data_norm=4.0, bounds=(-3, 3), **common()), X,
           X[:, 0] + 0.1 * y, {"sensitive_features": groups})


@pytest.mark.parametrize("slip", sorted(SLIPS))
def test_a_run_that_departs_from_its_record_is_not_released(slip):
    for model, X, y, kw in _problems(PlainSGDA(slip)):
        with pytest.raises(RuntimeError, match=SLIPS[slip]):
            _fit(model, X, y, **kw)
        assert model.accountant.total()[0] == pytest.approx(1.0)  # charged, nothing fitted
        assert not hasattr(model, "coef_")


class RestartsThrice(NoisySGDA):
    """Reruns its whole run three times on the same rows, each from the last point:
    three oracles, each within the record, 3 n_steps releases of the same rows."""

    def solve(self, objective, data, budget, rng, *, init=None):
        for _ in range(3):
            result = super().solve(objective, data, budget, rng, init=init)
            init = (result.w, result.v)
        return result


def test_a_run_restarted_on_the_same_rows_adds_up():
    for model, X, y, kw in _problems(RestartsThrice(batch_size=BATCH, n_epochs=1)):
        with pytest.raises(RuntimeError, match="noisy gradients where its calibration"):
            _fit(model, X, y, **kw)


def test_the_honest_run_and_the_built_in_solvers_pass():
    """No refusal where the run is the record's: the solver above without a slip, and
    the built-in solvers on every estimator (NSEG's two oracles share one count,
    recursive regularization's rounds run on their own chunks)."""
    solvers = [PlainSGDA(), PlainSGDA("record rebuilt by hand"), "sgda", "gda", "nseg", "nseg_multipass", "nispp", "recursive",
               "output_perturbation", "phased_output_perturbation",
               NoisySGDA(sampler="without_replacement", n_epochs=2)]
    for solver in solvers:
        for model, X, y, kw in _problems(solver):
            _fit(model, X, y, **kw)
            assert np.all(np.isfinite(model.coef_))


def test_the_log_counts_each_oracles_releases():
    """Rows drawn with noise_block, and calls of the oracle, are releases; a noise-free
    oracle records none and is not checked; a log closes with its block."""
    X, y = make_classification(100, 3, n_informative=2, n_redundant=0, random_state=0)
    y = 2 * y - 1
    from skdpminimax.objectives import SquareLossAUC
    from skdpminimax.objectives.base import SaddleData

    objective = SquareLossAUC(3, 0.5, 4.0, 2.0)
    data = SaddleData(X, y)
    sampler = make_sampler("poisson", 100, 10)
    rng = np.random.default_rng(0)
    with oracle_log() as oracles:
        noisy = NoisyGradientOracle(objective, data, sampler, (1.0, 2.0), 1.0, 1.0, rng)
        quiet = NoisyGradientOracle(objective, data, sampler, (0.0, 0.0), 1.0, 1.0, rng)
        w, v = objective.init_params(rng)
        noisy.noise_block(5, w.size, v.size)
        for idx in sampler.batches(rng, 3):
            noisy(w, v, idx)
            quiet(w, v, idx)
    assert oracles == [noisy, quiet]
    assert (noisy.n_releases, quiet.n_releases) == (8, 0)
    NoisyGradientOracle(objective, data, sampler, (1.0, 1.0), 1.0, 1.0, rng)
    assert len(oracles) == 2  # built after the block: not logged
    record = PlainSGDA()._recorder().calibrate(objective, 100, _budget())
    z_w, z_v = record.block_noise_multipliers
    # A record of 40 steps covers 8 releases at its own multipliers, not at less noise.
    fitting = NoisyGradientOracle(objective, data, sampler.__class__(100, BATCH),
                                  (z_w, z_v), 1.0, 1.0, rng)
    fitting.n_releases = STEPS
    check_run_matches_record(PlainSGDA(), record, [fitting])
    fitting.n_releases = STEPS + 1
    with pytest.raises(RuntimeError, match="41 noisy gradients"):
        check_run_matches_record(PlainSGDA(), record, [fitting])
    weaker = NoisyGradientOracle(objective, data, sampler.__class__(100, BATCH),
                                 (0.99 * z_w, z_v), 1.0, 1.0, rng)
    with pytest.raises(RuntimeError, match="primal block"):
        check_run_matches_record(PlainSGDA(), record, [weaker])


def _budget():
    from skdpminimax.privacy import PrivacyBudget

    return PrivacyBudget(1.0, 1e-5)


def test_a_record_not_issued_by_the_library_is_recertified():
    """A record the library certified is trusted as is; one rebuilt by hand (another
    pld_interval) is not issued, and is recomputed: accepted at its own multiplier,
    refused at 0.9 of it."""
    from skdpminimax.privacy.calibration import record_is_issued
    from skdpminimax.solvers.run_log import check_record_certifies

    X, y = make_classification(100, 3, n_informative=2, n_redundant=0, random_state=0)
    from skdpminimax.objectives import SquareLossAUC

    objective = SquareLossAUC(3, 0.5, 4.0, 2.0)
    budget = _budget()
    record = PlainSGDA()._recorder().calibrate(objective, 1000, budget)
    assert record_is_issued(record)
    rebuilt = dataclasses.replace(record, pld_interval=0.0)
    assert not record_is_issued(rebuilt)
    check_record_certifies(PlainSGDA(), rebuilt, budget)
    z = record.noise_multiplier
    weaker = dataclasses.replace(rebuilt, noise_multiplier=0.9 * z,
                                 block_noise_multipliers=tuple(
                                     0.9 * b for b in record.block_noise_multipliers))
    with pytest.raises(RuntimeError, match="certifies"):
        check_record_certifies(PlainSGDA(), weaker, budget)
