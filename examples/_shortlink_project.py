"""The invented project that the example coding session works on.

The files live in the package (context_governor/demo/_project.py), which the demo
uses too; make_coding_session.py imports them from here.
"""

from context_governor.demo._project import FILES

__all__ = ["FILES"]
