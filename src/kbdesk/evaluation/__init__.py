"""Retrieval-quality evaluation on BEIR-layout datasets (bench/ drives it)."""
