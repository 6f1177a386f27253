import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# One BLAS thread: on a busy 2-core machine multi-threaded OpenBLAS spin-waits on small products
# (a 0.02 s SVD took seconds), and the GUI tests need the main thread to get the CPU.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
