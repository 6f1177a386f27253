"""Small helpers several views share: combo boxes that keep the user's choice across refreshes,
label codes, and the one-line description of a sample used by every tooltip."""
from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QComboBox, QLabel

def title_of(method: str) -> str:
    """The registry's title of a method (its name when the registry does not know it)."""
    from robustcore.methods import METHODS
    m = METHODS.get(method)
    return m.title if m is not None else method


class Choice(QComboBox):
    """A combo box of (text, key) items that keeps the selected key when its items are replaced
    (``keep=False``: ``default`` wins). It is as wide as its longest item, so no choice is ever
    shown cut off."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)

    def set_items(self, items, default=None, keep: bool = True) -> None:
        kept = self.key() if keep else None
        keys = [k for _, k in items]
        self.blockSignals(True)
        self.clear()
        for text, key in items:
            self.addItem(text, key)
        target = kept if kept in keys else default if default in keys else (keys[0] if keys else None)
        if target is not None:
            self.setCurrentIndex(keys.index(target))
        self.blockSignals(False)

    def key(self):
        i = self.currentIndex()
        return self.itemData(i) if i >= 0 else None

    def set_key(self, key) -> bool:
        for i in range(self.count()):
            if self.itemData(i) == key:
                self.setCurrentIndex(i)
                return True
        return False

    def keys(self) -> list:
        return [self.itemData(i) for i in range(self.count())]


def labelled(text: str, widget):
    lab = QLabel(text)
    lab.setBuddy(widget)
    return lab


def label_codes(dataset) -> tuple[np.ndarray, list[str]]:
    """(codes (n,) int with -1 for unknown, names) of the data set's labels in class order."""
    if dataset is None or dataset.labels is None:
        return np.full(0 if dataset is None else dataset.n_samples, -1, dtype=np.int64), []
    names = list(dataset.class_names or [])
    pos = {str(c): i for i, c in enumerate(names)}
    labels = dataset.labels
    out = np.empty(len(labels), dtype=np.int64)
    # By blocks: one np.unique over 15M string labels held the GIL for seconds (a binned
    # scatter makes these codes on a worker thread while the window must keep answering).
    for a in range(0, len(labels), _LABEL_BLOCK):
        uniq, inv = np.unique(np.asarray(labels[a:a + _LABEL_BLOCK]), return_inverse=True)
        out[a:a + _LABEL_BLOCK] = np.array([pos.get(str(u), -1) for u in uniq], dtype=np.int64)[inv.ravel()]
    return out, [str(c) for c in names]


_LABEL_BLOCK = 100_000


def fmt(v) -> str:
    v = float(v)
    if v == 0 or 1e-3 <= abs(v) < 1e5:
        return f"{v:.4g}"
    return f"{v:.3e}"


def sample_id(dataset, i: int) -> str:
    """The id of sample i: its name in the file, or its index when the data set has no names
    (data opened out of core numbers its rows only)."""
    ids = getattr(dataset, "sample_ids", None)
    return str(i) if ids is None else ids[i]


def describe_sample(dataset, i: int, result=None, flags=None) -> str:
    """'#12 (id 12) · label 8 · known outlier · spe 3.1 · flagged' for tooltips and status lines."""
    parts = [f"#{i}"]
    if dataset is not None:
        sid = sample_id(dataset, i)
        if sid != str(i):
            parts.append(f"id {sid}")
        if dataset.labels is not None:
            parts.append(f"label {dataset.labels[i]}")
        if dataset.outliers is not None and dataset.outliers[i]:
            parts.append("known outlier")
    if result is not None:
        for name, s in result.sample_scores.items():
            parts.append(f"{name} {fmt(s[i])}")   # one row: a stored score is not read whole
    if flags is not None and flags[i]:
        parts.append("flagged")
    return " · ".join(parts)
