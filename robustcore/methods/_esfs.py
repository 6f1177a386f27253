"""ESFS's adapter: the feature ranking and the spectrum behind it."""
from __future__ import annotations

import numpy as np

from ..result import Ranking
from ._models import rows_in_memory

__all__ = ["run_esfs"]


def run_esfs(est, dataset, values, rep):
    X = rows_in_memory(dataset)
    est.fit(X, progress=rep)
    arrays = {"eigenvalues": est.eigenvalues_, "derivatives": est.derivatives_, "ranking": est.ranking_,
              "selected_eigenpairs": np.asarray(est.selected_eigenpairs_)}
    ranking = Ranking(sigma=float(est.sigma_), graph=str(est.graph_),
                      top_feature=str(dataset.feature_names[int(est.ranking_[0])]))
    return dict(feature_scores={"evsc": est.scores_}, arrays=arrays, ranking=ranking)
