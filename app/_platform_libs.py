"""The system libraries Qt needs to open a window on Linux, checked before Qt is started.

The PySide6 wheels bundle Qt itself but not the X11/GL/font libraries of the system. When one is
missing, Qt aborts with "Could not load the Qt platform plugin 'xcb'" and, on a bare Debian,
even names a library that is present (it asked for libxcb-cursor0 where libxcb-icccm4 and
libxcb-keysyms1 were missing). ``missing_libraries`` asks the dynamic linker (``ldd``) which
libraries of Qt's platform plugin and widget module cannot be found, and ``install_hint`` names
the Debian/Ubuntu packages that provide them.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["PACKAGES", "APT_PACKAGES", "NO_DISPLAY", "missing_libraries", "install_hint", "display_problem",
           "unreachable_display", "platform_problem"]

# Library (soname) -> Debian/Ubuntu package, for every system library that PySide6's Qt
# (QtCore, QtGui, QtWidgets, QtDBus, the xcb platform plugin) links against beyond glibc.
# Found with ldd on the wheel's libraries; README.md's apt-get line and .ci/run install these.
PACKAGES = {
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libX11.so.6": "libx11-6",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libxcb.so.1": "libxcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
}
APT_PACKAGES = sorted(set(PACKAGES.values()))


def _qt_dir() -> Path | None:
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _platform() -> str | None:
    """The Qt platform plugin that will be loaded, or None when it cannot be told."""
    name = os.environ.get("QT_QPA_PLATFORM", "").split(":")[0].strip()
    if name:
        return name
    if os.environ.get("WAYLAND_DISPLAY"):
        return None        # Qt picks Wayland or X11 itself
    return "xcb"


def _ldd_missing(path: Path) -> list[str]:
    try:
        out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.split("=>")[0].strip() for line in out.splitlines() if "not found" in line]


def missing_libraries(platform: str | None = "xcb") -> list[str]:
    """System libraries (sonames) that Qt's widgets and ``platform`` plugin cannot find."""
    if not sys.platform.startswith("linux") or shutil.which("ldd") is None:
        return []
    qt = _qt_dir()
    if qt is None:
        return []
    files = sorted(qt.glob("QtWidgets*.so"))
    if platform:
        files.append(qt / "Qt" / "plugins" / "platforms" / f"libq{platform}.so")
    missing: dict[str, None] = {}        # ordered, each library once
    for f in files:
        if f.is_file():
            missing.update(dict.fromkeys(_ldd_missing(f)))
    return list(missing)


def install_hint(missing: list[str]) -> str:
    """The apt-get command installing the packages that provide ``missing``."""
    pkgs = sorted({PACKAGES[m] for m in missing if m in PACKAGES})
    return f"sudo apt-get install -y {' '.join(pkgs)}" if pkgs else ""


NO_DISPLAY = "no display: use --screenshot, QT_QPA_PLATFORM=offscreen or xvfb-run"


def _x_server_answers(display: str, timeout: float) -> bool | None:
    """Whether the X server of ``display`` (``[host]:N[.S]``) accepts a connection within
    ``timeout`` seconds; None when the name cannot be read (Qt is left to judge it)."""
    host, _, rest = display.rpartition(":")
    number = rest.partition(".")[0]
    if not number.isdigit():
        return None
    if host in ("", "unix"):
        family = socket.AF_UNIX
        # Xvfb and Xorg listen on Linux's abstract socket and on the file; either will do.
        addresses = ["\0/tmp/.X11-unix/X" + number, "/tmp/.X11-unix/X" + number]
    else:
        family, addresses = socket.AF_INET, [(host, 6000 + int(number))]
    deadline = time.monotonic() + timeout
    while True:
        for address in addresses:
            try:
                with socket.socket(family, socket.SOCK_STREAM) as s:
                    s.settimeout(max(0.1, min(1.0, deadline - time.monotonic())))
                    s.connect(address)
                    return True
            except OSError:
                pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def unreachable_display(display: str, wait: float = 10.0) -> str | None:
    """The message when no X server answers on ``display``, even after ``wait`` seconds (one
    still starting on a busy machine, as under xvfb-run, gets that long). Qt would abort
    (SIGABRT, exit 134) before any window, asking to reinstall libxcb-cursor0."""
    if os.environ.get("QT_QPA_PLATFORM", "xcb").split(":")[0].strip() not in ("", "xcb"):
        return None
    if _x_server_answers(display, wait) is not False:
        return None
    return (f"robust-studio: no X server answers on display {display!r} (the DISPLAY variable); start "
            f"one, or {NO_DISPLAY.partition(': ')[2]}")


def display_problem() -> str | None:
    """The message when Qt would look for an X11 or Wayland display that is not there (Linux, no
    DISPLAY, no WAYLAND_DISPLAY, no QT_QPA_PLATFORM; or a DISPLAY no server answers on): Qt then
    aborts (exit 134) asking to reinstall libxcb-cursor0, although the libraries are installed."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM", "").strip():
        return None
    if os.environ.get("WAYLAND_DISPLAY"):
        return None
    if os.environ.get("DISPLAY"):
        return unreachable_display(os.environ["DISPLAY"])
    return (f"robust-studio: {NO_DISPLAY}\n(the window needs a graphical session; "
            f"'robust-studio --screenshot FILE.png' draws it without one, and the command line, "
            f"'robust-studio run', needs none)")


def platform_problem() -> str | None:
    """A message for the user when the window cannot start: system libraries missing, or no
    display to open it on."""
    platform = _platform()
    missing = missing_libraries(platform)
    if not missing:
        return display_problem()
    hint = install_hint(missing)
    text = (f"Robust Subspace Studio cannot open its window: Qt's '{platform or 'default'}' platform "
            f"needs system libraries that are missing: {', '.join(missing)}.")
    if hint:
        text += f"\nOn Debian or Ubuntu, install them with:\n    {hint}"
    else:
        text += "\nInstall the packages that provide them with your system's package manager."
    text += ("\n(README.md lists every system package the window needs. The command line, "
             "'robust-studio run', works without them.)")
    return text
