"""The service checks (a package, so that their modules never collide with other tests').

PYTEST_DONT_REWRITE (this file only; the checks' modules are rewritten as usual): igestbench's
pytest entry point marks this package for rewriting in every session, and a process that runs
the checks twice (``run_verification``) has imported it already.
"""
