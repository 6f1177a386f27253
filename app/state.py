"""Application state: the current data set, the results tagged with what produced them, and the
one selection shared by every view. It knows nothing of widgets; views and panels react to its
signals."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, Signal


class AppState(QObject):
    """Holds what the window shows.

    Signals
    -------
    datasetChanged(object)      the new Dataset (or None); all results are dropped.
    resultAdded(str)            method name whose RunResult was stored (or replaced).
    resultsCleared()
    selectionChanged(object)    sorted int64 array of selected sample indices.
    currentMethodChanged(str)
    """

    datasetChanged = Signal(object)
    resultAdded = Signal(str)
    resultsCleared = Signal()
    selectionChanged = Signal(object)
    currentMethodChanged = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._dataset = None
        self._results: dict = {}
        self._selection = np.zeros(0, dtype=np.int64)
        self._current_method = "pca"
        self._fingerprint: str | None = None
        # Bumped on every data change so a result computed on older data is recognised as stale.
        self.data_version = 0

    # -- data ----------------------------------------------------------------------------
    @property
    def dataset(self):
        return self._dataset

    def set_dataset(self, dataset, fingerprint: str | None = None) -> None:
        """Make ``dataset`` current. ``fingerprint`` (``dataset.fingerprint()``) may be passed when
        it was already computed, e.g. off the GUI thread: hashing large in-memory data takes time."""
        self._dataset = dataset
        self._fingerprint = fingerprint
        self.data_version += 1
        self._drop_results(list(self._results.values()))
        self._results.clear()
        self._selection = np.zeros(0, dtype=np.int64)
        self.resultsCleared.emit()
        self.datasetChanged.emit(dataset)
        self.selectionChanged.emit(self._selection)

    def data_fingerprint(self) -> str | None:
        """``dataset.fingerprint()`` of the current data, computed once per data set."""
        if self._dataset is None:
            return None
        if self._fingerprint is None:
            self._fingerprint = self._dataset.fingerprint()
        return self._fingerprint

    def adopt_fingerprint(self, fingerprint: str) -> None:
        """Record the current data's fingerprint computed elsewhere (a worker that used this very
        data set), so the GUI thread never has to hash it."""
        if self._dataset is not None and self._fingerprint is None:
            self._fingerprint = fingerprint

    # -- results -------------------------------------------------------------------------
    @property
    def results(self) -> dict:
        """method name -> RunResult (the latest run of each method on the current data)."""
        return dict(self._results)

    def result(self, method: str | None = None):
        return self._results.get(method or self._current_method)

    def add_result(self, result) -> bool:
        """Store a result if it was computed on the current data; return whether it was kept."""
        if self._dataset is None or result.data_fingerprint != self.data_fingerprint():
            return False
        old = self._results.get(result.method)
        self._results[result.method] = result
        if old is not None and old is not result:
            self._drop_results([old])
        self.resultAdded.emit(result.method)
        return True

    @staticmethod
    def _drop_results(results) -> None:
        # the files a large result's arrays were mapped from go with it (mapped_tables)
        from .mapped_tables import forget_result
        for r in results:
            forget_result(r)

    # -- method --------------------------------------------------------------------------
    @property
    def current_method(self) -> str:
        return self._current_method

    def set_current_method(self, name: str) -> None:
        if name != self._current_method:
            self._current_method = name
            self.currentMethodChanged.emit(name)

    # -- selection -----------------------------------------------------------------------
    @property
    def selection(self) -> np.ndarray:
        return self._selection

    def set_selection(self, indices, mode: str = "replace") -> None:
        """Change the selection: mode is "replace", "add" or "subtract"."""
        idx = np.unique(np.asarray(indices, dtype=np.int64).ravel())
        if self._dataset is not None and idx.size:
            idx = idx[(idx >= 0) & (idx < self._dataset.n_samples)]
        if mode == "add":
            idx = np.union1d(self._selection, idx)
        elif mode == "subtract":
            idx = np.setdiff1d(self._selection, idx)
        elif mode != "replace":
            raise ValueError(f"mode must be one of replace, add, subtract; got {mode!r}")
        if idx.shape == self._selection.shape and np.array_equal(idx, self._selection):
            return
        self._selection = idx
        self.selectionChanged.emit(idx)
