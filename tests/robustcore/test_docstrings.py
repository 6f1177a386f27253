"""Estimator docstrings: the Parameters section is rendered from the ``Param`` declarations (each
parameter's help written once), and every section is one of numpydoc's standard sections."""
import ast
import inspect
import warnings

import pytest

from robustcore import ESFS, PCA, PCP, ROBPCA, SCW, CoherencePursuit, Param, ResidualScorer
from robustcore._docstring import STANDARD_SECTIONS, render_parameters, sections, with_parameters
from robustcore.subspace.online_rpca import OnlineRPCA

ESTIMATORS = [PCP, OnlineRPCA, ESFS, SCW, PCA, ResidualScorer, CoherencePursuit, ROBPCA]


def _entries(doc):
    """name -> description text of the Parameters section."""
    lines = inspect.cleandoc(doc).splitlines()
    start = lines.index("Parameters") + 2
    out, name = {}, None
    for line in lines[start:]:
        if line and not line.startswith(" "):
            if set(line.strip()) == {"-"} or line.strip() in STANDARD_SECTIONS:
                break
            name = line.split(" : ")[0]
            out[name] = ""
        elif name is not None:
            out[name] += " " + line.strip()
    return {k: " ".join(v.split()) for k, v in out.items()}


def _source_docstring(cls):
    tree = ast.parse(inspect.getsource(inspect.getmodule(cls)))
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
    return ast.get_docstring(node)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_parameters_are_written_once_in_the_declarations(cls):
    assert "Parameters" not in sections(_source_docstring(cls))      # not by hand in the source
    entries = _entries(cls.__doc__)
    assert list(entries) == [p.name for p in cls._params]
    for p in cls._params:      # (markup in the plain help becomes inline literals: ``|S|``)
        assert " ".join(p.help.split()) in entries[p.name].replace("``", "")
        if p.doc:
            assert " ".join(p.doc.split()) in entries[p.name]


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_only_numpydoc_sections(cls):
    found = sections(cls.__doc__)
    assert found[0] == "Parameters" and set(found) <= set(STANDARD_SECTIONS), found


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_numpydoc_reads_the_rendered_docstring(cls):
    docscrape = pytest.importorskip("numpydoc.docscrape")
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # an unknown section is a warning in numpydoc
        doc = docscrape.ClassDoc(cls, config={"show_class_members": False})
    assert [p.name for p in doc["Parameters"]] == [p.name for p in cls._params]
    assert doc["Attributes"] and all(a.name.endswith("_") for a in doc["Attributes"])


def test_rendering_inserts_before_the_first_section_and_leaves_written_ones_alone():
    params = (Param("k", int, 3, "How many.", low=1),
              Param("w", float, None, "Width.", low=0.0, low_inclusive=False, allow_none=True,
                    none_label="from the data", doc="First paragraph.\n\nSecond paragraph."))
    doc = """Summary.

    More words.

    Attributes
    ----------
    k_ : int
        The k used.
    """
    out = with_parameters(doc, params)
    assert sections(out) == ["Parameters", "Attributes"]
    assert out.index("More words.") < out.index("Parameters") < out.index("k_ : int")
    assert "k : int >= 1, default=3\n    How many." in out
    assert "w : float > 0 or None, default=None\n    Width. None: from the data. First paragraph.\n\n" \
           "    Second paragraph." in out
    assert with_parameters(out, params) == out                        # already has one
    assert sections(with_parameters("Only a summary.", params)) == ["Parameters"]
    assert render_parameters(params).startswith("Parameters\n----------\nk : ")
