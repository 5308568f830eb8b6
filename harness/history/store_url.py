"""The store's URL as the user wrote it: parsed into one line when it is malformed, and shown
with every password masked.

A PostgreSQL URL carries a password in two places: after the user (`user:secret@host`) and as
a query parameter (`?password=secret`). Every line that names a store uses `masked(url)`, and
text from the database driver goes through `hidden(text, url)`, so a password given either way
is never printed. A password with an unencoded `@` is refused: the host would start inside the
password, which would then be shown as part of the host.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

MASK = "***"
# query parameters whose value is a secret: password, sslpassword, passwd, pass, client_secret,
# token (libpq's passfile names a file, not a secret)
_SECRET_KEY = re.compile(r"(?:^|_|ssl)pass(?:word|wd)?$|secret|token", re.IGNORECASE)
_MAX_PORT = 65535


def _userinfo_end(rest: str) -> int:
    """Where the user part of `rest` (the URL after `scheme://`, before its query) ends: the
    last `@` of the authority, so that a password holding `@` is masked whole; -1 for none."""
    first = rest.find("@")
    if first < 0:
        return -1
    slash = rest.find("/", first)
    return rest.rfind("@", 0, len(rest) if slash < 0 else slash)


def _split(url: str) -> tuple[str, str, str, str]:
    """(scheme and `://`, user part, the rest of the authority and path, query) of `url`."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return "", "", url, ""
    rest, _, query = rest.partition("?")
    at = _userinfo_end(rest)
    return scheme + separator, rest[:at + 1] if at >= 0 else "", rest[at + 1:], query


def _secret_pairs(query: str) -> list[tuple[str, str]]:
    pairs = [part.partition("=") for part in query.split("&") if part]
    return [(key, value) for key, _, value in pairs if _SECRET_KEY.search(unquote(key))]


def secrets(url: str) -> list[str]:
    """The passwords `url` carries, as written and decoded."""
    _, user, _, query = _split(url)
    found = []
    if ":" in user:
        found.append(user[:-1].partition(":")[2])
    found += [value for _, value in _secret_pairs(query)]
    return [s for text in found for s in {text, unquote(text)} if s]


def masked(url: str) -> str:
    """`url` with each password it carries replaced by `***`."""
    scheme, user, rest, query = _split(url)
    if ":" in user:
        user = f"{user.partition(':')[0]}:{MASK}@"
    if query:
        parts = []
        for part in query.split("&"):
            key, equals, value = part.partition("=")
            parts.append(f"{key}={MASK}" if equals and value and _SECRET_KEY.search(
                unquote(key)) else part)
        query = "&".join(parts)
    return f"{scheme}{user}{rest}" + (f"?{query}" if query else "")


def hidden(text: str, url: str) -> str:
    """`text` (a driver's message) with every password of `url` in it masked."""
    for secret in sorted(secrets(url), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def parsed(url: str) -> URL:
    """`url` parsed; ValueError, saying why without a password, where it is malformed: no
    scheme, a port that is not a number from 1 to 65535, a broken IPv6 address, a password
    with an unencoded `@`."""
    try:
        result = make_url(url)
        port = result.port
    except (ArgumentError, ValueError, TypeError) as error:
        reason = hidden(" ".join(str(error).split()), url)
        raise ValueError(f"not a database URL ({reason})") from None
    if port is not None and not 0 < port <= _MAX_PORT:
        raise ValueError(f"port {port} is not from 1 to {_MAX_PORT}")
    if result.host is not None and "@" in result.host:
        raise ValueError("the password holds an '@': write it as %40")
    return result
