"""What a load reports to the user: known outliers and where they came from, and anything the
loader could not take in as it was, in the command line's output and the window's Data panel."""
import numpy as np
import pytest
import scipy.io as sio

from app.cli import main


def odds(tmp_path):
    rng = np.random.default_rng(0)
    y = np.zeros((80, 1))
    y[:7] = 1
    path = tmp_path / "odds.mat"
    sio.savemat(path, {"X": rng.standard_normal((80, 4)), "y": y})
    return path


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_reports_known_outliers_and_can_switch_them_off(tmp_path, capsys):
    path = odds(tmp_path)
    code, _, err = run_cli(capsys, "run", "--data", path, "--method", "pca", "--out", tmp_path / "a")
    assert code == 0, err
    assert "7 known outliers (from y: 1 = outlier)" in err
    code, _, err = run_cli(capsys, "run", "--data", path, "--no-known-outliers", "--method", "pca",
                           "--out", tmp_path / "b")
    assert code == 0 and "known outliers" not in err
    from app import session as S
    assert S.load_session(tmp_path / "b" / "run.json").dataset.options["known_outliers"] is False


def test_cli_marks_a_label_value_as_the_outlier_truth(tmp_path, capsys):
    p = tmp_path / "t.csv"
    p.write_text("a,b,kind\n" + "".join(f"{i},{i * i % 7},{'odd' if i in (3, 9) else 'ok'}\n" for i in range(30)))
    code, _, err = run_cli(capsys, "run", "--data", p, "--option", "label_column=kind", "--outliers-from-label",
                           "odd", "--method", "pca", "--out", tmp_path / "o")
    assert code == 0, err
    assert "2 known outliers (from label = odd)" in err
    code, _, err = run_cli(capsys, "run", "--data", p, "--option", "label_column=kind", "--option",
                           "outlier_label=odd", "--outliers-from-label", "odd", "--method", "pca",
                           "--out", tmp_path / "x")
    assert code == 2 and "say the same thing" in err
    code, _, err = run_cli(capsys, "run", "--demo", "iris", "--outliers-from-label", "1", "--method", "pca",
                           "--out", tmp_path / "y")
    assert code == 2 and "not to demos" in err


def test_cli_prints_load_warnings_even_when_quiet(tmp_path, capsys):
    tifffile = pytest.importorskip("tifffile")
    p = tmp_path / "mixed.tif"
    with tifffile.TiffWriter(p) as tw:
        tw.write(np.zeros((6, 5), np.uint8), photometric="minisblack")
        tw.write(np.zeros((6, 5), np.uint8) + 1, photometric="minisblack")
        tw.write(np.ones((9, 9), np.uint8), photometric="minisblack")
    code, _, err = run_cli(capsys, "run", "--data", p, "--method", "pca", "-q", "--out", tmp_path / "o")
    assert code == 0, err
    assert "warning: mixed.tif holds pages of different sizes" in err
    code, _, err = run_cli(capsys, "run", "--data", p, "--outliers-from-label", "1", "--method", "pca",
                           "--out", tmp_path / "o2")
    assert code == 2 and "does not apply to TIFF stack files" in err


@pytest.mark.slow
def test_data_panel_shows_where_known_outliers_come_from_and_the_warnings(tmp_path, qtbot):
    from app.main_window import MainWindow
    from app.settings import Settings
    w = MainWindow(settings=Settings(str(tmp_path / "s.ini")))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.open_path(str(odds(tmp_path)))
    summary = w.dataset_panel.summary_text()
    assert summary["known outliers"] == "7 (8.8 %) (from y: 1 = outlier)"
    np.savez(tmp_path / "short.npz", X=np.ones((5, 2)), y=np.arange(4))
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.open_path(str(tmp_path / "short.npz"))
    summary = w.dataset_panel.summary_text()
    assert "'y' looks like labels but holds 4 entries for 5 samples" in summary["warning"]
    label = w.dataset_panel.findChild(type(w.dataset_panel.title), "summary_warning")
    assert label is not None and label.isVisibleTo(w.dataset_panel)
    w.close()


@pytest.mark.slow
def test_data_panel_switches_the_known_outliers_and_runs_are_evaluated_against_them(tmp_path, qtbot):
    """The Known outliers box: the file's 0/1 y, none, or the samples with one label value. Each
    choice reloads the file with the loader option that says so; a run then reports ROC-AUC
    against exactly those samples."""
    from sklearn.metrics import roc_auc_score

    from app.main_window import MainWindow
    from app.settings import Settings
    w = MainWindow(settings=Settings(str(tmp_path / "s.ini")))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
        w.open_path(str(odds(tmp_path)))
    box = w.dataset_panel.truth_box
    assert box.isEnabled() and box.currentText() == "the file's 0/1 y (1 = outlier)"
    items = [box.itemText(i) for i in range(box.count())]
    assert items[0] == "none" and "label = 0" in items and "label = 1" in items

    def choose(text):
        with qtbot.waitSignal(w.datasetLoaded, timeout=30000):
            box.setCurrentIndex(items.index(text))
            box.activated.emit(items.index(text))

    choose("none")
    assert w.state.dataset.outliers is None
    assert "known outliers" not in w.dataset_panel.summary_text()
    assert w.dataset_panel.truth_box.currentText() == "none"
    choose("label = 0")
    ds = w.state.dataset
    assert ds.outliers.sum() == 73 and w.dataset_panel.truth_box.currentText() == "label = 0"
    assert ds.provenance.options["outlier_label"] == "0"
    from robustcore.methods import get_method
    res = get_method("pca").run(ds, {})
    assert res.summary["ROC-AUC (known outliers)"] == pytest.approx(
        roc_auc_score(ds.outliers, res.sample_scores["outlier_score"]), abs=1e-4)
    assert res.summary["known outliers flagged"].endswith("of 73")
    # The same numbers in the window's run log
    w.method_panel.set_method("pca")
    with qtbot.waitSignal(w.runFinished, timeout=60000) as blocker:
        w.run()
    auc = blocker.args[0].summary["ROC-AUC (known outliers)"]
    assert auc == pytest.approx(res.summary["ROC-AUC (known outliers)"])
    from app.panels.run_log import COLUMNS
    row = w.run_log.topLevelItem(0)
    assert row.text(COLUMNS.index("Known outliers")).startswith(f"AUC {auc:.3f} · AP ")
    w.close()
