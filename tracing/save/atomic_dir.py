"""Saved directories put in place atomically: a fresh temporary directory, then one rename or swap.

`atomic_directory(path, manifest)` yields a temporary directory next to `path`; when the block
succeeds it becomes `path` by one rename (new path) or one atomic exchange with the old directory
(`swap_directories`: Linux `renameat2(RENAME_EXCHANGE)`, macOS `renamex_np(RENAME_SWAP)`), so a crash
at any instant leaves the old or the new directory complete at `path`.  Only directories graphjit
wrote (they hold `manifest`) are ever replaced.  Imports the standard library (ctypes for the swap)
and `eager.train.tensor_file` (its directory fsync).
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import shutil
import sys
import tempfile

from eager.train.tensor_file import fsync_directory


def is_saved_dir(path: str, manifest: str) -> bool:
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, manifest))


@contextlib.contextmanager
def atomic_directory(path: str, manifest: str):
    """Yield a fresh temporary directory; on success it replaces `path` in one atomic step.

    `path` may not exist, or be a directory written by graphjit (it holds
    `manifest`); anything else is refused so a typo cannot destroy user data.
    On error the temporary directory is removed and `path` is left as it was.
    A new `path` is one rename; an existing one is swapped with the temporary
    directory by one `renameat2(RENAME_EXCHANGE)` (Linux; `renamex_np(RENAME_SWAP)`
    on macOS), so a crash at any instant leaves the old or the new directory
    complete at `path`.  Where the system has no atomic swap, `path` is moved
    aside and the new directory renamed in: a crash between the two renames
    leaves the old directory as `.<name>.old-*` next to `path`.
    """
    path = os.path.abspath(path)
    if os.path.lexists(path) and not is_saved_dir(path, manifest):
        what = "a file" if not os.path.isdir(path) else "a directory that graphjit did not write"
        raise FileExistsError(f"{path} exists and is {what} (no {manifest}); refusing to overwrite it. "
                              f"Choose a new path or remove it first")
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="." + os.path.basename(path) + ".tmp-", dir=parent)
    try:
        yield tmp
        fsync_directory(tmp)
        if not os.path.lexists(path):
            os.rename(tmp, path)
        elif swap_directories(tmp, path):
            shutil.rmtree(tmp, ignore_errors=True)     # it holds the old directory now
        else:
            _replace_in_two_steps(tmp, path)
        fsync_directory(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def swap_directories(a: str, b: str) -> bool:
    """Exchange directories `a` and `b` atomically; False where the system cannot (nothing changed)."""
    fn, flag = _swap_call()
    if fn is None:
        return False
    if fn(a, b, flag) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):   # a filesystem without it
        return False
    raise OSError(err, f"cannot swap {a} and {b}: {os.strerror(err)}")


@functools.lru_cache(maxsize=1)
def _swap_call():
    """(call(a, b, flag) -> 0 or -1 with errno, flag) for this system's atomic directory swap, or (None, 0)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None, 0
    if sys.platform.startswith("linux") and hasattr(libc, "renameat2"):
        at_fdcwd, rename_exchange = -100, 2
        libc.renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
        return (lambda a, b, flag: libc.renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), flag),
                rename_exchange)
    if sys.platform == "darwin" and hasattr(libc, "renamex_np"):
        rename_swap = 2
        libc.renamex_np.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint)
        return (lambda a, b, flag: libc.renamex_np(os.fsencode(a), os.fsencode(b), flag), rename_swap)
    return None, 0


def _replace_in_two_steps(tmp: str, path: str) -> None:
    parent = os.path.dirname(path)
    old = tempfile.mkdtemp(prefix="." + os.path.basename(path) + ".old-", dir=parent)
    os.rmdir(old)
    os.rename(path, old)
    try:
        os.rename(tmp, path)
    except BaseException:
        os.rename(old, path)
        raise
    shutil.rmtree(old, ignore_errors=True)
