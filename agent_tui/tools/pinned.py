"""Write where the permission check looked, or refuse: a file tool's target pinned at check time.

The permission policy decides on the file's resolved path (symlinks and `..` followed).  Between that
check and the write, which may be seconds apart while a person reads the prompt, a command running in
the background could swap a folder on that path for a symlink and send the write somewhere the check
never looked (`~/.ssh`, the agent's own settings).  So:

- right after the decision, `pin` takes the path the policy resolved and identifies the folder it sits
  in by (st_dev, st_ino) (for a new file in folders not made yet: the deepest folder that exists);
- when the call runs, `open_pinned` reaches that folder again from `/`, one component at a time with
  O_NOFOLLOW, and refuses if a component is now a symlink or the folder is not the one pinned;
- the file is read, and the temp file created (O_CREAT | O_EXCL | O_NOFOLLOW) and renamed over it,
  relative to that folder's descriptor, so nothing on the way is looked up by name again.

The final component is never followed either: if the model's path was a symlink, the policy resolved
it and the write goes to that resolved file; a symlink appearing there later is refused.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ._fileio import FileSnapshot, FileToolError, open_regular, snapshot_of

# Directories are opened only to be looked through (O_PATH where there is one: no read permission needed).
_DIR_FLAGS = os.O_NOFOLLOW | getattr(os, "O_PATH", os.O_RDONLY | os.O_DIRECTORY) | getattr(os, "O_CLOEXEC", 0)
_TEMP_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)


def parent_changed(path: Path, detail: str) -> FileToolError:
    return FileToolError(
        f"The parent folder of {path} changed after permission was checked ({detail}), so nothing was "
        "written. Check the folder and try again."
    )


def file_changed(path: Path) -> FileToolError:
    return FileToolError(
        f"{path} changed after permission was checked (it is now a symlink), so nothing was written. "
        "Check the file and try again."
    )


@dataclass(frozen=True, slots=True)
class PinnedTarget:
    """Where a file tool's call was checked: the resolved file and the identity of its folder."""

    path: Path  # absolute, as the model named it
    target: Path  # the resolved file the policy decided on
    anchor: Path  # target's folder, or its deepest existing ancestor when that folder is not made yet
    anchor_id: tuple[int, int] | None  # (st_dev, st_ino) of `anchor`; None: the pin itself failed
    problem: str = ""  # why the pin failed (the path already differed from the check's)


def pin(path: Path, resolved: str | None) -> PinnedTarget:
    """Pin the folder of `resolved` (the policy's resolution of `path`; None: resolve it now)."""
    target = Path(resolved) if resolved else Path(os.path.realpath(path))
    try:
        fd, anchor, _ = _walk(target.parent, path)
    except FileToolError as exc:
        return PinnedTarget(path, target, target.parent, None, str(exc))
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return PinnedTarget(path, target, anchor, (st.st_dev, st.st_ino))


def _walk(folder: Path, shown: Path) -> tuple[int, Path, tuple[str, ...]]:
    """`folder` reached from `/` without following a symlink, or its deepest existing ancestor:
    a descriptor, that folder's path, and the names below it still missing."""
    return _descend(os.open("/", _DIR_FLAGS), Path("/"), folder.parts[1:], shown)


def _descend(fd: int, base: Path, names: tuple[str, ...], shown: Path) -> tuple[int, Path, tuple[str, ...]]:
    """From `fd` (the folder `base`) down through `names`, never following a symlink, as far as they
    exist; `fd` is taken over (closed, or returned)."""
    try:
        for i, name in enumerate(names):
            try:
                child = _open_dir(fd, base, name, shown)
            except FileNotFoundError:
                return fd, base, names[i:]
            os.close(fd)
            fd, base = child, base / name
        return fd, base, ()
    except BaseException:
        os.close(fd)
        raise


def _open_dir(fd: int, base: Path, name: str, shown: Path) -> int:
    """The folder `name` in `fd`; FileNotFoundError when missing, FileToolError when it is a symlink
    or not a folder."""
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        try:
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode) or exc.errno == errno.ELOOP:
            raise parent_changed(shown, f"{base / name} is now a symlink") from None
        if mode and not stat.S_ISDIR(mode):
            raise FileToolError(f"Failed to write {shown}: {base / name} is not a directory") from None
        raise FileToolError(f"Failed to write {shown}: {exc.strerror or exc}") from None
    mode = os.fstat(child).st_mode
    if stat.S_ISDIR(mode):
        return child
    os.close(child)
    if stat.S_ISLNK(mode):
        raise parent_changed(shown, f"{base / name} is now a symlink")
    raise FileToolError(f"Failed to write {shown}: {base / name} is not a directory")


class PinnedFolder:
    """The folder a pinned target is in, open as a descriptor: what the call reads and writes through."""

    def __init__(self, pinned: PinnedTarget, fd: int, base: Path, missing: tuple[str, ...]) -> None:
        self.pinned = pinned
        self.fd = fd
        self.base = base  # the folder `fd` is
        self.missing = missing  # folders below `fd` still to be made (a new file in a new folder)
        self.name = pinned.target.name

    @property
    def target(self) -> Path:
        return self.pinned.target

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> PinnedFolder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------ reading

    def lstat(self) -> os.stat_result:
        """The file's own stat (not followed); FileNotFoundError when there is none."""
        if self.missing:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(self.target))
        st = os.stat(self.name, dir_fd=self.fd, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            raise file_changed(self.pinned.path)
        return st

    def open_file(self) -> BinaryIO:
        try:
            return open_regular(self.name, dir_fd=self.fd, follow_symlinks=False)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise file_changed(self.pinned.path) from None
            raise

    def snapshot(self) -> FileSnapshot:
        """What is in the pinned file now, read through the folder's descriptor."""
        return snapshot_of(self.pinned.path, self.target, self.lstat, self.open_file)

    # ------------------------------------------------------------ writing

    def ready(self) -> int:
        """The target folder's descriptor, making the folders still missing (never following a symlink)."""
        while self.missing:
            name = self.missing[0]
            try:
                os.mkdir(name, 0o777, dir_fd=self.fd)
            except FileExistsError:
                pass  # made meanwhile: used only if it is a real folder
            child = _open_dir(self.fd, self.base, name, self.pinned.path)
            os.close(self.fd)
            self.fd, self.base, self.missing = child, self.base / name, self.missing[1:]
        return self.fd

    def write(self, data: bytes, mode: int | None) -> None:
        """Replace the file with `data`: a temp file beside it, then a rename, both relative to the folder.

        `mode` is the existing file's permission bits (None for a new file: 0o666 minus umask).  When
        the folder does not allow a temp file, the file is written in place instead.
        """
        dfd = self.ready()
        fd, tmp = -1, ""
        for _ in range(100):
            tmp = f".{self.name}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(tmp, _TEMP_FLAGS, 0o666, dir_fd=dfd)
                break
            except FileExistsError:
                continue
            except PermissionError:
                self._write_in_place(data)
                return
        if fd < 0:
            raise FileExistsError(f"Could not create a temporary file next to {self.target}")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                if mode is not None:
                    self._copy_owner(fh.fileno())
                    os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, self.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise

    def _copy_owner(self, fd: int) -> None:
        if not hasattr(os, "fchown"):
            return
        try:
            st = os.stat(self.name, dir_fd=self.fd, follow_symlinks=False)
            if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
                os.fchown(fd, st.st_uid, st.st_gid)
        except OSError:
            pass

    def _write_in_place(self, data: bytes) -> None:
        flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(self.name, flags, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise file_changed(self.pinned.path) from None
            raise
        with os.fdopen(fd, "wb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise FileToolError(f"{self.pinned.path} is no longer a regular file, so nothing was written.")
            os.set_blocking(fd, True)
            os.ftruncate(fd, 0)
            fh.write(data)
            fh.flush()
            os.fsync(fd)


def open_pinned(pinned: PinnedTarget) -> PinnedFolder:
    """The pinned folder, reached again from `/`; FileToolError when it is not the one checked."""
    if pinned.anchor_id is None:
        raise FileToolError(pinned.problem)
    fd, reached, missing = _walk(pinned.anchor, pinned.path)
    try:
        if missing:
            raise parent_changed(pinned.path, f"{reached / missing[0]} is gone")
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != pinned.anchor_id:
            raise parent_changed(pinned.path, f"{reached} is no longer the folder that was checked")
    except BaseException:
        os.close(fd)
        raise
    below = pinned.target.parent.parts[len(pinned.anchor.parts) :]
    fd, reached, missing = _descend(fd, reached, below, pinned.path)
    return PinnedFolder(pinned, fd, reached, missing)
