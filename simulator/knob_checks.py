"""Checks of single knob values, shared by ``Strategy`` and the mappings that own knobs
(``simulator.mappings``): each raises ``ConfigError`` quoting the knob and its value."""

from __future__ import annotations

import re

import numpy as np

from simulator.errors import ConfigError

VIRTUAL_WARP_SIZES = (1, 2, 4, 8, 16, 32)
# A number as text is read: ASCII digits, no '_' grouping (Python's float() also takes 1_0 and
# full-width digits). Knob values and graph files alike.
NUMBER_TEXT = re.compile(r"[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|nan|inf|infinity)",
                         re.IGNORECASE | re.ASCII)


def plain(value: object) -> object:
    """A numpy scalar as Python's own (np.int64(8) -> 8, np.True_ -> True, np.float32(0.1)
    -> 0.1, its shortest decimal), so that the checks below, which keep bools apart from
    ints, take it and a strategy's text reads the same; anything else unchanged."""
    if isinstance(value, np.floating) and value.dtype.itemsize < 8:
        return float(str(value))
    return value.item() if isinstance(value, np.generic) else value


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    return (is_int(value) or isinstance(value, float)) and value == value


def check_whole(knob: str, value: object) -> None:
    """A whole number written as a float (``w=8.0``, ``chunk=1e3``): refused as what it is,
    not by a bound it meets (probe INPUTS2)."""
    if isinstance(value, float) and value == value and value not in (float("inf"),
                                                                     float("-inf")) and (
            value == int(value)):
        raise ConfigError(f"`{knob}` takes an integer, written without a decimal point or "
                          f"exponent (e.g. {knob}={int(value)}), but got {knob}={value!r}")


def check_width(knob: str, value: object) -> None:
    """A virtual warp's width: a power of two up to 32 (the kernels' widest)."""
    check_whole(knob, value)
    if not is_int(value) or value not in VIRTUAL_WARP_SIZES:
        raise ConfigError(
            f"`{knob} in {VIRTUAL_WARP_SIZES}` (a power of two up to 32) must "
            f"hold, but got {knob}={value!r}"
        )


def check_choice(knob: str, value: object, choices: tuple[str, ...]) -> None:
    """None, or one of ``choices``."""
    if value is not None and value not in choices:
        raise ConfigError(f"`{knob} in {choices}` must hold, but got {knob}={value!r}")


def check_positive(knob: str, value: object) -> None:
    """None, or an integer >= 1."""
    check_whole(knob, value)
    if value is not None and (not is_int(value) or value < 1):
        raise ConfigError(f"`{knob} >= 1` must hold (an integer), but got {knob}={value!r}")


def check_threshold(knob: str, value: object) -> None:
    """None, or an integer >= 0."""
    check_whole(knob, value)
    if value is not None and (not is_int(value) or value < 0):
        raise ConfigError(
            f"`{knob}` must be None or an integer >= 0, but got {knob}={value!r}"
        )
