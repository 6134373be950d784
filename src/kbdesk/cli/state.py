"""What every command gets from the top-level group (``click.pass_obj``): the global
options, and the desk they name, opened on first use and closed at exit."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbdesk.desk import Desk


class CliState:
    """Holds the global options; opens the desk on first use, closes it at exit."""

    def __init__(self, db: str | None, home: str | None) -> None:
        self.db = db
        self.home = home
        self._desk: Desk | None = None

    def desk(self) -> Desk:
        if self._desk is None:
            from kbdesk.desk import open_desk

            self._desk = open_desk(self.db, home=self.home)
        return self._desk

    def close(self) -> None:
        if self._desk is not None:
            self._desk.close()
            self._desk = None
