"""Every method of the registry has a documentation page whose parameter table is generated from
its declaration, and the generator gives one row per declared parameter with its real default."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from robustcore.methods import METHODS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _param_tables():
    spec = importlib.util.spec_from_file_location("param_tables", DOCS / "_ext" / "param_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_registered_method_has_a_page_with_its_generated_table():
    tables = {m for page in (DOCS / "methods").glob("*.rst")
              for m in re.findall(r"^\.\. param-table:: (\S+)$", page.read_text(), flags=re.M)}
    assert set(METHODS) <= tables


def test_table_rows_are_the_declared_parameters_and_defaults():
    rows = _param_tables().param_rows
    for name, method in METHODS.items():
        got = {r[0]: r[1] for r in rows(name)}
        declared = list(method.estimator_class.param_specs()) + list(method.extra_params)
        assert sorted(got) == sorted(p.name for p in declared)
        for p in method.params():
            assert got[p.name].startswith(repr(p.default) if p.default is not None else "None (")
