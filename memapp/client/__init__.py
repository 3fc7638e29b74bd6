"""memhub-agent: the command-line client a local coding agent uses to reach a memhub server.

Pure Python (standard library, plus tqdm for the progress bar and the memory core
`memapp.memdir`); it never imports Django, so it runs on any machine with the package
installed, against a server elsewhere.
"""
