"""numpydoc validation of the public API's docstrings, and the estimators' Parameters.

Every class and function in a public module's ``__all__`` (the names docs/api.rst
lists) and every public method defined on those classes is run through
``numpydoc.validate``, as scikit-learn's ``sklearn/tests/test_docstrings.py`` does.
Ignored (``IGNORED``, and the last one in ``docstring_errors``):

* ``GL01``, ``GL02``: where the summary starts and the closing quotes sit (layout);
* ``SS06``: a summary over two lines (the project writes one-sentence summaries that
  wrap; scikit-learn's own docstrings break this one too);
* ``ES01``, ``SA01``, ``EX01``: the optional Extended Summary, See Also and Examples
  sections (the user guide holds the examples; the gallery runs them);
* ``RT02``: a named return (``self : DPAUCMaximizer``), which numpydoc allows;
* ``YD01`` on a ``contextmanager``'s generator (its prose says what the block runs in).

Two rules narrow the rest:

* A method without a docstring of its own that overrides a documented method of a base
  class (an objective's ``lipschitz``, a set's ``project``) inherits that docstring,
  as the rendered pages do (``GL08`` is not reported for it).
* A docstring without a Parameters (Returns) section is prose and is not asked for
  one (``PR01``, ``RT01``), except on the scikit-learn surface (``fit``, ``predict``,
  ``score``, ... of the estimators, scalers, searches and splitters) and on the
  classes that are scikit-learn estimators, whose parameters must all be documented.
  A docstring that has the section must list every parameter, in the signature's
  order, each with a type and a description; a Returns section must describe what it
  returns.

``test_estimator_parameters_match_signature`` checks that the Parameters section of
every public scikit-learn estimator lists exactly its ``get_params()`` and
``_parameter_constraints`` keys, in the signature's order, each with the signature's
default; ``test_documented_defaults_match_signature`` that every documented parameter
with a default, anywhere in the API, states that default.
"""

import importlib
import inspect
import pkgutil
import re

import numpy as np
import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")
from numpydoc.docscrape import ClassDoc  # noqa: E402 (after the importorskip)
from sklearn.base import BaseEstimator  # noqa: E402

import skdpminimax  # noqa: E402

IGNORED = {"GL01", "GL02", "SS06", "ES01", "SA01", "EX01", "RT02"}

# The scikit-learn surface: these methods always document their parameters and return.
SKLEARN_METHODS = {
    "fit", "predict", "predict_proba", "predict_log_proba", "decision_function",
    "transform", "inverse_transform", "fit_transform", "score", "split", "get_n_splits",
    "set_params", "get_params",
}


def _public_modules():
    return sorted("skdpminimax." + info.name for info in pkgutil.iter_modules(skdpminimax.__path__)
                  if not info.name.startswith("_"))


def _public_classes_and_functions():
    seen = {}
    for modname in _public_modules():
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                seen.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return seen


def _inherits_doc(cls, name):
    """Whether a base class of ``cls`` documents the method ``name``."""
    for base in cls.__mro__[1:]:
        attr = vars(base).get(name)
        if attr is not None and getattr(attr, "__doc__", None):
            return True
    return False


def _targets():
    """``(import path, object, owning class or None)`` of everything validated."""
    out = []
    for path, obj in sorted(_public_classes_and_functions().items()):
        out.append((path, obj, None))
        if not inspect.isclass(obj):
            continue
        for name, attr in vars(obj).items():
            if name.startswith("_") and name != "__call__":
                continue
            func = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
            func = getattr(func, "fn", func)  # sklearn's available_if descriptors
            if not inspect.isfunction(func):
                continue  # properties and data: documented in the class's Attributes
            if not func.__doc__ and _inherits_doc(obj, name):
                continue  # renders with the base class's docstring
            out.append((f"{path}.{name}", func, obj))
    return out


TARGETS = _targets()


def _is_estimator_class(obj):
    return inspect.isclass(obj) and issubclass(obj, BaseEstimator)


def _strict(obj, owner, name):
    """Whether missing Parameters / Returns sections are errors here."""
    if owner is None:
        # a scikit-learn estimator whose parameters are this package's (not a
        # scikit-learn search's, which charge_search returns prepaid)
        return (_is_estimator_class(obj)
            and (getattr(obj.__init__, "__module__", None) or "").startswith("skdpminimax"))
    return (name.rsplit(".", 1)[-1] in SKLEARN_METHODS
            and (_is_estimator_class(owner) or hasattr(owner, "get_n_splits")))


def docstring_errors(path, obj, owner):
    """The numpydoc errors of ``path`` that this project does not ignore."""
    result = numpydoc_validate.validate(path)
    doc = numpydoc_validate.get_doc_object(obj)
    strict = _strict(obj, owner, path)
    errors = []
    for code, message in result["errors"]:
        if code in IGNORED:
            continue
        if code == "PR01" and not doc["Parameters"] and not strict:
            continue
        if code == "RT01" and not strict:
            continue
        if code == "YD01" and "contextmanager" in inspect.getsource(obj).split("def ")[0]:
            continue  # a context manager's generator: what it yields is in the prose
        errors.append(f"{code}: {message}")
    return errors


@pytest.mark.parametrize("path,obj,owner", TARGETS, ids=[t[0] for t in TARGETS])
def test_docstring(path, obj, owner):
    errors = docstring_errors(path, obj, owner)
    assert not errors, f"{path}:\n" + "\n".join(errors)


def _documented_parameters(cls):
    """``{name: type line}`` of the class docstring's Parameters section."""
    documented = {}
    for param in ClassDoc(cls)["Parameters"]:
        for name in param.name.split(","):
            documented[name.strip()] = param.type
    return documented


def _documented_default(type_line):
    match = re.search(r"default\s*=\s*(.+)$", type_line)
    if match is None:
        return inspect.Parameter.empty
    text = match.group(1).strip()
    try:
        return eval(text, {"np": np, "inf": np.inf})  # noqa: S307 (our own docstrings)
    except Exception:  # noqa: BLE001 - a default written as prose
        return text


ESTIMATORS = sorted(
    {obj for _, obj, owner in TARGETS if owner is None and _strict(obj, None, "")},
    key=lambda cls: cls.__qualname__)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=[cls.__qualname__ for cls in ESTIMATORS])
def test_estimator_parameters_match_signature(cls):
    signature = inspect.signature(cls.__init__)
    defaults = {name: p.default for name, p in signature.parameters.items()
                if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    assert set(cls._get_param_names()) == set(defaults)
    constraints = getattr(cls, "_parameter_constraints", None)
    if constraints is not None:
        assert set(constraints) == set(defaults), "_parameter_constraints"
    documented = _documented_parameters(cls)
    assert list(documented) == list(defaults), "Parameters section against the signature"
    for name, default in defaults.items():
        written = _documented_default(documented[name])
        if default is inspect.Parameter.empty:
            assert written is inspect.Parameter.empty, f"{name}: a default for a required parameter"
            continue
        assert written is not inspect.Parameter.empty, f"{name}: no default= in {documented[name]!r}"
        assert _defaults_agree(written, default), (
            f"{name}: default={written!r} in the docstring, {default!r} in the signature")


def _defaults_agree(written, default):
    if isinstance(written, float) and isinstance(default, float):
        return written == default or (np.isnan(written) and np.isnan(default))
    return written == default or str(written) == str(default)


@pytest.mark.parametrize("path,obj,owner", TARGETS, ids=[t[0] for t in TARGETS])
def test_documented_defaults_match_signature(path, obj, owner):
    """A documented parameter with a default says ``default=`` that value."""
    try:
        signature = inspect.signature(obj.__init__ if inspect.isclass(obj) else obj)
    except (TypeError, ValueError):
        pytest.skip("no signature")
    doc = numpydoc_validate.get_doc_object(obj)
    documented = {}
    for param in doc["Parameters"]:
        for name in param.name.split(","):
            documented[name.strip()] = param.type
    wrong = []
    for name, param in signature.parameters.items():
        if name not in documented or param.default is inspect.Parameter.empty:
            continue
        written = _documented_default(documented[name])
        if written is inspect.Parameter.empty:
            wrong.append(f"{name}: no default= in {documented[name]!r} ({param.default!r})")
        elif not _defaults_agree(written, param.default):
            wrong.append(f"{name}: default={written!r} in the docstring, {param.default!r} "
                         "in the signature")
    assert not wrong, f"{path}:\n" + "\n".join(wrong)
