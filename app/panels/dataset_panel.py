"""Dataset panel: open a file or a demo, see what was loaded (summary and a preview table)."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import (QComboBox, QFormLayout, QHBoxLayout, QHeaderView, QLabel, QMenu, QProgressBar,
                               QPushButton, QSizePolicy, QTableView, QToolButton, QVBoxLayout, QWidget)

from robustcore.datasets import is_lazy_dataset

__all__ = ["DatasetPanel", "PreviewModel"]

MAX_PREVIEW_ROWS = 5000
MAX_PREVIEW_COLS = 200
LAZY_PREVIEW_ROWS = 100   # rows read from disk to preview data opened out of core


class PreviewModel(QAbstractTableModel):
    """The first rows and columns of a data set; cells are formatted only when shown."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.dataset = None
        self._extra: list[tuple[str, object]] = []
        self._rows = 0
        self._cols = 0
        self._head = None   # the first rows of a table opened out of core (read once)

    def set_dataset(self, ds) -> None:
        self.beginResetModel()
        self.dataset = ds
        self._extra = []
        self._head = None
        if is_lazy_dataset(ds):
            self._head = _lazy_head(ds)
            self._rows, self._cols = self._head.shape
        elif ds is not None:
            if ds.labels is not None:
                self._extra.append(("label", ds.labels))
            if ds.outliers is not None:
                self._extra.append(("outlier", ds.outliers))
            self._rows = min(ds.n_samples, MAX_PREVIEW_ROWS)
            self._cols = min(ds.n_features, MAX_PREVIEW_COLS)
        else:
            self._rows = self._cols = 0
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else self._rows

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else self._cols + len(self._extra)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or self.dataset is None:
            return None
        r, c = index.row(), index.column()
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if c < len(self._extra):
            name, arr = self._extra[c]
            v = arr[r]
            if name == "outlier":
                return "yes" if v else ""
            return str(v)
        j = c - len(self._extra)
        X = self.dataset.X if self._head is None else self._head
        v = X[r, j]   # a scalar for arrays and for scipy.sparse matrices alike
        return f"{float(v):.4g}"

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role != Qt.ItemDataRole.DisplayRole or self.dataset is None:
            return None
        if orientation == Qt.Orientation.Horizontal:
            if section < len(self._extra):
                return self._extra[section][0]
            return str(self.dataset.feature_names[section - len(self._extra)])
        return str(section) if self.dataset.sample_ids is None else str(self.dataset.sample_ids[section])


def _lazy_head(ds) -> np.ndarray:
    """The first rows and columns of a table opened out of core (one small read); none of a video."""
    if ds.kind != "table":
        return np.zeros((0, 0))
    n, d = min(ds.n_samples, LAZY_PREVIEW_ROWS), min(ds.n_features, MAX_PREVIEW_COLS)
    reader = getattr(ds.source, "reader", None)
    if reader is not None:
        # Just these rows: through Dask, the GUI thread waited for a whole block (67 MB at
        # 30,000,000 x 20), and the rows, a view of it, kept it for the window's life.
        return np.array(reader.read(0, n)[:, :d], dtype=float)
    from robustcore.bigdata import compute
    # robustcore's one way of computing: Dask asked by name for a scheduler imports
    # dask.distributed (16 MB, 0.4 s of CPU) to look for a client. Copied: a view of the block.
    (head,) = compute(ds.source.array[:n, :d], message="reading the first rows")
    return np.array(head, dtype=float)


class DatasetPanel(QWidget):
    """Signals: openRequested(), demoRequested(str), optionsRequested() (reload the current file
    with other loader options), truthRequested(dict) (reload it with these loader options, which
    set the known outliers), cancelLoadRequested(),
    outOfCoreSettingsRequested()."""

    openRequested = Signal()
    demoRequested = Signal(str)
    optionsRequested = Signal()
    truthRequested = Signal(dict)
    cancelLoadRequested = Signal()
    outOfCoreSettingsRequested = Signal()

    def __init__(self, demos: dict | None = None, parent=None):
        super().__init__(parent)
        self.open_button = QPushButton("Open…")
        self.open_button.setToolTip("Open a data file (Ctrl+O); you can also drop a file on the window")
        self.open_button.clicked.connect(self.openRequested)
        self.demo_button = QToolButton()
        self.demo_button.setText("Demo data")
        self.demo_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.demo_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.demo_button.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.demo_menu = QMenu(self)
        self.demo_menu.setToolTipsVisible(True)
        self.demo_button.setMenu(self.demo_menu)
        self.set_demos(demos or {})

        self.title = QLabel("No data loaded")
        self.title.setObjectName("dataset_title")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.title.setWordWrap(True)
        self.hint = QLabel("Open a file (CSV, NPY/NPZ, LIBSVM, IDX, MATLAB, images) or pick a demo. "
                           "You can also drop a file on the window.")
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color: #555;")
        self.summary_box = QWidget()
        self.summary_form = QFormLayout(self.summary_box)
        self.summary_form.setContentsMargins(0, 0, 0, 0)
        self.summary_form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
        self.summary_form.setHorizontalSpacing(10)
        self.summary_form.setVerticalSpacing(2)
        self.description = QLabel()
        self.description.setWordWrap(True)
        self.description.setStyleSheet("color: #555;")
        self.description.setVisible(False)
        self.options_button = QPushButton("Load options…")
        self.options_button.setToolTip("Load this file again with other options (label column, "
                                       "delimiter, variables…)")
        self.options_button.clicked.connect(self.optionsRequested)
        self.options_button.setVisible(False)
        # Which samples are the known outliers (the truth methods are evaluated against): the
        # file's own 0/1 y, none, or the samples with one label value. A choice reloads the file
        # with the loader option that says so, so sessions and the CLI reproduce it.
        self.truth_box = QComboBox()
        self.truth_box.setObjectName("known_outliers_box")
        self.truth_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.truth_box.setMinimumContentsLength(12)
        self.truth_box.activated.connect(self._truth_chosen)
        self.truth_label = QLabel("Known outliers")
        self.truth_label.setStyleSheet("color: #555;")
        self._truth_options: list[dict] = []
        self.ooc_button = QPushButton("Out-of-core settings…")
        self.ooc_button.setObjectName("out_of_core_settings_button")
        self.ooc_button.setToolTip("Memory budget, and the Dask scheduler out-of-core fits run on")
        self.ooc_button.clicked.connect(self.outOfCoreSettingsRequested)
        self.ooc_button.setVisible(False)
        self.out_of_core = {"memory_budget": None, "scheduler": None, "results_to": None}
        self.busy_label = QLabel()
        self.busy_label.setWordWrap(True)
        # Loaders do not say how far they are: a busy bar, and Cancel (Esc works for fits).
        self.load_progress = QProgressBar()
        self.load_progress.setRange(0, 0)
        self.load_progress.setTextVisible(False)
        self.load_progress.setMaximumHeight(10)
        self.cancel_load_button = QPushButton("Cancel")
        self.cancel_load_button.setObjectName("cancel_load_button")
        self.cancel_load_button.setToolTip("Stop loading; the data shown stays as it was")
        self.cancel_load_button.clicked.connect(self.cancelLoadRequested)
        self.busy_box = QWidget()
        busy = QHBoxLayout(self.busy_box)
        busy.setContentsMargins(0, 0, 0, 0)
        busy.addWidget(self.busy_label, 1)
        busy.addWidget(self.cancel_load_button)
        self.busy_box.setVisible(False)
        self.load_progress.setVisible(False)

        self.model = PreviewModel(self)
        self.table = QTableView()
        self.table.setObjectName("preview_table")
        self.table.setModel(self.model)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setDefaultSectionSize(20)
        self.table.horizontalHeader().setDefaultSectionSize(64)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # Size columns from the first rows only: measuring thousands of cells would stall the GUI.
        self.table.horizontalHeader().setResizeContentsPrecision(40)
        self.table.verticalHeader().setResizeContentsPrecision(40)
        self.table.setVisible(False)
        self._columns_sized = 0
        self._column_timer = QTimer(self)   # sizes the next columns (see _size_columns)
        self._column_timer.setSingleShot(True)
        self._column_timer.setInterval(0)
        self._column_timer.timeout.connect(lambda: self._size_columns(start=self._columns_sized))
        self.preview_note = QLabel()
        self.preview_note.setStyleSheet("color: #555;")
        self.preview_note.setWordWrap(True)
        self.preview_note.setVisible(False)

        buttons = QHBoxLayout()
        buttons.addWidget(self.open_button, 1)
        buttons.addWidget(self.demo_button, 1)
        lay = QVBoxLayout(self)
        lay.addLayout(buttons)
        lay.addWidget(self.busy_box)
        lay.addWidget(self.load_progress)
        lay.addWidget(self.title)
        lay.addWidget(self.hint)
        lay.addWidget(self.summary_box)
        lay.addWidget(self.description)
        opt_row = QHBoxLayout()
        opt_row.addWidget(self.truth_label)
        opt_row.addWidget(self.truth_box, 1)
        lay.addLayout(opt_row)
        # The buttons on a row of their own: beside the known-outliers chooser they made the
        # panel 370 px wide at least, and at 200 % (960 x 540) the docks took more than half
        # the window from the views.
        button_row = QHBoxLayout()
        button_row.addWidget(self.ooc_button)
        button_row.addWidget(self.options_button)
        button_row.addStretch(1)
        lay.addLayout(button_row)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.preview_note)
        lay.addStretch(0)
        self._stretch_when_empty = lay

    def set_demos(self, demos: dict) -> None:
        self.demo_menu.clear()
        for name, desc in demos.items():
            act = self.demo_menu.addAction(name)
            act.setToolTip(desc)
            act.triggered.connect(lambda checked=False, n=name: self.demoRequested.emit(n))
        self.demo_button.setEnabled(bool(demos))

    def set_loading(self, text: str | None) -> None:
        self.busy_label.setText(text or "")
        self.busy_box.setVisible(bool(text))
        self.load_progress.setVisible(bool(text))

    def set_out_of_core(self, budget: int, scheduler: str | None, results_dir: str) -> None:
        """The settings out-of-core work uses (shown with data opened out of core)."""
        self.out_of_core = {"memory_budget": budget, "scheduler": scheduler, "results_to": results_dir}
        ds = self.model.dataset
        if is_lazy_dataset(ds):
            self.set_dataset(ds)

    # Columns sized per turn of the event loop: 200 columns took 15-25 ms of the turn the data
    # arrived in; the first 40 cover any window's width (issue 25, bench_views.py gaps).
    COLUMNS_PER_TURN = 40

    def _size_columns(self, rows: int = 12, start: int = 0) -> None:
        """Each column as wide as its name and its first ``rows`` cells. Qt's
        resizeColumnsToContents asked the model for every role of 40 rows of 200 columns (64,000
        calls, 0.26 s of frozen window when a 256-feature table arrived); this measures the text,
        ``COLUMNS_PER_TURN`` columns now and the next ones on the next turn."""
        model, header = self.model, self.table.horizontalHeader()
        fm = self.table.fontMetrics()
        head_fm = header.fontMetrics()
        pad = 2 * self.table.style().pixelMetric(self.table.style().PixelMetric.PM_FocusFrameHMargin) + 12
        stop = min(model.columnCount(), start + self.COLUMNS_PER_TURN)
        for c in range(start, stop):
            name = model.headerData(c, Qt.Orientation.Horizontal) or ""
            cells = (model.data(model.index(r, c)) or "" for r in range(min(rows, model.rowCount())))
            width = max([head_fm.horizontalAdvance(name)] + [fm.horizontalAdvance(t) for t in cells])
            header.resizeSection(c, width + pad)
        self._columns_sized = stop
        if stop < model.columnCount():
            self._column_timer.start()
        else:
            self._column_timer.stop()

    def columns_sizing(self) -> bool:
        """Whether columns of the preview are still to be sized on coming turns."""
        return self._columns_sized < self.model.columnCount()

    def set_dataset(self, ds) -> None:
        while self.summary_form.rowCount():
            self.summary_form.removeRow(0)
        self.model.set_dataset(ds)
        if ds is None:
            self.title.setText("No data loaded")
            self.hint.setVisible(True)
            self.description.setVisible(False)
            self.table.setVisible(False)
            self.preview_note.setVisible(False)
            self.options_button.setVisible(False)
            self._fill_truth(None)
            return
        lazy = is_lazy_dataset(ds)
        self.options_button.setVisible(bool(ds.provenance.path) and not ds.provenance.demo and not lazy)
        self.ooc_button.setVisible(lazy)
        self._fill_truth(None if lazy else ds)   # no reload into memory from a table out of core
        self.hint.setVisible(False)
        self.title.setText(ds.name + (" (out of core)" if lazy else ""))
        rows = lazy_summary(ds, **self.out_of_core) if lazy else dataset_summary(ds)
        for key, value in rows:
            lab = QLabel(str(value))
            lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            lab.setWordWrap(True)
            lab.setObjectName(f"summary_{key.replace(' ', '_')}")
            if key == "warning":
                lab.setStyleSheet("color: #a15c00;")
            key_label = QLabel(key)
            key_label.setStyleSheet("color: #555;")
            self.summary_form.addRow(key_label, lab)
        self.description.setText(ds.description or "")
        self.description.setVisible(bool(ds.description))
        self.table.setVisible(self.model.rowCount() > 0)
        self._size_columns()
        n, d = ds.n_samples, ds.n_features
        notes = []
        if lazy:
            notes.append(f"first {self.model.rowCount():,} of {n:,} samples (read from disk)" if ds.kind == "table"
                         else "no preview")
            self.preview_note.setText("Preview shows the " + " and the ".join(notes) if ds.kind == "table" else
                                      "The frames stay on disk: the L + S view shows them after a fit.")
            self.preview_note.setVisible(True)
            return
        if n > MAX_PREVIEW_ROWS:
            notes.append(f"first {MAX_PREVIEW_ROWS:,} of {n:,} samples")
        if d > MAX_PREVIEW_COLS:
            notes.append(f"first {MAX_PREVIEW_COLS:,} of {d:,} features")
        self.preview_note.setText("Preview shows the " + " and the ".join(notes) if notes else "")
        self.preview_note.setVisible(bool(notes))

    def _fill_truth(self, ds) -> None:
        """Offer what can mark the known outliers of ``ds`` and show the current choice."""
        self.truth_box.clear()
        self._truth_options = []
        if ds is None:
            for w in (self.truth_box, self.truth_label):
                w.setVisible(False)
            return
        from robustcore.datasets import LOADERS
        prov = ds.provenance
        opts = dict(prov.options or {})
        loader = LOADERS.get(prov.loader)
        names = {p.name for p in loader.options} if loader is not None else set()
        reloadable = bool(prov.path) and not prov.demo and "outlier_label" in names
        items = [("none", {"known_outliers": False, "outlier_label": None})]
        if "known_outliers" in names:
            items.append(("the file's 0/1 y (1 = outlier)", {"known_outliers": True, "outlier_label": None}))
        if ds.labels is not None:
            values = np.unique(np.asarray([str(v) for v in np.asarray(ds.labels).tolist()]))
            if values.size <= MAX_TRUTH_LABELS:
                items += [(f"label = {v}", {"outlier_label": str(v)}) for v in values]
        if ds.outliers is None:
            current = 0
        elif opts.get("outlier_label") is not None:
            current = next((i for i, (_, o) in enumerate(items)
                            if o.get("outlier_label") == str(opts["outlier_label"])), -1)
        else:
            current = 1 if "known_outliers" in names else -1
        if current < 0:   # set some other way (a demo's own truth): say so, offer the rest
            items.insert(0, ("as in the demo" if prov.demo
                             else f"as loaded ({getattr(ds, 'outliers_from', None) or 'from the data set'})", None))
            current = 0
        for text, o in items:
            self.truth_box.addItem(text)
            self._truth_options.append(o)
        self.truth_box.setCurrentIndex(current)
        self.truth_box.setEnabled(reloadable)
        self.truth_box.setToolTip(
            "Which samples are the known outliers that methods are evaluated against (ROC-AUC, "
            "average precision, the Known outliers view). Choosing reloads the file."
            if reloadable else "A demo's known outliers are part of it; open a file to choose them.")
        for w in (self.truth_box, self.truth_label):
            w.setVisible(reloadable or ds.outliers is not None)

    def _truth_chosen(self, index: int) -> None:
        o = self._truth_options[index] if 0 <= index < len(self._truth_options) else None
        if o is not None:
            self.truthRequested.emit(dict(o))

    def summary_text(self) -> dict:
        """What the summary shows, as {key: text} (for tests and logs)."""
        out = {}
        for row in range(self.summary_form.rowCount()):
            k = self.summary_form.itemAt(row, QFormLayout.ItemRole.LabelRole).widget().text()
            v = self.summary_form.itemAt(row, QFormLayout.ItemRole.FieldRole).widget().text()
            out[k] = f"{out[k]}\n{v}" if k in out else v  # several warnings: one entry
        return out


MAX_TRUTH_LABELS = 50   # more distinct labels than this: use Load options


def dataset_summary(ds) -> list[tuple[str, str]]:
    """(key, text) rows: shape, labels, outliers, image shape, provenance."""
    rows = [("shape", f"{ds.n_samples:,} samples × {ds.n_features:,} features"
                      + (" (sparse)" if ds.is_sparse else ""))]
    if ds.labels is not None:
        names = [str(c) for c in (ds.class_names or [])]
        counts = []
        labels = np.asarray(ds.labels)
        for c in (ds.class_names or [])[:8]:
            counts.append(f"{c}: {int(np.sum(labels == c))}")
        more = f", … ({len(names)} classes)" if len(names) > 8 else ""
        rows.append(("labels", ", ".join(counts) + more))
    else:
        rows.append(("labels", "none"))
    if ds.outliers is not None:
        k = int(np.sum(ds.outliers))
        source = f" (from {ds.outliers_from})" if getattr(ds, "outliers_from", None) else ""
        rows.append(("known outliers", f"{k:,} ({100.0 * k / max(ds.n_samples, 1):.1f} %){source}"))
    if ds.image_shape is not None:
        h, w = ds.image_shape
        rows.append(("image shape", f"{h} × {w} pixels" + (", video frames" if ds.frame_order is not None else "")))
    p = ds.provenance
    if p.demo:
        rows.append(("source", f"bundled demo '{p.demo}'"))
    elif p.path:
        rows.append(("source", p.path))
    else:
        rows.append(("source", p.loader))
    if p.path and p.demo is None:
        rows.append(("loader", p.loader))
        chosen = _chosen_options(p.loader, p.options)
        if chosen:
            rows.append(("options", loader_options_text(chosen)))
    if p.size:
        rows.append(("file size", _size(p.size)))
    if p.sha256:
        rows.append(("sha256", p.sha256[:16] + "…"))
    for w in getattr(ds, "warnings", None) or []:
        rows.append(("warning", f"⚠ {w}"))  # what the loader could not take in as it was
    return rows


def lazy_summary(ds, memory_budget=None, scheduler=None, results_to=None) -> list[tuple[str, str]]:
    """(key, text) rows of a data set opened out of core: what is on disk, how it is read, and
    the settings out-of-core fits use."""
    from ..out_of_core import format_bytes
    info = ds.source.describe()
    rows = [("shape", f"{ds.n_samples:,} samples × {ds.n_features:,} features"),
            ("out of core", "yes: read from disk a block at a time")]
    if ds.kind == "table":
        rows.append(("stored as", str(info.get("stored as", ds.provenance.loader))))
        if info.get("array"):
            rows.append(("array", str(info["array"])))
    else:
        h, w = ds.image_shape
        rows.append(("frames", f"{ds.n_samples:,} frames of {w} × {h} pixels"
                     + (f", {info['codec']}" if info.get("codec") else "")))
    size = ds.provenance.size
    rows.append(("on disk", format_bytes(size) if size else str(info.get("on disk", "unknown"))))
    rows.append(("in memory", f"{format_bytes(ds.nbytes)} as float64 (not loaded)"))
    if ds.kind == "table":
        rows.append(("chunking", str(info.get("chunking", ""))))
    else:
        rows.append(("chunking", "decoded in batches of frames as a method reads them"))
    if memory_budget is not None:
        rows.append(("memory budget", format_bytes(memory_budget)))
    rows.append(("scheduler", f"dask.distributed at {scheduler}" if scheduler else "this machine's threads (Dask)"))
    if results_to:
        rows.append(("large results", f"written to {results_to}"))
    rows.append(("source", ds.provenance.path or ds.provenance.loader))
    rows += [("warning", f"⚠ {w}") for w in ds.warnings]
    return rows


def _chosen_options(loader: str, options: dict) -> dict:
    """The options that differ from the loader's declared defaults (what the user chose)."""
    from robustcore.datasets import LOADERS
    specs = {q.name: q for q in getattr(LOADERS.get(loader), "options", ())}
    return {k: v for k, v in (options or {}).items() if k not in specs or specs[k].default != v}


def loader_options_text(options: dict) -> str:
    """Loader options as a reader writes them: "label column = species · delimiter = ;"."""
    def value(v):
        if isinstance(v, str):
            return repr(v) if v.strip() != v or v in ("", ",", ";", "\t") else v
        if isinstance(v, bool) or v is None:
            return {True: "yes", False: "no", None: "automatic"}[v]
        if isinstance(v, int) and abs(v) >= 10_000:
            return f"{v:,}"
        if isinstance(v, (list, tuple)):
            return ", ".join(str(x) for x in v)
        return str(v)
    return " · ".join(f"{k.replace('_', ' ')} = {value(v)}" for k, v in options.items())


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
