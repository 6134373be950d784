"""Masking credentials in every text a provider produces: messages, log lines, errors.

A key belongs in an environment variable (``api_key_env``) or, second best, in
``api_key``; :func:`~kbdesk.providers.settings.check_base_url` refuses a base URL with
user info when a person types one. A config.toml edited by hand may still hold
``http://user:pass@host/v1``: the request then carries ``Authorization: Basic
base64(user:pass)``, and a server may echo that header, the key or the URL back in
its error body. :class:`Redactor` masks all of those forms, and every message built
from something a server said goes through one before it reaches an exception, a log
line, the database or the screen::

    clean = Redactor.for_settings(settings)
    message = clean(server_text)
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from kbdesk.providers.errors import MASK, mask_patterns
from kbdesk.providers.settings import ProviderSettings, resolve_api_key, url_credentials

MIN_SECRET = 4
"""Literal secrets shorter than this are not masked as free text (masking every "ab" in
a message would destroy it, and such a password protects nothing); their URL and header
forms are still masked by :func:`~kbdesk.providers.errors.mask_patterns`."""


@dataclass(frozen=True)
class Redactor:
    """Masks a provider's credentials; calling it on a text returns the masked text."""

    secrets: tuple[str, ...] = ()
    """Literal strings to mask, longest first."""

    @classmethod
    def of(cls, secrets: Iterable[str | None]) -> Redactor:
        kept = {s for s in secrets if s and len(s) >= MIN_SECRET}
        return cls(tuple(sorted(kept, key=len, reverse=True)))

    @classmethod
    def for_settings(cls, settings: ProviderSettings) -> Redactor:
        """Masks the API key now in effect and any credentials in the base URL, in every
        form they travel in: raw, percent-encoded, as ``user:pass`` and as its base64."""
        return cls.of([resolve_api_key(settings), *url_secret_forms(settings.base_url)])

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return mask_patterns(text)


def url_secret_forms(url: str | None) -> list[str]:
    """Every form the password of ``url`` can travel in (empty without user info)."""
    creds = url_credentials(url) if url else None
    if url is None or creds is None:
        return []
    user, password = creds
    written = urlsplit(url).netloc.rpartition("@")[0]  # the user info as typed (percent-encoded or not)
    pair = f"{user}:{password}"
    forms = [password, quote(password, safe=""), pair, written, written.partition(":")[2]]
    for raw in (pair, written):
        encoded = base64.b64encode(raw.encode("utf-8")).decode("ascii")
        forms += [encoded, encoded.rstrip("="), base64.urlsafe_b64encode(raw.encode("utf-8")).decode().rstrip("=")]
    if not password:  # a user name alone is the credential
        forms.append(user)
    return forms


__all__ = ["MASK", "Redactor", "mask_patterns", "url_secret_forms"]
