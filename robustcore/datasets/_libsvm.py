"""LIBSVM / svmlight sparse text: ``label index:value index:value ...`` per line."""
from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._params import Param
from ._dataset import Dataset
from ._errors import LoadError
from ._limits import LIMIT_OPTIONS, PER_ENTRY, PER_SAMPLE, Cost, check_features, check_memory
from ._lines import LineEnds, check_no_inline_breaks, line_of, split_lines
from ._loader import OUTLIER_LABEL, Loader, parse_labels, physical_lines, read_all

__all__ = ["LibsvmLoader"]

# Bytes scanned for line ends at a time while the file is read (bounds the scan's own arrays).
_COUNT_SLICE = 1 << 16
# Lines parsed per vectorised step (bounds the temporary copies of the text).
_CHUNK_LINES = 20000
# A field with no colon, or with two.
_BAD_FIELD = re.compile(r"(?:^|\s)[^\s:]+(?=\s|$)|:[^\s]*:")


class LibsvmLoader(Loader):
    """Sparse LIBSVM/svmlight text, kept as a CSR matrix unless ``dense=True``.

    Feature indices are 1-based as in LIBSVM; with ``zero_based=None`` (the default) a file in
    which some index is 0 is read as 0-based instead. A ``qid:`` field after the label is
    ignored, and ``#`` starts a comment. Labels must be numbers (``+1``, ``-1``, ``3``, ``0.5``).
    """

    name = "libsvm"
    label = "LIBSVM / svmlight"
    patterns = ("*.svm", "*.libsvm", "*.svmlight", "*.svm.gz", "*.svm.bz2", "*.libsvm.bz2", "*.t.bz2")
    options = (
        Param("zero_based", bool, None, "whether feature indices start at 0 (LIBSVM's own files "
              "start at 1)", allow_none=True, none_label="0-based only if an index 0 appears"),
        Param("n_features", int, None, "number of features (columns), when the file's largest index "
              "is smaller, e.g. a test split", low=1, allow_none=True, none_label="largest index"),
        Param("dense", bool, False, "return a dense array instead of a sparse matrix (refused when it "
              "would exceed max_bytes)"),
        OUTLIER_LABEL,
        *LIMIT_OPTIONS,
    )

    def sniff(self, head: bytes, path: Path) -> bool:
        try:
            text = head.decode("ascii")
        except UnicodeDecodeError:
            return False
        lines = [ln.split("#", 1)[0].split() for ln in split_lines(text)[:-1] or split_lines(text)]
        lines = [ln for ln in lines if ln]
        if not lines:
            return False
        for parts in lines[:20]:
            try:
                float(parts[0])
            except ValueError:
                return False
            feats = [t for t in parts[1:] if not t.startswith("qid:")]
            if not all(t.count(":") == 1 for t in feats):
                return False
        return any(len(p) > 1 for p in lines)

    def _prepare(self, path: Path, opts: dict) -> dict:
        ends = LineEnds()

        def cost(piece: bytes) -> int:
            # Each index:value pair becomes an int and a float (plus joined-text copies), each line
            # (ended by \n, \r\n or a lone \r: robustcore.datasets._lines) a label, a line number
            # and a string.
            view = memoryview(piece)
            new = sum(ends(view[k:k + _COUNT_SLICE]) for k in range(0, len(view), _COUNT_SLICE))
            return PER_ENTRY * piece.count(b":") + PER_SAMPLE * new
        raw, charged = read_all(path, opts["max_bytes"], cost=cost)
        return {"raw": raw, "charged": charged, "lines": ends.count + 1}

    def _estimate(self, path: Path, opts: dict, ctx: dict) -> Cost:
        charged, lines = ctx["charged"], ctx["lines"]
        d = opts["n_features"]
        if opts["dense"] and d is not None:
            charged = max(charged, lines * d * 8)
        return Cost(charged, samples=lines, features=d)

    def _load(self, path: Path, opts: dict, ctx: dict) -> Dataset:
        raw = ctx.pop("raw")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = line_of(raw[: exc.start].decode("latin-1"), exc.start)
            raise LoadError(f"{path.name}, line {line}: not text (byte {exc.start}); a LIBSVM file is plain "
                            f"text 'label index:value ...'") from None
        check_no_inline_breaks(text, path.name)
        labels, counts, linenos = [], [], []
        idx_parts, val_parts = [], []
        rests, chunk_lines = [], []

        def flush():
            # The pairs of a chunk of lines are parsed from one joined string: no Python object
            # per field, so the peak memory stays a small multiple of the file size. On any
            # irregularity the careful token-by-token pass finds the line to blame.
            c = np.array([r.count(":") for r in rests], dtype=np.int64)
            parsed = self._fast_pairs(rests, c)
            if parsed is None:
                tokens = [t for r in rests for t in r.split()]
                tcounts = np.array([len(r.split()) for r in rests], dtype=np.int64)
                self._pairs(tokens, np.repeat(np.arange(len(tcounts)), tcounts), chunk_lines, path)
                raise LoadError(f"{path.name}: could not read the index:value fields near line "
                                f"{chunk_lines[0]}")
            idx_parts.append(parsed[0])
            val_parts.append(parsed[1])
            counts.extend(c.tolist())
            rests.clear()
            chunk_lines.clear()

        del raw  # the text alone from here: one copy of the file less at the peak
        for no, line in enumerate(physical_lines(text), 1):
            parts = line.split("#", 1)[0].split(None, 1)
            if not parts:
                continue
            try:
                label = float(parts[0])
            except ValueError:
                hint = " (multi-label files are not supported)" if "," in parts[0] else ""
                raise LoadError(f"{path.name}, line {no}: the label {parts[0][:40]!r} is not a number{hint}; "
                                f"each line must be 'label index:value ...'") from None
            if not math.isfinite(label):
                raise LoadError(f"{path.name}, line {no}: the label {parts[0][:40]!r} is not a finite number; "
                                f"give every line a class label such as +1, -1 or 3")
            labels.append(label)
            rest = parts[1].strip() if len(parts) > 1 else ""
            if rest.startswith("qid:"):
                rest = rest.split(None, 1)[1] if len(rest.split(None, 1)) > 1 else ""
            rests.append(rest)
            chunk_lines.append(no)
            linenos.append(no)
            if len(rests) >= _CHUNK_LINES:
                flush()
        if rests:
            flush()
        if not labels:
            raise LoadError(f"{path.name} has no data lines (only blank or comment lines)")
        counts = np.array(counts, dtype=np.int64)
        idx, val = np.concatenate(idx_parts), np.concatenate(val_parts)
        row_of = np.repeat(np.arange(len(counts)), counts)
        if not np.all(np.isfinite(val)):
            k = int(np.flatnonzero(~np.isfinite(val))[0])
            raise LoadError(f"{path.name}, line {linenos[row_of[k]]}: feature {idx[k]} has a value that is not "
                            f"finite; LIBSVM files hold no missing values (omit zero entries instead)")
        zero_based = opts["zero_based"]
        if zero_based is None:
            zero_based = bool(idx.size and idx.min() == 0)
        opts["zero_based"] = zero_based
        col = idx if zero_based else idx - 1
        if col.size and col.min() < 0:
            k = int(np.argmin(col))
            raise LoadError(f"{path.name}, line {linenos[row_of[k]]}: feature index {idx[k]} is invalid; "
                            f"indices start at {0 if zero_based else 1}"
                            + ("" if zero_based else " (pass zero_based=True for 0-based files)"))
        n_feat = int(col.max()) + 1 if col.size else 1
        if n_feat > opts["max_features"]:
            k = int(np.argmax(col))
            check_features(n_feat, opts["max_features"], f"{path.name}, line {linenos[row_of[k]]}",
                           f"its feature index {idx[k]}")
        if opts["n_features"] is not None:
            if n_feat > opts["n_features"]:
                k = int(np.argmax(col))
                raise LoadError(f"n_features={opts['n_features']} is too small: line {linenos[row_of[k]]} "
                                f"has feature index {idx[k]}; pass n_features >= {n_feat} or leave it unset")
            n_feat = opts["n_features"]
        indptr = np.concatenate([[0], np.cumsum(counts)])
        same_row = row_of[1:] == row_of[:-1]
        if not np.all(np.diff(col)[same_row] > 0):
            # Indices out of order within a line (LIBSVM writes them ascending): sort, then any
            # repeated index shows up as two equal neighbours.
            order = np.lexsort((col, row_of))
            c = col[order]
            dup = np.flatnonzero(same_row & (c[1:] == c[:-1]))
            if dup.size:
                k = int(order[dup[0]])
                raise LoadError(f"{path.name}, line {linenos[row_of[k]]}: feature index {idx[k]} appears "
                                f"more than once; each index may appear once per line")
            col, val = c, val[order]
        index_type = np.int32 if n_feat < 2 ** 31 and col.size < 2 ** 31 else np.int64
        X = sp.csr_matrix((val, col.astype(index_type), indptr.astype(index_type)), shape=(len(labels), n_feat))
        if opts["dense"]:
            check_memory(X.shape[0] * X.shape[1] * 8, opts["max_bytes"],
                         f"a dense {X.shape[0]} x {X.shape[1]} array", "keep it sparse (dense=False)")
            X = X.toarray()
        return Dataset(X=X, labels=parse_labels(np.array(labels)))

    @staticmethod
    def _fast_pairs(rests: list[str], counts: np.ndarray):
        """(indices, values) of all lines, or None if any field is not a clean index:value."""
        joined = " ".join(rests)
        # Every field must hold exactly one colon: no field without one, none with two.
        if _BAD_FIELD.search(joined):
            return None
        total = int(counts.sum())
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                flat = np.fromstring(joined.replace(":", " "), sep=" ") if total else np.empty(0)
        except ValueError:
            return None
        if flat.size != 2 * total:
            return None
        idx_f, val = flat[0::2], flat[1::2]
        if not (np.all(idx_f == np.round(idx_f)) and np.all((idx_f >= 0) & (idx_f < 2 ** 31))):
            return None
        return idx_f.astype(np.int64), val

    @staticmethod
    def _pairs(tokens, row_of, linenos, path):
        """Find the first malformed field and raise a LoadError naming its line."""
        for k, t in enumerate(tokens):
            i, sep, v = t.partition(":")
            bad = None
            if not sep or ":" in v:
                bad = "is not of the form index:value"
            else:
                try:
                    ii = int(i)
                    if ii < 0 or ii >= 2 ** 31:
                        bad = "has an index out of range"
                except ValueError:
                    bad = "has an index that is not an integer"
                if bad is None:
                    try:
                        float(v)
                    except ValueError:
                        bad = "has a value that is not a number"
            if bad:
                raise LoadError(f"{path.name}, line {linenos[row_of[k]]}: the field {t[:40]!r} {bad}; each "
                                f"line must be 'label index:value index:value ...'")
        raise LoadError(f"{path.name}: could not read the index:value fields")  # pragma: no cover
