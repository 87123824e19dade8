"""The agent: runs inside the user's interpreter, beside their script.

It may import only the standard library, torch, and pynvml when present — never pygls or
the rest of vramlens — because it runs in whatever environment the user's script needs.
``launch.py`` is executed by path; its siblings are imported relative to it.
"""
