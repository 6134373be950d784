"""One round of a turn: the request streamed in a reader thread, so the turn can say
"waiting for the model (N s)…" while nothing arrives and stop at once when asked.

:func:`stream_round` yields the answer's text pieces (``str``), :class:`Waiting` events
about once a second while the model is silent (reading a long prompt, loading), and
finally the :class:`~kbdesk.providers.sse.Completion`. A cancel raises
:class:`ChatCancelled` within a quarter of a second, whatever the reader is doing (the
token also closes its connection, which ends the reader).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

from kbdesk.chat.events import Waiting
from kbdesk.providers.chat import CancelToken, ChatCancelled

POLL = 0.25  # seconds between looks at the cancel token while waiting
WAIT_EVERY = 1.0  # seconds between Waiting events


def stream_round(
    client: Any,
    messages: list[dict[str, Any]],
    model: str,
    *,
    tools: Any,
    cancel: CancelToken,
    round_no: int,
    **options: Any,
) -> Iterator[Any]:
    """Items of ``client.stream(...)`` (text, then the Completion) with Waiting events
    in between while the model is silent; ``options`` go to ``client.stream``."""
    box: queue.Queue[tuple[str, Any]] = queue.Queue()

    def read() -> None:
        try:
            for item in client.stream(messages, model, tools=tools, cancel=cancel, **options):
                box.put(("item", item))
            box.put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the turn's thread, which re-raises it
            box.put(("error", exc))

    threading.Thread(target=read, name="kbdesk-chat-round", daemon=True).start()
    quiet_since = time.monotonic()
    last_said = quiet_since
    while True:
        try:
            kind, value = box.get(timeout=POLL)
        except queue.Empty:
            cancel.check()
            now = time.monotonic()
            if now - last_said >= WAIT_EVERY:
                last_said = now
                yield Waiting(round(now - quiet_since, 1), round_no)
            continue
        if kind == "end":
            return
        if kind == "error":
            if cancel.cancelled:
                raise ChatCancelled("stopped") from None
            raise value
        cancel.check()
        quiet_since = last_said = time.monotonic()
        yield value
