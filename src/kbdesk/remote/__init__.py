"""Remote knowledge bases: the KBs a team server's ``kbdesk serve`` lets a token read,
searched beside the local ones (docs/REMOTES.md).

- :mod:`~kbdesk.remote.names` — remote names and refs (``team:Product Docs``);
- :mod:`~kbdesk.remote.settings` — one ``[remotes.NAME]`` table of config.toml;
- :mod:`~kbdesk.remote.client` — the HTTP client (TLS, timeouts, the token masked);
- :mod:`~kbdesk.remote.ranking` — what a search ranked and why, and the merge of several;
- :mod:`~kbdesk.remote.federation` — local and remote searches at once, within a budget;
- :mod:`~kbdesk.remote.manage` — adding, testing and removing remotes (both faces).
"""
