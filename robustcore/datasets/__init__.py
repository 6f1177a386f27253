"""Data in: the Dataset type, loaders per format, and the bundled demos."""
from ._dataset import Dataset, Provenance, file_sha256

__all__ = ["Dataset", "Provenance", "file_sha256"]
