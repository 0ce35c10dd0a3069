"""Samplers draw what their accounting event assumes."""

import numpy as np
import pytest

from skdpminimax.privacy import (
    FullBatch,
    PoissonSampler,
    ShuffledEpochs,
    WithoutReplacementSampler,
    make_sampler,
)


def test_poisson_inclusion_is_independent_bernoulli():
    n, m, T = 200, 20, 3000
    rng = np.random.default_rng(0)
    counts = np.zeros(n)
    sizes = []
    for idx in PoissonSampler(n, m).batches(rng, T):
        counts[idx] += 1
        sizes.append(len(idx))
        assert len(np.unique(idx)) == len(idx)  # an example joins a batch at most once
    q = m / n
    sizes = np.array(sizes)
    # batch size ~ Binomial(n, q): mean n q, variance n q (1 - q)
    assert abs(sizes.mean() - n * q) < 4 * np.sqrt(n * q * (1 - q) / T)
    assert sizes.var() == pytest.approx(n * q * (1 - q), rel=0.15)
    # every example is included with probability q
    freq = counts / T
    assert np.all(np.abs(freq - q) < 5 * np.sqrt(q * (1 - q) / T))


def test_poisson_crosses_chunk_boundaries():
    rng = np.random.default_rng(1)
    batches = list(PoissonSampler(50, 5).batches(rng, 2500))  # > one chunk of steps
    assert len(batches) == 2500
    assert all(b.max(initial=0) < 50 for b in batches)


def test_without_replacement_has_exact_size_and_uniform_inclusion():
    n, m, T = 100, 10, 4000
    rng = np.random.default_rng(2)
    counts = np.zeros(n)
    for idx in WithoutReplacementSampler(n, m).batches(rng, T):
        assert len(idx) == m and len(np.unique(idx)) == m
        counts[idx] += 1
    q = m / n
    assert np.all(np.abs(counts / T - q) < 5 * np.sqrt(q * (1 - q) / T))


def test_without_replacement_large_batch_path():
    rng = np.random.default_rng(3)
    for idx in WithoutReplacementSampler(20, 15).batches(rng, 50):  # m^2 > n path
        assert len(np.unique(idx)) == 15


def test_full_batch_and_make_sampler():
    assert list(FullBatch(5).batches(None, 3)) == [None, None, None]
    assert isinstance(make_sampler("poisson", 100, None), FullBatch)
    # a Poisson batch at least the (planned) size is rate 1, still add/remove-one
    for batch in (100, 150):
        sampler = make_sampler("poisson", 100, batch)
        assert isinstance(sampler, PoissonSampler) and sampler.sample_rate == 1.0
        assert sampler.normalizer == 100
    assert isinstance(make_sampler("without_replacement", 100, 100), FullBatch)
    assert isinstance(make_sampler("without_replacement", 100, 10), WithoutReplacementSampler)
    with pytest.raises(ValueError, match="Unknown sampler"):
        make_sampler("bootstrap", 100, 10)
    with pytest.raises(ValueError):
        PoissonSampler(10, 0)


def test_same_seed_same_batches():
    a = list(PoissonSampler(100, 10).batches(np.random.default_rng(7), 20))
    b = list(PoissonSampler(100, 10).batches(np.random.default_rng(7), 20))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_shuffled_epochs_use_each_example_at_most_once_per_epoch():
    n, m, epochs = 103, 10, 4
    sampler = make_sampler("shuffle", n, m)
    assert isinstance(sampler, ShuffledEpochs) and sampler.steps_per_epoch == 10
    steps = epochs * 10 - 3  # the last epoch is cut short
    batches = list(sampler.batches(np.random.default_rng(0), steps))
    assert len(batches) == steps and all(len(b) == m for b in batches)
    orders = []
    for e in range(epochs):
        flat = np.concatenate(batches[10 * e:10 * (e + 1)])
        assert len(np.unique(flat)) == len(flat)  # at most once in an epoch
        orders.append(flat)
    assert len(orders[0]) == 100  # n mod m = 3 rows sit the epoch out
    assert not np.array_equal(orders[0], orders[1])  # a fresh permutation per epoch
    # an example can affect one release per epoch the run touches
    assert sampler.releases_per_example(steps) == epochs
    assert sampler.releases_per_example(10) == 1 and sampler.releases_per_example(11) == 2
    assert not sampler.subsampled and sampler.neighboring_relation == "replace-one"


def test_shuffled_epochs_chunks_hold_exactly_their_steps_across_epochs():
    """A chunk holds min(chunk_steps, steps left) batches, across an epoch's end if need
    be (NSEG pairs a chunk's steps two by two: an epoch of 7 batches once cut its
    chunks at odd lengths and dropped a batch an epoch); the same batches whatever the
    chunk size, and within an epoch no row twice."""
    sampler = ShuffledEpochs(50, 7)  # 7 batches an epoch
    one_by_one = list(sampler.batches(np.random.default_rng(5), 23))
    chunked = []
    for indices, starts, stops in sampler.batch_chunks(np.random.default_rng(5), 23, 4):
        assert len(starts) == min(4, 23 - len(chunked))
        chunked += [indices[a:b] for a, b in zip(starts, stops)]
    assert len(chunked) == 23
    assert all(np.array_equal(a, b) for a, b in zip(one_by_one, chunked))
    for e in range(3):
        epoch = np.concatenate(chunked[7 * e:7 * (e + 1)])
        assert len(np.unique(epoch)) == len(epoch) == 49


def test_shuffled_epochs_count_whole_batches_in_n_epochs():
    """n_epochs under shuffled epochs means passes of n // m batches: ceil(E n / m)
    steps spilled into an epoch more, which the accountant charges in full (1,000 rows
    in batches of 64, one epoch: 16 steps, two epochs charged)."""
    from skdpminimax.objectives import SquareLossAUC
    from skdpminimax.privacy import PrivacyBudget
    from skdpminimax.solvers import NoisyExtragradient, NoisySGDA
    objective = SquareLossAUC(3, 0.5, data_norm=4.0, radius=10.0)
    budget = PrivacyBudget(1.0, 1e-5)
    for n, m, epochs, steps in [(1000, 64, 1, 15), (600, 32, 2, 36), (60000, 64, 15, 14055)]:
        cal = NoisySGDA(sampler="shuffle", batch_size=m, n_epochs=epochs).calibrate(
            objective, n, budget)
        assert (cal.n_steps, cal.n_compositions) == (steps, epochs)
        nseg = NoisyExtragradient(mode="multi_pass", sampler="shuffle", batch_size=m,
                                  n_epochs=epochs).calibrate(objective, n, budget)
        assert nseg.n_steps <= steps and nseg.n_compositions == epochs


def test_auto_epochs_end_on_a_whole_shuffled_epoch():
    """n_epochs="auto" lengthens the run towards 8,000 steps; under shuffled epochs it
    stops at the last whole epoch (1,000 rows in batches of 64: 15 a epoch, 7,995
    steps, 533 epochs charged, not 534)."""
    from skdpminimax.objectives import SquareLossAUC
    from skdpminimax.privacy import PrivacyBudget
    from skdpminimax.solvers import NoisySGDA
    objective = SquareLossAUC(3, 0.5, data_norm=4.0, radius=10.0)
    cal = NoisySGDA(sampler="shuffle", n_epochs="auto").calibrate(
        objective, 1000, PrivacyBudget(np.inf, 1e-5))
    assert (cal.n_steps, cal.n_compositions) == (7995, 533)
    cal = NoisySGDA(sampler="shuffle", n_epochs="auto").calibrate(
        objective, 1000, PrivacyBudget(50.0, 1e-5))
    assert cal.n_steps % 15 == 0
