"""``kbdesk mcp``: the desk's knowledge bases over the Model Context Protocol (stdio).

Inside this package ``import mcp`` still reaches the official SDK: kbdesk imports are
absolute (``kbdesk.mcp.server``)."""
