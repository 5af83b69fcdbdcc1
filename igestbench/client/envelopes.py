"""SOAP request envelopes rendered once per operation from the operation table.

Both the lean load path (every call) and the zeep flavour (its bulk calls) fill these templates
with escaped text and beans rendered by :mod:`igestbench.icat.soapxml`.
"""

from __future__ import annotations

from igestbench.icat.operations import Operation
from igestbench.icat.soapxml import ICAT_NS, SOAP_ENV_NS, XSI_NS

_ENVELOPE = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    f'<S:Envelope xmlns:S="{SOAP_ENV_NS}" xmlns:tns="{ICAT_NS}" xmlns:xsi="{XSI_NS}">'
    "<S:Body><tns:{name}>{params}</tns:{name}></S:Body></S:Envelope>"
)


def envelope_template(op: Operation) -> str:
    """The request of ``op`` with one ``{param}`` placeholder per parameter.

    A scalar's placeholder is the text inside its element; an entity parameter's (``bean``,
    ``beans``) and login's ``credentials`` stand for the whole element(s), rendered by the caller.
    """
    params = []
    for p in op.params:
        if p.type in ("tns:entityBaseBean", None):
            params.append(f"{{{p.name}}}")
        else:
            params.append(f"<{p.name}>{{{p.name}}}</{p.name}>")
    # str.replace, not format: the result is itself the template a call formats.
    return _ENVELOPE.replace("{name}", op.name).replace("{params}", "".join(params))
