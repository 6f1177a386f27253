"""What a table on disk may declare, bounded before anything is planned from it.

A 150-byte ``.zarray`` can declare 2**50 rows; a 4 MB HDF5 file can hold 80,000 chunks of one
value each. Neither costs anything to declare, and everything the out-of-core path plans from a
declaration (the Dask graph: one task per block; each block's reads: one per chunk it touches;
each chunk's decoding) costs in proportion to it. So the plan is charged before it is made:

- **one chunk**: it is decoded whole, then copied into its block of rows, so one chunk is
  charged twice its decoded bytes (:func:`check_chunk`) against the memory budget, before any
  chunk is inflated (the block itself, as float64, is held to a quarter of the budget);
- **blocks**: at most :data:`MAX_BLOCKS` per table (every block of a pass costs scheduling time
  and memory of its own, whatever its size).
  Default blocks grow (up to a quarter of the memory budget) to stay under it; a ``chunk_rows``
  making more is refused with the smallest that would do (:func:`block_rows`);
- **chunks**: each chunk read costs a file open or an index lookup besides
  its bytes, so a table read in more than :data:`FEW_CHUNK_READS` chunk reads a pass must have
  chunks of at least :data:`MIN_CHUNK_BYTES`, and blocks that cut across chunks may not decode
  the table more than :data:`MAX_REREADS` times over in one pass (:func:`check_chunk_reads`).

A table within these bounds costs per pass about what reading its bytes costs.
"""
from __future__ import annotations

from ..datasets._errors import LoadError
from ..datasets._limits import check_memory, format_bytes

__all__ = ["MAX_BLOCKS", "MIN_CHUNK_BYTES", "FEW_CHUNK_READS", "MAX_REREADS", "BLOCK_SHARE",
           "check_chunk", "block_rows", "chunk_reads", "check_chunk_reads"]

MAX_BLOCKS = 4096
MIN_CHUNK_BYTES = 4096
FEW_CHUNK_READS = 4096
MAX_REREADS = 4
# Rows per block aim at this many bytes of float64 (the dtype every block is computed in) ...
TARGET_BLOCK_BYTES = 64 << 20
# ... and one block may take at most this share of the memory budget (the rest: the pass's
# other blocks in flight, the chunks being decoded, the estimator's state).
BLOCK_SHARE = 4


def check_chunk(chunk_bytes: int, budget: int, what: str, hint: str) -> None:
    """Refuse a chunk whose decoding (the decoded bytes and their copy into the block of rows)
    would take more than ``budget``, before it is inflated."""
    check_memory(2 * chunk_bytes, budget, f"{what} (decoded, then copied into its block of rows)", hint)


def block_rows(n: int, d: int, align: int | None, chunk_rows: int | None, budget: int, label: str) -> int:
    """Rows per block: ``chunk_rows`` as asked, or about 64 MB of float64 aligned to the file's
    chunks of ``align`` rows; either way one block as float64 fits the memory budget and the
    table makes at most :data:`MAX_BLOCKS` blocks."""
    row = 8 * max(d, 1)
    blocks_for = lambda rows: -(-n // rows)  # noqa: E731
    if chunk_rows is not None:
        rows = int(chunk_rows)
        if rows < 1:
            raise LoadError(f"chunk_rows must be at least 1; got {chunk_rows}")
        check_memory(rows * row, budget, f"a block of {rows:,} rows of {label}", "pass a smaller chunk_rows")
        if blocks_for(rows) > MAX_BLOCKS:
            least = blocks_for(MAX_BLOCKS)
            raise LoadError(f"chunk_rows={rows:,} cuts {label} ({n:,} rows) into {blocks_for(rows):,} blocks, more "
                            f"than the {MAX_BLOCKS:,} a table may have (each block costs scheduling besides its "
                            f"bytes); pass chunk_rows={least:,} or more, or leave it out")
        return rows
    check_memory(row, budget, f"one row of {label} ({d:,} features)", "rewrite the data with fewer features")
    most = max(1, (budget // BLOCK_SHARE) // row)      # rows the largest block may hold
    rows = max(1, min(TARGET_BLOCK_BYTES // row, most))
    if blocks_for(rows) > MAX_BLOCKS:
        rows = blocks_for(MAX_BLOCKS)
    if align and align > 0:
        # Whole chunks per block: rounded down (at least one chunk), or up when that makes too many.
        for aligned in (max(align, rows // align * align), -(-rows // align) * align):
            if aligned <= most and blocks_for(aligned) <= MAX_BLOCKS:
                rows = aligned
                break
    if rows > most or blocks_for(rows) > MAX_BLOCKS:
        raise LoadError(f"{label} declares {n:,} rows ({format_bytes(n * row)} as float64), more than "
                        f"{MAX_BLOCKS:,} blocks of at most {format_bytes(most * row)} (a quarter of the memory "
                        f"budget, {format_bytes(budget)}) can hold; if the table really is that large, raise the "
                        f"memory budget (--memory-budget), else the file is damaged")
    return rows


def chunk_reads(n: int, rows: int, chunk_rows: int) -> int:
    """How many row-chunks the blocks of ``rows`` rows touch in one pass over ``n`` rows (a chunk
    that two blocks share is read by each). At most :data:`MAX_BLOCKS` blocks: summed directly."""
    total = 0
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        total += (stop - 1) // chunk_rows - start // chunk_rows + 1
    return total


def check_chunk_reads(n: int, d: int, rows: int, chunks: tuple, itemsize: int, label: str) -> None:
    """Refuse a table whose chunks cost far more to read than their bytes: too many, far too small
    chunks, or blocks that decode each chunk many times over."""
    cr, cc = chunks
    reads = chunk_reads(n, rows, cr) * -(-d // cc) if n and d else 0
    if reads <= FEW_CHUNK_READS:
        return
    chunk_bytes = cr * cc * itemsize
    if chunk_bytes < MIN_CHUNK_BYTES:
        raise LoadError(f"{label} is stored in chunks of {cr:,} x {cc:,} values ({chunk_bytes:,} bytes): "
                        f"{reads:,} chunks to read in one pass, each costing more to find than its bytes; "
                        f"rewrite it with chunks of at least {format_bytes(MIN_CHUNK_BYTES)} (e.g. whole rows)")
    decoded, values = reads * chunk_bytes, n * d * itemsize
    if decoded > MAX_REREADS * values:
        raise LoadError(f"{label}: blocks of {rows:,} rows cut across its chunks of {cr:,} x {cc:,} values, so one "
                        f"pass would decode {format_bytes(decoded)} for {format_bytes(values)} of values; pass "
                        f"chunk_rows as a multiple of {cr:,}, or rewrite it with chunks of whole rows")
