import numpy as np
from sklearn.datasets import make_classification

from skdpminimax import DPAUCMaximizer


def test_fit_predict_smoke():
    X, y = make_classification(n_samples=200, random_state=0)
    model = DPAUCMaximizer(epsilon=1.0, data_norm=5.0, pos_ratio=0.5, random_state=0)
    model.fit(X, y)
    assert model.decision_function(X).shape == (200,)
    assert set(np.unique(model.predict(X))) <= set(model.classes_)
