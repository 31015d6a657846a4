"""Small Streamlit and Plotly views. Each takes plain data from `core` and draws it; none chunks or retrieves."""
