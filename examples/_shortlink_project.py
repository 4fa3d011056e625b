"""The invented project that the example coding session works on.

The files are package data (context_governor/demo/project/, read by
context_governor/demo/_project.py), which the demo uses too; make_coding_session.py
imports them from here.
"""

from context_governor.demo._project import project_files

FILES = project_files()

__all__ = ["FILES"]
