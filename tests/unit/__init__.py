"""Unit tests: in-process, with no Streamlit AppTest, no child process and no real server (a model may load)."""
