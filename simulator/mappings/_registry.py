"""The registry of lane mappings by name."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from simulator.errors import ConfigError

if TYPE_CHECKING:
    from simulator.mappings._base import Mapping

# name -> mapping, in registration order (the built-in ones first: the order error messages
# and ``simulator.strategy.MAPPINGS`` list them in)
MAPPINGS: dict[str, Mapping] = {}
_derived: dict[str, object] = {}  # what is worked out from the registry, until it changes


def register(mapping: Mapping) -> Mapping:
    """Add ``mapping`` under its name (refused if the name is taken)."""
    if mapping.name in MAPPINGS:
        raise ValueError(f"a mapping named {mapping.name!r} is registered already")
    MAPPINGS[mapping.name] = mapping
    _derived.clear()
    return mapping


def unregister(name: str) -> None:
    """Remove the mapping named ``name``."""
    del MAPPINGS[name]
    _derived.clear()


@contextmanager
def registered(mapping: Mapping) -> Iterator[Mapping]:
    """``mapping`` registered for the ``with`` block only (a test's own mapping)."""
    register(mapping)
    try:
        yield mapping
    finally:
        unregister(mapping.name)


def mapping_names() -> tuple[str, ...]:
    """The registered mappings' names, in registration order."""
    names = _derived.get("names")
    if names is None:
        names = _derived["names"] = tuple(MAPPINGS)
    return names


def knob_owners() -> dict[str, tuple[str, ...]]:
    """Each knob some mapping owns, with the names of the mappings that own it."""
    owners = _derived.get("owners")
    if owners is None:
        owners = {}
        for name, mapping in MAPPINGS.items():
            for knob in mapping.knobs:
                owners[knob] = (*owners.get(knob, ()), name)
        _derived["owners"] = owners
    return owners


def mapping_of(name: str) -> Mapping:
    """The mapping named ``name`` (``ConfigError`` naming the registered ones if none)."""
    try:
        return MAPPINGS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"`mapping in {mapping_names()}` must hold, but got {name!r}") from None
