"""The operator's login, kept for the operator alone: a file in the data dir (mode 0600) holding the
login and its password, written when the first start generates the password and by `fathom operator
password`; and the short block `fathom up` prints once the web server answers."""

import os
from pathlib import Path

from django.conf import settings

PASSWORD_FILE = "operator-password"


def password_file() -> Path:
    return Path(settings.DATA_DIR) / PASSWORD_FILE


def password_store(*, email: str, password: str) -> Path:
    """Write the login and password to the data dir's password file, readable by its owner only
    (0600 from its creation: the password is never in a file others may read)."""
    path = password_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an older file made with other bits
    with os.fdopen(descriptor, "w") as handle:
        handle.write(f"login: {email}\npassword: {password}\n")
    return path


def login_block(*, url: str, email: str, password: str | None) -> list[str]:
    """The lines `fathom up` ends its start with: where, who, and the password on the first start
    only (later, where it is kept, and how to set a new one)."""
    rule = "-" * 72
    stored = password_file()
    if password:
        secret = f"password: {password}  (first start only; kept for you in {stored}, mode 0600)"
    elif stored.exists():
        secret = f"password: in {stored} (mode 0600)"
    else:
        secret = "password: the one you set"
    return [rule, f"Fathom is ready: {url}", f"log in as {email}", secret,
            "a new password: .venv/bin/python manage.py fathom operator password", rule]
