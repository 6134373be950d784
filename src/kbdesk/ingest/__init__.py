"""Document ingestion: extract text from a file, chunk it, embed it, store it."""
