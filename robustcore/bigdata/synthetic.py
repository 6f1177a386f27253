"""Synthetic recordings with known foreground, for tests, benchmarks and the docs figure.

:class:`MovingObjects` draws frames of a textured background under slowly changing light with
rectangles moving across it. Every frame is a closed-form function of its number (objects
bounce along triangle waves; the noise is seeded by the frame number), so any range of frames
can be drawn on its own, in any order, in memory proportional to the range: a 10,000-frame clip
never has to exist in memory at once. ``frames(start, stop)`` also returns the true foreground
masks.
"""
from __future__ import annotations

import numpy as np

__all__ = ["MovingObjects"]


def _triangle(x, length):
    """Position bouncing between 0 and length: a triangle wave of period 2 * length."""
    if length <= 0:
        return np.zeros_like(x)
    m = np.mod(x, 2 * length)
    return np.where(m <= length, m, 2 * length - m)


class MovingObjects:
    """Grey frames (height, width) with ``n_objects`` rectangles moving over a textured background.

    Parameters
    ----------
    height, width : int
    n_objects : int
    noise : float
        Standard deviation of the Gaussian pixel noise (grey levels).
    illumination : float
        Relative amplitude of two slow changes of light, one overall and one sweeping from left
        to right (the noise-free background is then rank 3).
    period : float
        Frames per cycle of the light change.
    seed : int
    """

    def __init__(self, height: int = 240, width: int = 320, n_objects: int = 4, noise: float = 2.0,
                 illumination: float = 0.1, period: float = 2000.0, seed: int = 0):
        self.height, self.width = int(height), int(width)
        self.noise, self.illumination, self.period = float(noise), float(illumination), float(period)
        self.seed = int(seed)
        rng = np.random.default_rng(seed)
        y = np.linspace(0, 1, self.height)[:, None]
        x = np.linspace(0, 1, self.width)[None, :]
        bg = np.zeros((self.height, self.width))
        for _ in range(6):
            fx, fy = rng.uniform(0.5, 4, 2)
            ph = rng.uniform(0, 2 * np.pi, 2)
            bg += np.sin(2 * np.pi * fx * x + ph[0]) * np.cos(2 * np.pi * fy * y + ph[1])
        bg = (bg - bg.min()) / max(np.ptp(bg), 1e-12)
        self.background = 60.0 + 100.0 * bg           # grey levels 60..160
        h, w = self.height, self.width
        self.objects = []
        self._ramp = np.broadcast_to(np.linspace(-1, 1, w)[None, :], (h, w)) * self.background
        for _ in range(int(n_objects)):
            oh = int(rng.integers(max(2, h // 12), max(3, h // 5)))
            ow = int(rng.integers(max(2, w // 14), max(3, w // 6)))
            # Objects are textured and their brightness overlaps the background's in places, so
            # some of their pixels are genuinely hard to tell from it.
            base = float(rng.choice([rng.uniform(0, 40), rng.uniform(180, 255)]))
            texture = base + rng.normal(0, 25, (oh, ow))
            speed = rng.uniform(0.3, 2.0, 2) * rng.choice([-1, 1], 2)
            start = rng.uniform(0, 1, 2) * [h - oh, w - ow]
            self.objects.append((oh, ow, texture, speed, start))

    @property
    def frame_shape(self) -> tuple[int, int]:
        return self.height, self.width

    def frames(self, start: int, stop: int):
        """Frames ``start`` .. ``stop - 1``: ``(frames uint8 (n, h, w), masks bool (n, h, w))``."""
        t = np.arange(int(start), int(stop))
        n, h, w = t.size, self.height, self.width
        phase = 2 * np.pi * t / self.period
        gain = 1.0 + self.illumination * np.sin(phase)
        sweep = 0.5 * self.illumination * np.sin(0.7 * phase + 1.0)
        img = gain[:, None, None] * self.background[None] + sweep[:, None, None] * self._ramp[None]
        mask = np.zeros((n, h, w), dtype=bool)
        for oh, ow, value, speed, pos0 in self.objects:
            ys = _triangle(pos0[0] + speed[0] * t, h - oh).astype(int)
            xs = _triangle(pos0[1] + speed[1] * t, w - ow).astype(int)
            for i in range(n):
                img[i, ys[i]:ys[i] + oh, xs[i]:xs[i] + ow] = value
                mask[i, ys[i]:ys[i] + oh, xs[i]:xs[i] + ow] = True
        for i, ti in enumerate(t):
            img[i] += np.random.default_rng([self.seed, int(ti)]).normal(0.0, self.noise, (h, w))
        return np.clip(np.rint(img), 0, 255).astype(np.uint8), mask
