"""Integration tests: real servers and child processes (chroma run, llama.cpp, the fault server, python -m)."""
