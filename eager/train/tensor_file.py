"""The safetensors file layout, read and written with NumPy: one module for every tensor file.

Layout (https://github.com/huggingface/safetensors, "Format"):

    8 bytes      N, the header's length (unsigned little-endian)
    N bytes      JSON: {"__metadata__": {str: str}, name: {"dtype": "F32", "shape": [..],
                 "data_offsets": [begin, end]}, ...}, padded with spaces to a multiple of 8
    the rest     the tensors' raw little-endian bytes, back to back, in header order

`write_tensors` writes exactly the bytes the `safetensors` package writes
(tensors ordered by dtype, widest first, then by name; compact JSON; raw
UTF-8) as long as the metadata has at most one key (the package orders
several keys by hash); a test compares both when the package is installed.
The package is an optional extra: nothing here needs it.

Reading checks before it reads any tensor: the header length (at most
`MAX_HEADER_BYTES`), the header's JSON shape, every dtype, shape and offset,
that each tensor's byte count equals its shape times its item size, that the
tensors tile the data area exactly (no gaps, no overlaps), and that the file
is exactly as long as the header says.  A file can therefore not make us
allocate more than its own size.  Tensors are copied out of a read-only
memory map.  Anything wrong raises `TensorFileError` naming the file and the
problem; nothing from a file becomes code (JSON only, no pickle).

Checksums.  The safetensors layout has none, so a flipped bit in a tensor
(or in a name, or in the metadata) would be read back silently.  With
`checksum=True` the writer adds one metadata entry, `DIGEST_KEY`: the SHA-256
of the canonical JSON of the rest of the header followed by the data area.
Whenever a file holds that entry, `read_tensors` recomputes it before it
returns anything and raises `TensorFileError` on a mismatch, so the entry in
the metadata it returns means "verified".  Our own formats require it from
the version that started writing it (`has_checksum`).  Files written by the `safetensors` package, or by us without a checksum, read
as before, and the package reads ours (it ignores metadata).

`write_tensors` is atomic: it writes a temporary file in the same directory,
fsyncs it, renames it over the target and fsyncs the directory, so a crash
leaves the old file or the new one, never a torn one.

Imports numpy and the standard library only.
"""
from __future__ import annotations

import hashlib
import json
import mmap
import os
import tempfile

import numpy as np

MAX_HEADER_BYTES = 100_000_000        # the safetensors package's own limit
DIGEST_KEY = "graphjit.sha256"        # the metadata entry holding the file's checksum

# safetensors dtype names, in the package's order (its files list wider dtypes first)
_DTYPES = [("BOOL", np.bool_), ("U8", np.uint8), ("I8", np.int8), ("I16", np.int16), ("U16", np.uint16),
           ("F16", np.float16), ("I32", np.int32), ("U32", np.uint32), ("F32", np.float32),
           ("F64", np.float64), ("I64", np.int64), ("U64", np.uint64)]
_RANK = {name: i for i, (name, _) in enumerate(_DTYPES)}
_TO_NP = {name: np.dtype(t).newbyteorder("<") for name, t in _DTYPES}
_FROM_NP = {np.dtype(t): name for name, t in _DTYPES}


class TensorFileError(ValueError):
    """A tensor file is malformed, truncated, too large for what it declares, or holds an unsupported dtype."""


def dtype_name(dtype) -> str:
    """The safetensors name of a NumPy dtype ("F32"); TensorFileError for dtypes the format lacks."""
    name = _FROM_NP.get(np.dtype(dtype).newbyteorder("="))
    if name is None:
        raise TensorFileError(f"dtype {np.dtype(dtype)} cannot be stored in a tensor file (supported: "
                              f"{', '.join(str(np.dtype(t)) for _, t in _DTYPES)})")
    return name


def _digest(header: dict, data_chunks) -> str:
    """SHA-256 of the canonical JSON of `header` (without the digest entry) and then the data bytes."""
    rest = dict(header)
    metadata = {k: v for k, v in rest.pop("__metadata__", {}).items() if k != DIGEST_KEY}
    if metadata:
        rest["__metadata__"] = metadata
    h = hashlib.sha256(json.dumps(rest, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    for chunk in data_chunks:
        h.update(chunk)
    return h.hexdigest()


def _layout(tensors: dict, metadata: dict | None, checksum: bool) -> tuple:
    """(the header's bytes with its length prefix, [each tensor's raw bytes as a buffer, in file order]).

    The buffers are views of the arrays themselves (a copy only for an array that is not little-endian
    and C-contiguous), so writing a checkpoint takes no second copy of the model."""
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise TypeError("tensor file metadata must map str to str")
    if metadata and DIGEST_KEY in metadata:
        raise TypeError(f"tensor file metadata key {DIGEST_KEY!r} is reserved for the checksum (checksum=True)")
    arrays = {}
    for name, value in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise TypeError(f"tensor names must be strings other than '__metadata__', got {name!r}")
        a = np.asarray(value)
        arrays[name] = (dtype_name(a.dtype), a.astype(a.dtype.newbyteorder("<"), order="C", copy=False))
    order = sorted(arrays, key=lambda n: (-_RANK[arrays[n][0]], n))
    header: dict = {"__metadata__": dict(metadata)} if metadata else {}
    offset, chunks = 0, []
    for name in order:
        dname, a = arrays[name]
        data = memoryview(a.reshape(-1).view(np.uint8))
        header[name] = {"dtype": dname, "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        chunks.append(data)
    if checksum:
        digest = _digest(header, chunks)
        header = {"__metadata__": {**header.pop("__metadata__", {}), DIGEST_KEY: digest}, **header}
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text, chunks


def to_bytes(tensors: dict, metadata: dict | None = None, checksum: bool = False) -> bytes:
    """The file's bytes for {name: array} and optional {str: str} metadata (and a checksum entry if asked)."""
    head, chunks = _layout(tensors, metadata, checksum)
    return head + b"".join(chunks)


def atomic_write(path: str, write, before_rename=None) -> None:
    """Create `path` atomically: `write(f)` fills a temporary file (binary), which is fsynced and renamed
    over `path`, then the directory is fsynced.

    `before_rename()` runs after the temporary file is complete (a test kills the process there)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if before_rename is not None:
            before_rename()
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_directory(directory)


def atomic_write_bytes(path: str, data: bytes, before_rename=None) -> None:
    """Write `data` to `path` atomically (see `atomic_write`)."""
    atomic_write(path, lambda f: f.write(data), before_rename)


def fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:          # platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_tensors(path: str, tensors: dict, metadata: dict | None = None, before_rename=None,
                  checksum: bool = False) -> None:
    """Write {name: array} (and {str: str} metadata, and a checksum if asked) to `path`, atomically.

    Each array goes to the file straight from its own memory: no copy of the whole file is built."""
    head, chunks = _layout(tensors, metadata, checksum)

    def write(f):
        f.write(head)
        for chunk in chunks:
            f.write(chunk)
    atomic_write(path, write, before_rename)


def _fail(path, msg):
    raise TensorFileError(f"{path}: not a valid tensor file: {msg}")


def _parse_header(path, raw: bytes, data_len: int) -> tuple:
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        _fail(path, f"the header is not UTF-8 JSON ({type(e).__name__})")
    if not isinstance(header, dict):
        _fail(path, "the header is not a JSON object")
    whole = dict(header)
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in metadata.items()):
        _fail(path, "__metadata__ must map strings to strings")
    entries = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            _fail(path, f"tensor {name!r} must have exactly dtype, shape and data_offsets")
        dtype, shape, offsets = e["dtype"], e["shape"], e["data_offsets"]
        if dtype not in _TO_NP:
            _fail(path, f"tensor {name!r} has unsupported dtype {dtype!r}")
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            _fail(path, f"tensor {name!r} has a bad shape {shape!r}")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets) or \
                not 0 <= offsets[0] <= offsets[1]:
            _fail(path, f"tensor {name!r} has bad data_offsets {offsets!r}")
        count = 1
        for d in shape:
            count *= d
        if count * _TO_NP[dtype].itemsize != offsets[1] - offsets[0]:
            _fail(path, f"tensor {name!r}: shape {shape} of {dtype} needs {count * _TO_NP[dtype].itemsize} bytes "
                        f"but data_offsets {offsets} give {offsets[1] - offsets[0]}")
        entries.append((offsets[0], offsets[1], name, dtype, tuple(shape)))
    entries.sort()
    end = 0
    for begin, stop, name, _, _ in entries:
        if begin != end:
            _fail(path, f"tensor {name!r} starts at byte {begin}, expected {end} (gap or overlap)")
        end = stop
    if end != data_len:
        _fail(path, f"the tensors cover {end} bytes but the file holds {data_len} after the header")
    return entries, metadata, whole


def _check_digest(path, whole: dict, metadata: dict, data) -> None:
    """Raise unless the file's digest entry, if it has one, matches (`data`: the data area)."""
    expected = metadata.get(DIGEST_KEY)
    if expected is not None and _digest(whole, [data]) != expected:
        _fail(path, "the checksum does not match: the file was changed or damaged after it was written")


def has_checksum(metadata: dict) -> bool:
    """Whether the file `read_tensors` returned this metadata for carried a checksum (then it matched)."""
    return DIGEST_KEY in metadata


def read_tensors(path: str, names=None) -> tuple:
    """({name: array}, metadata) from the tensor file `path` (all tensors, or those in `names`).

    A checksum in the file is verified before anything is returned."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise TensorFileError(f"{path}: cannot open the tensor file ({e.strerror})") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        if len(head) < 8:
            _fail(path, f"{size} bytes is shorter than the 8-byte header length")
        n = int.from_bytes(head, "little")
        if n > MAX_HEADER_BYTES or n > size - 8:
            _fail(path, f"the header declares {n} bytes but the file has {size - 8} after the length (limit "
                        f"{MAX_HEADER_BYTES})")
        entries, metadata, whole = _parse_header(path, f.read(n), size - 8 - n)
        wanted = None if names is None else set(names)
        out = {}
        if not entries or size == 8 + n:
            _check_digest(path, whole, metadata, b"")
            return {name: np.zeros(shape, _TO_NP[dt]) for _, _, name, dt, shape in entries
                    if wanted is None or name in wanted}, metadata
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            base = 8 + n
            with memoryview(mm) as view, view[base:] as data:
                _check_digest(path, whole, metadata, data)
            for begin, stop, name, dt, shape in entries:
                if wanted is None or name in wanted:
                    a = np.frombuffer(mm, dtype=_TO_NP[dt], count=(stop - begin) // _TO_NP[dt].itemsize,
                                      offset=base + begin)
                    out[name] = a.reshape(shape).astype(_TO_NP[dt].newbyteorder("="), copy=True)
                    del a
        return out, metadata
