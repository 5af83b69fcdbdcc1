"""matplotlib's SVG made small enough for a page of ninety charts, and drawn the same.

matplotlib writes every coordinate with six decimals, its whole font fallback list and full
style on every label and line, and a nest of ``<g id=…>`` that nothing refers to: a 30 x 30
campaign's 90 charts were 11 MB. :func:`compact_svg` rewrites that text in one place (matplotlib
has no precision or style-sharing setting) without changing what is drawn:

* coordinates to a tenth of a point (1/720 in: below a screen pixel at the size shown);
* each distinct style once, as a CSS class of the page (a dozen styles make ~25,000 marks);
* a collection's clip and shared style on its group; each line's own colour and dash on it;
* a collection's path data relative (``l13.7-10.7``), a dot as ``h0``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_NO_ROTATION = re.compile(r' transform="rotate\(-0 [^"]*\)"')
#: attributes that hold coordinates, written by matplotlib with six decimals
_COORDINATES = re.compile(r'\b(d|x|y|transform)="([^"]*)"')
_DECIMAL = re.compile(r"-?\d+\.\d+")
_PATH_COMMAND = re.compile(r"([MLCQZz]) ")
#: the rule matplotlib puts in every SVG; as the page's CSS on ``svg`` it is inherited instead
_DEFAULT_STYLE = re.compile(
    r"\s*<defs>\s*<style type=\"text/css\">\*\{stroke-linejoin: round; stroke-linecap: butt\}"
    r"</style>\s*</defs>")
#: a collection's group: one path per line, dots or band, each with its clip and full style
_COLLECTION = re.compile(r'(<g id="(?:Line|Path|Poly)Collection_\d+">)((?:\s*<path [^>]*/>)+)')
#: the ids matplotlib gives every group for its own bookkeeping: nothing refers to them
_GROUP_ID = re.compile(r' id="(?:figure|axes|patch|line2d|text|xtick|ytick|matplotlib\.axis|'
                       r'LineCollection|PathCollection|PolyCollection|legend)_\d+"')
_INDENT = re.compile(r"\n\s+<")
_GROUP_TAG = re.compile(r"<g>\n?|<g |</g>\n?")
#: what a path's default dash offset and a tick mark's repeated stroke say: nothing
_NOTHING = re.compile(r' stroke-dashoffset="0"|(?<=<use )(xlink:href="[^"]*" x="[^"]*" y="[^"]*")'
                      r' style="([^"]*)"')
#: path data of only moves, lines and closes: what collections draw
_POLYLINE = re.compile(r"[MLz\d .\-]+")
_TOKEN = re.compile(r"[MLz]|-?[\d.]+")
_STYLE = re.compile(r' style="([^"]*)"')
_ITEM = re.compile(r'\s*<path d="([^"]*)" clip-path="([^"]*)" style="([^"]*)"/>')
#: properties that SVG children inherit from their group (``opacity`` does not)
_INHERITED = frozenset({"fill", "fill-opacity", "stroke", "stroke-opacity", "stroke-width",
                        "stroke-linecap", "stroke-linejoin", "stroke-dasharray",
                        "stroke-dashoffset"})


@dataclass(frozen=True)
class CompactSvg:
    svg: str
    #: the CSS classes the SVG uses and their declarations, for the page's stylesheet
    styles: tuple[tuple[str, str], ...]


def style_class(declarations: str) -> str:
    """A class name for a style: the same style gets the same name in every chart."""
    return "s" + hashlib.blake2b(declarations.encode(), digest_size=3).hexdigest()


def compact_svg(svg: str) -> CompactSvg:
    """matplotlib's SVG (``svg.fonttype: none``), a fifth of its size and drawn the same."""
    def coordinates(match: re.Match[str]) -> str:
        value = _DECIMAL.sub(_one_decimal, match[2])
        if match[1] == "d":
            value = _PATH_COMMAND.sub(r"\1", " ".join(value.split()))
        return f'{match[1]}="{value}"'

    styles: dict[str, str] = {}

    def to_class(match: re.Match[str]) -> str:
        # matplotlib repeats its whole font fallback list on every label; the page names it
        declarations = _css({k: v for k, v in _style(match[1]).items() if k != "font-family"})
        name = style_class(declarations)
        styles[name] = declarations
        return f' class="{name}"'

    svg = _DEFAULT_STYLE.sub("", _NO_ROTATION.sub("", svg), count=1)
    svg = _COLLECTION.sub(_shared_style, _COORDINATES.sub(coordinates, svg))
    svg = _INDENT.sub("\n<", _GROUP_ID.sub("", svg))
    svg = _unwrap_bare_groups(_NOTHING.sub(_marker_use, svg))
    return CompactSvg(_STYLE.sub(to_class, svg), tuple(sorted(styles.items())))


def _marker_use(match: re.Match[str]) -> str:
    """A marker's ``<use>`` repeats the stroke its definition has; only its fill is its own
    (a filled or a hollow star share one definition), so that is all it keeps."""
    if match[1] is None:
        return ""
    fill = _style(match[2]).get("fill")
    return match[1] + (f' fill="{fill}"' if fill else "")


def _unwrap_bare_groups(svg: str) -> str:
    """Without its ids, most of matplotlib's ``<g>`` nesting has no attribute: take it out."""
    out, bare, at = [], [], 0
    for tag in _GROUP_TAG.finditer(svg):
        if tag[0] == "<g ":
            bare.append(False)
            continue
        if tag[0].startswith("</g>") and not bare.pop():
            continue
        if tag[0].startswith("<g>"):
            bare.append(True)
        out.append(svg[at:tag.start()])
        at = tag.end()
    out.append(svg[at:])
    return "".join(out)


def _shared_style(match: re.Match[str]) -> str:
    """A collection's clip and the style its paths share, said once on its group.

    Hundreds of lines of one chart differ only in colour and dash; with the clip and the rest
    of the style on every path they were most of a chart's bytes.
    """
    items = [(m[1], m[2], _style(m[3])) for m in _ITEM.finditer(match[2])]
    if not items or "".join(m[0] for m in _ITEM.finditer(match[2])) != match[2]:
        return match[0]  # not the shape matplotlib writes: leave it as it is
    clips = {clip for _, clip, _ in items}
    shared = dict.fromkeys(k for k in items[0][2] if k in _INHERITED)
    common = {k: items[0][2][k] for k in shared
              if all(style.get(k) == items[0][2][k] for _, _, style in items)}
    if len(clips) != 1:
        return match[0]
    head = match[1][:-1] + f' clip-path="{clips.pop()}" style="{_css(common)}">'
    body = "".join(
        # its own colour and dash as attributes, shorter than a style
        f'\n<path d="{_short_path(d)}"'
        + "".join(f' {k}="{v}"' for k, v in style.items() if k not in common) + "/>"
        for d, _, style in items)
    return head + body


def _short_path(d: str) -> str:
    """Path data of moves and lines in relative steps; a zero-length line (a dot) as h0."""
    if not _POLYLINE.fullmatch(d):
        return d
    tokens = _TOKEN.findall(d)
    out: list[str] = []
    x = y = start_x = start_y = 0  # in tenths of a point: exact integers
    last = ""
    i = 0
    while i < len(tokens):
        command = tokens[i]
        if command == "z":
            out.append("z")
            x, y, last, i = start_x, start_y, "z", i + 1
            continue
        nx, ny = round(float(tokens[i + 1]) * 10), round(float(tokens[i + 2]) * 10)
        i += 3
        if not out:
            # a leading "m" is absolute, and the pairs after it relative lines
            out.append(f"m{_tenths(nx)} {_tenths(ny)}".replace(" -", "-"))
            start_x, start_y, last = nx, ny, "l"
        elif command == "L" and (nx, ny) == (x, y):
            out.append("h0")
            last = "h"
        else:
            letter = "m" if command == "M" else "l"
            step = f"{_tenths(nx - x)} {_tenths(ny - y)}".replace(" -", "-")
            if letter == last and not step.startswith("-"):
                step = " " + step
            out.append(step if letter == last else letter + step)
            last = "l"  # pairs after m or l are lines
            if command == "M":
                start_x, start_y = nx, ny
        x, y = nx, ny
    return "".join(out)


def _tenths(value: int) -> str:
    sign, value = ("-" if value < 0 else ""), abs(value)
    whole, tenth = divmod(value, 10)
    if not tenth:
        return f"{sign}{whole}"
    return f"{sign}{whole if whole else ''}.{tenth}"


def _style(text: str) -> dict[str, str]:
    """A style attribute's declarations, as matplotlib ("a: b; c: d") or _css wrote them."""
    pairs = (item.split(":", 1) for item in text.split(";") if ":" in item)
    return {name.strip(): value.strip() for name, value in pairs}


def _css(style: dict[str, str]) -> str:
    return ";".join(f"{k}:{v}" for k, v in style.items())


def _one_decimal(match: re.Match[str]) -> str:
    text = f"{float(match[0]):.1f}"
    text = text[:-2] if text.endswith(".0") else text
    return "0" if text == "-0" else text


