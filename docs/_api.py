"""Pages generated from the package at build time, so that new code slots in.

* ``api.rst``: one section per public module or subpackage of ``skdpminimax`` (found
  with :mod:`pkgutil`), an autosummary of the names in its ``__all__``;
* ``estimators/generated/<Name>.rst``: a page, from the class docstring, for every
  estimator in ``skdpminimax.estimators.__all__`` without a hand-written page;
* ``_generated/solver_list.rst``: a table of every solver class.
"""

import importlib
import inspect
import os
import pkgutil

import skdpminimax
import skdpminimax.estimators

# Estimators whose page is written by hand (docs/estimators/<page>.rst).
HANDWRITTEN_ESTIMATORS = {
    "DPAUCMaximizer": "dp_auc_maximizer",
    "DPRobustClassifier": "dp_robust_classifier",
    "DPGroupFairRegressor": "dp_group_fair_regressor",
    "DPSaddleEstimator": "dp_saddle_estimator",
}


def _public_modules():
    names = []
    for info in pkgutil.iter_modules(skdpminimax.__path__):
        if not info.name.startswith("_"):
            names.append("skdpminimax." + info.name)
    return sorted(names)


def _documented(module):
    """Classes and functions of ``module.__all__`` (data such as registries are skipped)."""
    out = []
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name, None)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            out.append(name)
    return out


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = open(path).read() if os.path.exists(path) else None
    if old != text:  # keep timestamps: Sphinx rebuilds only what changed
        with open(path, "w") as f:
            f.write(text)


def _title(text, char="="):
    return f"{text}\n{char * len(text)}\n"


def _api_page():
    parts = [_title("API reference"),
             "Every public class and function of the package, generated from the "
             "``__all__`` lists (the data in them, such as the solver registry "
             "``solvers.SOLVERS``, is commented in its module).\n"
             "Estimators are also exported at the top level (``from skdpminimax import ...``).\n"]
    for modname in _public_modules():
        module = importlib.import_module(modname)
        names = _documented(module)
        if not names:
            continue
        parts.append(_title(f":mod:`{modname}`", "-"))
        parts.append(f".. automodule:: {modname}\n   :no-members:\n")
        parts.append(f".. currentmodule:: {modname}\n")
        parts.append(".. autosummary::\n   :toctree: generated/\n   :template: autosummary_object.rst\n\n"
                     + "".join(f"   {n}\n" for n in names))
    return "\n".join(parts)


def _estimator_page(name):
    cls = getattr(skdpminimax.estimators, name)
    summary = (cls.__doc__ or name).strip().splitlines()[0]
    return "\n".join([
        f".. _estimator-{name}:\n",
        _title(name),
        f"{summary}\n",
        "The task, its saddle formulation, the parameters that matter and the privacy\n"
        "guarantee, as the class documents them (full reference:\n"
        f":class:`skdpminimax.estimators.{name}`).\n",
        f".. autoclass:: skdpminimax.estimators.{name}\n   :no-index:\n   :no-members:\n",
        _title("Examples", "-"),
        f".. minigallery:: skdpminimax.{name} skdpminimax.estimators.{name}\n   :add-heading: Gallery examples using {name}\n",
    ])


def _solver_list():
    import skdpminimax.solvers as solvers
    classes = [n for n in _documented(solvers) if inspect.isclass(getattr(solvers, n))]
    return (".. currentmodule:: skdpminimax.solvers\n\n.. autosummary::\n\n"
            + "".join(f"   {n}\n" for n in classes))


def write_generated_pages(docs_dir):
    """Write the generated pages under ``docs_dir`` (idempotent)."""
    _write(os.path.join(docs_dir, "api.rst"), _api_page())
    _write(os.path.join(docs_dir, "_generated", "solver_list.rst"), _solver_list())
    gen_dir = os.path.join(docs_dir, "estimators", "generated")
    pages = [HANDWRITTEN_ESTIMATORS.get(n, "generated/" + n) for n in skdpminimax.estimators.__all__]
    _write(os.path.join(docs_dir, "_generated", "estimator_toctree.rst"),
           ".. toctree::\n   :maxdepth: 1\n\n" + "".join(f"   {p}\n" for p in pages))
    wanted = set()
    for name in skdpminimax.estimators.__all__:
        if name not in HANDWRITTEN_ESTIMATORS:
            wanted.add(name + ".rst")
            _write(os.path.join(gen_dir, name + ".rst"), _estimator_page(name))
    if os.path.isdir(gen_dir):  # drop pages of estimators that are gone
        for stale in set(os.listdir(gen_dir)) - wanted:
            os.remove(os.path.join(gen_dir, stale))
    else:
        os.makedirs(gen_dir)
