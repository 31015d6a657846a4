"""Browser tests: the app served by `streamlit run`, driven by Playwright in Debian's chromium."""
