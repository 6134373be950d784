"""Messages the TUI posts from worker threads."""

from __future__ import annotations

from textual.message import Message


class IngestProgress(Message):
    """Something changed in the ingestion of one KB: drain its tracker.

    It carries no state (the tracker has it), so a newer tick for the same KB replaces
    any pending copy in the queue.
    """

    def __init__(self, kb_id: str) -> None:
        super().__init__()
        self.kb_id = kb_id

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, IngestProgress) and message.kb_id == self.kb_id
