"""What is known about the model a request is for, as data every layer reads.

* ``target``: who the request is for (``Target``: provider, model) and the model facts
  that change the rules (Claude's prefill, Gemini's thought signatures, chat-template
  families), with the provider names (``PROVIDERS``);
* ``policy``: how a provider's list is repaired (``Policy``, read by the repair stages);
* ``windows``: the context windows of well-known models and model families;
* ``prices``: prompt-cache prices per provider and model family.

Each is one table of one fact; nothing here imports anything above ``errors``.
"""

__all__: list[str] = []
