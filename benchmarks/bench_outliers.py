"""Outlier detection with DEFAULTS ONLY, on a development and an evaluation collection (the
protocol of benchmarks/results_outliers.md), next to what a user would otherwise run.

    python benchmarks/bench_outliers.py --protocol dev     # the 15 adbench_dev tables
    python benchmarks/bench_outliers.py --protocol eval    # held out: cardio, shuttle, a8a, digits
    python benchmarks/bench_outliers.py --protocol eval --seeds 0 --quick   # one seed, few tasks

Every robustcore estimator is used as a script user would: ``Estimator().fit(X)``, then
``-score_samples(X)`` (higher = more normal, so minus it ranks outliers first) is evaluated with
robustcore.evaluation against the known outliers. Against: scikit-learn's IsolationForest
(random_state = seed), LocalOutlierFactor and kNN distance (5th neighbour), and PyOD's ECOD and
CBLOF (benchmark-only; skipped with a note when PyOD is not installed). For the outlier
estimators the flags of ``predict`` (contamination="auto") are also judged: the share of KNOWN
INLIERS flagged against the stated alpha, and the share of known outliers caught; for the SPE/T²
models the same with the calibrated limits of robustcore._calibration (benchmarks/_calibrated.py).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._bench import conditions  # noqa: E402
from benchmarks._outlier_data import SEEDS, development, evaluation  # noqa: E402
from robustcore.evaluation import outlier_metrics  # noqa: E402

OURS = ("PCA", "CoherencePursuit", "ResidualScorer", "PCP")
SUBSPACE = ("PCA", "CoherencePursuit", "ResidualScorer")


def peers(seed):
    """The contenders a user would otherwise reach for: name -> X -> outlierness."""
    from sklearn.ensemble import IsolationForest
    from sklearn.neighbors import LocalOutlierFactor, NearestNeighbors

    def iforest(X):
        return -IsolationForest(random_state=seed).fit(X).score_samples(X)

    def lof(X):
        return -LocalOutlierFactor().fit(X).negative_outlier_factor_

    def knn(X):
        # distance to the 5th neighbour other than the sample itself (PyOD's KNN default)
        dist, _ = NearestNeighbors(n_neighbors=6).fit(X).kneighbors(X)
        return dist[:, -1]

    out = {"IsolationForest": iforest, "LOF": lof, "kNN": knn}
    try:
        from pyod.models.cblof import CBLOF
        from pyod.models.ecod import ECOD
    except ImportError:
        print("(PyOD not installed: ECOD and CBLOF skipped)", file=sys.stderr)
        return out

    def ecod(X):
        return ECOD().fit(X).decision_scores_

    def cblof(X):
        # PyOD's defaults (alpha 0.9, beta 5) raise "Could not form valid cluster separation"
        # on some tasks (e.g. binary a8a); the looser separation PyOD's message asks for is
        # then used, and the task is named on stderr.
        try:
            return CBLOF(random_state=seed).fit(X).decision_scores_
        except ValueError:
            print("    (CBLOF: defaults failed to separate clusters; alpha=0.7, beta=2 used)",
                  file=sys.stderr)
            return CBLOF(alpha=0.7, beta=2, random_state=seed).fit(X).decision_scores_

    out.update(ECOD=ecod, CBLOF=cblof)
    return out


def ours(seed):
    import robustcore as rc
    return {"PCA": lambda: rc.PCA(), "CoherencePursuit": lambda: rc.CoherencePursuit(),
            "ResidualScorer": lambda: rc.ResidualScorer(), "PCP": lambda: rc.PCP(random_state=seed)}


def flag_rates(y, flagged):
    y = np.asarray(y, bool)
    return {"inlier_rate": float(flagged[~y].mean()), "recall": float(flagged[y].mean()),
            "n_in": int((~y).sum()), "n_flag_in": int(flagged[~y].sum())}


def run_task(X, y, seed, only=None):
    """{detector: {"roc_auc", "average_precision", "seconds", [flag fields]}} for one task."""
    from benchmarks._calibrated import gaussian_flags
    row = {}
    for name, make in ours(seed).items():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = make().fit(X)
            s = -est.score_samples(X)
            flagged = est.predict(X) == -1
        m = outlier_metrics(y, s)
        r = {"roc_auc": m["roc_auc"], "average_precision": m["average_precision"],
             "seconds": time.perf_counter() - t0, "auto": flag_rates(y, flagged)}
        if name in SUBSPACE:
            # predict's flags are the calibrated ones; "auto" keeps the Gaussian limits' column
            flags_g, s_g = gaussian_flags(est, X)
            r["calibrated"] = r["auto"]
            r["auto"] = flag_rates(y, flags_g)
            r["calibrated_auc"] = outlier_metrics(y, s_g)["roc_auc"]
        row[name] = r
    for name, run in peers(seed).items():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = run(X)
        m = outlier_metrics(y, s)
        row[name] = {"roc_auc": m["roc_auc"], "average_precision": m["average_precision"],
                     "seconds": time.perf_counter() - t0}
    return row


def collect(protocol, seeds, quick=False, only=None):
    """[(seed, name, family, collection, n, n_out, row)]."""
    out = []
    for seed in seeds:
        tasks = development() if protocol == "dev" else evaluation(seed)
        if quick:
            tasks = tasks[::4]
        for name, fam, coll, X, y in tasks:
            row = run_task(X, y, seed, only)
            out.append((seed, name, fam, coll, int(y.size), int(y.sum()), row))
            print(f"  seed {seed} {name}: " + ", ".join(f"{d} {v['roc_auc']:.3f}" for d, v in row.items()),
                  file=sys.stderr, flush=True)
        if protocol == "dev":
            break          # the development tables have no random draw; seeds only seed detectors
    return out


# -- report ---------------------------------------------------------------------------------------

def _mean_over_seeds(records, key):
    """{task: {detector: mean over seeds of row[det][key]}} and the task order."""
    acc = collections.OrderedDict()
    for _seed, name, fam, coll, n, k, row in records:
        t = acc.setdefault(name, {"family": fam, "collection": coll, "n": n, "k": k,
                                  "vals": collections.defaultdict(list)})
        for d, v in row.items():
            if key in v:
                t["vals"][d].append(v[key])
    return acc


def report(records, command):
    dets = list(records[0][6])
    seeds = sorted({r[0] for r in records})
    print(f"Command: `{command}`\n")
    for key, title in (("roc_auc", "ROC-AUC"), ("average_precision", "average precision")):
        acc = _mean_over_seeds(records, key)
        print(f"{title} per task (mean over seeds {', '.join(map(str, seeds))}; known outliers / samples):\n")
        print("| task | outliers | " + " | ".join(dets) + " |")
        print("|---|---|" + "---|" * len(dets))
        for t, info in acc.items():
            vals = {d: np.mean(info["vals"][d]) for d in dets}
            best = max(vals.values())
            cells = [f"**{vals[d]:.3f}**" if vals[d] == best else f"{vals[d]:.3f}" for d in dets]
            print(f"| {t} | {info['k']} / {info['n']} | " + " | ".join(cells) + " |")
        print()
        # collection means and their spread over seeds
        colls = collections.OrderedDict()
        for t, info in acc.items():
            colls.setdefault(info["collection"], []).append(t)
        groups = list(colls.items())
        if "cardio" in acc:
            groups.append(("tables without cardio", [t for t in colls.get("tables", []) if t != "cardio"]))
        print(f"Mean {title} per collection (± standard deviation of the collection mean over the seeds):\n")
        print("| collection | tasks | " + " | ".join(dets) + " |")
        print("|---|---|" + "---|" * len(dets))
        for cname, ts in groups:
            cells = []
            for d in dets:
                per_seed = []
                for s in seeds:
                    v = [r[6][d][key] for r in records if r[0] == s and r[1] in ts]
                    if v:
                        per_seed.append(np.mean(v))
                m = np.mean([np.mean(acc[t]["vals"][d]) for t in ts])
                sd = np.std(per_seed) if len(per_seed) > 1 else 0.0
                cells.append(f"{m:.3f}" + (f" ± {sd:.3f}" if len(per_seed) > 1 else ""))
            print(f"| {cname} | {len(ts)} | " + " | ".join(cells) + " |")
        print()
    # flags
    print("Flags of `predict` (contamination=\"auto\", alpha = 0.01 per limit): share of known inliers "
          "flagged / share of known outliers caught, mean over seeds. `gauss` = today's limits, "
          "`calib` = the calibrated limits of robustcore._calibration.\n")
    flag_dets = [d for d in OURS if d in dets]
    cols = []
    for d in flag_dets:
        cols.append((d, "auto", "gauss" if d in SUBSPACE else "auto"))
        if d in SUBSPACE:
            cols.append((d, "calibrated", "calib"))
    print("| task | " + " | ".join(f"{d} {lab}" for d, _, lab in cols) + " |")
    print("|---|" + "---|" * len(cols))
    rates = collections.defaultdict(list)
    tasks = collections.OrderedDict()
    for _seed, name, *_rest in records:
        tasks.setdefault(name, []).append(_rest[-1])
    for t, rows in tasks.items():
        cells = []
        for d, key, lab in cols:
            ir = np.mean([r[d][key]["inlier_rate"] for r in rows])
            rc = np.mean([r[d][key]["recall"] for r in rows])
            rates[(d, lab)].append(ir)
            cells.append(f"{100 * ir:.1f} % / {100 * rc:.0f} %")
        print(f"| {t} | " + " | ".join(cells) + " |")
    print("\nAcross tasks: median share of inliers flagged, and tasks within [alpha/3, 3 alpha] = "
          "[0.33 %, 3 %]:\n")
    print("| detector | median inlier share | within band | above 3 alpha | below alpha/3 |")
    print("|---|---|---|---|---|")
    for (d, lab), v in rates.items():
        v = np.array(v)
        print(f"| {d} {lab} | {100 * np.median(v):.2f} % | {int(np.sum((v >= 0.01 / 3) & (v <= 0.03)))} / {v.size} | "
              f"{int(np.sum(v > 0.03))} | {int(np.sum(v < 0.01 / 3))} |")
    # the warning of robustcore._calibration on each (task, seed), from the recorded counts
    from robustcore._calibration import flag_rate_warning
    warned = collections.Counter()
    runs = 0
    for *_x, _n, k, row in records:
        runs += 1
        for d, key, lab in cols:
            f = row[d][key]
            k_out = int(round(f["recall"] * k))
            flagged = np.r_[np.arange(f["n_in"]) < f["n_flag_in"], np.arange(k) < k_out]
            truth = np.r_[np.zeros(f["n_in"], bool), np.ones(k, bool)]
            if flag_rate_warning(flagged, 0.01, known_outliers=truth) is not None:
                warned[(d, lab)] += 1
    print(f"\nRuns (task x seed, {runs} of them) where the flag-rate warning of robustcore._calibration "
          f"fires (share of known inliers flagged more than 3x away from alpha = 1 %, beyond chance): "
          + ", ".join(f"{d} {lab} {warned[(d, lab)]}" for d, _, lab in cols))
    secs = collections.defaultdict(float)
    for r in records:
        for d, v in r[6].items():
            secs[d] += v["seconds"]
    print("\nSeconds (all tasks and seeds): " + ", ".join(f"{d} {secs[d]:.0f}" for d in dets))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", choices=("dev", "eval"), required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    ap.add_argument("--quick", action="store_true", help="every 4th task only")
    ap.add_argument("--only", nargs="+", help="detectors to run (default: all)")
    ap.add_argument("--save", help="write the raw records to this JSON file")
    ap.add_argument("--load", help="report the records saved by --save instead of running")
    args = ap.parse_args(argv)
    if args.load:
        with open(args.load) as f:
            records = json.load(f)
        report(records, "python benchmarks/bench_outliers.py --protocol " + args.protocol)
        return
    print(conditions())
    records = collect(args.protocol, args.seeds, args.quick, args.only)
    if args.save:
        with open(args.save, "w") as f:
            json.dump(records, f)
    cmd = "python benchmarks/bench_outliers.py " + " ".join(argv if argv is not None else sys.argv[1:])
    report(records, cmd)


if __name__ == "__main__":
    main()
