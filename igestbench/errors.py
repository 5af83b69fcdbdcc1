"""The exception tree of igestbench.

Every error a user can meet derives from :class:`Sv7Error`, so the CLI can turn any of them into
one clear line instead of a traceback::

    Sv7Error
    ├── UsageError                 bad command line, configuration or input file
    ├── IcatError                  an IcatException from a catalogue (see igestbench.icat.faults)
    │   ├── IcatBadParameter           BAD_PARAMETER
    │   ├── IcatInternal               INTERNAL
    │   ├── IcatInsufficientPrivileges INSUFFICIENT_PRIVILEGES
    │   ├── IcatNoSuchObject           NO_SUCH_OBJECT_FOUND
    │   ├── IcatObjectAlreadyExists    OBJECT_ALREADY_EXISTS
    │   ├── IcatSession                SESSION
    │   ├── IcatValidation             VALIDATION
    │   └── IcatNotImplemented         NOT_IMPLEMENTED
    ├── TransportError             the catalogue could not be reached or did not speak ICAT
    └── NexusError                 a NeXus/HDF5 file is unreadable or lacks required metadata

The ICAT fault classes live in :mod:`igestbench.icat.faults`, which is the one place where
fault types are mapped to classes in both directions.
"""

from __future__ import annotations


class Sv7Error(Exception):
    """Base of every error igestbench raises on purpose."""


class UsageError(Sv7Error):
    """The user asked for something that cannot be done as asked (bad option, bad file)."""


class TransportError(Sv7Error):
    """The catalogue could not be reached, or what answered was not an ICAT SOAP service."""


class NexusError(Sv7Error):
    """A NeXus file could not be read into catalogue metadata."""
