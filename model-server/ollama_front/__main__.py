"""Entry point: `python -m ollama_front ...` or `python path/to/ollama_front ...`."""

if __package__ in (None, ""):
    # Started as a folder path: sys.path[0] is this folder; put its parent there
    # instead, so the package imports by its name and its modules shadow nothing.
    import os
    import sys

    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    from ollama_front.server import main
else:
    from .server import main

main()
