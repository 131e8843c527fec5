"""scikit-learn's estimator contract for evqual's estimators, without importing scikit-learn.

Importing :mod:`sklearn.base` costs a scoring process more than a second
(scikit-learn's own start-up imports scipy.stats and pandas), and scoring
with a saved model needs none of it (issue 41).  evqual's estimators
therefore derive from the classes here, which give them what
:class:`sklearn.base.BaseEstimator` and its mixins give:

* ``get_params`` / ``set_params`` (nested ``a__b`` keys included), the
  parameters being the keyword arguments of ``__init__``, so that
  :func:`sklearn.base.clone`, grid searches and pipelines work as with any
  scikit-learn estimator;
* ``__sklearn_tags__`` (estimator type, classifier, transformer and target
  tags), built with scikit-learn's own tag classes when scikit-learn asks;
* a ``repr`` listing the parameters that differ from their defaults;
* ``fit_transform`` for transformers, ``score`` (accuracy) for classifiers;
* :func:`check_is_fitted` and :func:`available_if` with scikit-learn's
  behaviour and wording (``NotFittedError`` is scikit-learn's).

scikit-learn is imported only when something needs it: training, tags,
``score``, or an unfitted estimator's error.  scikit-learn's estimator checks
run on :class:`evqual.evidence.ClaimModel` (``tests/test_evidence.py``).

>>> class Scaled(BaseEstimator):
...     def __init__(self, factor=2.0, *, name="x"):
...         self.factor = factor
...         self.name = name
>>> est = Scaled(name="y")
>>> est
Scaled(name='y')
>>> sorted(est.get_params().items())
[('factor', 2.0), ('name', 'y')]
>>> est.set_params(factor=3.0).factor
3.0
"""

from __future__ import annotations

import inspect
from collections import defaultdict
from functools import update_wrapper
from types import MethodType

__all__ = ["BaseEstimator", "ClassifierMixin", "TransformerMixin", "check_is_fitted", "available_if"]


class BaseEstimator:
    """The parameter API of :class:`sklearn.base.BaseEstimator`: ``__init__``'s keyword arguments are the
    parameters, stored as given."""

    @classmethod
    def _get_param_names(cls) -> list:
        init = getattr(cls.__init__, "deprecated_original", cls.__init__)
        if init is object.__init__:
            return []
        params = [p for p in inspect.signature(init).parameters.values()
                  if p.name != "self" and p.kind != p.VAR_KEYWORD]
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                raise RuntimeError(
                    "scikit-learn estimators should always specify their parameters in the signature of their "
                    f"__init__ (no varargs). {cls} with constructor {inspect.signature(init)} doesn't  follow "
                    "this convention.")
        return sorted(p.name for p in params)

    def get_params(self, deep: bool = True) -> dict:
        """Parameters of this estimator (with ``deep``, those of the estimators among them as ``name__key``)."""
        out = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((key + "__" + k, v) for k, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params):
        """Set parameters (``name__key`` sets a parameter of the estimator held as ``name``); returns self."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested = defaultdict(dict)
        for key, value in params.items():
            key, delim, sub_key = key.partition("__")
            if key not in valid:
                local_valid = self._get_param_names()
                raise ValueError(f"Invalid parameter {key!r} for estimator {self}. Valid parameters are: "
                                 f"{local_valid!r}.")
            if delim:
                nested[key][sub_key] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        try:
            init = inspect.signature(type(self).__init__).parameters
            shown = []
            for name in self._get_param_names():
                value = getattr(self, name, None)
                default = init[name].default if name in init else inspect.Parameter.empty
                if default is not inspect.Parameter.empty and _same(value, default):
                    continue
                shown.append(f"{name}={value!r}")
        except Exception:  # noqa: BLE001 - a repr never raises
            return f"{type(self).__name__}(...)"
        return f"{type(self).__name__}({', '.join(shown)})"

    def __sklearn_tags__(self):
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False), transformer_tags=None,
                    regressor_tags=None, classifier_tags=None)


def _same(a, b) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - arrays and other values without a truth value
        return False


class ClassifierMixin:
    """:class:`sklearn.base.ClassifierMixin`: the classifier tags and ``score`` (accuracy)."""

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags

        tags = super().__sklearn_tags__()
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags()
        tags.target_tags.required = True
        return tags

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy of ``self.predict(X)`` against ``y``."""
        from sklearn.metrics import accuracy_score

        return accuracy_score(y, self.predict(X), sample_weight=sample_weight)


class TransformerMixin:
    """:class:`sklearn.base.TransformerMixin`: the transformer tags and ``fit_transform``."""

    def __sklearn_tags__(self):
        from sklearn.utils import TransformerTags

        tags = super().__sklearn_tags__()
        tags.transformer_tags = TransformerTags()
        return tags

    def fit_transform(self, X, y=None, **fit_params):
        """``fit`` then ``transform`` on the same ``X``."""
        if y is None:
            return self.fit(X, **fit_params).transform(X)
        return self.fit(X, y, **fit_params).transform(X)


_NOT_FITTED = ("This %(name)s instance is not fitted yet. Call 'fit' with appropriate arguments before using "
               "this estimator.")


def check_is_fitted(estimator, attributes=None, *, msg=None, all_or_any=all) -> None:
    """:func:`sklearn.utils.validation.check_is_fitted`: raises scikit-learn's ``NotFittedError`` when
    ``estimator`` lacks ``attributes`` (default: any attribute ending in ``_``, or its
    ``__sklearn_is_fitted__()``).

    >>> class Model(BaseEstimator):
    ...     def fit(self, X=None):
    ...         self.coef_ = 1.0
    ...         return self
    >>> check_is_fitted(Model().fit())
    >>> check_is_fitted(Model(), "coef_")
    Traceback (most recent call last):
    ...
    sklearn.exceptions.NotFittedError: This Model instance is not fitted yet. Call 'fit' with appropriate \
arguments before using this estimator.
    """
    if inspect.isclass(estimator):
        raise TypeError(f"{estimator} is a class, not an instance.")
    if not hasattr(estimator, "fit"):
        raise TypeError(f"{estimator} is not an estimator instance.")
    if attributes is not None:
        names = [attributes] if isinstance(attributes, str) else attributes
        fitted = all_or_any(hasattr(estimator, a) for a in names)
    elif hasattr(estimator, "__sklearn_is_fitted__"):
        fitted = estimator.__sklearn_is_fitted__()
    else:
        fitted = any(v.endswith("_") and not v.startswith("__") for v in vars(estimator))
    if not fitted:
        from sklearn.exceptions import NotFittedError

        raise NotFittedError((msg or _NOT_FITTED) % {"name": type(estimator).__name__})


class _AvailableIf:
    """The descriptor of :func:`available_if`."""

    def __init__(self, fn, check, attribute_name: str):
        self.fn = fn
        self.check = check
        self.attribute_name = attribute_name
        update_wrapper(self, fn)

    def __get__(self, obj, owner=None):
        if obj is not None:
            if not self.check(obj):
                raise AttributeError(f"This {owner.__name__!r} has no attribute {self.attribute_name!r}")
            return MethodType(self.fn, obj)

        def unbound(*args, **kwargs):
            if not self.check(args[0]):
                raise AttributeError(f"This {owner.__name__!r} has no attribute {self.attribute_name!r}")
            return self.fn(*args, **kwargs)

        update_wrapper(unbound, self.fn)
        return unbound


def available_if(check):
    """:func:`sklearn.utils.metaestimators.available_if`: the method exists only where ``check(self)`` is
    true (``hasattr`` answers False elsewhere).

    >>> class Box:
    ...     def __init__(self, inner):
    ...         self.inner = inner
    ...     @available_if(lambda self: hasattr(self.inner, "upper"))
    ...     def shout(self):
    ...         return self.inner.upper()
    >>> Box("hi").shout(), hasattr(Box(3), "shout")
    ('HI', False)
    """
    return lambda fn: _AvailableIf(fn, check=check, attribute_name=fn.__name__)
