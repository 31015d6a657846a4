"""App tests: the real app in-process through Streamlit's AppTest, with no child process and no real server."""
