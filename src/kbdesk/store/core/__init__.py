"""The store core: kbdesk's records written once, over an engine and an access policy.

Composed repositories (:mod:`.compose`): the embedding cache (:mod:`.cache`), and the
chat's conversations, personas, notes and their own rows (:mod:`.chat`, :mod:`.personas`,
:mod:`.notes`, :mod:`.own_rows`), each given the store's :class:`~.compose.Base` and,
where the engines differ, an engine object of its own. The KB records, documents,
claims, transfer and lookup (:mod:`.records`, :mod:`.documents`, :mod:`.claiming`,
:mod:`.bulk`, :mod:`.facts`) are still classes each store inherits (:class:`~.parts.StoreParts`);
what an engine stores differently below them is its :class:`~.parts.ChunkStorage`
(``store.chunks``) and :class:`~.parts.TransferStorage` (``store.transfer``), not hooks.
"""
