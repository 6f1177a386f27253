"""The registry reads each method's parameter declarations from a module that imports neither the
estimator nor scikit-learn (issue 25: the window's first form imported scikit-learn, about 1 s of
a cold start). The declarations must be the estimator's own, object for object."""
import subprocess
import sys

import pytest

from robustcore.methods import METHODS


@pytest.mark.parametrize("name", list(METHODS))
def test_declared_parameters_are_the_estimators_own(name):
    m = METHODS[name]
    assert m.declared is not None, f"{name} declares its parameters only on the estimator class"
    assert m.declared() is m.estimator_class.param_specs()


@pytest.mark.slow
def test_reading_every_form_imports_no_scikit_learn():
    code = ("import sys; from robustcore.methods import METHODS\n"
            "for m in METHODS.values(): m.params(); m.defaults(); m.data_defaults(10, 3)\n"
            "print(sorted(k for k in ('sklearn', 'scipy.stats', 'robustcore._outlier') if k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_method_with_its_declarations_pickles():
    # a Method goes to the worker process by pickle; its declarations must go with it
    import pickle
    m = pickle.loads(pickle.dumps(METHODS["online-rpca"].declared))
    assert m() is METHODS["online-rpca"].declared()
