"""The docs figure of streaming robust PCA against batch PCP, on a synthetic clip with known
foreground (robustcore.bigdata.synthetic.MovingObjects).

Run by hand from the repository root (about a minute; PCP on the window dominates):

    python docs/streaming/make_figure.py

Writes docs/streaming/streaming-vs-pcp.png: for four frames of the last window, the frame, the
true foreground, batch PCP's mask and OnlineRPCA's mask and background (L), with the F-measures
of both against the truth and of one against the other over the window, and OnlineRPCA's
F-measure per batch from the first frame on (it starts from a batch PCP of the first batch and
improves as its basis learns).
"""
from __future__ import annotations

import os
import sys

import numpy as np
from PIL import Image, ImageDraw

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from robustcore.bigdata import ArrayFrames  # noqa: E402
from robustcore.bigdata.synthetic import MovingObjects  # noqa: E402
from robustcore.subspace.online_rpca import OnlineRPCA  # noqa: E402
from robustcore.subspace.pcp import PCP  # noqa: E402

H, W, N, WINDOW = 96, 128, 1200, 200


def fmeasure(a, b):
    return 2 * np.sum(a & b) / max(a.sum() + b.sum(), 1)


def tile(img, scale=2):
    a = np.clip(img, 0, 255).astype(np.uint8)
    return Image.fromarray(a).resize((W * scale, H * scale), Image.NEAREST)


def main():
    scene = MovingObjects(H, W, n_objects=4, noise=3.0, illumination=0.15, period=800, seed=7)
    frames, truth = scene.frames(0, N)
    X = frames.reshape(N, -1).astype(float)
    T = truth.reshape(N, -1)
    est = OnlineRPCA().fit(ArrayFrames(X, frame_shape=(H, W), value_range=(0, 255)))
    mask_s = est.sink_.read("mask")
    L = est.sink_.read("low_rank")
    w0 = N - WINDOW
    pcp = PCP().fit(X[w0:])
    mask_p = np.abs(pcp.sparse_) > est.mask_threshold_
    f_p, f_s = fmeasure(mask_p, T[w0:]), fmeasure(mask_s[w0:], T[w0:])
    f_sp = fmeasure(mask_s[w0:], mask_p)
    per_batch = [fmeasure(mask_s[i:i + 64], T[i:i + 64]) for i in range(0, N, 64)]

    cols = ["frame", "true foreground", "batch PCP mask", "streaming mask", "streaming background L"]
    picks = [w0 + 20, w0 + 80, w0 + 140, w0 + 199]
    scale, pad, top = 2, 6, 28
    cw, ch = W * scale, H * scale
    plot_h = 150
    fig = Image.new("RGB", (len(cols) * (cw + pad) + pad, top + len(picks) * (ch + pad) + plot_h + 60), "white")
    d = ImageDraw.Draw(fig)
    for j, c in enumerate(cols):
        d.text((pad + j * (cw + pad), 8), c, fill="black")
    for i, t in enumerate(picks):
        k = t - w0
        imgs = [frames[t], 255 * truth[t], 255 * mask_p[k].reshape(H, W), 255 * mask_s[t].reshape(H, W),
                L[t].reshape(H, W)]
        for j, a in enumerate(imgs):
            fig.paste(tile(a, scale), (pad + j * (cw + pad), top + i * (ch + pad)))
        d.text((pad + 4, top + i * (ch + pad) + 4), f"frame {t}", fill="yellow")
    y0 = top + len(picks) * (ch + pad) + 10
    d.text((pad, y0), f"Frames {w0}-{N - 1} (a window batch PCP holds): F-measure against the truth: batch PCP "
           f"{f_p:.3f}, streaming {f_s:.3f}; streaming against PCP {f_sp:.3f}.", fill="black")
    # F-measure of the streaming masks per batch of 64 frames, from the first frame on.
    x0, y1, pw = pad + 40, y0 + 24, fig.width - 2 * pad - 60
    lo = 0.8
    d.rectangle([x0, y1, x0 + pw, y1 + plot_h - 20], outline="black")
    for v in (0.8, 0.9, 1.0):
        yy = y1 + (plot_h - 20) * (1 - (v - lo) / (1 - lo))
        d.line([x0, yy, x0 + pw, yy], fill=(220, 220, 220))
        d.text((pad, yy - 6), f"{v:.1f}", fill="black")
    pts = [(x0 + pw * (i + 0.5) / len(per_batch), y1 + (plot_h - 20) * (1 - (max(f, lo) - lo) / (1 - lo)))
           for i, f in enumerate(per_batch)]
    d.line(pts, fill=(30, 90, 200), width=2)
    d.text((x0 + 6, y1 + plot_h - 36), "streaming F-measure per batch of 64 frames against the truth (frames 0 to "
           f"{N - 1})", fill=(30, 90, 200))
    out = os.path.join(HERE, "streaming-vs-pcp.png")
    fig.save(out, optimize=True)
    print(f"wrote {out}: PCP {f_p:.3f}, streaming {f_s:.3f}, agreement {f_sp:.3f}")


if __name__ == "__main__":
    main()
