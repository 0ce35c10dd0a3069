"""
=========================================================
Bring your own objective: a private worst-class hinge SVM
=========================================================

:class:`skdpminimax.DPSaddleEstimator` fits any
:class:`~skdpminimax.objectives.SaddleObjective` privately. Here we write one the
library does not ship: a linear SVM whose hinge loss is weighted by an adversary
``q`` over the two classes, so the model minimises the *worst class's* hinge risk,

.. math::

    \\min_{\\|w\\| \\le R} \\max_{q \\in \\Delta_2} \\frac1n \\sum_i
    \\frac{q_{y_i}}{\\pi_{y_i}} \\max(0, 1 - s_i w^\\top (x_i, 1))
    - \\frac{\\lambda}{2}\\|q - 1/2\\|^2 ,

with ``s_i = +-1``. What the objective must provide: its sets, per-example values and
gradients of the data term, the data-free term separately, and per-example gradient
bounds from *public* quantities (``data_norm``, the radius, the public class ratios).
The solver clips and noises the per-example gradients; ``lipschitz()`` caps the clip.

Runs in a few seconds on scikit-learn's bundled breast-cancer data; plots with
matplotlib when it is installed.
"""

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPSaddleEstimator
from skdpminimax.objectives import SaddleObjective
from skdpminimax.sets import L2Ball, Simplex
from skdpminimax.solvers import NoisySGDA


class WorstClassHinge(SaddleObjective):
    """Hinge loss of a linear model, reweighted by an adversary over the classes."""

    def __init__(self, n_features, data_norm, class_ratios, radius=5.0, dual_reg=0.1,
                 n_classes=2):
        if n_classes != 2:  # given by DPSaddleEstimator(task="classification")
            raise ValueError("WorstClassHinge is a binary objective.")
        self.n_features = n_features
        self.kappa = np.sqrt(data_norm**2 + 1.0)  # norm bound of (x, 1)
        self.pi = np.asarray(class_ratios, dtype=float)  # public
        self.radius = radius
        self.dual_reg = dual_reg
        self.primal_set = L2Ball(radius)
        self.dual_set = Simplex()

    def init_params(self, rng=None):
        return np.zeros(self.n_features + 1), np.full(2, 0.5)

    def check_data(self, y, groups):
        # The bounds below hold for y in {0, 1} only (the class codes of a binary
        # task="classification"): y = -1 would index v[-1] and weigh its hinge by
        # three, beyond lipschitz(). Refused before any spend.
        if not np.all(np.isin(y, (0, 1))):
            raise ValueError("WorstClassHinge needs y in {0, 1}.")

    def _margins(self, w, data):
        sign = 2.0 * data.y - 1.0
        return sign, sign * (data.X @ w[:-1] + w[-1])

    def per_example_values(self, w, v, data):
        sign, margin = self._margins(w, data)
        k = data.y.astype(int)
        return v[k] / self.pi[k] * np.maximum(0.0, 1.0 - margin)

    def per_example_grads(self, w, v, data):
        sign, margin = self._margins(w, data)
        k = data.y.astype(int)
        active = (margin < 1.0).astype(float)
        coef = -(v[k] / self.pi[k]) * active * sign
        gw = np.column_stack([coef[:, None] * data.X, coef])
        gv = np.zeros((data.n_samples, 2))
        gv[np.arange(data.n_samples), k] = np.maximum(0.0, 1.0 - margin) / self.pi[k]
        return gw, gv

    def reg_value(self, w, v):
        return -0.5 * self.dual_reg * float((v - 0.5) @ (v - 0.5))

    def reg_grad(self, w, v):
        return np.zeros_like(w), -self.dual_reg * (v - 0.5)

    def lipschitz(self):
        inv_pi_min = 1.0 / self.pi.min()
        # ||grad_w|| <= kappa / pi_min; the hinge is at most 1 + radius * kappa.
        return self.kappa * inv_pi_min, (1.0 + self.radius * self.kappa) * inv_pi_min

    def strong_convexity(self):
        return 0.0, self.dual_reg

    # Optional: lets DPSaddleEstimator offer predict / decision_function.
    def decision_function(self, w, X):
        return X @ w[:-1] + w[-1]

    def predict(self, w, X):
        return (self.decision_function(w, X) > 0).astype(int)


def class_accuracies(model, X, y):
    pred = model.predict(X)
    return [float(np.mean(pred[y == k] == k)) for k in (0, 1)]


X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0,
                                                    stratify=y)
# Not private: this demo scales with the training rows' moments. Under the guarantee,
# use public constants or skdpminimax.DPStandardScaler (see plot_private_preprocessing).
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

# The experiment's own ledger: its no-noise fits (epsilon = inf) are not private and
# charge (inf, delta), which would leave diffprivlib's default ledger at inf for good.
experiment_ledger = BudgetAccountant()
epsilons = [0.5, 1.0, 2.0, 8.0, np.inf]
results = []
for epsilon in epsilons:
    model = DPSaddleEstimator(
        WorstClassHinge,
        # The class ratios enter the objective as public constants: a balanced guess,
        # not the training rows' ratio (reading it would leak; a prevalence known from
        # a public source would do, and gives the same accuracies here).
        objective_params={"class_ratios": [0.5, 0.5], "radius": 5.0},
        epsilon=epsilon,
        data_norm=6.0,
        # Clips of 1 suit balanced ratios. Unbalanced ones weigh the rare class by
        # 1 / ratio, which a clip of 1 removes (worst-class accuracy 0 with [0.9, 0.1]):
        # give the solver clips of the objective's scale, as the DPSaddleEstimator page
        # says ("needs clips of its own scale").
        solver=NoisySGDA(batch_size=64, n_epochs=20, step_size=0.05),
        random_state=0,
        accountant=experiment_ledger,
        # a classifier to scikit-learn: classes_, score (accuracy), scoring="roc_auc"
        task="classification",
    ).fit(X_train, y_train)
    worst = min(class_accuracies(model, X_test, y_test))
    overall = model.score(X_test, y_test)
    results.append((worst, overall))
    print(f"epsilon={epsilon:>4}: worst-class accuracy {worst:.3f}, accuracy {overall:.3f}, "
          f"class weights q={np.round(model.dual_coef_, 3)}")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # plotting is optional
    plt = None

if plt is not None:
    labels = [str(e) for e in epsilons]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(labels, [r[0] for r in results], "o-", label="worst class")
    ax.plot(labels, [r[1] for r in results], "s--", label="overall")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("test accuracy")
    ax.set_title("Private worst-class hinge SVM (your own objective)")
    ax.legend()
    fig.tight_layout()
    plt.show()
