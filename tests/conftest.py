import os

from robustcore._blas_policy import default_to_one_thread

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# One BLAS thread (before numpy loads), as the window has: on a busy 2-core machine multi-threaded
# OpenBLAS spin-waits on small products (a 0.02 s SVD took seconds), and the GUI tests need the
# main thread to get the CPU.
default_to_one_thread()
