"""Built-in themes: data files (TOML), shipped with the package as `agent_tui.themes`."""
