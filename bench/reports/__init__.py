"""The reports of the bigger benches (Markdown rendered from their result JSON, and the docs they
rewrite), kept apart from the scripts so those hold only what they measure."""
