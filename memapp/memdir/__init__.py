"""The memory core: read and write agent memory directories exactly as coding agents do.

Pure Python, no Django imports. Each concept is a module of its own, and a module's `__all__`
is its public surface: callers import a name from the module that owns it
(`from memapp.memdir.index import parse_index_entries`), never a name outside that list
(`tests/memdir/test_public_surface.py` checks both). Importing this package loads nothing
else, so a hook that must start in a few milliseconds pays only for the modules it uses.
"""
