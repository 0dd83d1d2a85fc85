"""The offline demo model: a scripted agent that uses the real tools.

model.py: DemoModel, streaming raw API events at a realistic pace; plan.py: the answer to a
request; requests.py: what a request asks for; init.py: the demo's /init.
"""
