"""wiki_index.sources: streaming corpus readers (MediaWiki XML dump, JSONL passages, bundled sample)."""
