"""The Governor: one object per conversation, governing before every model call.

* ``governor``: the Governor itself (its output is always govern()'s for the same input);
* ``late``: results whose report is made after the call returns (the exact counts of a
  step decided on byte bounds, a first call's exact run in a thread of its own);
* ``probe``: a cheaper "the pipeline would leave this alone" for an appending step.
"""

from ._governor import Governor

__all__ = ["Governor"]
