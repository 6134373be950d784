"""The web as a source: pages by URL, whole sites by their links or sitemap, re-checked
with conditional requests (see docs/FORMATS.md, "Web pages")."""
