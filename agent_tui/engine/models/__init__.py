"""Model clients (docs/architecture.md §9).

base.py: the ModelClient base class, requests, stream events, errors, model limits;
anthropic.py: AnthropicModel over transport.py (httpx2) and sse.py; caching.py: cache_control;
thinking.py: extended thinking per model; providers.py: Bedrock and Vertex;
demo/: the offline demo model.
"""
