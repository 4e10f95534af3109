"""The local backend: Infill's own supervised llama-server (finding the binary, running the child, local engines)."""
