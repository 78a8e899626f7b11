"""Keep credentials out of every message: URLs without their userinfo, texts without secrets.

What reranklab writes (``index.json``, logs, errors, MLflow) names a cluster by
:func:`redact_url`; any text that came from elsewhere (an exception of the client, a server's
error body) goes through :func:`redact` with the secrets in use before it is shown.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
# `scheme://anything-without-slash-or-space@`: the userinfo part of any URL inside a text.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@]+@")


def redact_url(url: str) -> str:
    """``url`` without user name and password (and without a query string, which may hold a key).

    Example:
        >>> redact_url("https://elastic:s3cret@es.example.org:9243/prefix?api_key=abc")
        'https://es.example.org:9243/prefix'
        >>> redact_url("http://localhost:9200")
        'http://localhost:9200'
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        # Not a URL we can take apart: hide what could be userinfo rather than show it.
        return _USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", url.split("?")[0])
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def basic_auth_token(user: str, password: str) -> str:
    """The ``Authorization: Basic`` token of ``user``/``password`` (a secret as well).

    Example:
        >>> basic_auth_token("elastic", "changeme")
        'ZWxhc3RpYzpjaGFuZ2VtZQ=='
    """
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret and every URL userinfo replaced by ``***``.

    Args:
        text: a message, e.g. ``str(exception)`` of the Elasticsearch client.
        secrets: values that must never be shown (API key, password, basic-auth token);
            empty ones are ignored. Longer secrets are replaced first, so a secret that
            contains another is masked whole.

    Example:
        >>> redact("GET https://u:pw@h:9200/x failed (key k3y)", ["k3y"])
        'GET https://***@h:9200/x failed (key ***)'
    """
    out = _USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", str(text))
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        out = out.replace(secret, MASK)
    return out
