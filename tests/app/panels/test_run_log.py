"""The Run log's cost per new line does not grow with its length (issue 33.6): a new line
measures only itself (sizing columns to their contents measured every row, per line), and the
log keeps the latest MAX_RUNS runs, saying how many older ones it dropped."""
import pytest
from PySide6.QtWidgets import QStyledItemDelegate

from app.panels import run_log
from app.panels.run_log import COLUMNS, LogEntry, RunLog


class _Counting(QStyledItemDelegate):
    """Counts the rows the view asks a size of (what measuring columns to contents costs)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows = []

    def sizeHint(self, option, index):
        self.rows.append((index.parent().isValid(), index.row()))
        return super().sizeHint(option, index)


def _entry(i, **kw):
    return LogEntry(method="Robust PCA (PCP)", params={"lam": None, "max_iter": 1000 + i}, dataset=f"t{i}.csv",
                    outcome="converged", seconds=0.01 * i, warnings=["a warning"] if i % 3 == 0 else [], **kw)


@pytest.fixture
def log(qtbot):
    w = RunLog()
    qtbot.addWidget(w)
    w.resize(1000, 200)
    w.show()
    qtbot.waitExposed(w)
    return w


def _measured_by_one_more(qtbot, log, i):
    counter = _Counting(log)
    log.setItemDelegate(counter)
    log.add(_entry(i))
    log.viewport().repaint()
    qtbot.wait(1)
    log.setItemDelegate(QStyledItemDelegate(log))
    return counter.rows


@pytest.mark.slow
def test_a_new_line_measures_no_earlier_row(qtbot, log):
    for i in range(60):
        log.add(_entry(i))
    short = _measured_by_one_more(qtbot, log, 60)
    for i in range(61, 300):
        log.add(_entry(i))
    long = _measured_by_one_more(qtbot, log, 300)
    # Sizing to contents asked every row (here 300 lines, 400 rows with their warnings).
    assert len(long) <= len(short) <= 3 * len(COLUMNS)
    # what is measured is at most the new line and the rows on screen, never the length of the log
    assert max((r for child, r in long if not child), default=0) < 20


def test_a_new_line_widens_its_column_to_its_own_text(qtbot, log):
    log.add(_entry(0))
    before = log.columnWidth(2)
    long_name = "a data set with a very long name indeed.csv"
    log.add(LogEntry(method="PCA", params={}, dataset=long_name, outcome="finished"))
    assert log.columnWidth(2) >= log.fontMetrics().horizontalAdvance(long_name) > before


@pytest.mark.slow
def test_the_log_keeps_the_latest_runs_and_says_how_many_it_dropped(qtbot, log):
    MAX_RUNS = run_log.MAX_RUNS
    for i in range(MAX_RUNS + 12):
        log.add(_entry(i))
    assert len(log.entries) == MAX_RUNS and log.dropped == 12
    assert log.topLevelItemCount() == MAX_RUNS + 1
    assert log.entries[0].dataset == "t12.csv" and log.last().dataset == f"t{MAX_RUNS + 11}.csv"
    assert log.topLevelItem(0).text(2) == f"t{MAX_RUNS + 11}.csv"          # newest at the top
    assert log.topLevelItem(MAX_RUNS - 1).text(2) == "t12.csv"             # the oldest kept
    note = log.topLevelItem(MAX_RUNS).text(len(COLUMNS) - 1)
    assert note == f"12 older runs dropped: the log keeps the latest {MAX_RUNS}"
    log.add(_entry(9999))
    assert log.topLevelItemCount() == MAX_RUNS + 1 and log.dropped == 13
    assert log.topLevelItem(MAX_RUNS).text(len(COLUMNS) - 1).startswith("13 older runs dropped")


def test_counts_against_the_known_outliers_read_in_thousands():
    # "flagged 348 of 1466" read as one number on w8a-like data; and the summary says the same
    from types import SimpleNamespace

    from app.panels.run_log import format_evaluation
    e = SimpleNamespace(roc_auc=0.946, average_precision=0.409, known_flagged=1348, known=21466)
    assert format_evaluation(e) == "AUC 0.946 · AP 0.409 · flagged 1,348 of 21,466"
    assert format_evaluation(SimpleNamespace(roc_auc=0.5, average_precision=0.1, known_flagged=None,
                                             known=3)) == "AUC 0.500 · AP 0.100"
