"""The service checks (a package, so that their modules never collide with other tests')."""
