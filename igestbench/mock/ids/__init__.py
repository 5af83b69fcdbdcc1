"""The local ICAT Data Service (ids.server 2.1.1's calls) that ``sv7 serve`` serves at ``/ids/``."""
