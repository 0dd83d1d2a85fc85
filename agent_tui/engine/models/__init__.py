"""Model clients (docs/architecture.md §9).

base.py: the ModelClient base class, errors, model limits; stream.py: the neutral request and
stream events every provider translates to; facts.py: what is known of each model (window,
output cap, thinking, price) by provider, and from settings;
anthropic.py: AnthropicModel over transport.py (httpx2) and sse.py; caching.py: cache_control;
thinking.py: extended thinking per model; providers.py: Bedrock and Vertex, and which provider;
openai.py: OpenAIChatModel (OpenAI-compatible chat completions); demo/: the offline demo model.
"""
