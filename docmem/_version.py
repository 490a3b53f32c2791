"""The version of agent-docmem, written once here (pyproject.toml reads it for the build)."""

__version__ = "0.1.0"
