"""Bash command analysis: parsing, read-only classification, danger, paths.

A leaf: it imports nothing else of agent_tui.  parse.py turns a command line into simple
commands; classify.py says which are read-only; danger.py which need a person whatever the
rules; paths.py which paths their words name.
"""
