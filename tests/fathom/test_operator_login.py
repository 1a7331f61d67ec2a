"""The first start talks: it ends with one short login block (the URL, the login, the password on
the first start only), keeps the password for the operator alone in a 0600 file in the data dir, and
`fathom operator password` sets a new one."""

import re
import stat
import time
from io import StringIO

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from fathom.operator_login import login_block, password_file
from fathom.services import operator_ensure, workspace_default_ensure
from tests.fathom.stack import Stack, free_port, stack_root


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    return settings.DATA_DIR


def mode_of(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_operator_password_sets_a_new_one_kept_in_a_0600_file(db, data_dir):
    user, _ = operator_ensure(workspace=workspace_default_ensure(), email="ops@example.com", password="old secret")
    out = StringIO()
    call_command("fathom", "operator", "password", "--email", "ops@example.com", stdout=out)
    new = out.getvalue().strip().splitlines()[-1]
    user.refresh_from_db()
    assert user.check_password(new) and not user.check_password("old secret") and len(new) >= 16
    assert mode_of(password_file()) == 0o600 and f"password: {new}" in password_file().read_text()

    call_command("fathom", "operator", "password", "--email", "ops@example.com", "--password", "chosen one",
                 stdout=StringIO())
    user.refresh_from_db()
    assert user.check_password("chosen one") and "password: chosen one" in password_file().read_text()
    assert mode_of(password_file()) == 0o600


def test_operator_password_for_an_unknown_login_is_a_clear_error(db, data_dir):
    with pytest.raises(CommandError, match="no account 'nobody@example.com'"):
        call_command("fathom", "operator", "password", "--email", "nobody@example.com")
    assert not password_file().exists()
    assert not get_user_model().objects.filter(username="nobody@example.com").exists()


def test_an_older_password_file_with_open_bits_is_closed_to_others(db, data_dir):
    operator_ensure(workspace=workspace_default_ensure(), email="ops@example.com", password="x")
    data_dir.mkdir(parents=True)
    password_file().write_text("stale")
    password_file().chmod(0o644)
    call_command("fathom", "operator", "password", "--email", "ops@example.com", stdout=StringIO())
    assert mode_of(password_file()) == 0o600 and "stale" not in password_file().read_text()


def test_the_login_block_shows_the_password_on_the_first_start_only(data_dir):
    first = login_block(url="http://127.0.0.1:8000/", email="admin@localhost", password="s3cret")
    assert "Fathom is ready: http://127.0.0.1:8000/" in first and "log in as admin@localhost" in first
    assert any("password: s3cret" in line and "mode 0600" in line for line in first)
    later = login_block(url="http://127.0.0.1:8000/", email="admin@localhost", password=None)
    assert not any("s3cret" in line for line in later) and "password: the one you set" in later
    assert len(first) <= 8


@pytest.mark.slow
def test_a_first_start_ends_with_the_login_block_whose_password_logs_in():
    with stack_root() as root:
        stack = Stack(root, free_port(), without=("FATHOM_ADMIN_PASSWORD",))
        try:
            deadline = time.monotonic() + 240
            while not any("Fathom is ready" in line for line in stack.lines) and time.monotonic() < deadline:
                assert stack.process.poll() is None, stack.output
                time.sleep(0.5)
            time.sleep(3)  # whatever the children say next
            ready = next(i for i, line in enumerate(stack.lines) if "Fathom is ready" in line)
            block = stack.lines[ready - 1:ready + 5]
            assert "[up] log in as ops@example.com" in block, stack.output
            password = re.search(r"password: (\S+)  \(first start only; kept for you in (\S+), mode 0600\)",
                                 "\n".join(block))
            assert password, stack.output
            stored = root / "data" / "operator-password"
            assert password.group(2) == str(stored) and mode_of(stored) == 0o600
            assert f"password: {password.group(1)}" in stored.read_text()
            # the block comes after every child's start-up banner
            after = "\n".join(stack.lines[ready:])
            assert "Application startup complete" not in after and " ready." not in after, stack.output
            assert "beat: Starting" not in after and "[tasks]" not in after, stack.output
            assert "operator account created" not in stack.output  # printed once, in the block

            # and the password logs in to the dashboard
            with httpx.Client(base_url=f"http://127.0.0.1:{stack.port}", timeout=10) as browser:
                form = browser.get("/login/").text
                token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
                response = browser.post("/login/", data={"username": "ops@example.com",
                                                         "password": password.group(1),
                                                         "csrfmiddlewaretoken": token})
            assert response.status_code == 302 and response.headers["location"] == "/", response.text[:500]
        finally:
            stack.close()
