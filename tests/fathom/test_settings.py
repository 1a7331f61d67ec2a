import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from fathom.env import database_from_url, env_bool, env_int, env_url
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize(
    "name, value",
    [("DEBUG", "perhaps"), ("FATHOM_HTTP_PORT", "eighty"), ("FATHOM_HTTP_PORT", "70000"),
     ("DATABASE_URL", "mysql://db/fathom"), ("REDIS_URL", "http://cache:6379"),
     ("FATHOM_TRACE_RETENTION_DAYS", "thirty"), ("FATHOM_TRACE_RETENTION_DAYS", "-1")],
)
def test_it_refuses_to_start_on_a_malformed_value_and_names_the_variable(name, value, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "FATHOM_DATA_DIR": str(tmp_path), name: value}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert name in result.stderr
    assert not (tmp_path / "postgres").exists(), "nothing may start on a bad configuration"


def test_parsers_accept_good_values_and_reject_bad_ones(monkeypatch):
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_URL", "redis://cache:6379/2")
    assert env_bool("X_BOOL") is True
    assert env_int("X_INT", 0, minimum=1, maximum=100) == 42
    assert env_url("X_URL", ("redis",)) == "redis://cache:6379/2"
    monkeypatch.setenv("X_INT", "4.2")
    with pytest.raises(ImproperlyConfigured, match="X_INT must be an integer, got '4.2'"):
        env_int("X_INT", 0)
    monkeypatch.setenv("X_INT", "-1")
    with pytest.raises(ImproperlyConfigured, match="X_INT must be at least 0, got -1"):
        env_int("X_INT", 30, minimum=0)


def test_database_url_becomes_a_django_database():
    db = database_from_url("postgresql://fathom:s3cret@db.internal:6543/lake?sslmode=require")
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "lake", "fathom", "s3cret", "db.internal", "6543")
    assert db["OPTIONS"] == {"sslmode": "require"}
