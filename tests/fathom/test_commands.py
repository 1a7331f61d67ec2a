import os
import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from fathom.models import ApiKey, Workspace
from tests.conftest import REPO_ROOT


def test_workspace_create_and_apikey_create_print_the_key_on_the_last_line(db):
    call_command("fathom", "workspace", "create", "acme", stdout=StringIO())
    out = StringIO()
    call_command("fathom", "apikey", "create", "--workspace", "acme", "--role", "viewer", stdout=out)
    secret = out.getvalue().strip().splitlines()[-1]
    key = ApiKey.objects.get(workspace__slug="acme")
    assert secret.startswith(f"fth_{key.prefix}_") and key.role == "viewer"


def test_commands_refuse_bad_input_clearly(db):
    with pytest.raises(CommandError, match="not a valid slug"):
        call_command("fathom", "workspace", "create", "Not A Slug", stdout=StringIO())
    with pytest.raises(CommandError, match="no workspace 'ghost'"):
        call_command("fathom", "apikey", "create", "--workspace", "ghost", "--role", "owner", stdout=StringIO())
    assert not Workspace.objects.filter(slug="ghost").exists()
    with pytest.raises(CommandError, match="--queues takes some of fires, quality, memory, maintenance"):
        call_command("fathom", "worker", "--queues", "fires,bogus", stdout=StringIO())
    with pytest.raises(CommandError, match="thread pool must be at most FATHOM_DB_POOL_MAX_SIZE"):
        call_command("fathom", "worker", "--queues", "quality", "--pool", "threads", "--concurrency", "1000",
                     stdout=StringIO())


def test_with_urls_given_nothing_embedded_starts(tmp_path, db):
    from django.conf import settings
    from django.db import connection

    socket_dir = connection.get_connection_params()["host"]
    env = {
        **os.environ,
        "FATHOM_DATA_DIR": str(tmp_path / "elsewhere"),
        "DATABASE_URL": f"postgresql://postgres@/{connection.settings_dict['NAME']}?host={socket_dir}",
        "REDIS_URL": settings.REDIS_URL,
    }
    script = ("from fathom.health import health_report; r = health_report(); "
              "print(r['database']['ok'], r['database']['embedded'], r['redis']['ok'], r['redis']['embedded'])")
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1].split() == ["True", "False", "True", "False"], result.stderr
    assert not (tmp_path / "elsewhere" / "postgres").exists()
    assert not (tmp_path / "elsewhere" / "redis").exists()
