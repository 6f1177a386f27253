"""Online (streaming) classifiers: Soft Confidence-Weighted learning, :class:`~robustcore.online.scw.SCW`."""
