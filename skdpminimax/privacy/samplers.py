"""Batch samplers, each paired with the privacy-accounting event it justifies.

The sampler a solver draws its batches from is the *same object* that tells the
accountant how the data were sampled, so the code cannot use one scheme and
account for another.

=====================  ==================  ============================  ==========
sampler                neighbouring        sensitivity of a clipped sum  accounting
=====================  ==================  ============================  ==========
``FullBatch``          replace-one         2 C                           PLD / RDP
``PoissonSampler``     add/remove-one      C                             PLD / RDP
``WithoutReplacement`` replace-one         2 C                           RDP (WBK)
``DisjointBatches``    replace-one         2 C                           PLD / RDP
``ShuffledEpochs``     replace-one         2 C                           PLD / RDP
=====================  ==================  ============================  ==========

``C`` is the per-example clip norm of a block. ``n_samples`` is the size a sampler
is *planned* on: its sampling rate and, through the solvers, the number of steps.
Under replace-one neighbours both data sets have the same size, so the data's own
size is safe to use. Under add/remove-one (Poisson) it is not: the estimators plan on
a public size (declared by the user, or a private count; see
:mod:`skdpminimax.base`), and :meth:`over_rows` makes the planned sampler draw from
the rows actually present. ``releases_per_example(n_steps)`` is how many of the
``n_steps`` releases one example can affect: the number of times the accountant
composes the per-step event (``n_steps``, except for disjoint batches, where
parallel composition makes it 1, and for shuffled epochs, where it makes it the
number of epochs the run touches).
"""

import math
import threading
from collections import Counter

import dp_accounting
import numpy as np

__all__ = [
    "FullBatch",
    "PoissonSampler",
    "WithoutReplacementSampler",
    "DisjointBatches",
    "ShuffledEpochs",
    "make_sampler",
]

# Steps whose batches are drawn at once: bounds memory for long runs.
_CHUNK_STEPS = 1024

# Rows yielded in batches by the library's samplers, by sampler name, in this
# process: the estimators compare the rows their oracles released gradients of with
# what was yielded during the fit (skdpminimax.solvers.run_log).
_YIELDED = Counter()
_YIELDED_LOCK = threading.Lock()


def rows_yielded():
    """Rows yielded so far in batches, by sampler name (a copy)."""
    with _YIELDED_LOCK:
        return Counter(_YIELDED)


class _Sampler:
    """Common interface: ``batches(rng, n_steps)``, ``batch_chunks(rng, n_steps, chunk_steps)``
    and ``dp_event(noise_multiplier)``.

    ``batch_chunks`` yields the batches of up to ``chunk_steps`` consecutive steps at
    once as ``(indices, starts, stops)``: step ``j`` of the chunk uses rows
    ``indices[starts[j]:stops[j]]`` (``indices`` is ``None`` when every step uses all
    rows). ``batches`` yields the same batches one step at a time, from the same
    random draws.
    """

    name = None
    neighboring_relation = None
    sensitivity_factor = None  # clipped-sum sensitivity in units of the clip norm
    accountings = ("pld", "rdp")
    # Whether dp_event claims amplification by subsampling (a rate below 1 matters).
    subsampled = True

    def __init__(self, n_samples, batch_size=None):
        self.n_samples = int(n_samples)
        self.batch_size = self.n_samples if batch_size is None else int(batch_size)
        if self.n_samples < 1:
            raise ValueError("n_samples must be >= 1.")
        if not 1 <= self.batch_size <= self.n_samples:
            raise ValueError(
                f"batch_size must be in [1, n_samples={self.n_samples}], got {self.batch_size}."
            )

    @property
    def sample_rate(self):
        return self.batch_size / self.n_samples

    @property
    def normalizer(self):
        """The fixed number a noisy gradient sum is divided by (never the realised size)."""
        return self.batch_size

    def releases_per_example(self, n_steps):
        """Releases among ``n_steps`` that one example can affect (compositions to account)."""
        return int(n_steps)

    def batches(self, rng, n_steps):
        """Index array (or ``None`` = all rows) of each of ``n_steps`` steps."""
        for indices, starts, stops in self.batch_chunks(rng, n_steps):
            if indices is None:
                yield from (None for _ in starts)
            else:
                yield from (indices[a:b] for a, b in zip(starts.tolist(), stops.tolist()))

    def batch_chunks(self, rng, n_steps, chunk_steps=_CHUNK_STEPS):
        """Batches of ``n_steps`` steps in chunks of at most ``chunk_steps`` (see class doc)."""
        for indices, starts, stops in self._chunks(rng, n_steps, chunk_steps):
            if indices is not None:  # count the rows handed out (see rows_yielded)
                rows = int(np.sum(stops - starts))
                with _YIELDED_LOCK:
                    _YIELDED[self.name] += rows
            yield indices, starts, stops

    def _chunks(self, rng, n_steps, chunk_steps):
        chunk_steps = max(1, int(chunk_steps))
        for first in range(0, n_steps, chunk_steps):
            yield self._chunk(rng, min(chunk_steps, n_steps - first))

    def _chunk(self, rng, steps):
        raise NotImplementedError

    def key(self):
        """Hashable description, used to cache calibrations."""
        return (self.name, self.n_samples, self.batch_size)

    def over_rows(self, n_rows):
        """This sampler, drawing from ``n_rows`` rows (the data present at solve time).

        Only samplers whose privacy does not rest on the planned size may draw from
        another number of rows; the others must have been planned on the data's size.
        """
        if int(n_rows) == self.n_samples:
            return self
        raise ValueError(
            f"The {self.name!r} sampler was planned on {self.n_samples} examples and cannot "
            f"draw from {n_rows}: under replace-one neighbours the data's own size is public, "
            "plan on it."
        )

    def dp_event(self, noise_multiplier):
        """Return the ``dp_accounting`` event of one step at multiplier ``noise_multiplier``."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(n_samples={self.n_samples}, batch_size={self.batch_size})"


class FullBatch(_Sampler):
    """Every step uses all ``n`` examples (DP-GDA). Replace-one neighbours."""

    name = "full"
    subsampled = False
    neighboring_relation = "replace-one"
    sensitivity_factor = 2.0

    def __init__(self, n_samples, batch_size=None):
        super().__init__(n_samples, None)

    def over_rows(self, n_rows):
        # Replace-one: every row, normalised by the number of rows present (the same
        # in both neighbours); the calibration does not depend on it.
        return self if int(n_rows) == self.n_samples else FullBatch(n_rows)

    def _chunk(self, rng, steps):
        # None means "all rows": no index array of size n per step
        return None, np.zeros(steps, dtype=np.intp), np.full(steps, self.n_samples, np.intp)

    def dp_event(self, noise_multiplier):
        # Non-subsampled Gaussian: the relation only enters through the sensitivity
        # (2C, folded into the multiplier), so the event is a plain Gaussian.
        return dp_accounting.GaussianDpEvent(noise_multiplier)


class PoissonSampler(_Sampler):
    """Each example joins each batch independently with probability ``q = m / n``.

    Add/remove-one neighbours; the noisy sum is divided by the expected batch size
    ``m``, not by the realised one.
    """

    name = "poisson"
    neighboring_relation = "add/remove-one"
    sensitivity_factor = 1.0

    def __init__(self, n_samples, batch_size=None):
        super().__init__(n_samples, batch_size)
        self.n_rows = self.n_samples

    def over_rows(self, n_rows):
        # The rate q = m / n_samples and the step count stay those of the planned
        # (public) size; only the rows the Bernoulli trials run over change. Nothing
        # released then depends on the true size but through the noisy steps, whose
        # add/remove-one analysis holds for any number of rows at rate q.
        if int(n_rows) < 1:
            raise ValueError("n_rows must be >= 1.")
        copy = PoissonSampler(self.n_samples, self.batch_size)
        copy.n_rows = int(n_rows)
        return copy

    def _chunk(self, rng, steps):
        n, q = self.n_rows, self.sample_rate
        # Independent Bernoulli(q) trials over the stream of steps * n (step, example)
        # pairs; the gaps between successes are i.i.d. geometric, so draw those.
        total = steps * n
        expected = total * q
        gaps = rng.geometric(q, size=int(expected + 8 * math.sqrt(expected) + 16))
        positions = np.cumsum(gaps) - 1
        while positions[-1] < total:
            more = np.cumsum(rng.geometric(q, size=max(16, len(gaps) // 8)))
            positions = np.concatenate([positions, positions[-1] + more])
        positions = positions[positions < total]
        bounds = np.searchsorted(positions, np.arange(steps + 1) * n)
        return positions % n, bounds[:-1], bounds[1:]

    def dp_event(self, noise_multiplier):
        return dp_accounting.PoissonSampledDpEvent(
            self.sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier)
        )


class WithoutReplacementSampler(_Sampler):
    """Each batch is a uniformly random subset of exactly ``m`` examples.

    Replace-one neighbours; accounted with the Wang-Balle-Kasiviswanathan RDP bound
    (``dp_accounting.SampledWithoutReplacementDpEvent``), so only RDP applies. The
    bound is proven but loose (a concrete neighbouring pair loses about half of what
    it certifies; docs/privacy_model.md): the Poisson sampler needs less noise.
    """

    name = "without_replacement"
    neighboring_relation = "replace-one"
    sensitivity_factor = 2.0
    accountings = ("rdp",)

    def _chunk(self, rng, steps):
        n, m = self.n_samples, self.batch_size
        if m * m <= n:
            block = self._distinct_rows(rng, n, m, steps)
        else:
            block = np.stack([rng.choice(n, m, replace=False) for _ in range(steps)])
        starts = np.arange(steps, dtype=np.intp) * m
        return block.ravel(), starts, starts + m

    @staticmethod
    def _distinct_rows(rng, n, m, steps):
        # Rejection sampling of whole rows: a row of m i.i.d. uniform indices is kept
        # only if its entries are distinct, which makes it a uniform m-subset.
        rows = rng.integers(0, n, size=(steps, m))
        while True:
            s = np.sort(rows, axis=1)
            bad = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
            if bad.size == 0:
                return rows
            rows[bad] = rng.integers(0, n, size=(bad.size, m))

    def dp_event(self, noise_multiplier):
        return dp_accounting.SampledWithoutReplacementDpEvent(
            self.n_samples, self.batch_size, dp_accounting.GaussianDpEvent(noise_multiplier)
        )


class DisjointBatches(_Sampler):
    """Consecutive chunks of one random permutation: every example is in at most one batch.

    Replace-one neighbours. A step's release depends only on its own batch (and on
    earlier releases), so by parallel composition (McSherry 2009; Boob & Guzman
    2023, Prop. 4) the whole run costs what *one* step costs:
    :meth:`releases_per_example` is 1 and the accountant composes the plain
    Gaussian event once. ``n_steps * batch_size`` must not exceed ``n_samples``;
    left-over examples are never used. The permutation comes from ``rng`` only,
    never from the data.
    """

    name = "disjoint"
    neighboring_relation = "replace-one"
    sensitivity_factor = 2.0
    subsampled = False

    def max_steps(self):
        """Largest number of disjoint batches the data set holds."""
        return self.n_samples // self.batch_size

    def _check_steps(self, n_steps):
        if n_steps > self.max_steps():
            raise ValueError(
                f"{n_steps} disjoint batches of size {self.batch_size} need "
                f"{n_steps * self.batch_size} examples; only {self.n_samples} are available."
            )

    def releases_per_example(self, n_steps):
        self._check_steps(n_steps)
        return 1

    def _chunks(self, rng, n_steps, chunk_steps):
        # One permutation for the whole run, cut into consecutive disjoint batches.
        self._check_steps(n_steps)
        order = rng.permutation(self.n_samples)
        m, chunk_steps = self.batch_size, max(1, int(chunk_steps))
        for first in range(0, n_steps, chunk_steps):
            starts = np.arange(first, min(first + chunk_steps, n_steps), dtype=np.intp) * m
            yield order, starts, starts + m

    def dp_event(self, noise_multiplier):
        # Not subsampled: an example's batch is fixed once the permutation is drawn,
        # and the permutation is independent of the data.
        return dp_accounting.GaussianDpEvent(noise_multiplier)


class ShuffledEpochs(_Sampler):
    """Epochs of random reshuffling: each epoch draws a fresh permutation and cuts it
    into ``n // m`` consecutive batches of exactly ``m`` rows (the last ``n mod m`` rows
    of the permutation sit that epoch out), as a deep-learning loader with
    ``shuffle=True, drop_last=True`` does.

    Replace-one neighbours. Within an epoch an example is in at most one batch, and
    a step's release depends only on its own batch (and on earlier releases), so by
    parallel composition an epoch costs what one step costs; the epochs compose
    adaptively. :meth:`releases_per_example` is the number of epochs the run
    touches, ``ceil(n_steps / (n // m))``, and the accountant composes the plain
    Gaussian event that many times. No amplification by shuffling is claimed: the
    bound holds even for a run that also released its permutations. Without noise
    (``epsilon = inf``) this is the loader of the papers' non-private experiments.
    The permutations come from ``rng`` only, never from the data.
    """

    name = "shuffle"
    neighboring_relation = "replace-one"
    sensitivity_factor = 2.0
    subsampled = False

    @property
    def steps_per_epoch(self):
        """Batches in one epoch, ``n // m``."""
        return self.n_samples // self.batch_size

    def releases_per_example(self, n_steps):
        return -(-int(n_steps) // self.steps_per_epoch)

    def _chunks(self, rng, n_steps, chunk_steps):
        # One permutation per epoch, drawn when the last one runs out (the same draws
        # whatever the chunk size). A chunk holds exactly min(chunk_steps, steps left)
        # batches, across epochs if need be: NSEG pairs a chunk's steps two by two.
        m, per_epoch = self.batch_size, self.steps_per_epoch
        chunk_steps = max(1, int(chunk_steps))
        order, position = None, per_epoch  # position: the next batch of the epoch
        done = 0
        while done < n_steps:
            steps = min(chunk_steps, n_steps - done)
            parts, left = [], steps
            while left:
                if position == per_epoch:
                    order, position = rng.permutation(self.n_samples), 0
                take = min(left, per_epoch - position)
                parts.append(order[position * m:(position + take) * m])
                position += take
                left -= take
            starts = np.arange(steps, dtype=np.intp) * m
            yield (parts[0] if len(parts) == 1 else np.concatenate(parts)), starts, starts + m
            done += steps

    def dp_event(self, noise_multiplier):
        # One epoch's releases, of which an example affects at most one, are one
        # plain Gaussian release for it (the permutation is independent of the data).
        return dp_accounting.GaussianDpEvent(noise_multiplier)


_SAMPLERS = {
    cls.name: cls
    for cls in (FullBatch, PoissonSampler, WithoutReplacementSampler, DisjointBatches,
                ShuffledEpochs)
}


def make_sampler(name, n_samples, batch_size=None):
    """Build the sampler called ``name`` (``'full'``, ``'poisson'``, ``'without_replacement'``,
    ``'disjoint'``, ``'shuffle'``).

    ``batch_size=None`` gives :class:`FullBatch`, except for ``'disjoint'``, whose
    single batch of all rows is released once. A ``batch_size >= n_samples`` gives
    :class:`FullBatch` too, except for ``'poisson'``: there it gives rate ``q = 1``,
    so that a Poisson run stays add/remove-one whatever the (possibly released)
    size it is planned on.
    """
    if name not in _SAMPLERS:  # before the shortcuts below, which never look it up
        raise ValueError(f"Unknown sampler {name!r}; choose from {sorted(_SAMPLERS)}.")
    if name == "disjoint":
        return DisjointBatches(n_samples, min(batch_size or n_samples, n_samples))
    if batch_size is None:
        return FullBatch(n_samples)
    if name == "poisson":
        return PoissonSampler(n_samples, min(int(batch_size), n_samples))
    if batch_size >= n_samples:
        return FullBatch(n_samples)
    return _SAMPLERS[name](n_samples, batch_size)
