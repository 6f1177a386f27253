import pytest

pytest.importorskip("dask")
