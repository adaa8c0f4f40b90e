"""What a `warpsweep check --repair` cut short leaves for the next: per study, the files of
another run's rows it had found, marked before it dropped the rows that told them."""

from __future__ import annotations

import json

from tuner.results.location import Location
from tuner.results.location import shell_word
from tuner.results.schema import QUARANTINE

# removed once the journals are set right by them
OTHER_RUNS = f"{QUARANTINE}/other-runs.json"


def mark_other_runs(loc: Location, other_runs: dict[str, set[str]]) -> None:
    """Add ``other_runs`` (per study, files of another run's rows) to the mark."""
    marked = marked_other_runs(loc)
    for key, files in other_runs.items():
        if files:  # (a study of none would be marked without a word of it in `check`)
            marked.setdefault(key, set()).update(files)
    if not marked:
        return
    loc.write_bytes(loc.path(OTHER_RUNS), json.dumps(  # (paths within the results)
        {k: sorted(f[len(loc.root) + 1:] for f in v) for k, v in sorted(marked.items())},
        indent=1).encode())


def marked_other_runs(loc: Location) -> dict[str, set[str]]:
    """The files of other runs a repair cut short had found (per study)."""
    text = loc.read_text(loc.path(OTHER_RUNS))
    try:
        marked = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(marked, dict):
        return {}
    return {k: {loc.path(f) for f in v if isinstance(f, str)} for k, v in marked.items()
            if isinstance(k, str) and isinstance(v, list)}


def cut_short_repair(loc: Location, study: str) -> str | None:
    """A line naming the repair cut short that left ``study``'s rows unsettled (another run's
    rows found, not yet set aside), else None: a resume would rebuild its journal from two
    runs' draws (review CR20)."""
    files = marked_other_runs(loc).get(study)
    if not files:
        return None
    return (f"study {study}: a `warpsweep check --repair` was cut short after finding another "
            f"run's rows in it ({', '.join(sorted(files)[:3])}{', ...' if len(files) > 3 else ''}"
            f"; {loc.path(OTHER_RUNS)}): run `warpsweep check {shell_word(loc.text)} --repair` "
            "again")
