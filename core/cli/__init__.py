"""The command line behind `python -m core`: its flags (`flags.py`) and its commands (`commands.py`)."""
