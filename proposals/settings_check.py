"""Start-up check of the FATHOM_HELPER_HOSTS setting: a malformed host stops start-up with a
message naming it."""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from fathom.errors import ApplicationError
from proposals.helper_jobs import helper_host_validate, host_from_setting


def helper_hosts_setting_check() -> None:
    hosts = settings.FATHOM_HELPER_HOSTS
    if not isinstance(hosts, dict):
        raise ImproperlyConfigured('FATHOM_HELPER_HOSTS must be a JSON object: {"<host>": {"executor": "local", '
                                   '"command": [...], "timeout_seconds": 600, "pass_env": [...]}}')
    for name, spec in hosts.items():
        if not isinstance(spec, dict):
            raise ImproperlyConfigured(f"FATHOM_HELPER_HOSTS[{name!r}] must be an object")
        try:
            helper_host_validate(host_from_setting(name, spec))
        except (ApplicationError, TypeError, ValueError) as exc:
            raise ImproperlyConfigured(f"FATHOM_HELPER_HOSTS[{name!r}]: {getattr(exc, 'message', exc)}") from None
