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


def _password_span(rest: str) -> tuple[int, int] | None:
    """Where the password after the user lies in `rest` (the URL after `scheme://`): from the
    `:` before the first `@` to the last `@`, so that a password holding `@`, `/`, `?` or `#`
    is covered whole (an `@` in the path or query widens it: more is masked, never less)."""
    first_at, colon = rest.find("@"), rest.find(":")
    if first_at < 0 or not 0 <= colon < first_at:
        return None
    return colon + 1, rest.rfind("@")


def _query_secrets(query: str) -> list[tuple[str, str]]:
    """(key, value) of each query parameter whose value is a secret."""
    pairs = [part.partition("=") for part in query.split("&") if part]
    return [(key, value) for key, _, value in pairs if value and _SECRET_KEY.search(unquote(key))]


def _parts(url: str) -> tuple[str, str, str, str]:
    """`url` as (scheme and `://`, the rest up to its password, the rest after its password
    up to the query, the query)."""
    scheme, separator, rest = url.partition("://")
    span = _password_span(rest) if separator else None
    head, tail = (rest[:span[0]], rest[span[1]:]) if span else ("", rest)
    tail, _, query = tail.partition("?")
    return scheme + separator, head, tail, query


def secrets(url: str) -> list[str]:
    """The passwords `url` carries, as written and decoded, and each part of one up to an `@`
    in it (what a driver would take for the password)."""
    _, separator, rest = url.partition("://")
    span = _password_span(rest) if separator else None
    found = []
    if span is not None:
        start, end = span
        found += [rest[start:at] for at in range(start, end + 1) if rest[at] == "@"]
    found += [value for _, value in _query_secrets(_parts(url)[3])]
    return [s for text in found for s in {text, unquote(text)} if s]


def masked(url: str) -> str:
    """`url` with each password it carries replaced by `***`."""
    scheme, head, tail, query = _parts(url)
    if head:
        head += MASK
    secret_keys = {key for key, _ in _query_secrets(query)}
    shown = "&".join(f"{part.partition('=')[0]}={MASK}" if part.partition("=")[0] in secret_keys
                     else part for part in query.split("&")) if query else ""
    return f"{scheme}{head}{tail}" + (f"?{shown}" if query else "")


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
