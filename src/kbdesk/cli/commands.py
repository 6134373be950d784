"""Every command of ``kbdesk``: where it lives and its one-line help, and the top-level
help's own text. Plain data (no click), so ``kbdesk --help`` can be answered from here
without importing click (:mod:`kbdesk.cli.help_page`)."""

from __future__ import annotations

# Every command: where it lives and its one-line help. A command's module is imported only
# when it runs (or its own --help is asked for), so `kbdesk --version`, `--help` and shell
# completion start in a blink; tests/test_cli_startup.py checks this table against the
# commands themselves.
COMMANDS: dict[str, tuple[str, str]] = {
    "add": (
        "kbdesk.cli.ingest:add_command",
        "Add files, folders (recursively) and web pages (URLs) to KB; unchanged ones are skipped.",
    ),
    "ask": ("kbdesk.cli.chat:ask_command", "Ask QUESTION; the answer streams to stdout, then its sources."),
    "chat": (
        "kbdesk.cli.chat:chat_command",
        "Chat in the terminal: a new conversation, the latest (--continue) or CONVERSATION (id, prefix or title).",
    ),
    "conversations": (
        "kbdesk.cli.conversations:conversations_group",
        "Saved conversations: list, show, rename, delete, KB toggles, retrieval, filters, sources.",
    ),
    "conv": ("kbdesk.cli.conversations:conv_alias", ""),  # hidden: short for conversations
    "doc": ("kbdesk.cli.documents:doc_group", "One document: its status, or removing it."),
    "docs": ("kbdesk.cli.documents:docs_command", "List the documents of KB with status, chunks, size and error."),
    "doctor": (
        "kbdesk.cli.doctor:doctor_command",
        "Report paths, SQLite, the vector backend in use and why, FTS5, OCR (Tesseract, its version and "
        "languages), and whether the database file is sound (exit 1 when something is wrong).",
    ),
    "export": (
        "kbdesk.cli.transfer:export_command",
        "Copy KB (documents, text, chunks, vectors, files) to another store.",
    ),
    "import": (
        "kbdesk.cli.transfer:import_command",
        "Copy KB from another store into this one (the same rules as export).",
    ),
    "kb": ("kbdesk.cli.kb:kb_group", "Manage knowledge bases."),
    "mcp": (
        "kbdesk.cli.serve:mcp_command",
        "Run an MCP server over stdio (for editors, agents and desktop assistants).",
    ),
    "model": (
        "kbdesk.cli.model:model_group",
        "Chat and embedding models: what the providers offer, and which model each role uses ([roles.chat] "
        "and [roles.embedding] in config.toml; Settings → Model roles in the TUI).",
    ),
    "note": (
        "kbdesk.cli.chat_manage:note_group",
        "Short notes, searchable by keyword and by meaning (note_search in chat).",
    ),
    "persona": (
        "kbdesk.cli.chat_manage:persona_group",
        "Personas: a system prompt, a chat model and bound KBs (with auto-search).",
    ),
    "pg": ("kbdesk.cli.pg:pg_group", "Team servers: prepare a PostgreSQL database and make logins kbdesk users."),
    "project": ("kbdesk.cli.chat_manage:project_group", "Projects: group conversations and bind KBs to all of them."),
    "provider": (
        "kbdesk.cli.providers:provider_group",
        "Embedding and chat providers (any OpenAI-compatible server, or in-process embeddings).",
    ),
    "remote": (
        "kbdesk.cli.remotes:remote_group",
        "Team servers (kbdesk serve) whose knowledge bases are searched beside the local ones, read-only.",
    ),
    "rebuild": (
        "kbdesk.cli.ingest:rebuild_command",
        "Re-chunk and re-embed every document of KB that has stored text.",
    ),
    "resume": (
        "kbdesk.cli.ingest:resume_command",
        "Finish documents that a crash or kill left half-way (all KBs, or KB).",
    ),
    "search": (
        "kbdesk.cli.search:search_command",
        "Search one or more knowledge bases (KB... names or ids) for QUERY.",
    ),
    "team": (
        "kbdesk.cli.teams:team_group",
        "Your teams on a team server: their knowledge bases, and (for their admins) their members.",
    ),
    "serve": (
        "kbdesk.cli.serve:serve_command",
        "Serve the knowledge bases over HTTP under /api (OpenAPI at /api/docs).",
    ),
    "token": (
        "kbdesk.cli.tokens:token_group",
        "Tokens for kbdesk serve: each acts as one user, with its permissions.",
    ),
    "watch": (
        "kbdesk.cli.ingest:watch_command",
        "Keep KB in step with FOLDER (or a URL's pages) until Ctrl-C: new, changed and deleted files.",
    ),
}
HIDDEN = {"conv"}


# The top-level group's help and its options' help (kbdesk.cli.main builds the group from them).
CLI_HELP = """kbdesk: knowledge bases in one SQLite file, searched by meaning and by keyword.

Without a command, opens the terminal UI."""
DB_HELP = "Database file, or a postgresql:// URI (default: kbdesk.db in the data directory; env KBDESK_DB)."
HOME_HELP = "Put config, data and cache under DIR (env KBDESK_HOME)."
