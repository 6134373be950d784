"""``kbdesk serve``: knowledge bases over HTTP (FastAPI on uvicorn), bearer tokens,
the same desk as every other face. Importing :mod:`kbdesk` never imports this."""

from kbdesk.serve.app import create_app

__all__ = ["create_app"]
