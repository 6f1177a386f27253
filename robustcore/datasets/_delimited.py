"""CSV / TSV / whitespace-separated text tables."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .._params import Param
from ._dataset import Dataset
from ._errors import LoadError, listing, shown
from ._limits import LIMIT_OPTIONS, PER_CELL, PER_SAMPLE, Cost, check_features, numbered
from ._lines import LineEnds, check_no_inline_breaks, head_end, line_of, split_lines
from ._loader import (IMAGE_SHAPE_OPTION, MISSING_OPTION, OUTLIER_LABEL, Loader, handle_missing,
                      parse_image_shape, parse_labels, physical_lines, read_all)

__all__ = ["DelimitedLoader"]

# Cells read as "missing" (case-insensitive). A value is never guessed: the ``missing`` option
# decides what happens to these, and everything else must parse as a number.
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})

_DELIMS = {",": ",", "\t": "\t", ";": ";", "|": "|"}
_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe", "whitespace": "whitespace"}

# Bytes counted at a time while a file is read (see _CellCount).
_COUNT_SLICE = 1 << 16
# Lines read to detect the delimiter and the header.
_HEAD_LINES = 200


class DelimitedLoader(Loader):
    """Delimited text: one sample per line, numeric feature columns.

    The delimiter and a header row are detected unless given. A label column and a sample-id
    column may be chosen by name or by 0-based index (negative counts from the end). Missing
    or non-finite cells are handled only as the ``missing`` option says.
    """

    name = "csv"
    label = "CSV / TSV"
    patterns = ("*.csv", "*.tsv", "*.txt", "*.dat", "*.csv.gz", "*.tsv.gz", "*.csv.bz2", "*.csv.xz")
    options = (
        Param("delimiter", str, "auto", "field separator; auto detects comma, tab, semicolon, pipe "
              "or runs of whitespace", choices=("auto", ",", "tab", ";", "|", "whitespace")),
        Param("header", bool, None, "whether the first row holds column names", allow_none=True,
              none_label="detect"),
        Param("label_column", str, None, "column holding class labels: its name, or its 0-based "
              "index (negative counts from the end)", allow_none=True, none_label="no labels"),
        Param("id_column", str, None, "column holding sample ids: its name or 0-based index",
              allow_none=True, none_label="row numbers", advanced=True),
        MISSING_OPTION,
        Param("comment", str, "#", "lines starting with this text are skipped", allow_none=True,
              none_label="no comments", advanced=True),
        Param("encoding", str, "utf-8", "text encoding of the file, e.g. utf-8 or latin-1",
              advanced=True),
        IMAGE_SHAPE_OPTION,
        OUTLIER_LABEL,
        *LIMIT_OPTIONS,
    )
    _int_or_name = frozenset({"label_column", "id_column"})
    _aliases = {"delimiter": {"\t": "tab", "comma": ",", "semicolon": ";", "pipe": "|", " ": "whitespace"}}

    def sniff(self, head: bytes, path: Path) -> bool:
        if not head or b"\0" in head:
            return False
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError as exc:
            # A multi-byte character cut at the end of the sample is still text.
            if exc.start < len(head) - 4:
                return False
            text = head[: exc.start].decode("utf-8")
        return all(ch.isprintable() or ch in "\r\n\t" for ch in text)

    def _prepare(self, path: Path, opts: dict) -> dict:
        count = _CellCount(opts["delimiter"])
        raw, charged = read_all(path, opts["max_bytes"], cost=count)
        return {"raw": raw, "cost": Cost(charged, samples=count.lines + 1, features=count.widest)}

    def _estimate(self, path: Path, opts: dict, ctx: dict) -> Cost:
        return ctx["cost"]

    def _decode(self, raw: bytes, path: Path, encoding: str) -> str:
        enc = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
        try:
            text = raw.decode(enc)
        except LookupError:
            raise LoadError(f"encoding must be a known text encoding such as 'utf-8' or 'latin-1'; "
                            f"got {encoding!r}") from None
        except UnicodeDecodeError as exc:
            line = line_of(raw[: exc.start].decode("latin-1"), exc.start)
            raise LoadError(f"{path.name} is not valid {encoding} text (byte {exc.start}, line {line}); "
                            f"if it is text in another encoding pass e.g. encoding='latin-1', otherwise "
                            f"check that it is really a delimited text file") from None
        if "\0" in text:
            line = line_of(text, text.index("\0"))
            raise LoadError(f"{path.name} holds a NUL byte on line {line}, so it is not a text table; "
                            f"check the file's format (binary files need another loader)")
        # Both parsing paths see the same lines: an in-line separator is refused here, once.
        check_no_inline_breaks(text, path.name)
        return text

    def _rows(self, text: str, delim: str, comment: str | None, path: Path) -> list[tuple[int, list[str]]]:
        rows = []
        if delim == "whitespace":
            for no, line in enumerate(split_lines(text), 1):
                s = line.strip()
                if not s or (comment and s.startswith(comment)):
                    continue
                rows.append((no, s.split()))
            return rows
        reader = csv.reader(physical_lines(text), delimiter=delim, strict=True)
        start = 1
        try:
            for row in reader:
                no = start
                start = reader.line_num + 1
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if comment and row[0].lstrip().startswith(comment):
                    continue
                rows.append((no, [c.strip() for c in row]))
        except csv.Error as exc:
            raise LoadError(f"{path.name}, line {reader.line_num}: malformed quoting ({exc}); check the "
                            f"quotes on that line") from None
        return rows

    @staticmethod
    def _detect_delimiter(text: str, comment: str | None, path: Path) -> str:
        if path.name.lower().split(".")[-1] == "tsv" or ".tsv." in path.name.lower():
            return "\t"
        lines = [ln for ln in split_lines(text)
                 if ln.strip() and not (comment and ln.lstrip().startswith(comment))][:50]
        if not lines:
            return ","
        best = None
        for d in _DELIMS:
            counts = [ln.count(d) for ln in lines]
            if counts[0] > 0 and len(set(counts)) == 1:
                if best is None or counts[0] > best[1]:
                    best = (d, counts[0])
        if best:
            return best[0]
        ws = [len(ln.split()) for ln in lines]
        if ws[0] > 1 and len(set(ws)) == 1:
            return "whitespace"
        # Inconsistent counts: take the most frequent candidate and let the ragged-row check speak.
        scores = {d: sum(ln.count(d) for ln in lines) for d in _DELIMS}
        d = max(scores, key=scores.get)
        if scores[d] == 0:
            return "whitespace" if max(ws) > 1 else ","
        return d

    @staticmethod
    def _is_number(cell: str) -> bool:
        try:
            float(cell)
            return True
        except ValueError:
            return cell.lower() in MISSING_TOKENS

    def _detect_header(self, rows) -> bool:
        first = rows[0][1]
        rest = rows[1:51]
        if all(self._is_number(c) and c != "" for c in first):
            return False
        if not rest:
            return True
        for j, cell in enumerate(first):
            if self._is_number(cell):
                continue
            below = [r[1][j] for r in rest if j < len(r[1])]
            if below and all(self._is_number(c) for c in below):
                return True
        return False

    @staticmethod
    def _resolve(option: str, spec: str, names: list[str], has_header: bool) -> int:
        if has_header and spec in names:
            return names.index(spec)
        try:
            idx = int(spec)
        except ValueError:
            avail = listing([shown(n) for n in names])
            why = "" if has_header else " (the file has no header row, so use a 0-based column index)"
            raise LoadError(f"{option}={shown(spec)} is not a column of this file{why}; its columns are: "
                            f"{avail}") from None
        if not -len(names) <= idx < len(names):
            raise LoadError(f"{option} must be a column name or an index in [{-len(names)}, "
                            f"{len(names) - 1}] (the file has {len(names)} columns); got {shown(spec)}")
        return idx % len(names)

    def _load(self, path: Path, opts: dict, ctx: dict) -> Dataset:
        # The bytes go as soon as they are text: one copy of the file less at the peak.
        text = self._decode(ctx.pop("raw"), path, opts["encoding"])
        comment = opts["comment"] or None
        # Detection and the header need only the top of the file; the whole file is parsed once,
        # by numpy's C parser when the file is plain, else row by row for precise messages.
        head_text = text
        if "\"" not in text:
            end = head_end(text, _HEAD_LINES)
            if end >= 0:
                head_text = text[:end]
        delim = opts["delimiter"]
        if delim == "auto":
            delim = self._detect_delimiter(head_text, comment, path)
        elif delim == "tab":
            delim = "\t"
        rows = self._rows(head_text, delim, comment, path)
        if len(rows) < 2 and head_text is not text:
            head_text = text
            rows = self._rows(text, delim, comment, path)
        if not rows:
            raise LoadError(f"{path.name} has no data rows (only blank or comment lines)")
        header = opts["header"]
        if header is None:
            header = self._detect_header(rows)
        # Record what was detected so the provenance reloads the file the same way.
        opts["delimiter"], opts["header"] = ("tab" if delim == "\t" else delim), bool(header)
        # Some exports end every line with a delimiter: an empty last field everywhere is not a column.
        trailing = (delim != "whitespace" and len(rows[0][1]) > 1
                    and all(len(c) == len(rows[0][1]) and c[-1] == "" for _, c in rows))
        if trailing:
            rows = _drop_trailing(rows)
        width = len(rows[0][1])
        if header:
            hline, names = rows[0]
            for j, n in enumerate(names):
                if not n:
                    raise LoadError(f"{path.name}: header cell {j + 1} (line {hline}) is empty; name every "
                                    f"column, or pass header=False if the first row is data")
            seen = {}
            for j, n in enumerate(names):
                if n in seen:
                    raise LoadError(f"{path.name}: column name {n!r} appears twice in the header (columns "
                                    f"{seen[n] + 1} and {j + 1}); make the names unique")
                seen[n] = j
            rows = rows[1:]
            if not rows:
                raise LoadError(f"{path.name} has a header but no data rows")
        else:
            check_features(width, opts["max_features"], path.name)
            names = numbered("x", width)
        first_line = rows[0][0] if not header else hline
        _check_width(rows, width, first_line, delim, path, trailing)
        label_j = id_j = None
        header_line = hline if header else 0
        if opts["label_column"] is not None:
            label_j = self._resolve("label_column", opts["label_column"], names, header)
        if opts["id_column"] is not None:
            id_j = self._resolve("id_column", opts["id_column"], names, header)
            if id_j == label_j:
                raise LoadError("label_column and id_column name the same column; choose different ones")
        # Column numbers as a range or an int array: a very wide file gets no Python int per column.
        feat = range(width) if label_j is None and id_j is None else \
            np.delete(np.arange(width), [j for j in (label_j, id_j) if j is not None])
        if not len(feat):
            raise LoadError(f"{path.name} has no feature columns left after the label/id columns")
        feature_names = names if isinstance(feat, range) else [names[j] for j in feat]
        fast = self._fast(text, delim, comment, header_line, width + trailing, feat, label_j, id_j, trailing)
        if fast is not None:
            X, labels, ids = fast
            return Dataset(X=X, labels=None if labels is None else parse_labels(labels),
                           feature_names=feature_names, sample_ids=ids,
                           image_shape=parse_image_shape(opts["image_shape"], X.shape[1]))
        if head_text is not text:
            rows = self._rows(text, delim, comment, path)
            if trailing:
                rows = _drop_trailing(rows)
            if header:
                rows = rows[1:]
            _check_width(rows, width, first_line, delim, path, trailing)
        lines = np.array([no for no, _ in rows])
        X = np.empty((len(rows), len(feat)))
        for k, j in enumerate(feat):
            X[:, k] = self._column([cells[j] for _, cells in rows], j, names, header, lines, path)

        def where(i, k):
            return f"line {lines[i]}, column {_colname(names, feat[k], header)}"

        X, keep = handle_missing(X, opts["missing"], where, lambda k: _colname(names, feat[k], header))
        labels = ids = None
        if label_j is not None:
            labels = parse_labels([cells[label_j] for (_, cells), k in zip(rows, keep) if k])
        if id_j is not None:
            ids = [cells[id_j] for (_, cells), k in zip(rows, keep) if k]
        else:
            ids = [str(int(n)) for n in lines[keep]] if not keep.all() else None
        return Dataset(X=X, labels=labels, feature_names=feature_names, sample_ids=ids,
                       image_shape=parse_image_shape(opts["image_shape"], X.shape[1]))

    @staticmethod
    def _fast(text, delim, comment, header_line, width, feat, label_j, id_j, trailing=False):
        """numpy's C parser for a plain file (no quotes, no missing values, regular rows).

        Returns None whenever anything is irregular; the careful row-by-row path then loads the
        file or says exactly where it is wrong.
        """
        if "\"" in text or "\0" in text:
            return None
        data = []
        for no, line in enumerate(split_lines(text), 1):
            if no <= header_line:
                continue
            s = line.strip()
            if not s or (comment and s.startswith(comment)):
                continue
            data.append(line)
        if not data:
            return None
        if delim == "whitespace":
            if any(len(ln.split()) != width for ln in data):
                return None
        elif any(ln.count(delim) != width - 1 for ln in data):
            return None
        if trailing and not all(ln.rstrip("\r\n ").endswith(delim) for ln in data):
            return None
        try:
            X = np.loadtxt(data, delimiter=None if delim == "whitespace" else delim,
                           usecols=None if isinstance(feat, range) and not trailing else list(feat),
                           comments=None, dtype=np.float64, ndmin=2, quotechar=None)
        except Exception:  # noqa: BLE001 - any parse problem: let the careful path report it
            return None
        if X.shape != (len(data), len(feat)) or not np.all(np.isfinite(X)):
            return None
        def column(j):
            return [(ln.split() if delim == "whitespace" else ln.split(delim))[j].strip() for ln in data]
        labels = column(label_j) if label_j is not None else None
        ids = column(id_j) if id_j is not None else None
        return X, labels, ids

    @staticmethod
    def _column(cells: list[str], j: int, names, header, lines, path: Path) -> np.ndarray:
        low = [c.lower() for c in cells]
        cleaned = ["nan" if c in MISSING_TOKENS else c for c in low]
        try:
            return np.array(cleaned, dtype=str).astype(np.float64)
        except ValueError:
            pass
        out = np.empty(len(cells))
        for i, c in enumerate(cleaned):
            try:
                out[i] = float(c)
            except ValueError:
                ref = repr(names[j]) if header else str(j)
                raise LoadError(f"{path.name}, line {lines[i]}, column {_colname(names, j, header)}: "
                                f"{cells[i][:40]!r} is not a number; features must be numeric: if this column "
                                f"holds class labels pass label_column={ref} (or id_column={ref} for sample "
                                f"names), otherwise fix the cell"
                                + ("" if header or i else "; if this row is a header, pass header=True")) from None
        return out


class _CellCount:
    """What parsing the text read so far will cost: ``PER_CELL`` per field and ``PER_SAMPLE`` per
    line, counted piece by piece while the file is read (so a bomb is stopped early), and the
    widest line's number of fields (the features it implies).

    Fields are counted for every delimiter the file may use (or the one given), and the largest
    count is charged: never less than the real number of fields.
    """

    @property
    def lines(self) -> int:
        return self.ends.count

    def __init__(self, delimiter: str):
        wanted = {"auto": (",", "\t", ";", "|", "whitespace"), "tab": ("\t",)}.get(delimiter, (delimiter,))
        self.totals = dict.fromkeys(wanted, 0)
        self.open_line = dict.fromkeys(wanted, 0)  # fields so far on the line not yet ended
        self.ends = LineEnds()
        self.widest = 1
        self.charged = 0
        self._in_space = False

    def __call__(self, piece: bytes) -> int:
        # In slices: the counting's own arrays (8 bytes per byte of text) stay small.
        view = memoryview(piece)
        for start in range(0, len(view), _COUNT_SLICE):
            self._count(np.frombuffer(view[start:start + _COUNT_SLICE], dtype=np.uint8))
        lines = self.ends.count
        now = PER_CELL * (lines + 1 + max(self.totals.values())) + PER_SAMPLE * (lines + 1)
        step, self.charged = now - self.charged, now
        return step

    def _count(self, a: np.ndarray) -> None:
        # Lone CR, LF and CRLF all end a line (robustcore.datasets._lines): each is charged.
        ends = self.ends.ends(a)
        for d in self.totals:
            if d == "whitespace":
                space = (a == 32) | (a == 9)
                marks = np.empty_like(space)
                marks[0] = space[0] and not self._in_space
                marks[1:] = space[1:] & ~space[:-1]
                self._in_space = bool(space[-1])
            else:
                marks = a == ord(d)
            count = np.cumsum(marks, dtype=np.int64)
            total = int(count[-1])
            self.totals[d] += total
            if ends.size:
                per_line = np.diff(count[ends], prepend=0)
                per_line[0] += self.open_line[d]
                self.widest = max(self.widest, int(per_line.max()) + 1)
                self.open_line[d] = total - int(count[ends[-1]])
            else:
                self.open_line[d] += total
            self.widest = max(self.widest, self.open_line[d] + 1)


def _colname(names: list[str], j: int, header: bool) -> str:
    return f"{names[j]!r} (column {j + 1})" if header else f"{j + 1}"


def _check_width(rows, width: int, first_line: int, delim: str, path: Path, trailing: bool = False) -> None:
    note = " after its trailing delimiter is ignored" if trailing else ""
    for no, cells in rows:
        if len(cells) != width:
            raise LoadError(f"{path.name}, line {no}: {len(cells)} field(s), but line {first_line} has {width}{note} "
                            f"({_NAMES.get(delim, repr(delim))}-separated); every row needs the same number "
                            f"of fields (check the delimiter option or that line)")


def _drop_trailing(rows):
    return [(no, c[:-1] if c and c[-1] == "" else c) for no, c in rows]
