"""Long video, streamed: decode speed (PyAV vs imageio-ffmpeg) and streaming robust PCA against
batch PCP and the planted truth.

Run by hand (minutes; writes a few GB under --workdir, deletes them at the end unless --keep):

    nice python benchmarks/bench_bigdata_video.py --frames 10000 --workdir /work/bigbench \\
        [--ref-python /path/to/venv-with-imageio/bin/python]

1. Writes a synthetic 320 x 240 clip of --frames frames with planted moving objects
   (robustcore.bigdata.synthetic.MovingObjects) to MP4 (H.264, CRF 18), batch by batch.
2. Decodes it whole as grey frames with PyAV (our VideoFrames) and, given --ref-python (a
   separate environment with imageio + imageio-ffmpeg), with imageio-ffmpeg: time and peak
   memory of each, each in its own process.
3. Runs OnlineRPCA on the file (frames decoded a batch at a time, L/S/mask written to a Zarr
   store): time and peak memory of that process; foreground F-measure against the true masks.
4. Runs batch PCP on a window of --window frames it can hold and OnlineRPCA's output on the same
   frames: F-measure of each against the truth, and of one against the other.

5. (step ``floor``) The streaming run against its floor, each contender in its own process, run
   interleaved --rounds times: ``decode`` (the frames a batch at a time, as float64 rows, nothing
   else), ``solve`` (OnlineRPCA on frames already in memory, outputs computed and dropped),
   ``decode+solve`` (the same from the file: the floor), ``memory`` and ``zarr`` (the whole run
   through the method registry, as the command line and the window start it: L, S and the mask
   into memory, or into a Zarr store when they exceed the 1 GiB budget; a listener reads the
   newest frame of each announcement back, as the live view does). Prints wall and CPU time,
   best and median, peak memory (VmHWM), and the ratios to the floor; with --reference STORE, how
   far the zarr run's L, S and mask are from a store written earlier (e.g. by older code).
   --profile MODE prints the top of a cProfile of one such run (CPU time of the main thread; that
   of the other threads -- decoder, sink writer, Zarr's codec pool -- is given beside it).

6. (step ``cli``) The command line as a user runs it, ``robust-studio run --data CLIP --method
   online-rpca --out DIR``, with and without ``--lazy`` (``--memory-budget`` as given, else the
   default), each in its own process, --rounds times: wall, CPU, peak memory (VmHWM) and where
   the results went. Issue 36: the peak must not depend on the flag; L, S and the mask beyond the
   results' share of the budget go to a store either way. ``--clip`` runs it on another video
   (e.g. a copy of the escalator clip).

Each measurement is printed as one JSON line; results_bigdata.md quotes them.

Steps 1-4 (the 10,000-frame figures):

    nice python benchmarks/bench_bigdata_video.py --frames 10000 --steps decode,stream,window --rounds 5

Streaming against batch PCP on other clips of the same kind (--seed draws another scene):

    python benchmarks/bench_bigdata_video.py --frames 600 --steps stream,window --seed 11

Step 5 (the 2,000-frame floor of issue 27; the clip is kept in --workdir for re-runs):

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_bigdata_video.py --frames 2000 --steps floor --rounds 5
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

H, W = 240, 320
SEED = 7


def scene():
    """The benchmark's scene; --seed (passed to the workers in BENCH_VIDEO_SEED) draws another."""
    from robustcore.bigdata.synthetic import MovingObjects
    seed = int(os.environ.get("BENCH_VIDEO_SEED", SEED))
    return MovingObjects(H, W, n_objects=5, noise=3.0, illumination=0.15, period=3000, seed=seed)


def peak_mb():
    """Peak resident memory of this process image (VmHWM). Not ru_maxrss: Linux carries that
    over from the parent through fork and exec, so a child would report the parent's peak."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s():
    t = os.times()
    return t.user + t.system


def fmeasure(tp, n_pred, n_true):
    return 2 * tp / (n_pred + n_true) if n_pred + n_true else 1.0


def write_clip(path: Path, n: int, batch: int = 200):
    import av
    sc = scene()
    t0 = time.perf_counter()
    part = path.with_name(path.name + ".partial.mp4")    # a clip at ``path`` is always whole
    with av.open(str(part), "w") as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt = W, H, "yuv420p"
        s.options = {"crf": "18", "preset": "veryfast"}
        for start in range(0, n, batch):
            frames, _ = sc.frames(start, min(start + batch, n))
            for a in frames:
                rgb = np.repeat(a[..., None], 3, axis=2)
                for p in s.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                    c.mux(p)
        for p in s.encode():
            c.mux(p)
    os.replace(part, path)
    return {"step": "write", "frames": n, "seconds": time.perf_counter() - t0,
            "mp4_mb": path.stat().st_size / 2**20}


# -- workers (each runs in its own process so that its peak memory is its own) -------------------

def worker_decode_pyav(path):
    from robustcore.datasets import open_video
    t0 = time.perf_counter()
    total = 0.0
    n = 0
    with open_video(path) as v:
        for _, rows in v.iter_batches(256):
            total += float(rows[:, ::997].sum())
            n += rows.shape[0]
    return {"step": "decode", "decoder": "pyav", "frames": n, "seconds": time.perf_counter() - t0,
            "cpu_s": cpu_s(), "peak_mb": peak_mb(), "check": total}


REF_DECODE = r"""
import json, sys, time
import numpy as np
import imageio_ffmpeg
t0 = time.perf_counter()
gen = imageio_ffmpeg.read_frames(sys.argv[1], pix_fmt="gray", bpp=1)
meta = gen.__next__()
w, h = meta["size"]
total, n, buf = 0.0, 0, []
for raw in gen:
    buf.append(np.frombuffer(raw, np.uint8).reshape(h, w).astype(np.float64).ravel())
    if len(buf) == 256:
        rows = np.vstack(buf); buf = []
        total += float(rows[:, ::997].sum()); n += rows.shape[0]
if buf:
    rows = np.vstack(buf); total += float(rows[:, ::997].sum()); n += rows.shape[0]
import os
t = os.times()
print(json.dumps({"step": "decode", "decoder": "imageio-ffmpeg", "frames": n,
                  "seconds": time.perf_counter() - t0, "cpu_s": t.user + t.system,
                  "cpu_s_children (ffmpeg)": t.children_user + t.children_system,
                  "peak_mb": [int(l.split()[1]) / 1024 for l in open("/proc/self/status")
                              if l.startswith("VmHWM:")][0], "check": total}))
"""


def worker_stream(path, store, batch, k, lam2):
    from robustcore.bigdata import open_frame_store
    from robustcore.datasets import open_video
    from robustcore.subspace.online_rpca import OnlineRPCA
    t0 = time.perf_counter()
    with open_video(path) as v:
        params = {k_: v_ for k_, v_ in (("n_components", k), ("lambda2", lam2), ("batch_size", batch))
                  if v_ is not None}
        est = OnlineRPCA(**params).fit(v, store=store)
    fit_s = time.perf_counter() - t0
    fit_cpu = cpu_s()
    peak = peak_mb()
    # F-measure against the planted masks, streamed from the store.
    sc = scene()
    sink = open_frame_store(store)
    tp = npred = ntrue = 0
    for s in range(0, sink.n_frames, 500):
        e = min(s + 500, sink.n_frames)
        m = sink.read("mask", s, e)
        _, truth = sc.frames(s, e)
        truth = truth.reshape(e - s, -1)
        tp += int((m & truth).sum())
        npred += int(m.sum())
        ntrue += int(truth.sum())
    h = est.history_
    return {"step": "stream", "frames": sink.n_frames, "seconds": fit_s, "cpu_s": fit_cpu, "peak_mb": peak,
            "frames_per_s": sink.n_frames / fit_s, "f_vs_truth": fmeasure(tp, npred, ntrue),
            "params": est.get_params(), "lambda2": est.lambda2_, "mean_inner": float(np.mean(h["inner"])),
            "last_basis_change": h["basis_change"][-1], "store_mb": _du(store) / 2**20}


def worker_window(path, store, start, stop):
    from robustcore.bigdata import open_frame_store
    from robustcore.datasets import open_video
    from robustcore.subspace.pcp import PCP
    with open_video(path, start=start, stop=stop) as v:
        X = v.read()
    t0 = time.perf_counter()
    pcp = PCP().fit(X)
    pcp_s = time.perf_counter() - t0
    sink = open_frame_store(store)
    thr = float(sink.attrs["mask_threshold"])
    m_pcp = np.abs(pcp.sparse_) > thr
    m_or = sink.read("mask", start, stop)
    _, truth = scene().frames(start, stop)
    truth = truth.reshape(stop - start, -1)

    def f(a, b):
        return fmeasure(int((a & b).sum()), int(a.sum()), int(b.sum()))
    return {"step": "window", "frames": [start, stop], "pcp_seconds": pcp_s, "pcp_rank": int(pcp.rank_),
            "pcp_iterations": int(pcp.n_iter_), "peak_mb": peak_mb(), "f_pcp_vs_truth": f(m_pcp, truth),
            "f_stream_vs_truth": f(m_or, truth), "f_stream_vs_pcp": f(m_or, m_pcp),
            "f_gap_pcp_minus_stream": f(m_pcp, truth) - f(m_or, truth), "mask_threshold": thr}


# -- step "floor": the streaming run against decoding and solving alone ---------------------------

FLOOR_MODES = ("decode", "solve", "decode+solve", "memory", "zarr")
FLOOR_BATCH = 64        # OnlineRPCA's default batch_size: decode reads what the fit would read


def _null_sink(n, d):
    """A sink that takes the outputs and drops them (the fit computes L, S and the mask in full)."""
    from robustcore.bigdata import FrameSink
    from robustcore.subspace.online_rpca import OnlineRPCA

    class NullSink(FrameSink):
        def __init__(self):
            super().__init__(0, d, OnlineRPCA.FIELDS)   # no rows held
            self.n_frames = n

        def buffers(self, start, stop):     # one set of rows, filled and dropped batch after batch
            b = stop - start
            if getattr(self, "_rows", None) is None or len(self._rows["mask"]) != b:
                self._rows = {k: np.empty((b, d), dt) for k, dt in self.fields.items()}
            return self._rows

        def commit(self, start, buffers):
            self.n_written = start + len(buffers["mask"])

        def write(self, start, **arrays):
            self.n_written = start + len(next(iter(arrays.values())))

    return NullSink()


class _LiveReader:
    """The progress callable of a registry run with the ``frames`` hook the window uses: reads
    the newest announced frame of L and S back from the sink, as the live view does."""

    def __init__(self):
        self.reads = 0

    def __call__(self, fraction, message=""):
        return True

    def frames(self, start, stop, sink):
        for f in ("low_rank", "sparse"):
            sink.frame(f, stop - 1)
        self.reads += 1


def _thread_cpu():
    """(CPU seconds of this thread, of the whole process, system CPU seconds, minor page faults)."""
    t = os.times()
    return time.thread_time(), t.user + t.system, t.system, resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def worker_floor(mode, path, workdir, profile):
    """One contender of the floor step (see the module doc); returns its measurements."""
    from robustcore.bigdata import ArrayFrames, open_lazy, settings
    from robustcore.datasets import open_video
    from robustcore.methods import get_method
    from robustcore.subspace.online_rpca import OnlineRPCA
    out = {"step": "floor", "mode": mode}
    X8 = None
    if mode == "solve":   # decoded beforehand (not timed), kept as uint8 (as decoded)
        with open_video(path) as v:
            X8 = np.empty((v.n_frames, v.n_features), np.uint8)
            for s0, rows in v.iter_batches(256):
                X8[s0:s0 + rows.shape[0]] = rows
            shape = v.frame_shape
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile(time.thread_time)   # CPU time of the main thread: load does not inflate it
    main0, proc0, sys0, flt0 = _thread_cpu()
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    run = None
    if mode == "decode":
        check = 0.0
        with open_video(path) as v:
            for _, rows in v.iter_batches(FLOOR_BATCH):
                check += float(rows[:, ::997].sum())
        out["check"] = check
    elif mode in ("solve", "decode+solve"):
        if X8 is not None:
            src = ArrayFrames(X8, frame_shape=shape, value_range=(0, 255))
            OnlineRPCA().fit(src, sink=_null_sink(*X8.shape))
        else:
            with open_video(path) as v:
                OnlineRPCA().fit(v, sink=_null_sink(v.n_frames, v.n_features))
    else:
        budget = (4 << 30) if mode == "memory" else (1 << 30)
        reader = _LiveReader()
        ds = open_lazy(path)
        with settings(store_dir=str(Path(workdir) / "floor-stores"), memory_budget=budget):
            run = get_method("online-rpca").run(ds, {}, progress=reader)
        out["live_reads"] = reader.reads
    if prof:
        prof.disable()
    wall = time.perf_counter() - t0
    main1, proc1, sys1, flt1 = _thread_cpu()
    # System time is mostly page faults: fresh memory costs about 1 s per 300 MB on this machine.
    out.update(seconds=wall, cpu_s=proc1 - proc0, main_thread_cpu_s=main1 - main0,
               other_threads_cpu_s=(proc1 - proc0) - (main1 - main0), system_cpu_s=sys1 - sys0,
               page_faults=flt1 - flt0, peak_mb=peak_mb())
    if run is not None:
        mask = run.arrays["mask"]
        out["results_in"] = run.summary["results in"]
        out["f_vs_truth"] = _f_vs_truth(mask)
        store = None if isinstance(mask, np.ndarray) else Path(run.summary["results in"])
        if store is not None:
            out["store_mb"] = _du(store) / 2**20
            out["store"] = str(store)
    if prof:
        import io
        import pstats
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(20)
        out["profile"] = buf.getvalue()
    return out


def _f_vs_truth(mask):
    """F-measure of a (n, d) mask (numpy or Zarr) against the planted foreground."""
    sc = scene()
    tp = npred = ntrue = 0
    n = mask.shape[0]
    for s0 in range(0, n, 500):
        e = min(s0 + 500, n)
        m = np.asarray(mask[s0:e], dtype=bool)
        _, truth = sc.frames(s0, e)
        truth = truth.reshape(e - s0, -1)
        tp += int((m & truth).sum())
        npred += int(m.sum())
        ntrue += int(truth.sum())
    return fmeasure(tp, npred, ntrue)


def compare_stores(path, reference):
    """How far the store at ``path`` is from ``reference`` (both written by FrameSink)."""
    from robustcore.bigdata import open_frame_store
    a, b = open_frame_store(path), open_frame_store(reference)
    out = {"step": "compare", "store": str(path), "reference": str(reference)}
    worst = {"low_rank": 0.0, "sparse": 0.0}
    flips = 0
    for s0 in range(0, a.n_frames, 256):
        e = min(s0 + 256, a.n_frames)
        for f in worst:
            x, y = a.read(f, s0, e).astype(np.float64), b.read(f, s0, e).astype(np.float64)
            worst[f] = max(worst[f], float(np.max(np.abs(x - y))))
        flips += int(np.count_nonzero(a.read("mask", s0, e) != b.read("mask", s0, e)))
    out.update({f"max_abs_diff_{f}": v for f, v in worst.items()})
    out["mask_pixels_that_differ"] = flips
    out["mask_pixels"] = a.n_frames * a.n_features
    return out


def floor_summary(rows):
    """Best / median of each mode and the ratios of the whole runs to the floor."""
    import statistics
    by = {}
    for r in rows:
        by.setdefault(r["mode"], []).append(r)
    table = {}
    for m, rs in by.items():
        w = [r["seconds"] for r in rs]
        c = [r["cpu_s"] for r in rs]
        table[m] = {"runs": len(rs), "wall_best": min(w), "wall_median": statistics.median(w),
                    "cpu_best": min(c), "cpu_median": statistics.median(c),
                    "peak_mb_max": max(r["peak_mb"] for r in rs)}
    out = {"step": "floor-summary", "modes": table}
    floor = table.get("decode+solve")
    if floor:
        for m in ("memory", "zarr"):
            if m in table:
                t = table[m]
                out[f"{m}_over_floor"] = {
                    "wall best/best": t["wall_best"] / floor["wall_best"],
                    "wall median/median": t["wall_median"] / floor["wall_median"],
                    "cpu best/best": t["cpu_best"] / floor["cpu_best"],
                    "cpu median/median": t["cpu_median"] / floor["cpu_median"]}
    return out


def run_cli(clip, out: Path, lazy: bool, budget=None) -> dict:
    """``robust-studio run --data CLIP --method online-rpca`` in its own process (step 6)."""
    shutil.rmtree(out, ignore_errors=True)
    from bench_bigdata_scale import PEAK     # prints the child's own VmHWM last on stderr
    argv = [sys.executable, "-c", PEAK, "-m", "app", "run", "--data", str(clip), "--method", "online-rpca",
            "--out", str(out), *(["--lazy"] if lazy else []), *(["--memory-budget", str(budget)] if budget else [])]
    t0, c0 = time.perf_counter(), os.times()
    proc = subprocess.run(argv, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(HERE.parent)})
    c1 = os.times()
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv[4:])} failed:\n{proc.stderr[-2000:]}")
    peak = [int(x.split()[1]) for x in proc.stderr.splitlines() if x.startswith("VMHWM_KB ")]
    said = [x for x in proc.stdout.splitlines() if x.startswith("out of core")]
    stored = sorted(p.name for p in out.glob("*.zarr"))
    res = {"step": "cli", "lazy": lazy, "budget": budget, "seconds": round(time.perf_counter() - t0, 2),
           "cpu_s": round((c1.children_user - c0.children_user) + (c1.children_system - c0.children_system), 2),
           "peak_mb": round(peak[-1] / 1024) if peak else None, "stores": stored, "said": said[:1],
           "out_mb": round(_du(out) / 2**20)}
    shutil.rmtree(out, ignore_errors=True)
    return res


def _du(p):
    p = Path(p)
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size


def run_worker(args_list, env=None):
    out = subprocess.run([sys.executable, __file__, "--worker", *map(str, args_list)], capture_output=True,
                         text=True, env=env)
    if out.returncode:
        print(out.stderr, file=sys.stderr)
        raise SystemExit(f"worker {args_list[0]} failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _summary(step, rows, keys=("seconds", "cpu_s")):
    import statistics
    out = {"step": f"{step}-summary", "runs": len(rows)}
    for k in keys:
        v = [r[k] for r in rows]
        out[f"{k}_best"], out[f"{k}_median"] = min(v), statistics.median(v)
    out["peak_mb_max"] = max(r["peak_mb"] for r in rows)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=10000)
    ap.add_argument("--window", type=int, default=300)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--k", type=int, default=None)
    ap.add_argument("--lambda2", type=float, default=None)
    ap.add_argument("--workdir", default="/work/bigdata")
    ap.add_argument("--ref-python", default=None, help="python of an environment with imageio + imageio-ffmpeg")
    ap.add_argument("--keep", action="store_true", help="keep the result stores (the clip is always kept)")
    ap.add_argument("--steps", default="decode,stream,window",
                    help="comma-separated steps: decode, stream, window, floor, cli")
    ap.add_argument("--rounds", type=int, default=1, help="repeat decode/stream (and the floor contenders, "
                    "interleaved) this many times; best and median are printed")
    ap.add_argument("--modes", default=",".join(FLOOR_MODES), help="floor contenders, comma-separated")
    ap.add_argument("--profile", default=None, help="floor: print the cProfile of one run of this mode")
    ap.add_argument("--reference", default=None, help="floor: compare the zarr run's store with this store")
    ap.add_argument("--seed", type=int, default=SEED, help="scene seed (another clip of the same kind)")
    ap.add_argument("--clip", default=None, help="cli: run on this video instead of the synthetic clip")
    ap.add_argument("--memory-budget", default=None, help="cli: passed to the command line (e.g. 2GB)")
    ap.add_argument("--worker", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if not a.worker:
        os.environ["BENCH_VIDEO_SEED"] = str(a.seed)
    if a.worker:
        kind, *rest = a.worker
        fn = {"decode-pyav": worker_decode_pyav, "stream": worker_stream, "window": worker_window,
              "floor": worker_floor}[kind]
        conv = [int(x) if x.lstrip("-").isdigit() else (None if x == "None" else
                (float(x) if x.replace(".", "", 1).isdigit() else x)) for x in rest]
        print(json.dumps(fn(*conv)))
        return
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(work).free / 2**30
    print(json.dumps({"step": "conditions", "cpus": os.cpu_count(), "load": os.getloadavg(),
                      "free_disk_gb": round(free, 1), "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")}))
    tag = f"{a.frames}" if a.seed == SEED else f"{a.frames}-seed{a.seed}"
    clip = work / f"moving-{tag}.mp4"
    store = work / f"orpca-{tag}.zarr"
    steps = [x for x in a.steps.split(",") if x]
    unknown = set(steps) - {"decode", "stream", "window", "floor", "cli"}
    if unknown:
        raise SystemExit(f"unknown step(s) {sorted(unknown)}")
    if a.clip:
        clip = Path(a.clip)
    elif not clip.exists():
        print(json.dumps(write_clip(clip, a.frames)), flush=True)
    try:
        if "decode" in steps:
            rows = []
            for _ in range(a.rounds):
                rows.append(run_worker(["decode-pyav", clip]))
                print(json.dumps(rows[-1]), flush=True)
                if a.ref_python:
                    out = subprocess.run([a.ref_python, "-c", REF_DECODE, str(clip)], capture_output=True,
                                         text=True)
                    print(out.stdout.strip() or out.stderr, flush=True)
            if a.rounds > 1:
                print(json.dumps(_summary("decode", rows)), flush=True)
        if "stream" in steps:
            rows = []
            for _ in range(a.rounds):
                if store.exists():
                    shutil.rmtree(store)
                rows.append(run_worker(["stream", clip, store, a.batch, a.k, a.lambda2]))
                print(json.dumps({**rows[-1], "load_after": os.getloadavg()}), flush=True)
            if a.rounds > 1:
                print(json.dumps(_summary("stream", rows)), flush=True)
        if "window" in steps:
            if not store.exists():
                raise SystemExit("the window step compares with the stream step's store: run both")
            start = max(0, a.frames // 2 - a.window // 2)
            print(json.dumps(run_worker(["window", clip, store, start, start + a.window])), flush=True)
        if "floor" in steps:
            modes = [m for m in a.modes.split(",") if m]
            bad = set(modes) - set(FLOOR_MODES)
            if bad:
                raise SystemExit(f"unknown floor mode(s) {sorted(bad)}; choose from {', '.join(FLOOR_MODES)}")
            rows = []
            for r in range(a.rounds):
                for m in modes:       # interleaved: every contender sees the same hour of the machine
                    res = run_worker(["floor", m, clip, work, 1 if (a.profile == m and r == 0) else 0])
                    res["load"] = os.getloadavg()
                    prof = res.pop("profile", None)
                    print(json.dumps(res), flush=True)
                    if prof:
                        print(prof, flush=True)
                    if "store" in res:
                        if a.reference and r == 0:
                            print(json.dumps(compare_stores(res["store"], a.reference)), flush=True)
                        if a.keep and r == 0:
                            kept = work / f"floor-{a.frames}.zarr"
                            shutil.rmtree(kept, ignore_errors=True)
                            os.replace(res["store"], kept)
                        shutil.rmtree(res["store"], ignore_errors=True)
                    rows.append(res)
            print(json.dumps(floor_summary(rows)), flush=True)
        if "cli" in steps:
            for _ in range(a.rounds):
                for lazy in (False, True):      # interleaved
                    res = run_cli(clip, work / "cli-out", lazy, a.memory_budget)
                    print(json.dumps({**res, "load": os.getloadavg()}), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(store, ignore_errors=True)
            shutil.rmtree(work / "floor-stores", ignore_errors=True)


if __name__ == "__main__":
    main()
