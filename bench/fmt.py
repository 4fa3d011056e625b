"""How bench's tables print times and ratios (one place, so every section reads alike)."""

from __future__ import annotations


def ms(ns: float) -> str:
    """Nanoseconds as milliseconds, to three significant figures or so."""
    value = ns / 1e6
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def ratio(x: float) -> str:
    return f"{x:,.1f}×" if x >= 10 else f"{x:.2f}×"
