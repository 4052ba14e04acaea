"""Parsing: wikitext to plain text and sections, the links/infobox prepass, sentence splitting and chunking."""
