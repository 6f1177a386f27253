"""Video files (MP4, MOV, AVI, MKV, WebM) as frame stacks, decoded lazily through PyAV.

Why PyAV: it binds FFmpeg's libraries in-process and its wheels ship them (with the common
decoders), so ``pip install av`` is all a user needs; frames come with their presentation
timestamps, seeking is frame-accurate (seek to the keyframe before, decode forward), and scaling
and colour conversion run in FFmpeg's swscale. The alternative, imageio with imageio-ffmpeg,
pipes raw frames out of a separate ffmpeg executable; benchmarks/results_bigdata.md compares
the two on decode speed and memory.

Frames are never decoded all at once unless asked: :func:`open_video` returns a
:class:`VideoFrames` source (see :mod:`robustcore.bigdata`) that knows the frame count, rate
and timestamps from one pass over the packets (no decoding) and decodes a batch at a time.
The ``video`` loader (``load("clip.mp4")``) reads a whole clip into a Dataset, within
``max_bytes``.

Colour: ``luminance`` is the luma plane Y' the encoder stored (for 8-bit video the usual
0.299 R + 0.587 G + 0.114 B weights of ITU-R BT.601, or BT.709's for HD material), rescaled to
full range 0-255 by FFmpeg; ``rgb`` keeps the three channels, laid out planar (all red values,
then green, then blue: a row draws as the three channel images one above the other);
``red``/``green``/``blue`` keep one channel.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import struct
from pathlib import Path

import numpy as np

from .._params import Param
from ..bigdata._frames import FrameSource
from ._dataset import Dataset
from ._errors import LoadError
from ._limits import DEFAULT_MAX_FEATURES, LIMIT_OPTIONS, check_features, check_memory, numbered, regular_file
from ._loader import Loader

__all__ = ["VideoFrames", "VideoLoader", "open_video", "VIDEO_SUFFIXES"]

VIDEO_SUFFIXES = (".mp4", ".m4v", ".mov", ".avi", ".mkv", ".webm")
COLORS = ("luminance", "rgb", "red", "green", "blue")
_CHANNEL = {"red": 0, "green": 1, "blue": 2}
# Decoding ahead is cheaper than seeking when the wanted frame is at most this many frames on.
_SEEK_AFTER = 64


def _av():
    try:
        return importlib.import_module("av")
    except ImportError:
        raise LoadError("reading video files needs PyAV, which is not installed; install it with: "
                        "pip install av   (or the project's extra: pip install -e \".[video]\")") from None


def _av_errors(av):
    return (av.error.FFmpegError, OSError, ValueError, EOFError, IndexError)


class _Probe:
    """Frame count, rate and timestamps from the container's packets (demuxed, not decoded), and
    the digest of those packets (``digest``: the content the frames decode from, see
    :mod:`robustcore.bigdata._digest`)."""

    def __init__(self, path: Path):
        av = _av()
        h = hashlib.sha256()
        try:
            with av.open(str(path)) as c:
                if not c.streams.video:
                    raise LoadError(f"{path.name} holds no video stream (audio only, or not a video "
                                    f"file); open a file with moving pictures")
                v = c.streams.video[0]
                self.codec = v.codec_context.name
                self.width, self.height = int(v.codec_context.width), int(v.codec_context.height)
                self.time_base = v.time_base
                rate = v.average_rate or v.guessed_rate or v.base_rate
                self.fps = float(rate) if rate else None
                h.update(f"robust-studio video {self.codec} {self.width}x{self.height} {self.time_base}\n".encode())
                declared = int(v.frames or 0)    # what the header announces (0: not said)
                pts = []
                missing = 0
                for pk in c.demux(v):
                    if pk.size == 0:          # the flush packet at the end
                        continue
                    h.update(struct.pack("<qqI", -1 if pk.pts is None else pk.pts, -1 if pk.dts is None else pk.dts,
                                         pk.size))
                    h.update(memoryview(pk))
                    t = pk.pts if pk.pts is not None else pk.dts
                    if t is None:
                        missing += 1
                    else:
                        pts.append(int(t))
        except LoadError:
            raise
        except _av_errors(av) as exc:
            raise LoadError(f"{path.name} is not a video FFmpeg can read ({type(exc).__name__}: {exc}); "
                            f"it may be truncated, damaged or not a video") from None
        if self.width <= 0 or self.height <= 0:
            raise LoadError(f"{path.name}: the video stream has no frame size ({self.width}x{self.height})")
        n = len(pts) + missing
        self.digest = f"sha256-packets:{n}:{h.hexdigest()}"
        self.note = None
        if 0 < n < declared:
            # Truncated: the packets stop before the header's count, and the last of them may not
            # decode. The frames that do are counted (decoded once here, bounded by the file) and
            # loaded, and the data set says the file ends early.
            pts, missing = self._decodable(path, av)
            n = len(pts) + missing
            if n == 0:
                raise LoadError(f"{path.name} ends early: its header announces {declared:,} frames and none of "
                                f"those in the file decode; it is truncated or damaged (copy it again)")
            self.note = (f"{path.name} ends early: its header announces {declared:,} frames, {n:,} are in the "
                         f"file and were read; it may be truncated (copy it again for the rest)")
        if n == 0:
            raise LoadError(f"{path.name} holds a video stream with no frames")
        if missing:
            # No timestamps in the container (some AVI files): frames are numbered in order and
            # timed by the nominal rate; seeking is then replaced by decoding from the start.
            self.pts = None
            step = 1.0 / self.fps if self.fps else 1.0
            self.seconds = np.arange(n) * step
        else:
            self.pts = np.sort(np.array(pts, dtype=np.int64))
            self.seconds = self.pts * float(self.time_base)
        self.n = n


    @staticmethod
    def _decodable(path: Path, av) -> tuple[list, int]:
        """(timestamps, frames without one) of the frames of a truncated file that decode."""
        pts, missing = [], 0
        try:
            with av.open(str(path)) as c:
                for f in c.decode(c.streams.video[0]):
                    if f.pts is None:
                        missing += 1
                    else:
                        pts.append(int(f.pts))
        except _av_errors(av):
            pass     # the damaged end: the frames before it are what the file holds
        return pts, missing


def _parse_range(n: int, start: int, stop, step: int, name: str) -> np.ndarray:
    stop = n if stop is None else int(stop)
    if start >= n:
        raise LoadError(f"start={start} is past the end of {name}, which has {n} frames (0 to {n - 1})")
    if stop <= start:
        raise LoadError(f"stop={stop} must be greater than start={start}")
    return np.arange(start, min(stop, n), step)


class VideoFrames(FrameSource):
    """A video file as a lazy :class:`~robustcore.bigdata.FrameSource` (see :func:`open_video`).

    Attributes (beyond the frame-source ones): ``path``, ``codec``, ``source_shape`` (height,
    width as stored), ``source_frames`` (frames in the file), ``frame_indices`` (the file's frame
    numbers that this source's frames are), ``timestamps`` (their presentation times, seconds),
    ``fps`` (nominal rate of the file; the rate of this source is fps / step).
    """

    def __init__(self, path, color: str = "luminance", start: int = 0, stop: int | None = None,
                 step: int = 1, scale: float = 1.0, max_features: int | None = None,
                 max_bytes: int | None = None):
        self.path = Path(path)
        self.name = self.path.stem
        if color not in COLORS:
            raise LoadError(f"color must be one of {', '.join(COLORS)}; got {color!r}")
        if int(step) < 1 or int(start) < 0 or not 0 < float(scale) <= 1:
            raise LoadError(f"need start >= 0, step >= 1 and 0 < scale <= 1; got start={start}, "
                            f"step={step}, scale={scale}")
        probe = _Probe(self.path)
        self._probe = probe
        self.codec = probe.codec
        self.source_shape = (probe.height, probe.width)
        self.source_frames = probe.n
        self.fps = probe.fps
        self.color = color
        self.step = int(step)
        self.frame_indices = _parse_range(probe.n, int(start), stop, self.step, self.path.name)
        self.timestamps = probe.seconds[self.frame_indices]
        self.n_frames = int(self.frame_indices.size)
        w = max(1, int(round(probe.width * float(scale))))
        h = max(1, int(round(probe.height * float(scale))))
        self.frame_shape = (h, w)
        self.channels = 3 if color == "rgb" else 1
        self.value_range = (0.0, 255.0)
        self.content_digest = probe.digest
        self.note = probe.note    # a file that ends early, said with its data
        self._check_frame_size(max_features, max_bytes)
        self._container = None
        self._frames = None      # the running decode generator
        self._next = None        # file frame number it yields next (None: unknown)
        self._pending = None     # a (number, frame) taken but not used yet

    def _check_frame_size(self, max_features, max_bytes) -> None:
        """Before any frame is decoded: the row width against ``max_features`` and what decoding
        one frame takes (the stored frame in RGB, its conversion, the float64 row) against the
        memory budget, so a header claiming absurd dimensions costs nothing."""
        what = f"{self.path.name} ({self.source_shape[1]} x {self.source_shape[0]} frames)"
        check_features(self.n_features, DEFAULT_MAX_FEATURES if max_features is None else int(max_features),
                       what, "pixels per frame")
        if max_bytes is None:
            from ..bigdata._dask import get_settings
            max_bytes = get_settings().memory_budget
        check_memory(self.frame_cost, int(max_bytes), f"decoding one frame of {what}",
                     "open it with a smaller scale")

    @property
    def frame_cost(self) -> int:
        """Bytes decoding one frame takes beside the rows: the stored frame in RGB or gray, its
        scaled conversion and one float64 row."""
        h, w = self.source_shape
        return h * w * 8 + self.n_features * 9

    # -- decoding -------------------------------------------------------------------------
    def _open(self):
        av = _av()
        if self._container is None:
            regular_file(self.path)   # swapped for a FIFO or device since it was opened: refused
            try:
                self._container = av.open(str(self.path))
            except _av_errors(av) as exc:
                raise LoadError(f"cannot reopen {self.path.name} ({exc})") from None
            self._stream = self._container.streams.video[0]
            self._stream.thread_type = "AUTO"   # FFmpeg's frame threads: decoding uses every core
        return self._container

    def _restart_at(self, index: int) -> None:
        """Position the decoder so that the next frame ``_take`` returns is file frame ``index``
        (or an earlier one, which ``_read`` skips)."""
        pts = self._probe.pts
        if pts is not None and index > 0:
            self._open().seek(int(pts[index]), stream=self._stream, backward=True, any_frame=False)
            self._start_decoding(None)
            # Decode forward from the keyframe before the wanted frame until it comes.
            while True:
                i, frame = self._take()
                if i >= index:
                    break
            if i == index:
                self._pending = (i, frame)
                return
            # The container's index landed past the frame (imprecise seeking): start over.
        self.close()
        self._open()
        self._start_decoding(0)

    def _start_decoding(self, first) -> None:
        self._frames = self._container.decode(self._stream)
        self._pending = None
        self._next = first

    def _take(self):
        """The next decoded frame and its file frame number."""
        if self._pending is not None:
            out, self._pending = self._pending, None
            return out
        try:
            f = next(self._frames)
        except StopIteration:
            raise LoadError(f"{self.path.name}: the stream ended early (after frame {self._next}) "
                            f"although its packets announced {self.source_frames} frames; the file "
                            f"may be truncated") from None
        except _av_errors(_av()) as exc:
            raise LoadError(f"{self.path.name}: a frame after frame {self._next} could not be decoded "
                            f"({exc}); the file may be damaged") from None
        pts = self._probe.pts
        if pts is not None and f.pts is not None:
            i = int(np.searchsorted(pts, f.pts))
        elif self._next is not None:
            i = self._next
        else:
            raise LoadError(f"{self.path.name}: a decoded frame carries no timestamp, so its position "
                            f"is unknown after a seek")
        self._next = i + 1
        return i, f

    def _convert(self, frame) -> np.ndarray:
        h, w = self.frame_shape
        size = {} if (h, w) == self.source_shape else {"width": w, "height": h, "interpolation": "AREA"}
        if self.color == "luminance":
            a = frame.to_ndarray(format="gray", **size)
            return a.reshape(-1)
        a = frame.to_ndarray(format="rgb24", **size)
        if self.color == "rgb":
            return np.ascontiguousarray(a.transpose(2, 0, 1)).reshape(-1)
        return np.ascontiguousarray(a[..., _CHANNEL[self.color]]).reshape(-1)

    def _read(self, start: int, stop: int) -> np.ndarray:
        wanted = self.frame_indices[start:stop]
        out = np.empty((wanted.size, self.n_features))
        first = int(wanted[0])
        if self._frames is None or self._next is None or first < self._next - (self._pending is not None) \
                or first - self._next > _SEEK_AFTER:
            self._restart_at(first)
        for k, idx in enumerate(wanted):
            while True:
                i, frame = self._take()
                if i >= idx:
                    break
            if i != idx:
                raise LoadError(f"{self.path.name}: frame {idx} could not be decoded (the decoder went "
                                f"from frame {i - 1 if i else 0} to {i}); the file may be damaged")
            out[k] = self._convert(frame)
        return out

    def close(self) -> None:
        if self._container is not None:
            try:
                self._container.close()
            finally:
                self._container = None
                self._frames = None
                self._next = None
                self._pending = None

    def describe(self) -> dict:
        h, w = self.source_shape
        out = {"file": self.path.name, "codec": self.codec, "stored frame size": f"{w} x {h}",
               "frames in file": self.source_frames}
        out.update(super().describe())
        return out

    def fingerprint(self) -> str:
        """Identity without hashing the whole file: its path, size and modification time, and
        which frames are read how (the content's digest is ``content_digest``)."""
        import hashlib
        st = self.path.stat()
        key = (f"{self.path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{self.color}|{self.frame_shape}|"
               f"{self.frame_indices[0]}:{self.frame_indices[-1]}:{self.step}")
        return "shallow:" + hashlib.sha256(key.encode()).hexdigest()

    def details(self) -> dict:
        """What provenance records: rate, timestamps, codec, sizes (JSON-able)."""
        return {"fps": self.fps, "codec": self.codec, "source_frames": self.source_frames,
                "source_shape": list(self.source_shape), "frame_shape": list(self.frame_shape),
                "channels": self.channels, "layout": "planar" if self.channels > 1 else "gray",
                "value_range": list(self.value_range),
                "frame_indices": self.frame_indices.tolist(),
                "timestamps": [round(float(t), 6) for t in self.timestamps]}


def open_video(path, color: str = "luminance", start: int = 0, stop: int | None = None, step: int = 1,
               scale: float = 1.0, max_features: int | None = None, max_bytes: int | None = None) -> VideoFrames:
    """Open a video file lazily: frames ``start``, ``start + step``, ... before ``stop`` (file frame
    numbers), each downscaled by ``scale`` (FFmpeg's area averaging) and converted to
    ``color`` (see the module doc). Nothing is decoded until frames are read.

    The bounded-resource policy applies before FFmpeg sees the file: only a regular file is
    opened (a FIFO, device or socket, also behind a symlink, is refused without waiting), and
    before any frame is decoded a frame's width x height x channels is checked against
    ``max_features`` (default 2**24) and decoding one frame against ``max_bytes`` (default the
    out-of-core memory budget). The content digest of the video stream is taken while its
    packets are counted (``content_digest``).

    Raises :class:`~robustcore.datasets.LoadError` for files FFmpeg cannot read, ranges outside
    the file and bad options.
    """
    p = regular_file(path)
    if p.stat().st_size == 0:
        raise LoadError(f"{p} is empty (0 bytes); nothing to load")
    return VideoFrames(p, color=color, start=start, stop=stop, step=step, scale=scale, max_features=max_features,
                       max_bytes=max_bytes)


class VideoLoader(Loader):
    """Video files via PyAV: every decoded frame is one sample (row), flattened row-major."""

    name = "video"
    label = "Video (MP4/MOV/AVI/MKV)"
    patterns = tuple(f"*{s}" for s in VIDEO_SUFFIXES)
    options = (
        Param("color", str, "luminance", "luminance (gray), rgb (three channels, planar), or one "
              "channel: red, green, blue", choices=COLORS),
        Param("start", int, 0, "first frame to read (0-based frame number in the file)", low=0),
        Param("stop", int, None, "read frames before this frame number", low=1, allow_none=True,
              none_label="to the end"),
        Param("step", int, 1, "read every step-th frame", low=1),
        Param("scale", float, 1.0, "downscale each frame by this factor on read (0.5 = half width "
              "and height)", low=0.0, high=1.0, low_inclusive=False),
        *LIMIT_OPTIONS,
    )

    def sniff(self, head: bytes, path: Path) -> bool:
        return (head[4:8] in (b"ftyp", b"moov", b"mdat", b"wide", b"free")
                or (head[:4] == b"RIFF" and head[8:12] == b"AVI ")
                or head[:4] == b"\x1a\x45\xdf\xa3")

    def _prepare(self, path: Path, opts: dict):
        # max_features (width x height x channels) and one frame's decoding are checked from the
        # container's header, before any frame is decoded.
        return open_video(path, color=opts["color"], start=opts["start"], stop=opts["stop"],
                          step=opts["step"], scale=opts["scale"], max_features=opts["max_features"],
                          max_bytes=opts["max_bytes"])

    def _estimate(self, path: Path, opts: dict, ctx) -> int:
        # The rows, plus decoding one frame; names and ids are made on demand (numbered).
        return ctx.nbytes + ctx.frame_cost

    def _load(self, path: Path, opts: dict, ctx) -> Dataset:
        with ctx as frames:
            X = frames.read()
            ids = [f"frame {i} @ {t:.3f} s" for i, t in zip(frames.frame_indices, frames.timestamps)]
            ds = Dataset(X=X, image_shape=frames.display_shape, frame_order=np.arange(X.shape[0]),
                         sample_ids=ids, feature_names=numbered("p", X.shape[1]))
            ds._video_details = frames.details()
            if frames.note:
                ds.warnings.append(frames.note)
            return ds

    def load(self, path, **options) -> Dataset:
        ds = super().load(path, **options)
        # Rate and timestamps travel with the provenance (the Loader builds it after _load).
        ds.provenance = dataclasses.replace(ds.provenance, details=ds.__dict__.pop("_video_details", {}))
        return ds
