"""Storage: the DuckDB page store (the only place with SQL), its writer, title lookups and derived columns."""
