"""One colour per site across the whole page, and one dash per interface.

Every chart draws a site's lines (and the bars of the catalogue a site operates) in the same
colour, so a reader who has found ELETTRA's colour in one chart finds it in the next. Sites take
the colours in campaign order; catalogues whose operator is not a site of the campaign (the
built-in one, an ad-hoc campaign's) take the next ones. The palette is matplotlib's tab10,
then the light half of tab20, then tab20b: 40 colours.

The dash says what was measured: SOAP solid, REST dashed; a second SOAP client flavour dotted;
``sv7 swarm``'s runs dash-dotted. Lines are drawn SOAP first, so a REST line on the same values
leaves the SOAP line visible through its gaps instead of hiding it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PALETTE = (
    # tab10
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
    # tab20, the light half
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
    "#dbdb8d", "#9edae5",
    # tab20b
    "#393b79", "#5254a3", "#6b6ecf", "#9c9ede", "#637939", "#8ca252", "#b5cf6b", "#cedb9c",
    "#8c6d31", "#bd9e39", "#e7ba52", "#e7cb94", "#843c39", "#ad494a", "#d6616b", "#e7969c",
    "#7b4173", "#a55194", "#ce6dbd", "#de9ed6",
)
#: the colour of a line whose owner the page does not know
NEUTRAL = "#4b5566"

#: the dash of a line (plot.py draws it) and of its swatch in the page's key
SOLID, DASHED, DOTTED, DASHDOT = "solid", "dashed", "dotted", "dashdot"
#: drawing order: solid lines first, so dashed ones on the same values leave them visible
DASH_ORDER = {SOLID: 0, DOTTED: 1, DASHDOT: 2, DASHED: 3}
#: the page's key draws a swatch as a CSS border, which has no dash-dot: its nearest look
CSS_DASH = {SOLID: "solid", DASHED: "dashed", DOTTED: "dotted", DASHDOT: "double"}


def page_colours(names: Iterable[str]) -> dict[str, str]:
    """A colour for each name, in order (repeating after 40: a campaign of more sites than
    that tells lines apart by their key and dash only)."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(dict.fromkeys(names))}


def dash_for(interface: str, flavour_rank: int = 0, swarm: bool = False) -> str:
    """How a line of ``interface`` is dashed: SOAP solid (a second flavour dotted), REST
    dashed; a swarm run's line dash-dotted."""
    if swarm:
        return DASHDOT
    if interface == "rest":
        return DASHED
    return DOTTED if flavour_rank else SOLID


def colour_of(colours: Mapping[str, str], name: str | None) -> str:
    return colours.get(name or "", NEUTRAL)


def paler(colour: str, towards_white: float = 0.5) -> str:
    """The same hue, lighter: a second kind of line of one site (the scale chart draws an
    ordinary member's queries beside root's) keeps the site's colour family."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * towards_white):02x}" for c in rgb)
