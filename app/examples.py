"""Help → Examples: each bundled demo with the method(s) and the view that show it best.

One table, used by the window's menu and by the screenshot script (docs/views): what a user is
shown as an example is what the documentation pictures.
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject

__all__ = ["Example", "EXAMPLES", "ExamplePlayer"]


@dataclass(frozen=True)
class Example:
    key: str
    title: str                # menu text
    demo: str                 # a bundled demo
    runs: tuple               # ((method, params), ...) run in order
    view: str                 # the view shown at the end
    blurb: str                # what to look at (tooltip and status line)


EXAMPLES = (
    Example("outlier-digits", "Outlier digits: Coherence Pursuit on USPS 1s and 8s", "usps-1-vs-8",
            (("coherence-pursuit", {}),), "scatter",
            "The 8s are the outliers among the 1s: Coherence Pursuit's subspace follows the 1s, and "
            "the ringed points are those its SPE/T² limits flag."),
    Example("compare-robust", "PCA against robust methods on USPS", "usps-1-vs-8",
            (("pca", {}), ("coherence-pursuit", {}), ("pcp", {})), "comparison",
            "How far the outliers tilt PCA: principal angles between the subspaces, and the "
            "reconstruction error of the same samples at the same rank."),
    Example("video-background", "Video background and foreground: PCP on the escalator", "escalator",
            (("pcp", {}),), "decomposition",
            "L is the static background, S the people moving on it; play the frames, set the mask "
            "threshold, export the decomposition as a video (File menu)."),
    Example("digit-parts", "Low-rank and sparse parts of MNIST digits", "mnist-3000",
            (("pcp", {}),), "detail",
            "Each digit split into its low-rank part (the typical strokes) and its sparse part "
            "(what is unusual about this one); select a digit in any view."),
    Example("blind-spot", "The SPE blind spot: SPE / T² on a 2-D Gaussian", "gaussian-2d",
            (("residual", {"n_components": 1}),), "contour",
            "SPE is constant along the principal axis: a point far out along it is caught only by "
            "T². Switch the flag rule to see which points each score misses."),
    Example("anomaly-table", "Anomalies in cardiotocography records", "cardio",
            (("residual", {}), ("coherence-pursuit", {})), "scatter",
            "Known outliers against what SPE/T² and Coherence Pursuit flag: colour by known outlier "
            "and compare the rings."),
    Example("outlier-map", "The outlier map: Coherence Pursuit on cardiotocography records", "cardio",
            (("coherence-pursuit", {}),), "outlier-map",
            "Each record by how far it lies along the robust subspace (score distance) and off it "
            "(orthogonal distance): orthogonal outliers are what SPE sees, good-leverage points "
            "what only T² sees. Known outliers are in orange."),
    Example("known-outliers", "How well each method finds the known outliers (cardio)", "cardio",
            (("pca", {}), ("coherence-pursuit", {}), ("pcp", {})), "evaluation",
            "ROC and precision-recall curves of each method's outlier score against the records "
            "marked as outliers, best first; chance is the dotted line."),
    Example("feature-ranking", "Feature ranking: ESFS on two clusters", "clusters-3d",
            (("esfs", {}),), "ranking",
            "x and y separate the clusters, z is noise: ESFS ranks them so without labels. Click a "
            "bar to plot that feature against the next."),
    Example("online-learning", "Online classification: SCW-I and SCW-II on iris", "iris",
            (("scw", {"variant": "I", "shuffle": True, "random_state": 1}),
             ("scw", {"variant": "II", "shuffle": True, "random_state": 1})), "learning-curve",
            "The mistake rate as the stream goes by, and the accuracy on a held-out quarter."),
)


class ExamplePlayer(QObject):
    """Plays one example in a window: load the demo, run each method with its parameters, show
    the view. A failure, a cancel, or the user loading other data ends it."""

    def __init__(self, window, example: Example):
        super().__init__(window)
        self.w = window
        self.ex = example
        self.step = 0
        self._connections = [(window.datasetLoaded, self._loaded), (window.runFinished, self._finished),
                             (window.runFailed, self._stop), (window.runCancelled, self._cancelled),
                             (window.loadFailed, self._stop), (window.runDiscarded, self._stop)]
        for sig, slot in self._connections:
            sig.connect(slot)
        window.statusBar().showMessage(f"Example: {example.title}…", 10000)
        window.load_demo(example.demo)

    def _loaded(self, ds) -> None:
        if getattr(ds.provenance, "demo", None) != self.ex.demo or self.step:
            self._stop()
            return
        self._run_next()

    def _run_next(self) -> None:
        method, params = self.ex.runs[self.step]
        self.step += 1
        self.w.method_panel.set_method(method)
        form = self.w.method_panel.form()
        form.reset()
        form.set_values(params)
        if self.w.run() is None:
            self._stop()

    def _finished(self, result) -> None:
        if self.step < len(self.ex.runs):
            self._run_next()
            return
        self.w.views.show_view(self.ex.view)
        self.w.statusBar().showMessage(self.ex.blurb, 30000)
        self._stop()

    def _cancelled(self) -> None:
        # Before its first run, the cancel is of a fit the example's own demo load replaced.
        if self.step:
            self._stop()

    def _stop(self, *_) -> None:
        for sig, slot in self._connections:
            sig.disconnect(slot)
        self._connections = []
        if self.w.example is self:
            self.w.example = None
        self.deleteLater()
