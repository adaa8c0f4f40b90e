"""Hypothesis draws of strategy knobs generated from the mapping registry
(``simulator.mappings``): each registered mapping with values of the knobs it owns drawn from
its ``knob_samples``, so a newly registered mapping is drawn without editing any test."""

from hypothesis import strategies as st

from simulator import ConfigError
from simulator import Strategy
from simulator.mappings import MAPPINGS
from simulator.mappings import Mapping


def valid(params: dict) -> bool:
    try:
        Strategy.from_params(params)
    except ConfigError:
        return False
    return True


def mapping_knobs(mapping: Mapping, **extra: st.SearchStrategy) -> st.SearchStrategy[dict]:
    """Knob dicts of ``mapping``: each knob it owns drawn from its samples, plus ``extra``
    knobs (draws of their own), keeping the combinations a Strategy accepts."""
    fields = {"mapping": st.just(mapping.name)}
    fields.update({knob: st.sampled_from(values)
                   for knob, values in mapping.knob_samples.items()})
    fields.update(extra)
    return st.fixed_dictionaries(fields).filter(valid)


def registry_knobs(**extra: st.SearchStrategy) -> st.SearchStrategy[dict]:
    """``mapping_knobs`` of every registered mapping."""
    return st.one_of(*(mapping_knobs(mapping, **extra) for mapping in MAPPINGS.values()))
