"""GPU device models: the handful of machine figures the warp cost model needs, with presets."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from simulator.errors import ConfigError
from simulator.yamldoc import parse_yaml


@dataclass(frozen=True)
class Device:
    """One GPU as the cost model sees it; every figure is per device unless it says per SM.

    ``simd_width`` lanes execute a warp instruction per pass, so one scheduler issues a warp
    instruction every ``warp_size / simd_width`` cycles; an SM has ``schedulers`` of them.
    GW's options (paper 003): ``cluster_issue`` skips the passes of a SIMD-phase step whose
    ``simd_width`` lanes are all idle; ``scalar_unit`` runs warp-uniform SISD-phase
    instructions on a scalar pipeline beside the SIMD one.

    L2: ``l2_bytes`` of cache (0: none) serve a launch's sectors at ``l2_latency_cycles`` and
    ``l2_bandwidth_gbs`` (0: no bound) with the hit rate ``l2_hit_rate`` gives;
    ``atomic_cycles`` is the L2's issue interval for atomics on one address (same-address
    atomics serialise there).
    ``block_launch_cycles``: from a block's dispatch to its warps' first instruction (each
    block of a launch pays it; a resident grid once). ``instruction_cycles``: scheduler
    cycles per pass of a warp instruction (1: one per cycle; calibration may scale it).
    ``atomic_round_trips``: memory round trips a thread waits for the value an atomic
    returns (a queue grab, a push's slot on the tail, atomicMin's old value): the L2
    serves atomics, and on the H100 a returning atomic takes about two loads' round trips
    (a worklist launch expanding one hub vertex, ``bench/launch_fidelity.py``).
    ``bounds_norm``: a launch takes the p-norm of its issue, load/store, latency, memory and
    atomics bounds (inf, the presets': their maximum) before the launch overhead: with p = 3
    the bounds overlap only in part, which the H100's launch times show (how each norm
    ranks configurations on graphs left out of the fit: ``python bench/fidelity.py``).
    ``serial_virtual_warps``: the virtual warps of a warp issue a sweep's SISD phase (status
    checks, staging, vertex setup) one after another, not in lockstep: from Volta on, a vwarp
    kernel must sync its lanes with ``__syncwarp(mask)`` on its own lane mask, and the K masks
    of a warp split it (on the H100 a clean vwarp sweep costs per warp about 14 + 4 K SM
    cycles, K = 32 / W, ``bench/gpu/results/h100_launches_bfs.parquet`` on USA-road-FLA).
    Off on the presets; on in a device file (``serial_virtual_warps = true``).
    ``bench/fidelity.py`` weighs it against the other choices inside each held-out fold.
    ``staggered_waves``: an SSSP or CC sweep's blocks beyond the first wave of resident ones
    start one by one, in order, as the earlier wave's blocks finish (the block scheduler), so
    a block reads what the blocks that started a store's time before it lowered, rather than
    waves starting all at once (``simulator.asynchronous.StaggeredWaves``): for sweeps whose
    threads or virtual warps take one vertex each in lockstep, statically, without unrolling
    (thread without donation, vwarp with chunk 1). Off on the presets (a staggered sweep of
    one vertex a thread is relaxed event by event, 1.4-2.5x slower); left out of a device's
    digest while off. Static chunk walks (vwarp with chunk > 1) start their blocks
    staggered on every device (``StaggeredChunkWalk``: their walks are timed event by event
    anyway); WER, WER+, dynamic, donating and unrolled sweeps keep waves that start at once.
    ``cached_value_reads``: a chunk walk's slots read their own values (SSSP's distances,
    CC's labels) through the SM's L1, as plain loads go on GPUs whose L1 caches global loads
    (Fermi, Volta on): the first read of a sector fills it, later reads hit that copy, stale
    to other warps' stores landed since (``simulator.asynchronous.l1_reads``; on an H200,
    reading them from L2 instead takes CC's chunk walks to the model without it). On by
    default and on every preset, and left out of a device's digest while on (the presets'
    digests, and the studies keyed by them, stay as they were); ``false`` in a device file
    for a GPU whose L1 does not cache global loads (the GT200 has none; Kepler to Pascal
    skip it by default).
    """

    name: str
    warp_size: int = 32
    simd_width: int = 32
    sms: int = 132
    schedulers: int = 4
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    max_threads_per_block: int = 1024
    clock_ghz: float = 1.755
    dram_bandwidth_gbs: float = 3350.0
    dram_latency_cycles: int = 600
    sector_bytes: int = 32
    lsu_sectors_per_cycle: float = 4.0
    atomic_cycles: float = 4.0
    launch_overhead_us: float = 3.0
    host_roundtrip_us: float = 8.0
    block_launch_cycles: float = 0.0
    instruction_cycles: float = 1.0
    l2_bytes: int = 0
    l2_latency_cycles: float = 0.0
    l2_bandwidth_gbs: float = 0.0
    atomic_round_trips: int = 2
    serial_virtual_warps: bool = False
    scalar_unit: bool = False
    cluster_issue: bool = False
    bounds_norm: float = math.inf
    staggered_waves: bool = False
    cached_value_reads: bool = True

    def __post_init__(self) -> None:
        check_device_name(self.name)
        for f in dataclasses.fields(self):  # numpy scalars as the Python numbers they hold
            value = getattr(self, f.name)
            if hasattr(value, "item") and not isinstance(value, str):
                object.__setattr__(self, f.name, value.item())
        # the types a device file must have: built in Python, sms=0.5 had passed, then
        # crashed deep in the timing model
        check_device_fields({f.name: getattr(self, f.name) for f in dataclasses.fields(self)},
                            f"device {self.name!r}")
        positive = (
            "warp_size simd_width sms schedulers max_warps_per_sm max_blocks_per_sm "
            "max_threads_per_block clock_ghz dram_bandwidth_gbs sector_bytes "
            "lsu_sectors_per_cycle instruction_cycles atomic_round_trips"
        ).split()
        for field in positive:
            if not getattr(self, field) > 0:
                raise ConfigError(f"device {self.name!r}: `{field} > 0` must hold")
            if getattr(self, field) < _SMALLEST:  # 1e-300 GHz had timed runs at 1e301 us
                raise ConfigError(f"device {self.name!r}: {field}={getattr(self, field)!r} "
                                  f"is below {_SMALLEST:g}, which no GPU's figure is")
        for field in ("dram_latency_cycles", "atomic_cycles", "launch_overhead_us",
                      "host_roundtrip_us", "block_launch_cycles", "l2_bytes",
                      "l2_latency_cycles",
                      "l2_bandwidth_gbs"):
            if getattr(self, field) < 0:
                raise ConfigError(f"device {self.name!r}: `{field} >= 0` must hold")
        if self.l2_bytes > 0 and not self.l2_latency_cycles >= _SMALLEST:  # free hits
            raise ConfigError(f"device {self.name!r}: an L2 (l2_bytes={self.l2_bytes}) needs "
                              f"`l2_latency_cycles >= {_SMALLEST:g}` (l2_bytes = 0: no L2)")
        if 0 < self.l2_bandwidth_gbs < _SMALLEST:  # a divisor: 1e-300 timed runs at 1e302 us
            raise ConfigError(f"device {self.name!r}: l2_bandwidth_gbs={self.l2_bandwidth_gbs!r}"
                              f" is below {_SMALLEST:g}, which no GPU's figure is (0: no bound)")
        if not self.bounds_norm >= 1:
            raise ConfigError(f"device {self.name!r}: `bounds_norm >= 1` must hold (inf: the "
                              f"maximum of the bounds), got {self.bounds_norm}")
        if self.sector_bytes % 8:  # a sector holds whole PageRank doubles (probe NUMERIC)
            raise ConfigError(f"device {self.name!r}: sector_bytes must be a multiple of 8 "
                              f"(got {self.sector_bytes}; PageRank's ranks are 8-byte "
                              "doubles; GPUs' sectors are 32 bytes)")
        if self.warp_size & (self.warp_size - 1):
            raise ConfigError(f"device {self.name!r}: warp_size must be a power of two")
        if self.simd_width > self.warp_size or self.warp_size % self.simd_width:
            raise ConfigError(
                f"device {self.name!r}: simd_width must divide warp_size={self.warp_size}, "
                f"got {self.simd_width}"
            )

    @property
    def issue_rate(self) -> float:
        """Warp instructions an SM issues per cycle at full occupancy."""
        return self.schedulers * self.simd_width / self.warp_size

    @property
    def dram_bytes_per_cycle(self) -> float:
        """DRAM bandwidth expressed in bytes per core clock cycle."""
        return self.dram_bandwidth_gbs / self.clock_ghz

    def l2_hit_rate(self, working_set_bytes: float) -> float:
        """Fraction of sectors served by L2 when a launch re-reads ``working_set_bytes``: all
        of them while the set fits, else the share of it that stays resident."""
        if self.l2_bytes <= 0:
            return 0.0
        if working_set_bytes <= self.l2_bytes:
            return 1.0
        return self.l2_bytes / working_set_bytes

    def round_trip_cycles(self, hit_rate: float) -> float:
        """Latency of one dependent memory access at an L2 hit rate."""
        if hit_rate <= 0:
            return float(self.dram_latency_cycles)
        return hit_rate * self.l2_latency_cycles + (1 - hit_rate) * self.dram_latency_cycles

    def us(self, cycles: float) -> float:
        """Core clock cycles to microseconds."""
        return cycles / (self.clock_ghz * 1e3)

    def cycles(self, us: float) -> float:
        """Microseconds to core clock cycles."""
        return us * self.clock_ghz * 1e3


# Fields whose value may be fractional although the preset's is an integer (a calibrated
# device file scales them, ``tuner/calibration/calibrate.py``).
_FRACTIONAL = ("dram_latency_cycles",)
# Fields a value of inf is meaningful for (every other number must be finite).
_MAY_BE_INFINITE = ("bounds_norm",)
# Upper bounds past which no GPU (or simulation) makes sense: caught before arrays of that
# size are allocated.
_AT_MOST = {
    "warp_size": 1024, "simd_width": 1024, "sms": 1 << 16, "schedulers": 64,
    "max_warps_per_sm": 1 << 12, "max_blocks_per_sm": 1 << 12,
    "max_threads_per_block": 1 << 14, "sector_bytes": 4096, "atomic_round_trips": 1 << 10,
}
# No figure of a GPU comes near this; a number beyond it (a 400-digit TOML integer) had
# overflowed the cost model's floats into a traceback
_LARGEST = 1e15
# nor goes below this: a rate or cost of 1e-300 had timed runs past every float's range
_SMALLEST = 1e-9
MAX_BASE_DEPTH = 16
# The presets: one TOML device file each, shipped in the package (``simulator/devices``), named
# by its file. A preset file with a ``base`` is a calibration of that (datasheet) preset:
# ``h100`` is the H100 fitted by ``warpsweep calibrate`` on ``h100-datasheet``.
PRESET_DIR = Path(__file__).resolve().parent / "devices"


def _field_kind(field: dataclasses.Field) -> str:
    kind = field.type if isinstance(field.type, str) else field.type.__name__
    return "float" if field.name in _FRACTIONAL else kind


def check_device_fields(data: dict, where: str) -> None:
    """ConfigError naming ``where`` and the field unless every value has its field's type:
    bools TOML/YAML booleans, integers integers, numbers int or float (finite), the name a
    string; and within the field's upper bound."""
    fields = {f.name: f for f in dataclasses.fields(Device)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"{where}: unknown field(s) {unknown}; allowed: {sorted(fields)}"
        )
    for name, value in data.items():
        kind = _field_kind(fields[name])
        shown = f"{value!r} ({type(value).__name__})"
        if kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: field `{name}` must be true or false (a boolean, "
                                  f"unquoted), got {shown}")
            continue
        if kind == "str":
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{where}: field `{name}` must be a non-empty string, "
                                  f"got {shown}")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: field `{name}` must be a number, got {shown}")
        if kind == "int" and not isinstance(value, int):
            raise ConfigError(f"{where}: field `{name}` must be an integer, got {shown}")
        if isinstance(value, float) and (value != value or (
                math.isinf(value) and name not in _MAY_BE_INFINITE)):
            raise ConfigError(f"{where}: field `{name}` must be a finite number, got {shown}")
        if abs(value) > _LARGEST and not (isinstance(value, float) and math.isinf(value)):
            raise ConfigError(f"{where}: field `{name}` must be at most {_LARGEST:g} in "
                              f"magnitude (no GPU's figure is larger), got {_shown_number(value)}")
        if name in _AT_MOST and value > _AT_MOST[name]:
            raise ConfigError(f"{where}: field `{name}` must be at most {_AT_MOST[name]}, "
                              f"got {value!r}")


def _shown_number(value: int | float) -> str:
    """A number as a message shows it: a huge integer by its size, not its digits."""
    if isinstance(value, int) and abs(value) > 10**20:
        return f"an integer of {len(str(abs(value)))} digits"
    return repr(value)


def _check_consistent(device: Device, where: str) -> None:
    """Cross-field rules a real GPU keeps."""
    if device.max_threads_per_block < device.warp_size or (
            device.max_threads_per_block % device.warp_size):
        raise ConfigError(
            f"{where}: field `max_threads_per_block` ({device.max_threads_per_block}) must be "
            f"a multiple of warp_size ({device.warp_size}): a block holds whole warps"
        )
    if device.max_threads_per_block > device.max_warps_per_sm * device.warp_size:
        raise ConfigError(
            f"{where}: field `max_threads_per_block` ({device.max_threads_per_block}) exceeds "
            f"max_warps_per_sm x warp_size ({device.max_warps_per_sm * device.warp_size}): "
            "a block must fit on one SM"
        )


def _read_device_table(path: Path) -> dict:
    if path.is_dir():
        raise ConfigError(f"device file {path} is a directory, not a .toml/.yaml file")
    if not path.is_file():
        raise ConfigError(f"device file {path} does not exist")
    try:
        text = path.read_text(encoding="utf-8-sig")  # (a byte-order mark, as editors write)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"device file {path}: cannot read it: {exc}") from None
    if path.suffix != ".toml":  # YAML: a repeated field or an octal-looking number refused
        data = parse_yaml(text, f"device file {path}").data
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"device file {path}: cannot parse: {' '.join(str(exc).split())}"
                              ) from None
        except RecursionError:
            raise ConfigError(f"device file {path}: cannot parse: nested too deeply") from None
    if not isinstance(data, dict):
        raise ConfigError(f"device file {path}: expected a table of device fields")
    if "device" in data:
        if not isinstance(data["device"], dict):
            raise ConfigError(f"device file {path}: `device` must be a table of device fields")
        beside = sorted(k for k in data if k != "device")
        if beside:  # had been dropped without a word (a top-level name among them)
            raise ConfigError(f"device file {path}: field(s) {beside} beside the `device` "
                              "table; put every field in it, or drop the table")
        data = data["device"]
    if any(not isinstance(k, str) for k in data):
        raise ConfigError(f"device file {path}: field names must be strings")
    if not data:  # an empty TOML file had run as the fields' defaults, which no GPU has
        raise ConfigError(f"device file {path}: no device fields in it (`base = \"h100\"` "
                          "starts from a preset)")
    return dict(data)


# Fields added after devices' digests were first stored: left out of the digest while at
# these values (their defaults when added), so a device's digest, and the studies keyed by
# it, stay as they were.
_DIGEST_NEUTRAL = {"staggered_waves": False, "cached_value_reads": True}


def device_digest(device: Device) -> str:
    """A short hash of every field of ``device``: equal digests, equal cost figures."""
    import hashlib
    import json

    fields = {k: v for k, v in dataclasses.asdict(device).items()
              if k not in _DIGEST_NEUTRAL or v != _DIGEST_NEUTRAL[k]}
    text = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_device_file(path: str | Path, _seen: tuple[Path, ...] = ()) -> Device:
    """A user device from a TOML or YAML file; ``base = "h100"`` (a preset, or another device
    file, relative to this one) starts from it. Every field is type-checked
    (:func:`check_device_fields`). A leading ``~`` is the home, as tune reads it for every
    verb (simulate had not; review CR29)."""
    try:
        path = Path(path).expanduser()
    except RuntimeError:  # ~user of no user here, or no home known
        raise ConfigError(f"device file {str(path)!r}: its home directory is not known "
                          "here") from None
    data = _read_device_table(path)
    where = f"device file {path}"
    base_name = data.pop("base", None)
    check_device_fields(data, where)
    if base_name is None:  # named below: by its field, else by its file (with the hint)
        try:  # (a temp file's stem had been checked before the file's own name)
            base = Device(name=data["name"] if isinstance(data.get("name"), str)
                          else "device")
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    elif not isinstance(base_name, str) or not base_name.strip():
        raise ConfigError(f"{where}: field `base` must be a preset name or a device file path, "
                          f"got {base_name!r}")
    elif base_name in _preset_names():
        base = _load_preset(base_name)
    else:
        try:
            base_path = Path(base_name).expanduser()
        except RuntimeError:  # ~user of no user here
            raise ConfigError(f"{where}: field `base` {base_name!r}: no such home directory "
                              "here") from None
        if not base_path.is_absolute() and (path.parent / base_path).exists():
            base_path = path.parent / base_path  # relative to this file, else to the cwd
        resolved = path.resolve()
        if base_path.resolve() in (*_seen, resolved):
            chain = " -> ".join(str(p) for p in (*_seen, resolved, base_path.resolve()))
            raise ConfigError(f"{where}: field `base` makes a cycle: {chain}")
        if len(_seen) >= MAX_BASE_DEPTH:
            raise ConfigError(f"{where}: field `base`: more than {MAX_BASE_DEPTH} files deep")
        if not base_name.endswith((".toml", ".yaml", ".yml")):
            raise ConfigError(f"{where}: field `base` {base_name!r} is neither a preset "
                              f"({', '.join(_preset_names())}) nor a .toml/.yaml device file")
        if not base_path.exists():  # named from here: the error had named the base alone
            raise ConfigError(f"{where}: field `base` {base_name!r} is no preset, and no file "
                              f"{base_path} exists")
        base = load_device_file(base_path, (*_seen, resolved))
    if "name" not in data:
        field = 'name = "..."' if path.suffix == ".toml" else 'name: ...'
        check_device_name(path.stem, f"{where}: ",
                          f" from the file's name: give the file a `{field}` field")
        data["name"] = path.stem
    try:
        device = dataclasses.replace(base, **data)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    _check_consistent(device, where)
    return device


DEVICE_FILE_SUFFIXES = (".toml", ".yaml", ".yml")
MAX_DEVICE_NAME = 64
_DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")


def check_device_name(name: object, where: str = "", hint: str = "") -> None:
    """Refuse a device name that is no simple word: it names results partitions and study
    files, so a path in it would lead them out of the results directory."""
    if not isinstance(name, str) or not _DEVICE_NAME.fullmatch(name) or ".." in name:
        raise ConfigError(f"{where}the device's name must be a simple word (an ASCII letter "
                          f"or digit, then letters, digits, '.', '_', '+', '-'; it names "
                          f"results and study files), got {name!r}{hint}")
    if name.lower().endswith(DEVICE_FILE_SUFFIXES):  # `--device NAME` would read a file
        raise ConfigError(f"{where}the device's name must not end as a device file does "
                          f"({', '.join(DEVICE_FILE_SUFFIXES)}): `--device {name}` names a "
                          f"file; got {name!r}{hint}")
    if len(name) > MAX_DEVICE_NAME:
        raise ConfigError(f"{where}the device's name must be at most {MAX_DEVICE_NAME} "
                          f"characters (it names results and study files), got "
                          f"{len(name)}{hint}")


def device_name(device: str) -> str:
    """The name results record for a ``--device`` value: a device file's ``name`` (the file
    read and checked), else the value itself (a preset's or any recorded device's name)."""
    if isinstance(device, str) and device.endswith(DEVICE_FILE_SUFFIXES):
        return load_device_file(device).name
    return device


def get_device(device: str | Device) -> Device:
    """A preset by name, a device file by path, or the Device itself."""
    if isinstance(device, Device):
        return device
    if not isinstance(device, str | os.PathLike):  # (a dict is unhashable: `in` would raise)
        raise ConfigError(f"device must be a preset name, a device file or a Device, got "
                          f"{type(device).__name__} {device!r}")
    device = os.fsdecode(device)
    if device in DEVICES:
        return DEVICES[device]
    if device.endswith(DEVICE_FILE_SUFFIXES):
        return load_device_file(device)
    raise ConfigError(
        f"unknown device {device!r}; presets: {', '.join(DEVICES)} (or a .toml/.yaml file)"
    )


@functools.cache
def _preset_names() -> tuple[str, ...]:
    """Names of the shipped presets (their files' stems), sorted."""
    return tuple(sorted(p.stem for p in PRESET_DIR.glob("*.toml")))


@functools.cache
def _load_preset(name: str) -> Device:
    """A shipped preset from its file; its ``name`` must be the file's stem (one namespace)."""
    path = PRESET_DIR / f"{name}.toml"
    device = load_device_file(path)
    if device.name != name:
        raise ConfigError(f"preset file {path}: name {device.name!r} differs from the file's "
                          f"stem {name!r}")
    return device


def _preset_base(name: str) -> str | None:
    """The ``base`` a preset's file names (None for a datasheet preset)."""
    base = _read_device_table(PRESET_DIR / f"{name}.toml").get("base")
    return base if isinstance(base, str) else None


# Every preset by name: what ``get_device(name)`` returns, in every verb and on every worker.
DEVICES: dict[str, Device] = {name: _load_preset(name) for name in _preset_names()}
# Calibrated presets and the datasheet preset each was fitted on (h100 -> h100-datasheet).
DATASHEETS: dict[str, str] = {
    name: base for name in DEVICES if (base := _preset_base(name)) is not None
}


def datasheet_of(name: str) -> str:
    """The datasheet preset a calibrated preset was fitted on (``h100`` -> ``h100-datasheet``),
    else ``name`` itself: a calibration starts from the datasheet model, never from a fit."""
    return DATASHEETS.get(name, name)


def gpu_name(name: str) -> str:
    """The GPU a device name stands for in measured results: a datasheet preset's calibrated
    preset (``h100-datasheet`` -> ``h100``), else ``name`` itself."""
    return next((calibrated for calibrated, base in DATASHEETS.items() if base == name), name)
