"""The saved-function directory format: constants, structure codec, checksums, atomic writes.

A saved directory (written by `tracing.save`, read by `tracing.load`) holds

    graphjit_saved.json      manifest (format, version, functions, variables, file checksums)
    graphs/<fn>_<i>.json     one GraphDef per concrete function (graph_runtime's format)
    variables.npz            variable values, one array per variable key (no pickles)

Everything is data: JSON parsed with `json.loads`, arrays read with
`numpy.load(allow_pickle=False)`.  Nested Python structures (the arguments a
function was traced with, the structure it returned) are encoded as tagged
JSON by `encode_structure` / `decode_structure`:

    {"list": [...]}, {"tuple": [...]}, {"dict": [[key, item], ...]},
    {"namedtuple": {"name": "Point", "fields": ["x", "y"], "items": [...]}},
    {"tensor": i}       the i-th tensor input (or output) of the concrete function
    {"variable": key}   a saved variable
    {"py": value}       a JSON scalar: null, bool, int, finite float, str
    {"float": "nan"}    a non-finite float

Namedtuples come back as `collections.namedtuple` types built from the stored
name and field names (data, not code).  Every file is covered by a SHA-256 in
the manifest, so a corrupted file is reported as such before it is parsed.
The manifest covers itself too (version 2 on): `manifest_sha256` is the
SHA-256 of its content without that field, as canonical JSON (sorted keys,
no spaces).  A flipped byte that still parsed used to be read as it came:
a default's or an argument's name or value changed, so a call failed to
match or, with several saved signatures, ran another one.  Version 1
manifests (written before) are read without it.

Directories are written next to their destination and put in place by one
atomic rename or swap (`atomic_directory`, from atomic_dir.py), so neither a
failed save nor a crash at any instant leaves a half-written directory, or
none, where a good one was.

Imports the standard library, numpy and atomic_dir.
"""
from __future__ import annotations

import collections
import hashlib
import json
import keyword
import math
import os
import reprlib
import zipfile
from typing import Any, Callable

import numpy as np

from .atomic_dir import atomic_directory, is_saved_dir, swap_directories  # noqa: F401 (part of the format's API)

FORMAT = "graphjit.SavedFunctions"
VERSION = 2                    # 2: the manifest carries its own SHA-256 (MANIFEST_DIGEST)
MANIFEST = "graphjit_saved.json"
MANIFEST_DIGEST = "manifest_sha256"
CHECKPOINT_FORMAT = "graphjit.Checkpoint"
CHECKPOINT_MANIFEST = "graphjit_checkpoint.json"
VARIABLES_FILE = "variables.npz"
_SCALARS = (type(None), bool, int, str)


class SavedModelError(ValueError):
    """A saved directory or checkpoint is missing, foreign, corrupted or inconsistent.

    The one error class `tracing.load`, `restore_checkpoint` and `graphjit
    show` raise for bad files (the message names the file and the problem).
    """


# ------------------------------------------------------------------ nested structures
def encode_structure(value, leaf: Callable[[Any], Any], where: str) -> Any:
    """Tagged JSON for `value`; `leaf(x)` returns the encoding of a non-structural leaf or None."""
    if isinstance(value, dict):
        items = []
        for k in value:                      # insertion order: a loaded result prints like the original
            if type(k) not in (str, int, bool) and k is not None:
                raise TypeError(f"{where}: dict key {k!r} of type {type(k).__name__} cannot be saved "
                                f"(keys must be str, int, bool or None)")
            items.append([k, encode_structure(value[k], leaf, f"{where}[{k!r}]")])
        return {"dict": items}
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return {"namedtuple": {"name": type(value).__name__, "fields": list(type(value)._fields),
                               "items": [encode_structure(v, leaf, f"{where}.{f}")
                                         for f, v in zip(type(value)._fields, value)]}}
    if isinstance(value, (list, tuple)):
        tag = "list" if isinstance(value, list) else "tuple"
        return {tag: [encode_structure(v, leaf, f"{where}[{i}]") for i, v in enumerate(value)]}
    enc = leaf(value)
    if enc is not None:
        return enc
    if type(value) in _SCALARS:
        return {"py": value}
    if type(value) is float:
        return {"py": value} if math.isfinite(value) else {"float": repr(value)}
    raise TypeError(f"{where}: a Python value of type {type(value).__name__} ({value!r:.60}) is part of the "
                    f"traced signature or result and cannot be saved as data; use tensors, Python scalars, "
                    f"strings, None, or lists/tuples/dicts/namedtuples of them")


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:
        return sorted(d, key=repr)


def decode_structure(data, leaf: Callable[[str, Any], Any], where: str) -> Any:
    """Inverse of `encode_structure`; `leaf(tag, payload)` decodes "tensor"/"variable" leaves.

    Raises SavedModelError on anything malformed (never evaluates code).
    """
    if not isinstance(data, dict) or len(data) != 1:
        raise SavedModelError(f"{where}: malformed structure entry {_short(data)}")
    (tag, payload), = data.items()
    if tag in ("list", "tuple"):
        if not isinstance(payload, list):
            raise SavedModelError(f"{where}: {tag} entry must hold a list")
        items = [decode_structure(x, leaf, f"{where}[{i}]") for i, x in enumerate(payload)]
        return items if tag == "list" else tuple(items)
    if tag == "dict":
        if not isinstance(payload, list):
            raise SavedModelError(f"{where}: dict entry must hold a list of [key, value] pairs")
        out = {}
        for pair in payload:
            if not isinstance(pair, list) or len(pair) != 2 or not (pair[0] is None or
                                                                     type(pair[0]) in (str, int, bool)):
                raise SavedModelError(f"{where}: malformed dict item {_short(pair)}")
            out[pair[0]] = decode_structure(pair[1], leaf, f"{where}[{pair[0]!r}]")
        return out
    if tag == "namedtuple":
        return _decode_namedtuple(payload, leaf, where)
    if tag == "py":
        if type(payload) in _SCALARS or (type(payload) is float and math.isfinite(payload)):
            return payload
        raise SavedModelError(f"{where}: a 'py' leaf must be a JSON scalar, got {_short(payload)}")
    if tag == "float":
        if payload not in ("nan", "inf", "-inf"):
            raise SavedModelError(f"{where}: bad non-finite float {_short(payload)}")
        return float(payload)
    if tag in ("tensor", "variable"):
        return leaf(tag, payload)
    raise SavedModelError(f"{where}: unknown structure tag {tag!r}")


_NAMEDTUPLE_TYPES: dict = {}


def _decode_namedtuple(payload, leaf, where):
    if not isinstance(payload, dict) or not isinstance(payload.get("name"), str) or \
            not isinstance(payload.get("fields"), list) or not isinstance(payload.get("items"), list):
        raise SavedModelError(f"{where}: malformed namedtuple entry {_short(payload)}")
    name, fields = payload["name"], payload["fields"]
    ok = name.isidentifier() and not keyword.iskeyword(name) and len(fields) == len(payload["items"]) and \
        len(set(map(str, fields))) == len(fields) and \
        all(isinstance(f, str) and f.isidentifier() and not keyword.iskeyword(f) and not f.startswith("_")
            for f in fields)
    if not ok:
        raise SavedModelError(f"{where}: namedtuple {name!r} has invalid field names {_short(fields)}")
    key = (name, tuple(fields))
    typ = _NAMEDTUPLE_TYPES.get(key)
    if typ is None:
        typ = _NAMEDTUPLE_TYPES[key] = collections.namedtuple(name, fields)
    return typ(*[decode_structure(x, leaf, f"{where}.{f}") for f, x in zip(fields, payload["items"])])


def _short(v) -> str:
    """repr(v) for a message, cut to 80 characters (repr of a 5,000-digit int raises: name its type)."""
    try:
        r = reprlib.repr(v)
    except ValueError:
        r = f"<a {type(v).__name__}>"
    return r if len(r) <= 80 else r[:77] + "..."


# ------------------------------------------------------------------ files
def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    block = bytearray(1 << 20)                 # one buffer, reused: a save's peak memory stays one block
    with open(path, "rb") as f, memoryview(block) as view:
        while n := f.readinto(block):
            h.update(view[:n])
    return h.hexdigest()


def write_json(path: str, data, pretty: bool = True) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1 if pretty else None, allow_nan=False, sort_keys=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())


def manifest_digest(manifest: dict) -> str:
    """SHA-256 of `manifest` without its own digest field, as canonical JSON: the same for the dict a saver
    holds and the dict a loader parses (a round trip through JSON first: tuples become lists, keys strings)."""
    body = json.loads(json.dumps({k: v for k, v in manifest.items() if k != MANIFEST_DIGEST}, allow_nan=False))
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def checked_digest(manifest: dict, where: str) -> str:
    """`manifest_digest` of a manifest just read (SavedModelError if it cannot be computed: a manifest nested
    nearly to the parser's limit)."""
    try:
        return manifest_digest(manifest)
    except (RecursionError, ValueError, TypeError) as e:
        raise SavedModelError(f"{where}: cannot checksum the manifest ({type(e).__name__})") from None


def seal_manifest(manifest: dict) -> dict:
    """`manifest` with its digest set (the last step before it is written)."""
    manifest[MANIFEST_DIGEST] = manifest_digest(manifest)
    return manifest


def write_arrays(path: str, arrays: dict) -> str:
    """Write `arrays` as an .npz file (fsynced); returns its SHA-256 for the manifest."""
    with open(path, "wb") as f:
        np.savez(f, **arrays)
        f.flush()
        os.fsync(f.fileno())
    return sha256_file(path)


def read_arrays(path: str, what: str) -> dict:
    """{name: ndarray} of the .npz file `path` written by `write_arrays`; SavedModelError if it is bad.

    Every size is checked before memory is taken for it: a member must be
    stored uncompressed (as `write_arrays` writes it, so it cannot expand
    beyond the file: no decompression bomb), in .npy format 1.0 or 2.0,
    with a plain (non-object) dtype, and the byte count its header declares
    must be exactly what the member holds (a header cannot claim 373 GiB).
    """
    try:
        with zipfile.ZipFile(path) as zf:
            out = {}
            for info in zf.infolist():
                name = info.filename[:-4] if info.filename.endswith(".npy") else None
                if not name or info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
                    raise SavedModelError(f"{what}: {os.path.basename(path)} member {_short(info.filename)} is "
                                          f"not an uncompressed .npy array (graphjit writes nothing else)")
                with zf.open(info) as f:
                    out[name] = _read_member(f, info, what)
            return out
    except SavedModelError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError, OverflowError) as e:
        raise SavedModelError(f"{what}: {os.path.basename(path)} cannot be read ({type(e).__name__}: "
                              f"{str(e)[:100]})") from None


def _read_member(f, info, what: str) -> np.ndarray:
    version = np.lib.format.read_magic(f)
    if version not in ((1, 0), (2, 0)):
        raise SavedModelError(f"{what}: array {_short(info.filename)} has .npy format {version}, not 1.0 or 2.0")
    header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = header(f)
    if dtype.hasobject or dtype.itemsize == 0:
        raise SavedModelError(f"{what}: array {_short(info.filename)} has dtype {dtype}, which is not stored as "
                              f"plain data")
    count = math.prod(shape)
    declared = count * dtype.itemsize
    if f.tell() + declared != info.file_size:
        raise SavedModelError(f"{what}: array {_short(info.filename)} declares shape {list(shape)[:8]} of "
                              f"{dtype} ({declared} bytes) but holds {info.file_size - f.tell()} bytes of data")
    buf = bytearray(declared)
    if f.readinto(buf) != declared:
        raise SavedModelError(f"{what}: array {_short(info.filename)} is truncated")
    return np.frombuffer(buf, dtype=dtype, count=count).reshape(shape, order="F" if fortran else "C")


def read_json(path: str, what: str):
    """Parse a JSON file; SavedModelError if it is missing, not UTF-8 or not JSON."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, parse_int=_parse_int)
    except FileNotFoundError:
        raise SavedModelError(f"{what}: file {path} is missing") from None
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise SavedModelError(f"{what}: {path} is not valid JSON ({type(e).__name__}: {str(e)[:120]})") from None
    except OSError as e:
        raise SavedModelError(f"{what}: cannot read {path}: {e}") from None


def _parse_int(text: str) -> int:
    if len(text) > 21:         # 64-bit integers have at most 20 digits and a sign
        raise ValueError(f"integer literal of {len(text)} characters does not fit in 64 bits")
    return int(text)


def _reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def check_inside(root: str, rel) -> str:
    """`root/rel` for a relative path that stays inside `root` (manifests cannot point elsewhere), through
    no symbolic link: a link inside a saved directory could name any file of the machine."""
    if not isinstance(rel, str) or not rel or os.path.isabs(rel) or "\\" in rel or \
            any(part in ("", ".", "..") for part in rel.split("/")):
        raise SavedModelError(f"manifest names an invalid file path {_short(rel)} (must be relative, inside the "
                              f"saved directory)")
    full = root
    for part in rel.split("/"):
        full = os.path.join(full, part)
        if os.path.islink(full):
            raise SavedModelError(f"{root}: {rel} is a symbolic link (to {_short(os.readlink(full))}); the files of a "
                                  f"saved directory must be regular files inside it")
    return full
