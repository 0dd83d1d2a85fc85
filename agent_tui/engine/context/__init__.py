"""What the model sees of the conversation (docs/architecture.md §7).

window.py: token accounting, the compaction settings and thresholds, /context's breakdown;
pipeline.py: tool-result budget -> microcompact -> autocompact before every request;
compaction.py: the model-written summary that replaces the history.
"""
