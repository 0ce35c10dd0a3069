"""The Yang 2022 reproduction's private per-feature statistics (benchmarks/reproduce_yang2022.py)."""

import math

import numpy as np
import pytest

from benchmarks import reproduce_yang2022 as repro
from privacy_reference import analytic_gaussian_sigma
from skdpminimax.datasets import PUBLIC_PIXEL_STATS


def _pixels(n=400, d=49, seed=0, ink=0.1):
    rng = np.random.default_rng(seed)
    return (rng.random((n, d)) < ink) * rng.random((n, d))  # sparse intensities in [0, 1]


def _release_sums(X, clip, means_only=False):
    rows = X * np.minimum(1.0, clip / np.maximum(np.linalg.norm(X, axis=1), 1e-300))[:, None]
    return rows.sum(axis=0) if means_only else np.concatenate(
        [rows.sum(axis=0), (rows ** 2).sum(axis=0)])


def test_exact_statistics_without_noise():
    X = _pixels()
    clip = 0.35 * math.sqrt(X.shape[1])
    assert np.linalg.norm(X, axis=1).max() < clip  # unclipped
    mean, std = repro.private_feature_stats(X, math.inf, 1e-6, np.random.default_rng(0), clip)
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(std, np.maximum(X.std(axis=0), 0.1), rtol=1e-9)
    mean, std = repro.private_feature_stats(X, math.inf, 1e-6, np.random.default_rng(0),
                                            clip, means_only=True, public_std=0.3)
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-12)
    assert np.all(std == 0.3)


@pytest.mark.parametrize("means_only", [False, True])
def test_neighbours_move_the_release_at_most_its_sensitivity(means_only):
    """Add/remove one row of [0, 1] pixels, clipped to c: ||x|| <= c and ||(x, x^2)||
    <= sqrt(2) c, attained by c^2 full-intensity pixels."""
    X = _pixels(ink=0.3)
    clip = 2.0  # binding for most rows here
    bound = clip if means_only else math.sqrt(2.0) * clip
    full = _release_sums(X, clip, means_only)
    worst = max(np.linalg.norm(full - _release_sums(np.delete(X, i, axis=0), clip, means_only))
                for i in range(X.shape[0]))
    assert worst <= bound * (1 + 1e-12)
    extreme = np.zeros((1, X.shape[1]))
    extreme[0, :4] = 1.0
    assert np.linalg.norm(_release_sums(extreme, clip, means_only)) == pytest.approx(bound)


@pytest.mark.parametrize("means_only", [False, True])
def test_noise_is_the_gaussian_mechanisms_for_its_sensitivity(means_only):
    X = _pixels(n=200, d=16)
    epsilon, delta = 0.5, 1e-6
    clip = 0.35 * math.sqrt(X.shape[1])
    released = repro.private_feature_stats(X, epsilon, delta, np.random.default_rng(0),
                                           clip, means_only=means_only, public_std=0.3)
    sens = clip if means_only else math.sqrt(2.0) * clip
    sums = _release_sums(X, clip, means_only)
    noise = np.random.default_rng(0).standard_normal(sums.shape)  # the same draws
    sums = sums + analytic_gaussian_sigma(epsilon, delta, sens) * noise
    n, d = X.shape
    mean = np.clip(sums[:d] / n, 0.0, 1.0)
    if means_only:
        std = np.full(d, 0.3)
    else:
        std = np.sqrt(np.maximum(np.clip(sums[d:] / n, 0.0, 1.0) - mean ** 2, 0.1 ** 2))
    np.testing.assert_allclose(np.concatenate(released), np.concatenate([mean, std]),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("dataset", ["mnist", "fashion-mnist"])
def test_restandardisation_splits_the_budget_and_inverts_the_public_constants(dataset):
    X = _pixels(d=784)
    centre, scale = PUBLIC_PIXEL_STATS[dataset]
    public = (X - centre) / scale
    Xtr, Xte, release = repro.restandardise_privately("sgda-linear", dataset, public,
                                                      public[:10], 0.5, 1e-6, seed=3)
    share = repro.FEATURE_STATS_SHARE[dataset]
    assert release.epsilon == pytest.approx(0.5 * share)
    assert release.delta == pytest.approx(1e-6 * repro.FEATURE_STATS_DELTA_SHARE)
    # its Gaussian as noise std over sensitivity, recomputed independently
    c = repro.FEATURE_STATS_CLIP[dataset] * 28.0
    means_only = repro.FEATURE_STATS[("sgda-linear", dataset)] == "means"
    sens = c if means_only else math.sqrt(2.0) * c
    expected = analytic_gaussian_sigma(release.epsilon, release.delta, sens) / sens
    assert release.gaussian_multipliers == pytest.approx((expected,), rel=1e-6)
    assert release.count_epsilons == ()
    mean, std = repro.private_feature_stats(
        X, 0.5 * share, 1e-6 * repro.FEATURE_STATS_DELTA_SHARE,
        np.random.default_rng([3, 2022]), repro.FEATURE_STATS_CLIP[dataset] * 28.0,
        means_only=repro.FEATURE_STATS[("sgda-linear", dataset)] == "means",
        public_std=scale, std_floor=0.1)
    np.testing.assert_allclose(Xtr, (X - mean) / std, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(Xte, Xtr[:10])


def _signed_features(n=300, d=22, seed=0):
    """Rows in [-1, 1]^d of norm <= 2, unequal feature scales (as LIBSVM's ijcnn1)."""
    rng = np.random.default_rng(seed)
    X = np.clip(rng.normal(0.0, np.linspace(0.05, 0.5, d), size=(n, d)), -1.0, 1.0)
    return X * np.minimum(1.0, 2.0 / np.linalg.norm(X, axis=1))[:, None]


def test_signed_features_move_the_release_at_most_sqrt2_c():
    """Features in [-1, 1]: |x_j| <= 1, so ||x^2|| <= ||x|| <= c as for pixels; the
    bound is attained by c^2 coordinates at -1."""
    X = _signed_features()
    clip = 1.2
    full = repro.clipped_feature_sums(X, clip, False, low=-1.0)
    worst = max(np.linalg.norm(full - repro.clipped_feature_sums(np.delete(X, i, axis=0), clip,
                                                                 False, low=-1.0))
                for i in range(X.shape[0]))
    assert worst <= math.sqrt(2.0) * clip * (1 + 1e-12)
    extreme = np.zeros((1, X.shape[1]))
    extreme[0, :4] = -0.6  # norm 1.2 = c
    assert np.linalg.norm(repro.clipped_feature_sums(extreme, clip, False, low=-1.0)) == (
        pytest.approx(math.hypot(1.2, np.linalg.norm(extreme[0] ** 2))))
    # the [0, 1] clip of pixels would have zeroed the negative features
    assert np.all(repro.clipped_feature_sums(extreme, clip, False)[:4] == 0.0)
    with pytest.raises(ValueError, match="low"):
        repro.private_feature_stats(X, 1.0, 1e-6, np.random.default_rng(0), clip, low=-2.0)


def test_release_is_made_only_where_its_noise_is_small():
    """ijcnn1's MLP: the second moments' noise std sqrt(2) c sigma / n (sigma the
    analytic Gaussian's, computed independently) against the 0.015 limit."""
    n, clip = 39992, 0.6 * 2.0
    for epsilon in (0.1, 0.5, 1.0, 5.0, 10.0):
        for delta in (1e-4, 1e-5, 1e-6):
            noise = (analytic_gaussian_sigma(0.05 * epsilon, 0.1 * delta, math.sqrt(2.0) * clip)
                     / n)
            made = repro.releases_feature_stats("sgda-mlp", "ijcnn1", epsilon, delta)
            assert made == (noise <= 0.015)
            assert made == (epsilon >= 0.5)  # the split the validation chose
    assert not repro.releases_feature_stats("sgda-mlp", "ijcnn1", math.inf, None)
    assert not repro.releases_feature_stats("sgda-linear", "ijcnn1", 1.0, 1e-6)
    assert not repro.releases_feature_stats("sgda-mlp", "mnist", 1.0, 1e-6)
    # no limit on the images: made at every private cell
    assert repro.releases_feature_stats("nseg", "mnist", 0.1, 1e-6, n=100)


def test_ijcnn1_rows_get_one_common_std_that_keeps_the_released_total_variance():
    X = _signed_features()
    Xtr, Xte, release = repro.restandardise_privately("sgda-mlp", "ijcnn1", X, X[:7],
                                                      1.0, 1e-6, seed=5)
    assert (release.epsilon, release.delta) == (pytest.approx(0.05), pytest.approx(1e-7))
    mean, std = repro.private_feature_stats(
        X, 0.05, 1e-7, np.random.default_rng([5, 2022]), 1.2, low=-1.0, std_floor=0.05)
    common = math.sqrt(np.mean(std ** 2))
    np.testing.assert_allclose(Xtr, (X - mean) / std * common, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(Xte, Xtr[:7])
    # almost without noise, on rows inside the release's clip and above the std floor:
    # every feature gets the common std, and the total variance is kept
    rng = np.random.default_rng(1)
    X = rng.normal(0.0, np.linspace(0.06, 0.2, 22), size=(4000, 22))
    assert np.linalg.norm(X, axis=1).max() < 1.2 and X.std(axis=0).min() > 0.05
    Xtr = repro.restandardise_privately("sgda-mlp", "ijcnn1", X, X[:7], 1e9, 1e-6, seed=5)[0]
    np.testing.assert_allclose(Xtr.std(axis=0), math.sqrt(X.var(axis=0).mean()), rtol=1e-5)
    assert Xtr.var(axis=0).sum() == pytest.approx(X.var(axis=0).sum(), rel=1e-5)


def test_config_tags_follow_the_release():
    assert repro.config_tag("sgda-mlp", 1.0, "ijcnn1", 1e-6) == "v3-mlp10-pld-fine"
    assert repro.config_tag("sgda-mlp", 0.1, "ijcnn1", 1e-4) == "v3-mlp9-pld-fine"
    assert repro.config_tag("sgda-mlp", math.inf, "ijcnn1") == "v3-mlp9-ori-shuf2"
    assert repro.config_tag("sgda-linear", 0.1, "mnist", 1e-6) == "v3-rng7-pld-fine"
    assert repro.config_tag("nseg", 10.0, "fashion-mnist", 1e-4) == "v3-rng8-pld-chunk"
    assert repro.config_tag("sgda-linear", math.inf, "mnist") == "v3-rng5-ori2-shuf2"
    assert repro.config_tag("sgda-linear", 1.0, "ijcnn1", 1e-6) == "v3-rng4-pld-fine"
    assert repro.config_tag("nseg", 1.0, "ijcnn1", 1e-6) == "v3-rng6-pld-fine-chunk"
    assert repro.config_tag("nseg", math.inf, "ijcnn1") == "v3-rng4-ori-shuf2-chunk"
    assert repro.config_tag("sgda-linear", 0.1, "ijcnn1", 1e-6) == "v3-rng9-pld-fine"
    # the image MLP's cells keep the shares added, and their tag
    assert repro.composition("sgda-mlp", "mnist") == "basic"
    assert repro.config_tag("sgda-mlp", 1.0, "mnist", 1e-6) == "v3-mlp8-fine"
    assert repro.config_tag("sgda-mlp", 1.0, "fashion-mnist", 1e-4) == "v3-mlp8-fine"


@pytest.mark.parametrize("composition", ["pld", "basic"])
def test_the_noise_rule_sees_the_noise_the_fit_gets(composition):
    """adapt_to_noise plans on training_budget: the same multipliers as the fit's
    own calibration, with a feature-statistics release composed or not."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(3000, 16))
    y = (X[:, 0] + 0.3 * rng.normal(size=3000) > 0.5).astype(int)
    from diffprivlib import BudgetAccountant
    from skdpminimax import DPAUCMaximizer
    from skdpminimax.privacy import Release, spend_release
    ledger = BudgetAccountant()
    release = Release(0.05, 1e-7, gaussian_multipliers=(
        analytic_gaussian_sigma(0.05, 1e-7, 1.0),))
    spend_release(ledger, release)
    solver = repro.make_solver("sgda-linear", (0.05, 0.05), 2, 1.0, 0.1)
    model = DPAUCMaximizer(epsilon=0.5, delta=1e-6, data_norm=4.0, solver=solver,
                           n_samples_budget=len(X), random_state=0, accountant=ledger,
                           composition=composition, composed_with=[release])
    probe = model._make_objective(16, 4.0, {"pos_ratio": 0.5})
    planned = solver.calibrate(probe, len(X), repro.training_budget(
        solver, model, probe, len(X), repro.PrivacyBudget(0.5, 1e-6)))
    model.fit(X, y)
    assert model.calibration_.block_noise_multipliers == planned.block_noise_multipliers
    assert len(model.calibration_.composed_with) == (2 if composition == "pld" else 0)


def test_ijcnn1_linear_cells_centre_only_where_the_ratio_is_noisy():
    """ijcnn1's linear cells release per-feature means where the class ratio's count
    noise, sqrt(2) / (0.05 epsilon) over the public guess 0.097 n of the positives
    (recomputed here), is at least 3%: epsilon = 0.1 only."""
    n = 39992
    for method in ("sgda-linear", "nseg"):
        for epsilon in (0.1, 0.5, 1.0, 5.0, 10.0):
            relative = math.sqrt(2.0) / (0.05 * epsilon) / (0.097 * n)
            for delta in (1e-4, 1e-5, 1e-6):
                made = repro.releases_feature_stats(method, "ijcnn1", epsilon, delta)
                assert made == (relative >= 0.03) == (epsilon == 0.1)
                tag = repro.config_tag(method, epsilon, "ijcnn1", delta)
                assert ("-rng9" in tag) == made
        assert repro.config_tag(method, math.inf, "ijcnn1").startswith("v3-rng4-ori")
    assert repro.config_tag("nseg", 0.1, "ijcnn1", 1e-6).endswith("-chunk")
    assert not repro.config_tag("sgda-linear", 0.1, "ijcnn1", 1e-6).endswith("-chunk")


def test_ijcnn1_centring_release_spends_its_own_share():
    X = _signed_features(n=300)
    Xtr, Xte, release = repro.restandardise_privately("sgda-linear", "ijcnn1", X, X[:10],
                                                      0.1, 1e-6, seed=3)
    assert release.epsilon == pytest.approx(0.1 * 0.2)  # the linear cells' 20%
    c = 0.6 * 2.0
    expected = analytic_gaussian_sigma(release.epsilon, release.delta, c) / c  # means: c
    assert release.gaussian_multipliers == pytest.approx((expected,), rel=1e-6)
    mean, _ = repro.private_feature_stats(
        X, 0.1 * 0.2, 1e-6 * repro.FEATURE_STATS_DELTA_SHARE, np.random.default_rng([3, 2022]),
        c, means_only=True, public_std=1.0, low=-1.0)
    np.testing.assert_allclose(Xtr, X - mean, rtol=1e-9, atol=1e-12)  # centred, scale 1
    np.testing.assert_allclose(Xte, Xtr[:10])
