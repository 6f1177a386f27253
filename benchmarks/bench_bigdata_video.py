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

Each measurement is printed as one JSON line; results_bigdata.md quotes them.
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
    from robustcore.bigdata.synthetic import MovingObjects
    return MovingObjects(H, W, n_objects=5, noise=3.0, illumination=0.15, period=3000, seed=SEED)


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
    with av.open(str(path), "w") as c:
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
        tp += int((m & truth).sum()); npred += int(m.sum()); ntrue += int(truth.sum())
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
            "f_stream_vs_truth": f(m_or, truth), "f_stream_vs_pcp": f(m_or, m_pcp), "mask_threshold": thr}


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=10000)
    ap.add_argument("--window", type=int, default=300)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--k", type=int, default=None)
    ap.add_argument("--lambda2", type=float, default=None)
    ap.add_argument("--workdir", default="/work/bigbench")
    ap.add_argument("--ref-python", default=None, help="python of an environment with imageio + imageio-ffmpeg")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--skip", default="", help="comma-separated steps to skip: decode,stream,window")
    ap.add_argument("--worker", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if a.worker:
        kind, *rest = a.worker
        fn = {"decode-pyav": worker_decode_pyav, "stream": worker_stream, "window": worker_window}[kind]
        conv = [int(x) if x.lstrip("-").isdigit() else (None if x == "None" else
                (float(x) if x.replace(".", "", 1).isdigit() else x)) for x in rest]
        print(json.dumps(fn(*conv)))
        return
    work = Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(work).free / 2**30
    print(json.dumps({"step": "conditions", "cpus": os.cpu_count(), "load": os.getloadavg(),
                      "free_disk_gb": round(free, 1), "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")}))
    clip = work / f"moving-{a.frames}.mp4"
    store = work / f"orpca-{a.frames}.zarr"
    skip = set(filter(None, a.skip.split(",")))
    try:
        if not clip.exists():
            print(json.dumps(write_clip(clip, a.frames)), flush=True)
        if "decode" not in skip:
            print(json.dumps(run_worker(["decode-pyav", clip])), flush=True)
            if a.ref_python:
                out = subprocess.run([a.ref_python, "-c", REF_DECODE, str(clip)], capture_output=True, text=True)
                print(out.stdout.strip() or out.stderr, flush=True)
        if "stream" not in skip:
            if store.exists():
                shutil.rmtree(store)
            print(json.dumps(run_worker(["stream", clip, store, a.batch, a.k, a.lambda2])), flush=True)
        if "window" not in skip:
            start = max(0, a.frames // 2 - a.window // 2)
            print(json.dumps(run_worker(["window", clip, store, start, start + a.window])), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(store, ignore_errors=True)
            clip.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
