"""The search index beside the SPEC index: its file, its matching and its ranking (rank=relevance)."""
