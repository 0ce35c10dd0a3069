"""Command line: ``python -m skdpminimax demo``.

The demo fits :class:`~skdpminimax.DPAUCMaximizer` on a data set that ships with
scikit-learn at several privacy levels, next to a non-private baseline, then the same
behind :class:`~skdpminimax.DPStandardScaler` (private end to end), and prints test
AUC, the budget spent and the fit time.
"""

import argparse
import sys
import time
import warnings

import numpy as np

from skdpminimax.privacy.budget import check_epsilon_delta

_DELTA = 1e-5  # the demo's delta


def _demo(args):
    from diffprivlib import BudgetAccountant
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skdpminimax import DPAUCMaximizer, DPStandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=args.seed
    )
    raw_train, raw_test = X_train, X_test
    # Standardising with statistics of the private training set would leak them;
    # fit the scaler on the test split instead, standing in for public data.
    scaler = StandardScaler().fit(X_test)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    data_norm = 8.0  # public bound on ||x|| after scaling; rows beyond it are clipped
    # The class ratio is public: the data set's description publishes its class
    # distribution (212 malignant, 357 benign; the positive class 1 is benign), and the
    # stratified split keeps it. Passing it spends nothing on releasing the ratio, which
    # on 398 rows at epsilon 0.5 would be noisy (the fit warns then).
    pos_ratio = 357 / 569

    ledger = BudgetAccountant()
    print("DPAUCMaximizer on scikit-learn's breast cancer data "
          f"({X_train.shape[0]} training rows, {X_train.shape[1]} features)")
    print(f"{'model':<46}{'epsilon':>9}{'delta':>9}{'test AUC':>10}{'fit s':>8}")
    t0 = time.perf_counter()
    baseline = make_pipeline(LogisticRegression(max_iter=1000)).fit(X_train, y_train)
    t_base = time.perf_counter() - t0
    auc = roc_auc_score(y_test, baseline.decision_function(X_test))
    print(f"{'LogisticRegression (not private)':<46}{'-':>9}{'-':>9}{auc:>10.3f}{t_base:>8.3f}")

    def report(label, epsilon, model, X_fit, X_eval):
        """Fit, score and print one row; the budget column is what the fit put on the
        ledger (the sum of its private steps' entries)."""
        entries = len(ledger.spent_budget)
        t0 = time.perf_counter()
        model.fit(X_fit, y_train)
        elapsed = time.perf_counter() - t0
        auc = roc_auc_score(y_test, model.decision_function(X_eval))
        spent_epsilon, spent_delta = np.sum(ledger.spent_budget[entries:], axis=0)
        label += " (no noise)" if np.isinf(epsilon) else ""
        print(f"{label:<46}{spent_epsilon:>9.3g}{spent_delta:>9.2g}{auc:>10.3f}{elapsed:>8.3f}")

    for epsilon in args.epsilons:
        # Fresh noise for every fit (a fixed seed would repeat it, and the budgets would
        # not compose); --seed fixes the split only.
        report("DPAUCMaximizer", epsilon,
               DPAUCMaximizer(epsilon=epsilon, delta=_DELTA, data_norm=data_norm,
                              pos_ratio=pos_ratio,
                              accountant=ledger, random_state=None),
               X_train, X_test)

    # Private end to end: the scaler's statistics are released too (DPStandardScaler,
    # one Gaussian release, add/remove-one like the default fit), from public bounds:
    # the test split's range widened by 20% stands in for domain knowledge.
    span = raw_test.max(axis=0) - raw_test.min(axis=0)
    bounds = (np.maximum(0.0, raw_test.min(axis=0) - 0.2 * span), raw_test.max(axis=0) + 0.2 * span)
    # The fit's (epsilon, delta) is the pipeline's total: it composes the scaler's
    # release with its own training in one PLD (composed_with="pending").
    scaler_delta = 1e-6
    for epsilon in args.epsilons:
        scaler_epsilon = 0.5 if np.isfinite(epsilon) else np.inf
        report("DPStandardScaler + DPAUCMaximizer", epsilon, make_pipeline(
            DPStandardScaler(epsilon=scaler_epsilon, delta=scaler_delta, bounds=bounds,
                             accountant=ledger),
            DPAUCMaximizer(epsilon=epsilon + scaler_epsilon, delta=_DELTA + scaler_delta,
                           accountant=ledger, pos_ratio=pos_ratio, composed_with="pending",
                           data_norm=2.0 * np.sqrt(raw_train.shape[1]))),
               raw_train, raw_test)
    total_epsilon, total_delta = ledger.total()
    print(f"Total spent on the ledger by these fits: epsilon={total_epsilon:.3g}, "
          f"delta={total_delta:.2g}")
    return 0


def _epsilon(text):
    """An epsilon the estimators accept (the library's own check, at the demo's
    delta), refused by argparse (a usage error) otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    try:
        check_epsilon_delta(value, _DELTA)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _seed(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"the seed must be in [0, 2**32), got {text}")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m skdpminimax")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="private AUC maximisation on bundled data")
    demo.add_argument("--epsilons", type=_epsilon, nargs="+", default=[0.5, 1.0, 4.0],
                      help="privacy levels to fit at, each > 0 (inf: no noise); "
                           "default: 0.5 1 4")
    demo.add_argument("--seed", type=_seed, default=0,
                      help="seed of the train/test split (an int >= 0)")
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        return _demo(args)


if __name__ == "__main__":
    sys.exit(main())
