"""Typed errors. Every message is one readable line meant for a person."""


class KbdeskError(Exception):
    """Base class: anything kbdesk raises on purpose."""


class ConfigError(KbdeskError):
    """The config file is unreadable or invalid."""


class StoreError(KbdeskError):
    """The database cannot be opened or used."""


class DatabaseWriteError(StoreError):
    """The database cannot be written at all: the disk is full or reports an error, the
    file turned read-only or damaged. A run stops at it (what finished is kept)."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer kbdesk."""


class NotFoundError(KbdeskError):
    """A knowledge base, document or other object does not exist."""


class ConflictError(KbdeskError):
    """The change would break a uniqueness or consistency rule."""


class InvalidInputError(KbdeskError):
    """An argument is out of range or malformed."""


class SupersededError(ConflictError):
    """Another runner has claimed the document for newer work: this result is dropped."""


class AccessDeniedError(KbdeskError):
    """The user's identity does not allow this (403 Forbidden on the HTTP interface)."""


class NameTakenError(ConflictError):
    """A KB has a document of this file name already, and one of the two came by upload."""


class ReadOnlyDatabaseError(StoreError):
    """A write to a database that is open read-only."""
