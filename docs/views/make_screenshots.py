"""Screenshots of every result view, played from Help → Examples in a real window.

Run by hand under a virtual display, from the repository root (it fits robust PCA on video and
MNIST: a few minutes)::

    xvfb-run -a -s "-screen 0 2000x1200x24" python docs/views/make_screenshots.py [view ...]
    QT_SCALE_FACTOR=2 xvfb-run -a -s "-screen 0 2000x1200x24" python docs/views/make_screenshots.py --scaled

Writes, for each view:

* ``docs/views/<view>.png``: the result area of a 1920 × 1080 window (the README's pictures);
* ``docs/views/sizes/<view>-1280x800.png`` and ``-1920x1080.png``: the whole window, to check
  that every view reads well at both sizes; with ``--scaled`` (run with QT_SCALE_FACTOR=2)
  ``<view>-200pct.png``, a 1920 × 1080 screen at 200 % (a 960 × 540 window in logical pixels).

Settings go to a throw-away file. The images are reduced to 256 colours (no dithering), which
keeps text crisp at a third of the size.
"""
from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402

from app._qt import ensure_app  # noqa: E402
from app.examples import EXAMPLES  # noqa: E402
from app.main_window import MainWindow  # noqa: E402
from app.settings import Settings  # noqa: E402

# The example that shows each view best (the first one listed for it), and what to select.
SHOWCASE = {}
for _ex in EXAMPLES:
    SHOWCASE.setdefault(_ex.view, _ex)


def wait(ms: int) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def play(w, example, timeout_s: float = 600) -> None:
    """Play an example in window ``w`` and return once its view is showing."""
    w.open_example(example)
    waited = 0
    while w.example is not None and waited < timeout_s * 1000:
        wait(100)
        waited += 100
    if w.views.current_view_name() != example.view:
        raise RuntimeError(f"example {example.key} did not reach its view (status: "
                           f"{w.statusBar().currentMessage()})")
    _select(w, example)
    wait(500)


def _select(w, example) -> None:
    """Put something selected where a selection tells the story."""
    import numpy as np
    v = w.views.view(example.view)
    st = w.state
    if example.view == "scatter":
        res = v.drawn
        score = res.sample_scores.get("spe")
        if score is not None:
            st.set_selection(np.argsort(score)[-3:])
    elif example.view == "detail":
        res = v.drawn
        st.set_selection([int(np.argmax(res.sample_scores[res.primary_score]))])
    elif example.view == "decomposition":
        v.set_frame(int(0.6 * (st.dataset.n_samples - 1)))
    elif example.view == "comparison":
        v.table.selectRow(0)


def save(widget, path: str) -> None:
    from PIL import Image
    os.makedirs(os.path.dirname(path), exist_ok=True)
    widget.grab().save(path)
    with Image.open(path) as im:
        small = im.convert("RGB").quantize(256, dither=Image.Dither.NONE)
    small.save(path, optimize=True)
    print(f"{path}: {os.path.getsize(path) // 1024} KB", flush=True)


def window(size, tmp):
    w = MainWindow(settings=Settings(os.path.join(tmp, f"{size[0]}x{size[1]}.ini")))
    w.resize(*size)
    w.show()
    wait(300)
    return w


def main(argv) -> None:
    scaled = "--scaled" in argv
    views = [a for a in argv if not a.startswith("--")] or list(SHOWCASE)
    ensure_app()
    tmp = tempfile.mkdtemp()
    sizes = [(960, 540)] if scaled else [(1280, 800), (1920, 1080)]
    for size in sizes:
        w = window(size, tmp)
        for name in views:
            print(f"{name} at {size[0]} x {size[1]}{' (200 %)' if scaled else ''} …", flush=True)
            play(w, SHOWCASE[name])
            tag = "200pct" if scaled else f"{size[0]}x{size[1]}"
            save(w, os.path.join(HERE, "sizes", f"{name}-{tag}.png"))
            if size == (1920, 1080):
                save(w.views, os.path.join(HERE, f"{name}.png"))
        w.close()


if __name__ == "__main__":
    main(sys.argv[1:])
