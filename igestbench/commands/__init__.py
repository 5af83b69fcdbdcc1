"""The subcommands of ``sv7``: one module each, with ``add_parser(sub)`` and ``cmd_<name>(args)``.

``igestbench.cli`` builds the parser from them and dispatches; each module imports what its
command needs inside ``cmd_<name>`` so that ``sv7 --help`` and a command's start stay fast.
"""
