"""The file tools' two path spaces: managed:// (profile fields, harness.runtime.files.managed) and
fs:// (the workspace's folder, harness.runtime.files.sandbox). One entry point per operation, picking
the space by the path's scheme."""

from harness.runtime.files import managed, sandbox
from harness.runtime.files.sandbox import FileError

__all__ = ["FileError", "check_path", "file_list", "file_read", "file_replace", "file_write"]


def check_path(path: str) -> None:
    """Refuse a path that is wrong by its name alone (FileError), before any task is made for it."""
    _space(path).parse(path)


def file_list(*, workspace, path: str) -> dict:
    if _space(path) is managed:
        return managed.managed_list(workspace=workspace, path=path)
    return sandbox.fs_list(workspace=workspace, path=path)


def file_read(*, workspace, path: str) -> str:
    if _space(path) is managed:
        return managed.managed_read(workspace=workspace, path=path)
    return sandbox.fs_read(workspace=workspace, path=path)


def file_write(*, workspace, path: str, content: str, allow_override: bool, replaced_by: str,
               before_commit=None) -> str:
    if _space(path) is managed:
        return managed.managed_write(workspace=workspace, path=path, content=content, allow_override=allow_override,
                                     replaced_by=replaced_by)
    return sandbox.fs_write(workspace=workspace, path=path, content=content, allow_override=allow_override,
                            before_commit=before_commit)


def file_replace(*, workspace, path: str, old: str, new: str, mode: str, replaced_by: str,
                 before_commit=None) -> str:
    if _space(path) is managed:
        return managed.managed_replace(workspace=workspace, path=path, old=old, new=new, mode=mode,
                                       replaced_by=replaced_by)
    return sandbox.fs_replace(workspace=workspace, path=path, old=old, new=new, mode=mode,
                              before_commit=before_commit)


def _space(path):
    if isinstance(path, str) and path.startswith(managed.SCHEME):
        return managed
    if isinstance(path, str) and path.startswith(sandbox.SCHEME):
        return sandbox
    raise FileError(f"{path!r} is neither a managed:// nor an fs:// path")
