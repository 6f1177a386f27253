"""The robust-PCA decomposition of an image stack as a video: every frame shows
original X | low-rank L | sparse S | foreground mask side by side, with titles.

Three outputs, chosen by the path: ``.mp4`` (H.264 through PyAV, the optional extra ``video``),
``.gif`` (Pillow, always available) or a folder (one PNG per frame). No Qt here: the window and
the command line (``--video``) write the same files. Grey levels are fixed over the whole stack
(X and L share one scale, S a symmetric diverging one), as in the L + S view.
"""
from __future__ import annotations

import importlib.util
import io
import math
import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import palette
from .export import atomic_write_bytes
from .writing import forget_temp, new_temp, sweep_stale, writing_set

__all__ = ["FORMATS", "video_format", "check_video", "frame_scales", "compose_frame", "export_video",
           "has_mp4"]

FORMATS = {"mp4": "MP4 video (H.264)", "gif": "animated GIF", "png": "folder of PNG images"}
# Small frames are enlarged by whole multiples (no blur) up to this height; GIFs stay smaller
# (LZW compresses camera noise poorly: 200 escalator frames took 13 MB at twice the size).
_MIN_PANEL_HEIGHT = {"mp4": 240, "png": 240, "gif": 120}
_TITLE_HEIGHT = 26
_GAP = 6


def has_mp4() -> bool:
    """Whether MP4 can be written here (PyAV installed: pip install 'robust-subspace-studio[video]').
    Looked up, not imported: the export dialog asks on the GUI thread, and importing PyAV (its
    FFmpeg libraries) holds the GIL 0.1-0.3 s; the export's own thread imports it."""
    return importlib.util.find_spec("av") is not None


def video_format(path) -> str:
    """"mp4", "gif" or "png" (a folder of images) for an output path."""
    p = os.fspath(path)
    ext = os.path.splitext(p)[1].lower()
    if ext in (".mp4", ".gif"):
        return ext[1:]
    if ext == "":
        return "png"
    raise ValueError(f"a decomposition video must end in .mp4 or .gif, or be a folder (for PNG "
                     f"images); got {p!r}")


def check_video(path, dataset, result) -> str:
    """What an export to ``path`` needs, checked before anything is written; returns the format."""
    fmt = video_format(path)
    if result is None or "low_rank" not in result.arrays or "sparse" not in result.arrays:
        raise ValueError("a decomposition video needs a low-rank + sparse result (pcp or online-rpca): "
                         "run one first")
    if dataset is None or not dataset.is_image:
        raise ValueError("a decomposition video needs image data (each sample a frame with an "
                         "image shape); this data set is a table: use the L + S view instead")
    if fmt == "mp4" and not has_mp4():
        raise ValueError("MP4 needs PyAV, which is not installed: pip install "
                         "'robust-subspace-studio[video]', or write a .gif or a folder of PNG images")
    return fmt


@dataclass(frozen=True)
class FrameScales:
    gray: tuple[float, float]   # grey levels of X and L
    s_limit: float              # |S| at the ends of the diverging scale
    threshold: float            # mask: |S| above this


def frame_scales(dataset, result, threshold: float | None = None) -> FrameScales:
    """The colour scales of the whole stack, as the L + S view draws them (threshold default:
    the view's, :func:`app.palette.mask_threshold`)."""
    X = dataset.dense()
    L = np.asarray(result.arrays["low_rank"])
    S = np.asarray(result.arrays["sparse"])
    lo, hi = float(min(X.min(), L.min())), float(max(X.max(), L.max()))
    smax = float(np.percentile(np.abs(S), 99.5)) if S.size else 1.0
    if smax <= 0:
        smax = float(np.abs(S).max()) or 1.0
    gray = (lo, hi if hi > lo else lo + 1)
    return FrameScales(gray, smax, palette.mask_threshold(S, result) if threshold is None else float(threshold))


@lru_cache(maxsize=8)
def _font(size: int):
    from PIL import ImageFont
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: a fixed bitmap font
        return ImageFont.load_default()


def compose_frame(x, low, s, shape, scales: FrameScales, label: str = "", min_height: int = 240) -> np.ndarray:
    """(H, W, 3) uint8: the four panels of one frame with their titles."""
    from PIL import Image, ImageDraw
    h, w = shape
    k = max(1, min(8, math.ceil(min_height / h)))
    mask = np.abs(s) > scales.threshold
    panels = [np.repeat(palette.to_gray(x, scales.gray).reshape(h, w)[..., None], 3, axis=-1),
              np.repeat(palette.to_gray(low, scales.gray).reshape(h, w)[..., None], 3, axis=-1),
              palette.to_diverging(s, scales.s_limit).reshape(h, w, 3),
              palette.mask_overlay(x, scales.gray, mask).reshape(h, w, 3)]
    titles = [f"original X {label}".strip(), "low-rank L (background)",
              f"sparse S (|S| scale {scales.s_limit:.3g})",
              f"mask |S| > {scales.threshold:.3g} ({100 * mask.mean():.1f}%)"]
    pw, ph = w * k, h * k
    W = 4 * pw + 5 * _GAP
    H = _TITLE_HEIGHT + ph + _GAP
    W += W % 2  # H.264 wants even sizes
    H += H % 2
    canvas = Image.new("RGB", (W, H), (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    font = _font(max(11, min(16, pw // 22)))
    for i, (panel, title) in enumerate(zip(panels, titles)):
        x0 = _GAP + i * (pw + _GAP)
        img = Image.fromarray(panel, "RGB").resize((pw, ph), Image.Resampling.NEAREST)
        canvas.paste(img, (x0, _TITLE_HEIGHT))
        tw = draw.textlength(title, font=font)
        draw.text((x0 + max(0, (pw - tw) / 2), 5), title, fill=(32, 32, 32), font=font)
    return np.asarray(canvas)


def _frames(dataset, result, scales, min_height):
    X = dataset.dense()
    L = np.asarray(result.arrays["low_rank"])
    S = np.asarray(result.arrays["sparse"])
    n = X.shape[0]
    order = np.argsort(dataset.frame_order, kind="stable") if dataset.frame_order is not None else np.arange(n)
    for pos, i in enumerate(order):
        yield compose_frame(X[i], L[i], S[i], dataset.image_shape, scales, f"(frame {pos + 1} of {n})",
                            min_height)


def export_video(path, dataset, result, threshold: float | None = None, fps: float = 10.0,
                 progress=None, overwrite: bool = False) -> list[str]:
    """Write the decomposition to ``path`` (.mp4, .gif, or a folder of PNGs); returns the files.

    ``progress(fraction, message)`` may return False to stop (robustcore's progress protocol;
    nothing is left under the final name then). Existing files are refused unless ``overwrite``.
    """
    from robustcore._progress import Cancelled
    fmt = check_video(path, dataset, result)
    path = os.path.abspath(os.fspath(path))
    if fmt != "png" and os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} already exists; choose another name or allow overwriting")
    scales = frame_scales(dataset, result, threshold)
    n = dataset.n_samples

    def frames():
        for k, frame in enumerate(_frames(dataset, result, scales, _MIN_PANEL_HEIGHT[fmt])):
            if progress is not None and progress(k / n, f"frame {k + 1} of {n}") is False:
                raise Cancelled("video export cancelled")
            yield frame

    if fmt == "png":
        return _write_pngs(path, frames(), n, overwrite)
    sweep_stale(os.path.dirname(path))    # temporaries an earlier, killed export left there
    if fmt == "gif":
        return [_write_gif(path, frames(), fps)]
    return [_write_mp4(path, frames(), fps)]


def _write_pngs(folder, frames, n, overwrite) -> list[str]:
    from PIL import Image
    os.makedirs(folder, exist_ok=True)
    digits = max(4, len(str(n)))
    names = [os.path.join(folder, f"frame_{k + 1:0{digits}d}.png") for k in range(n)]
    if not overwrite:
        clash = [p for p in names if os.path.exists(p)]
        if clash:
            raise FileExistsError(f"{folder} already holds {len(clash)} frame images (e.g. {clash[0]}); "
                                  f"choose another folder or allow overwriting")
    # The frames are one set: until the last is written the folder says it is incomplete.
    with writing_set(folder, "frames", f"the {n:,} frames of a decomposition video"):
        for p, frame in zip(names, frames):
            buf = io.BytesIO()
            Image.fromarray(frame, "RGB").save(buf, "PNG", optimize=False)
            atomic_write_bytes(p, buf.getvalue(), overwrite=True)
    return names


def _gif_palette():
    """One fixed palette for every frame: 128 greys, 96 colours of the diverging map and the mask
    colour. Undithered, so flat areas stay flat and the GIF compresses (dithered per-frame
    palettes made a 200-frame escalator GIF 31 MB)."""
    from PIL import Image
    greys = np.repeat(np.linspace(0, 255, 128).round()[:, None], 3, axis=1)
    div = palette.diverging_lut(96).astype(float)
    colours = np.vstack([greys, div, [palette.MASK_RGB]]).astype(np.uint8)
    colours = np.vstack([colours, np.zeros((256 - len(colours), 3), np.uint8)])
    img = Image.new("P", (1, 1))
    img.putpalette(colours.ravel().tolist())
    return img


def _write_gif(path, frames, fps) -> str:
    from PIL import Image
    pal = _gif_palette()
    images = [Image.fromarray(f, "RGB").quantize(palette=pal, dither=Image.Dither.NONE) for f in frames]
    buf = io.BytesIO()
    images[0].save(buf, "GIF", save_all=True, append_images=images[1:], duration=int(round(1000 / fps)), loop=0)
    return atomic_write_bytes(path, buf.getvalue(), overwrite=True)


def _write_mp4(path, frames, fps) -> str:
    import av
    from fractions import Fraction
    fd, tmp = new_temp(os.path.dirname(path) or ".", suffix=".mp4")
    os.close(fd)
    try:
        with av.open(tmp, mode="w") as out:
            stream = None
            for frame in frames:
                if stream is None:
                    stream = out.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000))
                    stream.height, stream.width = frame.shape[:2]
                    stream.pix_fmt = "yuv420p"
                    stream.options = {"crf": "18"}  # near-lossless: S's faint pixels survive
                for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                    out.mux(packet)
            if stream is not None:
                for packet in stream.encode():
                    out.mux(packet)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        forget_temp(tmp)
    return path
