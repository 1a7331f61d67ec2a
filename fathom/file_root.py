"""The deployment's shared file root (FATHOM_FS_ROOT, the workspaces' folders): every host that runs
file tasks must see the same folder. The first process to use it marks it: a random token written
both into the folder (`.fathom-file-root`) and into the database. A host whose folder has no mark, or
another one, has its own folder, not the shared one (a second host that kept the default `./var/fs`),
and is told so instead of reading and writing files nobody else sees."""

import secrets
import socket
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, models, transaction

MARK_FILE = ".fathom-file-root"


class FileRootMark(models.Model):
    """The shared file root's mark (one row): its token, and where and on which host it was made."""

    name = models.CharField(max_length=16, unique=True, default="shared")
    token = models.CharField(max_length=64)
    path = models.CharField(max_length=1000, help_text="where the first host that used it had it")
    host = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "fathom"

    def __str__(self):
        return f"file root {self.path} on {self.host}"


class FileRootNotShared(Exception):
    """This host's file root is not the deployment's shared one; the message says what to do."""


def file_root_verify() -> FileRootMark:
    """The file root this process sees is the shared one (marking it, and the database, on first
    use); FileRootNotShared when it is not. Successful checks are remembered for the process."""
    root = Path(settings.FATHOM_FS_ROOT)
    if _verified.get(root):
        return _verified[root]
    mark_path = root / MARK_FILE
    on_disk = mark_path.read_text().strip() if mark_path.is_file() else ""
    mark = FileRootMark.objects.filter(name="shared").first()
    if mark is None:
        mark = _mark_create(root, token=on_disk or secrets.token_hex(16))
        on_disk = mark_path.read_text().strip() if mark_path.is_file() else ""
    if on_disk != mark.token:
        found = "has no mark" if not on_disk else "has another deployment's mark"
        raise FileRootNotShared(
            f"this host's file root {root} is not the deployment's shared one: it {found} ({mark_path}); the "
            f"shared one was first used at {mark.path} on {mark.host}. Mount that folder here, or set "
            f"FATHOM_FS_ROOT to where it is mounted, on every host that runs workers (docs/operations.md, "
            f"Scaling out)")
    _verified[root] = mark
    return mark


def _mark_create(root: Path, *, token: str) -> FileRootMark:
    try:
        with transaction.atomic():
            mark = FileRootMark.objects.create(name="shared", token=token, path=str(root), host=socket.gethostname())
    except IntegrityError:  # another process marked it first
        return FileRootMark.objects.get(name="shared")
    _mark_write(root / MARK_FILE, token)
    return mark


def _mark_write(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        path.write_text(token + "\n")


_verified: dict[Path, FileRootMark] = {}
