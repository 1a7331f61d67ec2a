"""Who may use a door of the proxy, checked before anything else on every request: the Host it names
(a name a DNS-rebinding page could use is refused) and the Origin a browser sends (a web page the
operator visits cannot drive the proxy: cross-site requests are refused unless their origin is
allowed, FATHOM_PROXY_ALLOWED_ORIGINS, and then answered with CORS headers).

The own port answers to loopback's names, its bind address and FATHOM_PROXY_ALLOWED_HOSTS; the main
port's mount to Django's ALLOWED_HOSTS, as the rest of that port does."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from festinger.proxy.request import Request
from festinger.proxy.wire import WireError

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_CORS = [(b"access-control-allow-methods", b"GET, POST, HEAD, OPTIONS"),
         (b"access-control-allow-headers", b"Authorization, Content-Type, X-Festinger-Session"),
         (b"access-control-max-age", b"600")]


@dataclass(frozen=True)
class Admission:
    hosts_setting: str  # the setting of the Host names allowed (Django's ALLOWED_HOSTS patterns)
    hosts: tuple[str, ...] = ()  # allowed whatever the setting says (the own port's loopback names and bind)

    def refusal(self, request: Request) -> WireError | None:
        """The error that refuses `request`, or None (an allowed Origin's CORS headers are added to its
        response). The settings are read per request, so an override holds at once."""
        host = request.header(b"host") or ""
        domain, _port = split_domain_port(host)
        if not domain or not validate_host(domain, [*self.hosts, *getattr(settings, self.hosts_setting)]):
            return WireError(400, f"this proxy does not answer to the Host {host!r} (add it to {self.hosts_setting})")
        origin = request.header(b"origin")
        if origin is None:
            return None
        if not any(fnmatchcase(origin, pattern) for pattern in settings.FATHOM_PROXY_ALLOWED_ORIGINS):
            return WireError(403, f"the proxy does not answer web pages of {origin} (add the origin to "
                                  f"FATHOM_PROXY_ALLOWED_ORIGINS)")
        request.headers += [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
        return None

    @staticmethod
    def preflight(request: Request) -> bool:
        """Whether `request` (admitted) is a CORS preflight (answered 204 with what its page may send)."""
        if request.method == "OPTIONS" and request.header(b"origin") is not None:
            request.headers += _CORS
            return True
        return False


def own_port_hosts(bind: str) -> tuple[str, ...]:
    """The Host names the own port answers to besides the operator's: loopback's and its bind address
    (a wildcard bind names none)."""
    named = [] if bind in ("0.0.0.0", "::", "") else [f"[{bind}]" if ":" in bind else bind]
    return (*LOOPBACK_HOSTS, *named)
