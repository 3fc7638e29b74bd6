"""The memory core: read and write agent memory directories exactly as coding agents do.

Pure Python, no Django imports. Each concept lives in its own private module; this package
re-exports the public surface.
"""
