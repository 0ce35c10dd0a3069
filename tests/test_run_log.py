"""The estimators compare what a solve's gradient oracles did with the calibration the
solver returns, and refuse a run that departs from it before releasing anything
(skdpminimax.solvers.run_log). The runs below are a user's solver written from the
docs, with one slip each, as an extension review measured them: three times the
recorded steps (epsilon 1.73 for a nominal 0.95), a batch doubled against the recorded
rate (2.04), the dual block's noise forgotten (infinity)."""

import dataclasses
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import PrivacyLeakWarning
from sklearn.datasets import make_classification

from skdpminimax import DPAUCMaximizer, DPGroupFairRegressor, DPRobustClassifier
from skdpminimax._compat import spawn
from skdpminimax.privacy.samplers import make_sampler
from skdpminimax.solvers import (
    NoisyExtragradient,
    NoisyGradientOracle,
    NoisySGDA,
    PrivateSolver,
    SolverResult,
)
from skdpminimax.solvers.oracle import resolve_clip_norms
from skdpminimax.solvers.run_log import check_run_matches_record, oracle_log

BATCH, STEPS = 32, 40


class PlainSGDA(PrivateSolver):
    """Projected simultaneous SGDA from the library's parts, with an optional slip."""

    def __init__(self, slip=""):
        self.slip = slip

    def _sampler_name(self):
        return "shuffle" if self.slip.startswith("shuffled epochs") else "poisson"

    def _recorder(self):
        return NoisySGDA(batch_size=BATCH, n_iter=STEPS, sampler=self._sampler_name(),
                         clip_w=1.0, clip_v=1.0)

    def _in_halves(self):
        return self.slip in ("disjoint halves in threads", "three times the steps in threads")

    def calibrate(self, objective, n_samples, budget):
        # the halves' runs are planned on half the size, each on its own rows
        n_plan = n_samples // 2 if self._in_halves() else n_samples
        record = self._recorder().calibrate(objective, n_plan, budget)
        z_w, z_v = record.block_noise_multipliers
        if self.slip == "record's multiplier halved":  # and the run noised to match it
            return dataclasses.replace(record, noise_multiplier=record.noise_multiplier / 2,
                                       block_noise_multipliers=(z_w / 2, z_v / 2))
        if self.slip == "blocks split below the joint":
            return dataclasses.replace(record, block_noise_multipliers=(z_w, z_v / 2))
        if self.slip == "record rebuilt by hand":  # the same accounting: certifies
            return dataclasses.replace(record, pld_interval=0.0, composed_with=())
        if self.slip == "no split recorded, a tenth of the noise":
            return dataclasses.replace(record, block_noise_multipliers=())
        if self.slip == "one block multiplier recorded":
            return dataclasses.replace(record, block_noise_multipliers=(record.noise_multiplier,))
        return record

    def solve(self, objective, data, budget, rng, *, init=None):
        record = self.calibrate(objective, data.planning_size, budget)
        if self._in_halves():
            # disjoint halves: parallel composition, private at the record's steps
            halves = np.array_split(rng.permutation(data.n_samples), 2)
            rngs = spawn(rng, 2)
            n_plan = data.planning_size // 2
            with ThreadPoolExecutor(2) as pool:
                runs = list(pool.map(
                    lambda h, r: self._run(objective, data.take(h), record, r, n_plan),
                    halves, rngs))
            w, v = np.mean([r[0] for r in runs], axis=0), np.mean([r[1] for r in runs], axis=0)
            return SolverResult(w=w, v=v, n_iter=STEPS, calibration=record)
        if self.slip == "a fresh copy of the rows per epoch":  # the record is one epoch's
            for _ in range(3):
                w, v = self._run(objective, data.take(rng.permutation(data.n_samples)),
                                 record, rng, data.planning_size)
            return SolverResult(w=w, v=v, n_iter=STEPS, calibration=record)
        w, v = self._run(objective, data, record, rng, data.planning_size)
        return SolverResult(w=w, v=v, n_iter=STEPS, calibration=record)

    def _run(self, objective, data, record, rng, n_plan):
        if self.slip == "no split recorded, a tenth of the noise":
            z_w = z_v = 0.1 * record.noise_multiplier * 2 ** 0.5
        elif self.slip == "one block multiplier recorded":  # and the dual left unnoised
            z_w, z_v = record.block_noise_multipliers[0], 0.0
        else:
            z_w, z_v = record.block_noise_multipliers
        if self.slip == "dual noise forgotten":
            z_v = 0.0
        batch = {"batch doubled": 2 * BATCH, "smaller batches": BATCH // 2}.get(self.slip, BATCH)
        steps = 3 * STEPS if self.slip.startswith("three times the steps") else STEPS
        sampler = make_sampler(self._sampler_name(), n_plan, batch).over_rows(data.n_samples)
        clips = resolve_clip_norms(objective, 1.0, 1.0)
        oracle = NoisyGradientOracle(objective, data, sampler, (z_w, z_v), *clips, rng)
        exact = NoisyGradientOracle(objective, data, sampler, (0.0, 0.0), *clips, rng)
        w, v = objective.init_params(rng)
        chunk = None
        batches = sampler.batches(rng, steps)
        if self.slip == "shuffled epochs, a fresh permutation per step":
            batches = (next(sampler.batches(rng, 1)) for _ in range(steps))
        if self.slip == "each batch released twice":  # half the batches, the same releases
            batches = [idx for idx in sampler.batches(rng, steps // 2) for _ in range(2)]
        if self.slip == "batches drawn with rng.choice":  # not the sampler's scheme
            batches = (rng.choice(data.n_samples, batch, replace=False) for _ in range(steps))
        for t, idx in enumerate(batches):
            if self.slip == "noise skipped":
                g_w, g_v = oracle.noisy_grads(w, v, idx, None)
            elif self.slip == "one noise row reused":
                chunk = oracle.noise_block(1, w.size, v.size) if chunk is None else chunk
                g_w, g_v = oracle.noisy_grads(w, v, idx, chunk[0])
            elif self.slip == "all rows each step":
                g_w, g_v = oracle(w, v, None)
            elif self.slip == "noise drawn in chunks of 16":  # the last chunk part unused
                if t % 16 == 0:
                    chunk = oracle.noise_block(16, w.size, v.size)
                g_w, g_v = oracle.noisy_grads(w, v, idx, chunk[t % 16])
            elif self.slip == "noise drawn, then the oracle called":  # rows left unused
                oracle.noise_block(1, w.size, v.size)
                g_w, g_v = oracle(w, v, idx)
            elif self.slip == "an exact oracle for the dual":
                g_w, _ = oracle(w, v, idx)
                _, g_v = exact(w, v, idx)
            else:
                g_w, g_v = oracle(w, v, idx)
            w = objective.primal_set.project(w - 0.1 * g_w)
            v = objective.dual_set.project(v + 0.1 * g_v)
        return w, v


SLIPS = {
    "three times the steps": "exposed a row to 120 noisy gradient releases where its "
                             "calibration certifies 40",
    "one noise row reused": "used 40 noise rows from an oracle that drew 1",
    "all rows each step": "of all rows",
    "a fresh copy of the rows per epoch": "exposed a row to 120 noisy",
    # oracles built in a solver's own threads are logged through the data they run on
    "three times the steps in threads": "exposed a row to 120 noisy",
    "batch doubled": "drew batches of 64",
    "dual noise forgotten": "noised the dual block at multiplier 0",
    "noise skipped": "without noise from an oracle",
    "no split recorded, a tenth of the noise": "joint block at multiplier",
    "one block multiplier recorded": "1 block multiplier",
    "an exact oracle for the dual": "exact .noise-free. gradients",
    "record's multiplier halved": "but its multiplier .* over 40 steps certifies",
    "blocks split below the joint": "which combine to",
    "batches drawn with rng.choice": "released noisy gradients of 1280 rows in batches, "
                                     "but the 'poisson' samplers handed out only 0 rows",
    "each batch released twice": "handed out only",
    # 40 steps of 32 of 400 rows: ceil(40 / 12) = 4 epochs composed
    "shuffled epochs, a fresh permutation per step": "put a row in [0-9]+ noisy batches "
                                                     "where its calibration composes 4",
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
        with pytest.raises(RuntimeError, match="noisy gradient releases where its calibration"):
            _fit(model, X, y, **kw)


def test_the_honest_run_and_the_built_in_solvers_pass():
    """No refusal where the run is the record's: the solver above without a slip, with
    a record rebuilt by hand, on disjoint halves in threads (parallel composition),
    with smaller batches than recorded, with noise drawn ahead and partly unused; and
    the built-in solvers on every estimator (NSEG's two oracles share one count,
    recursive regularization's rounds run on their own chunks)."""
    solvers = [PlainSGDA(), PlainSGDA("record rebuilt by hand"),
               PlainSGDA("disjoint halves in threads"), PlainSGDA("smaller batches"),
               PlainSGDA("noise drawn in chunks of 16"), PlainSGDA("shuffled epochs"),
               PlainSGDA("noise drawn, then the oracle called"), "sgda", "gda", "nseg", "nseg_multipass", "nispp", "recursive",
               "output_perturbation", "phased_output_perturbation",
               NoisySGDA(sampler="without_replacement", n_epochs=2),
               NoisySGDA(sampler="shuffle", n_epochs=3),
               NoisyExtragradient(mode="multi_pass", sampler="shuffle", n_epochs=3)]
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
    assert list(oracles) == [noisy, quiet]
    # 3 rows used by the calls; the 5 drawn by noise_block were never used
    assert (noisy.n_used, noisy.n_releases, quiet.n_releases) == (3, 3, 0)
    assert noisy.n_drawn >= 8
    NoisyGradientOracle(objective, data, sampler, (1.0, 1.0), 1.0, 1.0, rng)
    assert len(oracles) == 2  # built after the block: not logged
    record = PlainSGDA()._recorder().calibrate(objective, 100, _budget())
    z_w, z_v = record.block_noise_multipliers
    # A record of 40 steps covers 8 releases at its own multipliers, not at less noise.
    fitting = NoisyGradientOracle(objective, data, sampler.__class__(100, BATCH),
                                  (z_w, z_v), 1.0, 1.0, rng)
    fitting.n_used = fitting.n_drawn = STEPS
    check_run_matches_record(PlainSGDA(), record, [fitting])
    fitting.n_used = fitting.n_drawn = STEPS + 1
    with pytest.raises(RuntimeError, match="41 noisy gradient releases"):
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


def test_a_copy_of_the_data_does_not_carry_the_run_log():
    """Pickled or deep-copied rows (another process) keep every field but the log,
    whose oracles could not report to it; a pickle of the older slots still loads."""
    import copy
    import pickle

    from skdpminimax.objectives.base import SaddleData
    from skdpminimax.solvers.run_log import RunLog

    data = SaddleData(np.ones((4, 2)), np.ones(4), public_size=9, run_log=RunLog(4),
                      row_ids=np.arange(4))
    for copied in (pickle.loads(pickle.dumps(data)), copy.deepcopy(data)):
        assert copied.run_log is None and copied.public_size == 9
        np.testing.assert_array_equal(copied.row_ids, np.arange(4))
    older = SaddleData.__new__(SaddleData)
    older.__setstate__((None, {"X": np.ones((2, 2)), "y": None, "groups": None,
                               "aux": None, "public_size": None}))
    assert older.run_log is None and older.take(np.array([1])).n_samples == 1


class ForgetsTheExtrapolationRatio(NoisyExtragradient):
    """Records NSEG's calibration with extrapolation noise (ratios (2, 1)) but runs
    every release at the ratio-1 multiplier: the floor check alone passes it."""

    def solve(self, objective, data, budget, rng, *, init=None):
        record = self.calibrate(objective, data.planning_size, budget)
        flat = dataclasses.replace(record, noise_ratios=(1.0, 1.0))
        self.calibrate = lambda *args, **kwargs: flat
        try:
            result = super().solve(objective, data, budget, rng, init=init)
        finally:
            del self.calibrate
        return dataclasses.replace(result, calibration=record)


def test_releases_below_a_recorded_noise_ratio_are_refused():
    for model, X, y, kw in _problems(ForgetsTheExtrapolationRatio(
            mode="multi_pass", extrapolation_noise=2.0)):
        with pytest.raises(RuntimeError, match="less than 2 times the recorded noise"):
            _fit(model, X, y, **kw)
    # the same solver without the slip: NSEG with its extrapolation noise, accepted
    for model, X, y, kw in _problems(NoisyExtragradient(mode="multi_pass",
                                                        extrapolation_noise=2.0)):
        _fit(model, X, y, **kw)
        assert model.calibration_.noise_ratios == (2.0, 1.0)


def test_full_batches_pass_whatever_indices_the_solver_passes():
    """A full-batch run that passes idx=np.arange(n) rather than None releases the
    same gradients; the samplers' tally (FullBatch yields None) must not refuse it."""
    X, y = make_classification(100, 3, n_informative=2, n_redundant=0, random_state=0)
    from skdpminimax.objectives import SquareLossAUC
    from skdpminimax.objectives.base import SaddleData

    objective = SquareLossAUC(3, 0.5, 4.0, 2.0)
    solver = NoisySGDA(batch_size=None, n_iter=5, clip_w=1.0, clip_v=1.0)
    record = solver.calibrate(objective, 100, _budget())
    rng = np.random.default_rng(0)
    with oracle_log(100) as log:
        oracle = NoisyGradientOracle(objective, SaddleData(X, 2 * y - 1),
                                     make_sampler("full", 100), record.block_noise_multipliers,
                                     1.0, 1.0, rng)
        w, v = objective.init_params(rng)
        for _ in range(5):
            oracle(w, v, np.arange(100))
        check_run_matches_record(solver, record, log)
