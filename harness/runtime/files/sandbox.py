"""fs:// paths: real files under the workspace's own folder (FATHOM_FS_ROOT/<workspace>), never outside.

The name is checked first (no absolute path, no `..`, no NUL, no percent-encoding, no component that
Unicode normalisation would turn into `..` or a slash, no over-long name), and then every open walks
the path one component at a time from a directory descriptor, with O_NOFOLLOW: a symbolic link
anywhere on the way is refused when it is met, so a link swapped in after the name was checked leads
nowhere. Only regular files and directories are touched (devices, FIFOs and sockets are refused
before they are opened); a file with several hard links is refused too, as one of them may live
outside. Writes go to a temporary file in the same folder and are renamed into place (atomic)."""

import errno
import os
import re
import secrets
import stat
import unicodedata
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

SCHEME = "fs://"
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255
MAX_LIST_ENTRIES = 1000
TEMP_PREFIX = ".fathom-tmp-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")


class FileError(Exception):
    """A refused or failed file operation, said plainly (the model reads it)."""


def workspace_root(workspace) -> Path:
    """The workspace's folder (created on first use)."""
    slug = workspace.slug if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", workspace.slug or "") else f"ws-{workspace.pk}"
    root = Path(settings.FATHOM_FS_ROOT) / slug
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return root


def parse(path: str) -> list[str]:
    """The components of an fs:// path, checked by name; FileError says what is wrong."""
    if not isinstance(path, str) or not path.startswith(SCHEME):
        raise FileError(f"{path!r} is not an fs:// path")
    rest = path[len(SCHEME):]
    if "\x00" in rest:
        raise FileError("the path contains a NUL byte")
    if len(rest) > MAX_PATH_CHARS:
        raise FileError(f"the path is longer than {MAX_PATH_CHARS} characters")
    if rest.startswith("/") or rest.startswith("~") or re.match(r"^[A-Za-z]:", rest):
        raise FileError(f"{path!r} is absolute: fs:// paths are relative to the workspace folder")
    if "\\" in rest:
        raise FileError("backslashes are not path separators here; use /")
    if _PERCENT.search(rest):
        raise FileError("the path is percent-encoded; write it plainly (nothing is decoded)")
    if any(unicodedata.category(ch) == "Cc" for ch in rest):
        raise FileError("the path contains a control character")
    parts = [part for part in rest.split("/") if part not in ("", ".")]
    for part in parts:
        normal = unicodedata.normalize("NFKC", part)
        if part == ".." or normal == ".." or "/" in normal or "\\" in normal:
            raise FileError(f"{path!r} leaves the workspace folder ('..' is not allowed)")
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise FileError(f"a name in the path is longer than {MAX_NAME_BYTES} bytes")
        try:
            part.encode("utf-8")
        except UnicodeEncodeError:
            raise FileError("the path is not valid UTF-8") from None
    return parts


def fs_list(*, workspace, path: str) -> dict:
    """The entries of a folder: name, type (file, dir, link, other) and size, sorted by name."""
    parts = parse(path)
    with _walk(workspace, parts) as fd:
        names = sorted(name for name in os.listdir(fd) if not name.startswith(TEMP_PREFIX))
        entries = []
        for name in names[:MAX_LIST_ENTRIES]:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            entries.append({"name": name, "type": _kind(info.st_mode),
                            "size": info.st_size if stat.S_ISREG(info.st_mode) else None})
    return {"path": _show(parts), "entries": entries, "truncated": len(names) > MAX_LIST_ENTRIES}


def fs_read(*, workspace, path: str) -> str:
    """The text of a regular file (UTF-8), refused above FATHOM_FS_MAX_READ_BYTES."""
    parts = parse(path)
    if not parts:
        raise FileError("fs:// is a folder: fs_list it")
    limit = settings.FATHOM_FS_MAX_READ_BYTES
    with _walk(workspace, parts[:-1]) as parent, _open_file(parent, parts[-1], os.O_RDONLY, path) as fd:
        size = os.fstat(fd).st_size
        if size > limit:
            raise FileError(f"{path} is {size} bytes, more than the {limit} bytes a read may take")
        data = _read_all(fd, limit + 1)
    if len(data) > limit:
        raise FileError(f"{path} is more than the {limit} bytes a read may take")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileError(f"{path} is not UTF-8 text") from None


def fs_write(*, workspace, path: str, content: str, allow_override: bool, before_commit: Callable | None = None
             ) -> str:
    """Write `content` to a file, creating its folders; an existing file is replaced only with
    `allow_override`. Atomic: a temporary file in the same folder, renamed into place."""
    parts = parse(path)
    if not parts:
        raise FileError("fs:// is the workspace folder itself, not a file")
    data = _encoded(content)
    with _walk(workspace, parts[:-1], create=True) as parent:
        name = parts[-1]
        existing = _lstat(parent, name)
        if existing is not None:
            _check_regular(existing, path)
            if not allow_override:
                raise FileError(f"{path} exists; pass allow_override=true to replace it")
        _replace_atomically(parent, name, data, no_clobber=existing is None, path=path, before_commit=before_commit)
    return f"wrote {len(data)} bytes to {path}"


def fs_replace(*, workspace, path: str, old: str, new: str, mode: str, before_commit: Callable | None = None) -> str:
    """Replace `old` by `new` in a file: the first match, all of them, or exactly one (mode "one":
    any other count is refused, saying how many matched)."""
    parts = parse(path)
    if not parts:
        raise FileError("fs:// is a folder, not a file")
    text = fs_read(workspace=workspace, path=path)
    updated, count = replace_text(text, old, new, mode)
    data = _encoded(updated)
    with _walk(workspace, parts[:-1]) as parent:
        existing = _lstat(parent, parts[-1])
        if existing is None:
            raise FileError(f"{path} was removed while it was being edited")
        _check_regular(existing, path)
        _replace_atomically(parent, parts[-1], data, no_clobber=False, path=path, before_commit=before_commit)
    return f"replaced {count} match(es) in {path}"


def replace_text(text: str, old: str, new: str, mode: str) -> tuple[str, int]:
    """The text with `old` replaced per `mode` (first, all, one) and the number replaced."""
    if not old:
        raise FileError("old must not be empty")
    if mode not in ("first", "all", "one"):
        raise FileError(f"mode must be first, all or one, not {mode!r}")
    matched = text.count(old)
    if matched == 0:
        raise FileError("old matched 0 times: nothing was replaced")
    if mode == "one" and matched != 1:
        raise FileError(f"old matched {matched} times, and mode one needs exactly one match: nothing was replaced")
    if mode == "first":
        return text.replace(old, new, 1), 1
    return text.replace(old, new), matched


# --- walking, opening, writing ------------------------------------------------------------------------

@contextmanager
def _walk(workspace, parts: list[str], *, create: bool = False):
    """A descriptor of the folder `parts` under the workspace folder, reached one component at a
    time without following any symbolic link (missing folders made on the way when `create`)."""
    fd = _open_dir(str(workspace_root(workspace)), None, "the workspace folder")
    try:
        for index, part in enumerate(parts):
            shown = _show(parts[: index + 1])
            try:
                child = _open_dir(part, fd, shown)
            except FileNotFoundError:
                if not create:
                    raise FileError(f"{shown} does not exist") from None
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                child = _open_dir(part, fd, shown)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open_dir(name: str, dir_fd, shown: str) -> int:
    if dir_fd is not None:
        info = _lstat(dir_fd, name)
        if info is None:
            raise FileNotFoundError(name)
        if stat.S_ISLNK(info.st_mode):
            raise FileError(f"{shown} is a symbolic link: links are not followed")
        if not stat.S_ISDIR(info.st_mode):
            raise FileError(f"{shown} is not a folder")
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped for a link or a file since the check
            raise FileError(f"{shown} is a symbolic link or not a folder: not followed") from None
        if exc.errno == errno.ENOENT:
            raise
        raise FileError(f"{shown} cannot be opened: {exc.strerror}") from None
    return fd


@contextmanager
def _open_file(dir_fd: int, name: str, flags: int, path: str):
    info = _lstat(dir_fd, name)
    if info is None:
        raise FileError(f"{path} does not exist")
    _check_regular(info, path)
    try:
        # O_NONBLOCK: a FIFO swapped in after the check must not hang the open.
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileError(f"{path} is a symbolic link: links are not followed") from None
        raise FileError(f"{path} cannot be opened: {exc.strerror}") from None
    try:
        opened = os.fstat(fd)
        _check_regular(opened, path)
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise FileError(f"{path} changed while it was being opened")
        yield fd
    finally:
        os.close(fd)


def _replace_atomically(dir_fd: int, name: str, data: bytes, *, no_clobber: bool, path: str,
                        before_commit: Callable | None) -> None:
    temp = f"{TEMP_PREFIX}{secrets.token_hex(8)}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if before_commit is not None:
            before_commit()  # e.g. the task was canceled meanwhile: raise, and nothing lands
        if no_clobber:
            try:  # link(2) never replaces: a file created meanwhile is not overwritten
                os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            except FileExistsError:
                raise FileError(f"{path} exists; pass allow_override=true to replace it") from None
            except OSError as exc:  # a file system without hard links: check, then rename
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
                    raise
                if _lstat(dir_fd, name) is not None:
                    raise FileError(f"{path} exists; pass allow_override=true to replace it") from None
                os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # replaces a link itself, never its target
    finally:
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass


def _read_all(fd: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(fd, min(65536, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _encoded(content: str) -> bytes:
    if not isinstance(content, str):
        raise FileError("content must be text")
    if "\x00" in content:
        raise FileError("content contains a NUL byte")
    data = content.encode("utf-8", "surrogatepass")
    limit = settings.FATHOM_FS_MAX_WRITE_BYTES
    if len(data) > limit:
        raise FileError(f"content is {len(data)} bytes, more than the {limit} bytes a write may take")
    return data


def _lstat(dir_fd: int, name: str):
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FileError(f"{name} cannot be read: {exc.strerror}") from None


def _check_regular(info, path: str) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise FileError(f"{path} is a symbolic link: links are not followed")
    if stat.S_ISDIR(info.st_mode):
        raise FileError(f"{path} is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise FileError(f"{path} is a {_kind(info.st_mode)}, not a regular file: refused")
    if info.st_nlink > 1:
        raise FileError(f"{path} has {info.st_nlink} hard links (one may lead outside the folder): refused")


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"


def _show(parts: list[str]) -> str:
    return SCHEME + "/".join(parts)
