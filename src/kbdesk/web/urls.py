"""What a URL source may reach: its scheme, credentials, address, scope and globs.

A URL source fetches only what the user asked for:

* ``http`` and ``https`` only (never ``file:``, ``ftp:``, ``data:``… nor a redirect
  to one); no user name or password in a URL (a secret would be stored as the
  document's source and shown with every result);
* a private, loopback, link-local or otherwise non-public address only when the user
  named that host in the URL they gave (a public page cannot lead kbdesk to a
  router's admin page or a cloud metadata address);
* links are followed on the same site only: the same scheme and host (and port), under
  the path prefix of the URL given (its folder), and through ``--include`` /
  ``--exclude`` globs on the whole URL.

Globs are matched without backtracking (``*`` any run of characters, ``?`` one); a
pattern is bounded in length, so a hostile pattern costs linear time.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable, Sequence
from urllib.parse import quote, urldefrag, urljoin, urlsplit, urlunsplit

SCHEMES = ("http", "https")
MAX_URL = 4096  # characters of a URL kept (longer links are not followed)
MAX_GLOB = 512  # characters of an --include/--exclude pattern


class UrlRefused(ValueError):
    """A URL kbdesk will not fetch; the message is one line for a person."""


def is_url(text: str) -> bool:
    """Whether a path given to ``add`` is meant as a URL (``scheme://…``)."""
    head = text.split("://", 1)[0].lower() if "://" in text else ""
    return bool(head) and head.isascii() and head.replace("+", "").replace("-", "").replace(".", "").isalnum()


_SAFE = "/%:@!$&'()*+,;=-._~"  # what stays as it is in a path (RFC 3986); the rest is %-escaped


def normalise(url: str, base: str | None = None) -> str:
    """``url`` (made absolute against ``base``) without its fragment, with a lower-case
    scheme and host, a path of at least ``/``, and spaces, control characters and other
    bytes a URL cannot hold %-escaped (as a browser sends them): the key a page is known by."""
    url = urljoin(base, url.strip()) if base else url.strip()
    url, _ = urldefrag(url)
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    netloc = host if ":" not in host else f"[{host}]"
    if parts.port is not None and (parts.scheme.lower(), parts.port) not in (("http", 80), ("https", 443)):
        netloc += f":{parts.port}"
    if parts.username is not None or parts.password is not None:
        netloc = f"{parts.username or ''}{':' + '***' if parts.password is not None else ''}@{netloc}"
    path, query = quote(parts.path or "/", safe=_SAFE), quote(parts.query, safe=_SAFE + "?")
    return urlunsplit((parts.scheme.lower(), netloc, path, query, ""))


_PASSWORD = re.compile(r"^([A-Za-z][\w+.-]*://[^/?#@]*?):[^/?#@]*@")


def redact(url: str) -> str:
    """``url`` as it may be shown: a password in it replaced by ``***``."""
    return _PASSWORD.sub(r"\1:***@", url)


def check(url: str) -> str:
    """``url`` normalised, or :class:`UrlRefused` saying why it is not fetched."""
    if len(url) > MAX_URL:
        raise UrlRefused(f"URL longer than {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise UrlRefused(f"not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise UrlRefused(f"'{scheme or '(none)'}:' URLs are not fetched (http and https only)")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise UrlRefused("a URL with a user name or password is not fetched (it would be stored as the source)")
    if not parts.hostname:
        raise UrlRefused("URL has no host")
    return normalise(url)


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def public(address: str) -> bool:
    """Whether an IP address is on the public internet."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_address(url: str, named_hosts: Iterable[str]) -> None:
    """Refuse ``url`` when its host is (or resolves to) an address that is not public and
    the user did not name that host. Raises :class:`UrlRefused`."""
    host = host_of(url)
    if host in named_hosts:
        return
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        raise UrlRefused(f"{host} is a local name: add it by its own URL to fetch from it")
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        raise UrlRefused(f"cannot resolve {host} ({getattr(exc, 'strerror', None) or exc})") from None
    for info in infos:
        if not public(str(info[4][0])):
            raise UrlRefused(f"{host} is a private-network address: add it by its own URL to fetch from it")


def scope_of(url: str) -> str:
    """The prefix links must start with to be on the same site: scheme, host, port and
    the folder of the URL's path (``https://h/docs/intro.html`` → ``https://h/docs/``)."""
    parts = urlsplit(url)
    folder = parts.path.rsplit("/", 1)[0] + "/"
    return urlunsplit((parts.scheme, parts.netloc, folder, "", ""))


def glob_match(text: str, pattern: str) -> bool:
    """Whether ``text`` matches ``pattern`` (``*`` any run, ``?`` one character, all else
    literal), in time linear in their lengths times a small constant: the classic
    two-pointer match that backtracks only to the last star, never further."""
    t = p = 0
    star, mark = -1, 0
    while t < len(text):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == text[t]):
            t, p = t + 1, p + 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, t, p + 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            t = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def check_globs(patterns: Sequence[str]) -> list[str]:
    for pattern in patterns:
        if len(pattern) > MAX_GLOB:
            raise UrlRefused(f"a URL pattern is longer than {MAX_GLOB} characters")
    return list(patterns)


def wanted(url: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether ``url`` passes the ``--include`` / ``--exclude`` globs (matched against the
    whole URL and against its path)."""
    path = urlsplit(url).path
    if exclude and any(glob_match(url, g) or glob_match(path, g) for g in exclude):
        return False
    return not include or any(glob_match(url, g) or glob_match(path, g) for g in include)
