"""The speedup-vs-K figure the GPU analyses draw (levers.py, moe26.py): one panel per drafting path, measured
speedup per K as points beside tune's prediction as lines, one colour per acceptance, the break-even at 1.0.

The scripts build ``Panel``s from their rows; this module alone draws (matplotlib, imported when drawing).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALPHA_COLOURS = ((0.85, "tab:blue"), (0.70, "tab:orange"))
"""The two acceptance levels every sweep ran, and their colour in every panel."""


@dataclass(frozen=True)
class Series:
    """One line or set of points: ``style`` is matplotlib's format string ("-", ":", "o")."""

    ks: list[int]
    speedups: list[float]
    style: str
    colour: str
    label: str


@dataclass(frozen=True)
class Panel:
    title: str
    series: list[Series] = field(default_factory=list)


def plot_speedup_panels(panels: list[Panel], path: str, panel_width: float = 6.5) -> None:
    """Draw ``panels`` side by side (``panel_width`` inches each) and save them as a PNG at ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(panel_width * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for series in panel.series:
            ax.plot(series.ks, series.speedups, series.style, color=series.colour, label=series.label)
        _speedup_axes(ax, panel.title)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def _speedup_axes(ax, title: str) -> None:
    """The panel's frame: the break-even line, axis labels, title and legend."""
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("num_speculative_tokens K")
    ax.set_ylabel("decode speedup over the target alone")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
