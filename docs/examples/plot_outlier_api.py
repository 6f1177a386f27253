"""
Outlier scores the scikit-learn way: known outliers, ROC curves, pipelines
==========================================================================

Every outlier estimator of robustcore follows scikit-learn's outlier-detector API, the one of
:class:`~sklearn.ensemble.IsolationForest`: ``score_samples`` is *higher for more normal*
samples, ``decision_function = score_samples - offset_`` is negative for outliers, and
``predict`` gives -1 (outlier) or +1 (inlier). So they drop into code written for scikit-learn.
The bundled ``cardio`` demo (cardiotocography records, ODDS) has 176 known outliers among 1831
records; we rank the records by each model's score and measure how well the ranking finds them.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.ensemble import IsolationForest
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from robustcore import PCA, CoherencePursuit, ResidualScorer
from robustcore.datasets import demo

data = demo("cardio")
X, y_out = data.X, data.outliers            # y_out: True for a known outlier

models = {
    "PCA (rank 5)": PCA(n_components=5, scale="none"),
    "SPE/T² (rank 5)": ResidualScorer(n_components=5, scale="none"),
    "Coherence Pursuit (rank 5)": CoherencePursuit(n_components=5, center="median", scale="none"),
    # a pipeline: scaling in front, the detector last; score_samples goes through the pipeline
    "StandardScaler + PCA (rank 5)": make_pipeline(StandardScaler(), PCA(n_components=5, scale="none")),
    "IsolationForest": IsolationForest(random_state=0),
}
auc = {}
fig, ax = plt.subplots(figsize=(5.5, 5))
for name, model in models.items():
    model.fit(X)
    abnormality = -model.score_samples(X)      # lower score_samples = more abnormal
    auc[name] = roc_auc_score(y_out, abnormality)
    fpr, tpr, _ = roc_curve(y_out, abnormality)
    ax.plot(fpr, tpr, label=f"{name}: AUC {auc[name]:.3f}")
    print(f"{name:>28}: ROC-AUC {auc[name]:.3f}, flagged by predict: {(model.predict(X) == -1).sum()}")
ax.plot([0, 1], [0, 1], ":", color="gray")
ax.set_xlabel("false positive rate")
ax.set_ylabel("true positive rate (known outliers found)")
ax.legend(fontsize=7, loc="lower right")
fig.tight_layout()
plt.show()

# %%
# ``predict`` is the sign of ``decision_function``, as in scikit-learn, and with
# ``contamination=0.1`` exactly the tenth of the samples with the lowest scores is flagged.

pca = PCA(n_components=5, scale="none", contamination=0.1).fit(X)
dec = pca.decision_function(X)
assert np.array_equal(pca.predict(X), np.where(dec < 0, -1, 1))
share = np.mean(pca.predict(X) == -1)
print(f"contamination=0.1 flags {share:.3f} of the samples")

# %%
# The checks: every model ranks the known outliers well above chance (the scores run the
# scikit-learn way; inverted scores would give an AUC below 0.5), and the contamination share is
# honoured.
assert min(auc.values()) > 0.7
assert abs(share - 0.1) < 0.01
