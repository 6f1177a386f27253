"""A seeded GUI monkey (tests/app/monkey.py): random load / run / cancel / switch view / export /
session / close sequences must raise nothing unhandled and leave a window that still works.
CI runs a short sequence; benchmarks/soak_gui.py runs long ones by hand."""
import pytest

from tests.app.monkey import Monkey, Unhandled


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0])
def test_random_user_sequences_leave_a_working_window(qtbot, tmp_path, seed):
    from app.main_window import MainWindow
    from app.settings import Settings
    windows = []

    def make():
        w = MainWindow(settings=Settings(str(tmp_path / "studio.ini")))
        qtbot.addWidget(w)
        windows.append(w)
        return w

    with Unhandled() as unhandled:
        monkey = Monkey(make, tmp_path, seed=seed)
        monkey.run_steps(30)
        alive = monkey.alive()
    assert not unhandled.errors, "\n".join(unhandled.errors) + "\nsteps:\n" + "\n".join(monkey.log)
    assert alive, "the window stopped working after:\n" + "\n".join(monkey.log)
    assert sum(monkey.counts.values()) == 30 and len(monkey.counts) >= 6
    for w in windows:
        w.close()
    assert all(w.runner.live_threads() == 0 for w in windows)
