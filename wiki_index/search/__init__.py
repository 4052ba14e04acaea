"""Search: BM25 (Lucene through pyserini), dense (FAISS), hybrid fusion, and the index that opens them together."""
