"""The command-line face: parses arguments, calls the core, prints. Nothing more."""
