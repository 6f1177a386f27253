"""The study behind the outlier defaults, on the DEVELOPMENT collection only (the protocol of
benchmarks/results_outliers.md): every candidate for a default is scored by its mean ROC-AUC
over the 15 adbench_dev tables, and by leave-one-table-out (choose on 14, score the choice on
the 15th). It never reads the evaluation data.

    python benchmarks/study_outlier_defaults.py            # all studies (~10 min on 2 cores)
    python benchmarks/study_outlier_defaults.py --study rank cop pcp

Candidates: the rank rule of PCA / ResidualScorer / Coherence Pursuit (robustcore/rank.py and
the rules below), Coherence Pursuit's ``center``, PCP's ``lam`` (a factor on
1 / sqrt(max(n, d))), ``scale`` and ``score_norm``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._bench import conditions  # noqa: E402
from benchmarks._outlier_data import development  # noqa: E402
from robustcore.evaluation import outlier_metrics  # noqa: E402
from robustcore.rank import linear_rank, rank_cap, scree_elbow  # noqa: E402

# Chosen only when it beats the current default by this much (protocol).
MARGIN = 0.005


# -- rank rules: eigenvalues (descending) and the cap -> rank --------------------------------------

def _broken_stick(lam, cap):
    p = lam.size
    bs = np.array([np.sum(1.0 / np.arange(k, p + 1)) / p for k in range(1, p + 1)])
    share = lam / lam.sum()
    k = int(np.argmax(share < bs)) if np.any(share < bs) else p
    return k


def _kaiser(lam, cap):
    return int(np.sum(lam > lam.mean()))


def _var(lam, cap, q):
    return int(np.searchsorted(np.cumsum(lam) / lam.sum(), q) + 1)


RANK_RULES = {
    "elbow (current)": lambda lam, cap: scree_elbow(lam, cap),
    "elbow, at least 2": lambda lam, cap: max(scree_elbow(lam, cap), min(2, cap)),
    "elbow + 1": lambda lam, cap: scree_elbow(lam, cap) + 1,
    "broken stick": _broken_stick,
    "kaiser": _kaiser,
    "90 % variance": lambda lam, cap: _var(lam, cap, 0.9),
    "half of min(n, d)": lambda lam, cap: cap,
    "linear_rank (offset + elbow of the rest)": lambda lam, cap: linear_rank(lam, cap),
}


def _apply(rule, lam, n, d, hard_max):
    cap = rank_cap(n, d)
    lam = np.sort(np.maximum(np.asarray(lam, float), 0.0))[::-1]
    return int(min(max(1, rule(lam, cap)), cap, hard_max))


# -- studies --------------------------------------------------------------------------------------

def _auc(y, est, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
        return outlier_metrics(y, -est.score_samples(X))["roc_auc"]


def study_rank(tables):
    """PCA (the SPE/T² scorer is the same model) and Coherence Pursuit, each rank rule, with
    every other default as it is."""
    import robustcore as rc
    from robustcore.subspace.coherence_pursuit import CoherencePursuit
    out = {}
    for name, _f, _c, X, y in tables:
        n, d = X.shape
        base = rc.PCA().fit(X)
        lam = base.all_variances_
        cop = CoherencePursuit().fit(X)
        Zs = cop._scaled(X)[cop.selected_indices_] - cop.mean_
        Zs = Zs / np.maximum(np.linalg.norm(Zs, axis=1, keepdims=True), 1e-300)
        s = np.linalg.svd(Zs, compute_uv=False)
        for rname, rule in RANK_RULES.items():
            r = _apply(rule, lam, n, d, min(n, d) - 1)
            out.setdefault(f"PCA | {rname}", {})[name] = (_auc(y, rc.PCA(r), X), r)
            rc_ = _apply(rule, s * s, n, d, min(n, d) - 1)
            out.setdefault(f"CoP | {rname}", {})[name] = (_auc(y, CoherencePursuit(rc_), X), rc_)
        print(f"  rank: {name}", file=sys.stderr, flush=True)
    return out


def study_cop(tables):
    """Coherence Pursuit's centre and scaling (rank rule as it is)."""
    from robustcore.subspace.coherence_pursuit import CoherencePursuit
    out = {}
    for name, _f, _c, X, y in tables:
        for center in ("none", "median", "mean"):
            for scale in ("auto", "standard"):
                est = CoherencePursuit(center=center, scale=scale)
                out.setdefault(f"CoP | center={center}, scale={scale}", {})[name] = (_auc(y, est, X), None)
        print(f"  cop: {name}", file=sys.stderr, flush=True)
    return out


def study_pca_scale(tables):
    import robustcore as rc
    out = {}
    for name, _f, _c, X, y in tables:
        for scale in ("auto", "standard", "robust"):
            out.setdefault(f"PCA | scale={scale}", {})[name] = (_auc(y, rc.PCA(scale=scale), X), None)
        print(f"  pca scale: {name}", file=sys.stderr, flush=True)
    return out


def study_pcp(tables):
    """PCP's lambda (factor on the universal 1 / sqrt(max(n, d))), scaling and score norm."""
    import robustcore as rc
    out = {}
    for name, _f, _c, X, y in tables:
        n, d = X.shape
        lam0 = 1.0 / np.sqrt(max(n, d))
        for f in (0.5, 0.7, 1.0, 1.4, 2.0):
            for scale in ("auto", "standard", "robust"):
                for norm in ("l1", "l2"):
                    est = rc.PCP(lam=f * lam0, scale=scale, score_norm=norm, random_state=0)
                    out.setdefault(f"PCP | lam={f:g}/sqrt(max(n,d)), scale={scale}, {norm}", {})[name] = \
                        (_auc(y, est, X), None)
        print(f"  pcp: {name}", file=sys.stderr, flush=True)
    return out


def _auto_robust(X):
    """The scaling "auto" would pick, with "robust" in place of "standard" for mixed units."""
    from robustcore._scaling import resolve_scaling
    return "robust" if resolve_scaling(X, "auto") == "standard" else "none"


def study_joint(tables):
    """The candidates that won alone, together: Coherence Pursuit's centre x rank rule x
    scaling, and "auto" with the robust scaling (median / MAD) for tables in mixed units, for
    PCA and PCP too (it changes nothing for same-unit data such as images)."""
    import robustcore as rc
    from robustcore.subspace.coherence_pursuit import CoherencePursuit
    rules = {k: RANK_RULES[k] for k in ("elbow (current)", "elbow + 1", "elbow, at least 2",
                                        "linear_rank (offset + elbow of the rest)")}
    out = {}
    for name, _f, _c, X, y in tables:
        n, d = X.shape
        ar = _auto_robust(X)
        for scale in ("auto", "auto-robust"):
            sc = "auto" if scale == "auto" else ar
            for center in ("none", "median"):
                cop = CoherencePursuit(center=center, scale=sc).fit(X)
                Zs = cop._scaled(X)[cop.selected_indices_] - cop.mean_
                Zs = Zs / np.maximum(np.linalg.norm(Zs, axis=1, keepdims=True), 1e-300)
                sv = np.linalg.svd(Zs, compute_uv=False)
                for rname, rule in rules.items():
                    r = _apply(rule, sv * sv, n, d, min(n, d) - 1)
                    out.setdefault(f"CoP joint | center={center}, {rname}, scale={scale}", {})[name] = \
                        (_auc(y, CoherencePursuit(r, center=center, scale=sc), X), r)
            out.setdefault(f"PCA joint | scale={scale}", {})[name] = (_auc(y, rc.PCA(scale=sc), X), None)
            for f in (0.7, 1.0):
                est = rc.PCP(lam=f / np.sqrt(max(n, d)), scale=sc, random_state=0)
                out.setdefault(f"PCP joint | lam={f:g}/sqrt(max(n,d)), scale={scale}", {})[name] = \
                    (_auc(y, est, X), None)
        print(f"  joint: {name}", file=sys.stderr, flush=True)
    return out


def study_local(tables):
    """Not a default: what a view of LOCAL density could add to the subspace scores, for the
    tables whose outliers are local. kNN distance (5th neighbour) on the scaled data, in
    Coherence Pursuit's subspace coordinates, and the rank-sum of the latter with Coherence
    Pursuit's own score."""
    from scipy.stats import rankdata
    from sklearn.neighbors import NearestNeighbors

    import robustcore as rc

    def knn(Z):
        dist, _ = NearestNeighbors(n_neighbors=6).fit(Z).kneighbors(Z)
        return dist[:, -1]

    out = {}
    for name, _f, _c, X, y in tables:
        cop = rc.CoherencePursuit().fit(X)
        s_cop = -cop.score_samples(X)
        k_sub = knn(cop.transform(X))
        for label, score in (("Coherence Pursuit's score", s_cop),
                             ("kNN distance, scaled data", knn(cop._scaled(X))),
                             ("kNN distance in CoP's coordinates", k_sub),
                             ("rank-sum of CoP's score and kNN in its coordinates",
                              rankdata(s_cop) + rankdata(k_sub))):
            out.setdefault(f"local | {label}", {})[name] = (outlier_metrics(y, score)["roc_auc"], None)
        print(f"  local: {name}", file=sys.stderr, flush=True)
    return out


STUDIES = {"rank": study_rank, "cop": study_cop, "pca-scale": study_pca_scale, "pcp": study_pcp, "joint": study_joint,
           "local": study_local}
# The defaults before this study (issue 23), what every candidate is compared with.
CURRENT = {"PCA": "PCA | elbow (current)", "CoP": "CoP | elbow (current)",
           "CoP-centre": "CoP | center=none, scale=auto", "PCA-scale": "PCA | scale=auto",
           "PCP": "PCP | lam=1/sqrt(max(n,d)), scale=auto, l1",
           "CoP-joint": "CoP joint | center=none, elbow (current), scale=auto",
           "PCA-joint": "PCA joint | scale=auto", "local": "local | Coherence Pursuit's score", "PCP-joint": "PCP joint | lam=1/sqrt(max(n,d)), scale=auto"}


def loto(res, keys, current):
    """Leave one table out: for each table, the candidate with the best mean on the others
    (the current one unless beaten by MARGIN), scored on the table left out."""
    tables = list(res[current])
    held = []
    for t in tables:
        def mean_wo(k):
            return np.mean([res[k][u][0] for u in tables if u != t])
        best = max(keys, key=mean_wo)
        pick = best if mean_wo(best) >= mean_wo(current) + MARGIN else current
        held.append((t, pick, res[pick][t][0]))
    return held


def report(res):
    groups = {}
    for k in res:
        head = k.split(" | ")[0]
        groups.setdefault(head + (" rank" if "joint" not in head and any(r in k for r in RANK_RULES) else ""),
                          []).append(k)
    for g, keys in groups.items():
        cur = next((c for c in CURRENT.values() if c in keys), keys[0])
        print(f"\n### {g}\n")
        tables = list(res[keys[0]])
        print("| candidate | mean ROC-AUC | vs current | tables below 0.5 | rank 1 on | per table |")
        print("|---|---|---|---|---|---|")
        for k in sorted(keys, key=lambda k: -np.mean([v[0] for v in res[k].values()])):
            a = np.array([res[k][t][0] for t in tables])
            ranks = [res[k][t][1] for t in tables]
            r1 = sum(1 for r in ranks if r == 1) if ranks[0] is not None else "-"
            per = " ".join(f"{v:.2f}" for v in a)
            mark = " (current)" if k == cur else ""
            print(f"| {k}{mark} | {a.mean():.3f} | {a.mean() - np.mean([res[cur][t][0] for t in tables]):+.3f} | "
                  f"{int(np.sum(a < 0.5))} | {r1} | {per} |")
        held = loto(res, keys, cur)
        picks = sorted({p for _, p, _ in held})
        print(f"\nLeave one table out (choose on 14, score on the 15th): mean held-out ROC-AUC "
              f"{np.mean([a for *_, a in held]):.3f} (current default: "
              f"{np.mean([res[cur][t][0] for t in tables]):.3f}); choices made: {', '.join(picks)}")
    print(f"\n(tables, in order: {', '.join(tables)})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", nargs="+", choices=list(STUDIES), default=list(STUDIES))
    ap.add_argument("--save", help="write the raw results (JSON)")
    ap.add_argument("--load", help="report from saved results instead of running")
    args = ap.parse_args(argv)
    if args.load:
        res = json.load(open(args.load))
    else:
        print(conditions())
        tables = development()
        res = {}
        for s in args.study:
            res.update(STUDIES[s](tables))
        if args.save:
            json.dump(res, open(args.save, "w"))
    report(res)


if __name__ == "__main__":
    main()
