"""SCW's stream protocol: one pass over a seeded random order of the training samples, a held-out
share scored along the way, against the majority-class learner on the same stream."""
from __future__ import annotations

import numpy as np

from .._params import Param
from ..result import Learning
from ._models import rows_in_memory

__all__ = ["run_scw", "TEST_FRACTION"]

TEST_FRACTION = Param("test_fraction", float, 0.25,
                       "Share of samples held out at random to measure test accuracy along the stream.",
                       low=0.0, high=0.9)



def run_scw(est, dataset, values, rep):
    """One pass over a random order of the training samples, test accuracy measured along the way.

    Online learners see samples in order, and data files are often sorted by class (iris is): the
    stream is a seeded random permutation so the learning curve means something. With
    ``test_fraction`` > 0 a random held-out share is scored after every chunk of the stream.
    """
    X = rows_in_memory(dataset, accept_sparse=est.covariance == "diagonal")
    y = np.asarray(dataset.labels)
    n = X.shape[0]
    from .._validation import check_random_state
    order = check_random_state(0 if est.random_state is None else est.random_state).permutation(n)
    n_test = int(round(values.get("test_fraction", 0.0) * n))
    test, train = np.sort(order[:n_test]), order[n_test:]
    classes = np.unique(y)
    if np.unique(y[train]).size < 2:
        raise ValueError("test_fraction leaves fewer than 2 classes to train on; lower test_fraction")
    chunks = np.array_split(train, min(100, train.size))
    test_seen, test_acc = [], []
    seen = 0
    for k, idx in enumerate(chunks):
        est.partial_fit(X[idx], y[idx], classes=classes)
        seen += idx.size
        if n_test:
            test_seen.append(seen)
            test_acc.append(float(np.mean(est.predict(X[test]) == y[test])))
        rep((k + 1) / len(chunks), f"{seen} of {train.size} samples")
    h = est.history_
    pred = est.predict(X)
    majority = _majority_baseline(classes, y[train], y[test])
    arrays = {"mean": est.mean_, "history_mistake_rate": np.asarray(h["mistake_rate"]),
              "history_updates": np.asarray(h["updates"]), "order": train,
              "history_majority_rate": majority["online"]}
    learning = Learning(online_mistake_rate=float(h["mistake_rate"][-1]), updates=int(h["updates"][-1]),
                        majority_online_mistake_rate=float(majority["online"][-1]),
                        training_accuracy=float(np.mean(pred[train] == y[train])))
    if n_test:
        arrays["history_test_seen"] = np.asarray(test_seen)
        arrays["history_test_accuracy"] = np.asarray(test_acc)
        learning.test_accuracy = float(test_acc[-1])
        learning.majority_test_accuracy = float(majority["test"])
        learning.test_samples = int(n_test)
    # The stream above is shuffled, so the fit is sound; still say when the file itself is sorted
    # by class, which matters to anyone who streams it in file order elsewhere.
    from ..online._order import label_changes, looks_sorted
    codes = np.searchsorted(classes, y)
    changes, counts = label_changes(codes, None), np.bincount(codes, minlength=classes.size)
    notes = []
    if looks_sorted(changes, counts):
        learning.sample_order = (f"the file is sorted by class ({changes} label changes in {n} samples); "
                                 f"streamed in a seeded random order")
        notes.append(f"the labels in the file arrive in long runs of one class ({changes} changes in {n} "
                     f"samples): SCW streamed them in a random order (random_state); in file order an "
                     f"online learner would learn one class at a time")
    return dict(flags={"misclassified": pred != y}, arrays=arrays, learning=learning, warnings=notes)


def _majority_baseline(classes, y_stream, y_test):
    """The learner that always predicts the class seen most so far (the lower one on equal
    counts, SCW's own rule for an exact tie), on the same stream: its cumulative online mistake
    rate (one value per sample) and, on the held-out labels, the accuracy of the stream's
    majority class. An online classifier that does not beat it has learned nothing."""
    from ..online._order import tie_broken_predictions
    k = classes.size
    idx = np.searchsorted(classes, y_stream)
    guess = tie_broken_predictions(np.zeros((idx.size, k)), np.zeros(k), idx)
    online = np.cumsum(guess != idx) / np.arange(1, idx.size + 1)
    top = classes[tie_broken_predictions(np.zeros((1, k)), np.bincount(idx, minlength=k), None)[0]]
    test = float(np.mean(y_test == top)) if y_test.size else float("nan")
    return {"online": online, "test": test}
