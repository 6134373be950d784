"""Widgets of the kbdesk TUI."""
