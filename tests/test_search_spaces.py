"""Search space files: shipped spaces, conditionals, grids, Optuna suggestions and bad files."""

from __future__ import annotations

import itertools
from pathlib import Path

import optuna
import pytest

from search_spaces.loader import available_spaces
from search_spaces.loader import load_space
from search_spaces.loader import parse_space
from search_spaces.loader import sample_configs
from simulator import Strategy
from simulator.errors import ConfigError
from simulator.yamldoc import parse_yaml

VWARP_ONLY = ("w", "chunk", "distribution")


def space_from(text: str, name: str = "test"):
    return parse_space(parse_yaml(text, f"{name}.yaml"), default_name=name)


def test_shipped_spaces_are_the_issue_families():
    assert {"vwarp", "driven", "wer", "adaptive", "all"} <= set(available_spaces())


@pytest.mark.parametrize("name", available_spaces())
def test_shipped_space_validates_or_names_what_the_simulator_lacks(name):
    space = load_space(name)
    unknown = [k for k in space.knobs if k not in Strategy.KNOBS]
    try:
        space.validate()
    except ConfigError as exc:
        msg = str(exc)
        assert unknown or "rejected by the simulator" in msg, msg
        if unknown:
            assert f"knob {unknown[0]!r}" in msg and "known knobs" in msg
            assert f"{name}.yaml:" in msg  # the file and line of the knob
    else:
        assert not unknown


def test_vwarp_space_validates_against_the_simulator():
    load_space("vwarp").validate()


def test_vwarp_grid_honours_conditions_and_log_ranges():
    space = load_space("vwarp")
    configs = list(space.configs())
    assert len(configs) == space.grid_size() == 5 + 6 * 12 * 2 * 5
    thread = [c for c in configs if c["mapping"] == "thread"]
    assert len(thread) == 5 and all(not set(VWARP_ONLY) & set(c) for c in thread)
    chunks = sorted({c["chunk"] for c in configs if "chunk" in c})
    assert chunks == [2**k for k in range(12)]
    for c in configs:
        Strategy.from_params(c)  # every grid point is a valid strategy


def test_optuna_suggestions_honour_conditionals():
    space = load_space("vwarp")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    seen = set()
    for _ in range(60):
        trial = study.ask()
        config = space.suggest(trial)
        seen.add(config["mapping"])
        present = set(VWARP_ONLY) & set(config)
        assert present == (set(VWARP_ONLY) if config["mapping"] == "vwarp" else set())
        # nothing drawn that is not in the config; the chunk is drawn as its exponent
        assert space.config_params(trial.params) == config
        assert ("log2_chunk" in trial.params) == ("chunk" in config)
        if "chunk" in config:
            assert 1 <= config["chunk"] <= 2048
        study.tell(trial, 1.0)
    assert seen == {"thread", "vwarp"}


def test_powers_of_two_range_is_drawn_as_its_exponent():
    space = space_from("""
params:
  chunk: {int: [4, 64], powers_of_two: true}
""")
    (chunk,) = space.params
    assert chunk.grid_values() == (4, 8, 16, 32, 64)
    assert [c["chunk"] for c in space.configs()] == [4, 8, 16, 32, 64]
    assert space.optuna_params({"chunk": 16}) == {"log2_chunk": 4}
    assert space.config_params({"log2_chunk": 4}) == {"chunk": 16}
    with pytest.raises(ConfigError, match="powers of two, got 12"):
        space.optuna_params({"chunk": 12})
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=1, n_startup_trials=5))
    drawn = set()
    for _ in range(30):
        trial = study.ask()
        config = space.suggest(trial)
        drawn.add(config["chunk"])
        assert trial.distributions["log2_chunk"] == optuna.distributions.IntDistribution(2, 6)
        study.tell(trial, abs(config["chunk"] - 16))
    assert drawn <= {4, 8, 16, 32, 64} and len(drawn) > 1
    study.enqueue_trial(space.optuna_params({"chunk": 32}))
    assert space.suggest(study.ask()) == {"chunk": 32}
    assert space.digest != space_from("params:\n  chunk: {int: [4, 64], log: true}\n").digest


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{int: [1, 48], powers_of_two: true}", "powers of two as its ends, got 48"),
        ("{int: [0, 8], powers_of_two: true}", "powers of two as its ends, got 0"),
        ("{float: [1.0, 8.0], powers_of_two: true}", "applies only to int ranges"),
        ("{int: [1, 8], powers_of_two: true, log: true}", "cannot be combined"),
        ("{int: [1, 8], powers_of_two: yes please}", "must be true or false"),
        ("{choices: [1, 2], powers_of_two: true}", "applies only to int ranges"),
    ],
)
def test_bad_powers_of_two_range_is_named(spec, message):
    with pytest.raises(ConfigError, match=message):
        space_from(f"params:\n  chunk: {spec}\n")


# where the filter below finds a knob's first configuration only after nearly every corner of
# the space (about 5 s each: mapping=adaptive and unroll's conditions come last in `all`); the
# same conditional generation is checked on the space's other conditional knobs
WALK_OF_EVERY_CORNER = {("all", "adaptive_min_w"), ("all", "adaptive_max_w"),
                        ("all", "adaptive_stat"), ("all", "unroll")}


@pytest.mark.parametrize("name", available_spaces())
def test_probing_a_knob_enumerates_only_configurations_that_set_it(name):
    # validate and for_algorithm probe each knob value among the corner configurations that
    # set it; they are generated directly, in the order a filter over all of them gives
    space = load_space(name)
    for target in space.params:
        if (name, target.name) in WALK_OF_EVERY_CORNER:
            continue
        for value in target.corner_values():
            def values_of(p, target=target, value=value):
                return (value,) if p is target else p.corner_values()
            every = (c for c in space._enumerate(values_of) if target.name in c)
            direct = list(itertools.islice(space._corners_setting(target, value), 50))
            assert direct == list(itertools.islice(every, 50)), (target.name, value)


def test_probing_follows_conditions_of_conditions():
    space = space_from("""
params:
  driven: [topology, data, spatial]
  push: {choices: [atomic, chunked], when: {driven: [data, spatial]}}
  batch: {choices: [1, 2, 3], when: {push: chunked}}
  partition: {int: [2, 64], when: {driven: spatial}}
""")
    batch = space.params[2]
    configs = list(space._corners_setting(batch, 2))
    assert configs == [{"driven": "data", "push": "chunked", "batch": 2},
                       {"driven": "spatial", "push": "chunked", "batch": 2, "partition": 2},
                       {"driven": "spatial", "push": "chunked", "batch": 2, "partition": 64}]


def test_conditional_on_list_fixed_and_value_params():
    space = space_from("""
fixed: {mapping: vwarp}
params:
  w: [1, 2]
  chunk: {int: [1, 8], when: {w: [2]}}
  block_size: {value: 128, when: {w: 1}}
""")
    configs = list(space.configs())
    assert {"mapping": "vwarp", "w": 1, "block_size": 128} in configs
    assert sum(1 for c in configs if c["w"] == 2) == 8
    assert space.optuna_params({"mapping": "vwarp", "w": 2, "chunk": 3}) == {"w": 2, "chunk": 3}
    assert all(c["mapping"] == "vwarp" for c in sample_configs(space, 20))


def test_digest_depends_on_content_not_comments():
    a = space_from("params:\n  w: [1, 2]  # a comment\n")
    b = space_from("# other\nparams:\n  w: [1, 2]\n")
    c = space_from("params:\n  w: [1, 4]\n")
    assert a.digest == b.digest != c.digest


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bogus: 1\nparams: {w: [1]}\n", "test.yaml:1: bogus: unknown key 'bogus'"),
        ("params:\n  w: {choices: [1], foo: 2}\n", "test.yaml:2: params.w.foo: unknown key"),
        ("params:\n  w: {choices: [1], int: [1, 2]}\n", "give exactly one of"),
        ("params:\n  w: {int: [4, 2]}\n", "`low <= high` must hold, but got (low=4, high=2)"),
        ("params:\n  w: {int: [0, 8], log: true}\n", "a log range needs low > 0"),
        ("params:\n  w: {int: [1, 8], log: true, step: 2}\n", "cannot be combined"),
        ("params:\n  w: {choices: []}\n", "non-empty list"),
        ("params:\n  w: {choices: [1, 1]}\n", "duplicate values"),
        ("params:\n  w: [1]\n  w: [2]\n", "test.yaml:3: params.w: duplicate key 'w'"),
        # YAML 1.1 reads these as other numbers than written (010 is 8)
        ("params:\n  w: [1, 010]\n", "test.yaml:2: params.w.1: 010 reads as an octal number"),
        # conditions that never hold had been blamed on the simulator (probe SPACE)
        ("params:\n  w: {choices: [2, 4], when: {mapping: []}}\n".replace(
            "params:\n", "params:\n  mapping: [vwarp, thread]\n"),
         "test.yaml:3: params.w.when.mapping: `when: {mapping: []}` lists no value"),
        # it names the study's files: a long one had stopped the run with ENAMETOOLONG
        ("name: " + "b" * 220 + "\nparams:\n  w: [8]\n",
         "test.yaml:1: name: a space's name must be at most 64 characters"),
        ("params:\n  partition: {int: [2, 1:04]}\n", "reads as a base-60 number"),
        # PyYAML's "could not determine a constructor for the tag ...merge" (probe SPACES)
        ("params:\n  w: {<<: {choices: [2, 4]}}\n",
         "test.yaml:2: params.w: a YAML merge key (<<) is not read here"),
        ("params:\n  chunk: {int: [1, 8], when: {w: 2}}\n  w: [2]\n",
         "test.yaml:2: params.chunk.when.w: `when` refers to 'w'"),
        ("params:\n  w: [1, 2]\n  chunk: {int: [1, 8], when: {w: 3}}\n",
         "w can never be 3"),
        ("params:\n  w: {int: [1, 8], grid: [16]}\n", "grid value 16 is not a int in [1, 8]"),
        ("params:\n  w: {choices: [1], log: true}\n", "`log` applies only to int and float"),
        ("fixed: {w: 1}\nparams:\n  w: [2]\n", "both fixed and a param"),
        ("params: {}\n", "the space sets no knob"),
        ("params:\n  - w\n", "`params` must be a mapping"),
        # at the file's line and column, not PyYAML's "<unicode string>" (probe 01)
        ("params:\n  w: [1, 2\n", "test.yaml:3:1: invalid YAML: expected ',' or ']'"),
        ("- 1\n", "a search space must be a mapping"),
        # a `when` on a range knob a value it never takes (a traceback in the run before)
        ("params:\n  partition: {int: [2, 64], log: true}\n  w: {choices: [4], when: "
         "{partition: 1000}}\n", "partition can never be 1000 (its range: int [2, 64])"),
        ("params:\n  chunk: {int: [1, 2048], powers_of_two: true}\n  w: {choices: [4], "
         "when: {chunk: 3}}\n", "chunk can never be 3 (its range: int [1, 2048], powers"),
        # bounds a sampler cannot draw from (TPE's OverflowError after the references ran),
        # a step that leaves one value (Optuna shrank the range with a warning)
        ("params:\n  x: {float: [0.1, .inf]}\n", "`float` bounds must be finite"),
        ("params:\n  w: {int: [2, 10], step: 100}\n", "`step` 100 is wider than the range"),
        # a step that does not divide the range: Optuna lowered its top with a UserWarning
        # (no file or line), so the top could never be drawn (probe 01)
        ("params:\n  s: {float: [0.001, 0.02], step: 0.007}\n",
         "`step` 0.007 does not divide the range [0.001, 0.02]: 0.02 could never be drawn "
         "(the last step reaches 0.015)"),
        ("params:\n  w: {int: [2, 11], step: 2}\n", "`step` 2 does not divide the range"),
        ("params:\n  x: {float: ['1e-3', 1]}\n", "a number in quotes is text"),
    ],
)
def test_bad_space_files_name_key_and_line(text, expected):
    with pytest.raises(ConfigError) as info:
        space_from(text)
    assert expected in str(info.value)


def test_grid_needs_finite_values():
    space = space_from("params:\n  x: {float: [0.1, 0.5]}\n")
    with pytest.raises(ConfigError, match=r"test.yaml:2: space 'test': param 'x' is a float "
                                          r"range; give it `grid"):
        space.grid_size()
    wide = space_from("params:\n  x: {int: [1, 1000]}\n")
    with pytest.raises(ConfigError, match="1000 integer values"):
        wide.grid_size()
    gridded = space_from("params:\n  x: {float: [0.1, 0.5], grid: [0.1, 0.5]}\n")
    assert gridded.grid_size() == 2


def test_unknown_knob_is_refused_with_its_line(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("fixed: {mapping: vwarp}\nparams:\n  w: [8]\n  warp_magic: [1, 2]\n")
    space = load_space(str(path))
    with pytest.raises(ConfigError) as info:
        space.validate()
    msg = str(info.value)
    assert f"{path}:4" in msg and "'warp_magic'" in msg and "known knobs: mapping, w" in msg


def test_value_rejected_in_every_combination_is_refused():
    space = space_from("params:\n  mapping: [vwarp, warpdrive]\n")
    with pytest.raises(ConfigError, match=r"test.yaml:2: .*mapping='warpdrive' is rejected"):
        space.validate()


def test_the_knob_named_is_the_one_whose_value_is_refused():
    # every probe of mapping='vwarp' held w=3, so mapping had been named, at its line (probe 01)
    space = space_from("params:\n  mapping: {choices: [vwarp]}\n  w: {choices: [3]}\n")
    with pytest.raises(ConfigError, match=r"test.yaml:3: .*w=3 is rejected .*got w=3"):
        space.validate()


def test_a_fixed_knob_refused_in_every_probe_is_the_one_named():
    """A bad fixed adaptive_stat had been named as "line 6: chunk=1 is rejected" (SPACES)."""
    space = space_from("fixed:\n  mapping: adaptive\n  adaptive_stat: nonsense\n"
                       "params:\n  chunk: {choices: [1, 2]}\n")
    with pytest.raises(ConfigError, match=r"fixed adaptive_stat='nonsense' is rejected") as e:
        space.validate()
    assert "chunk" not in str(e.value)


def test_value_invalid_only_in_some_combinations_is_allowed():
    # A combination the simulator rejects becomes a failed trial with its reason later; only
    # a value rejected in every combination is a load error.
    def build(config):
        if config["w"] == 32 and config["chunk"] > 1:
            raise ConfigError("w=32 needs chunk=1")
        return config

    space = space_from("params:\n  w: [8, 32]\n  chunk: {int: [1, 64], log: true}\n")
    space.validate(build=build, known=("w", "chunk"))
    never = space_from("params:\n  w: [32]\n  chunk: {int: [2, 64], log: true}\n")
    with pytest.raises(ConfigError, match="w=32 is rejected .*: w=32 needs chunk=1"):
        never.validate(build=build, known=("w", "chunk"))


def test_applicability_is_checked_by_the_simulator():
    space = space_from("params:\n  mapping: [thread, vwarp]\n  w: [8]\n")
    with pytest.raises(ConfigError, match="mapping='thread' is rejected"):
        space.validate()  # w is vwarp-only: the space needs `when: {mapping: vwarp}`


def test_unknown_space_and_unreadable_file(tmp_path):
    with pytest.raises(ConfigError, match="unknown search space 'nope'.*vwarp"):
        load_space("nope")
    with pytest.raises(ConfigError, match="cannot read"):
        load_space(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bin.yaml"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not a UTF-8"):
        load_space(str(bad))


def test_a_grid_beyond_max_grid_is_refused_before_any_configuration_is_built():
    """The grid sampler had listed and built every configuration of a 1.1M-configuration
    space (84 s, 720 MB) to run 5 trials."""
    from tuner.tuning.spec import Objective
    from tuner.tuning.spec import StudySpec
    from tuner.tuning.spec import budget_of

    knobs = "\n".join(f"  k{i}: {{int: [1, 1024], powers_of_two: true}}" for i in range(6))
    space = space_from(f"params:\n{knobs}\n")
    spec = StudySpec(graph="rmat:scale=7", algorithm="bfs", device="h100", space="test",
                     trials=5, sampler="grid", objective=Objective.parse("time_us"),
                     sources=1, seed=0, references=True)
    with pytest.raises(ConfigError, match="more than 200000 grid configurations"):
        budget_of(spec, space)


def test_a_powers_of_two_range_caps_the_budget_as_choices_do():
    """A space whose only knob takes one power of two had been tried once, then answered 50
    repeats until the study ended early: a finite space caps the budget."""
    from tuner.tuning.spec import Objective
    from tuner.tuning.spec import StudySpec
    from tuner.tuning.spec import budget_of

    space = space_from("fixed: {mapping: vwarp}\nparams:\n  chunk: {int: [4, 16], "
                       "powers_of_two: true}\n")
    assert space.finite
    spec = StudySpec(graph="rmat:scale=7", algorithm="bfs", device="h100", space="test",
                     trials=50, sampler="tpe", objective=Objective.parse("time_us"),
                     sources=1, seed=0, references=True)
    assert budget_of(spec, space) == 3
    assert not space_from("params:\n  x: {float: [0.1, 0.5]}\n").finite


def test_a_space_no_configuration_of_which_applies_is_refused_naming_the_algorithm():
    """A fixed knob PageRank lacks (driven=temporal) had let every trial fail, exit 0."""
    from tuner.tuning.plan import applicable_to

    space = space_from("fixed: {driven: temporal}\nparams:\n  switch_to_topology: "
                       "{float: [0.1, 1.0]}\n")
    with pytest.raises(ConfigError, match="no configuration of it applies to pagerank "
                                          r"\(its fixed knobs: driven=temporal\)"):
        space.for_algorithm(applicable_to("pagerank"), "pagerank")
    assert space.for_algorithm(applicable_to("sssp"), "sssp").knobs == space.knobs


def test_a_searched_knob_the_algorithm_lacks_is_named_not_the_first_knob():
    """PageRank has no unroll: the refusal had named the mapping's line, "no value of mapping
    applies", whose values were all fine (probe SP)."""
    from tuner.tuning.plan import applicable_to

    space = space_from("params:\n  mapping: {choices: [thread, vwarp]}\n"
                       "  unroll: {choices: [2, 4]}\n")
    with pytest.raises(ConfigError, match=r":3: space .*: pagerank takes none of unroll's "
                                          r"values here \(2, 4; without unroll, mapping would "
                                          r"apply\)"):
        space.for_algorithm(applicable_to("pagerank"), "pagerank")


def test_the_policy_space_finds_its_shipped_policy_from_any_directory(tmp_path, monkeypatch):
    """Its `policies/bfs-h100.json` is relative: from another directory every trial had
    failed ("does not exist"), exit 0, in the same study as good runs."""
    from simulator import simulate

    monkeypatch.chdir(tmp_path)
    result = simulate("rmat:scale=8,seed=1", "bfs", "policy=policies/bfs-h100.json", "h100")
    assert result.time_us > 0


def test_select_train_does_not_overwrite_a_file_that_is_no_model(tmp_path):
    """`--model notes.json` naming an unrelated file had replaced it without a word."""
    from tuner.selection.selector_model import save_model

    victim = tmp_path / "notes.json"
    victim.write_text('{"mine": 1}\n')
    with pytest.raises(ConfigError, match="exists and is not a warpsweep selector model"):
        save_model(None, victim)
    assert victim.read_text() == '{"mine": 1}\n'


def test_a_shipped_space_name_is_the_shipped_space_whatever_the_directory_holds(
        tmp_path, monkeypatch):
    """A file or directory named like a shipped space in the working directory had been read
    in its stead (a file silently, under the shipped name) or refused (probe SP)."""
    from search_spaces.loader import SPACES_DIR
    from search_spaces.loader import resolve_space_path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "all").write_text("params:\n  mapping: [thread]\n")
    (tmp_path / "driven").mkdir()
    assert resolve_space_path("all") == SPACES_DIR / "all.yaml"
    assert resolve_space_path("driven") == SPACES_DIR / "driven.yaml"
    assert resolve_space_path("./all") == Path("./all")  # a path is a path
    (tmp_path / "mine").write_text("params:\n  mapping: [thread]\n")
    assert resolve_space_path("mine") == Path("mine")  # no shipped space of that name


def test_grid_values_off_the_steps_or_in_text_are_refused_by_the_loader():
    """A grid value off a range's steps had run, off the steps, under Optuna's raw warning;
    '1e-3' (text to YAML) lacked the hint range bounds get (probe SP)."""
    with pytest.raises(ConfigError, match=r"grid value 15 is not on the range's steps "
                                          r"\(10 \+ a multiple of 10\)"):
        space_from("params:\n  defer_threshold: {int: [10, 100], step: 10, grid: [20, 15]}\n")
    with pytest.raises(ConfigError, match=r"a number in quotes is text"):
        space_from("params:\n  switch_to_topology: {float: [0.001, 1.0], grid: ['1e-3']}\n")
    # unquoted, read as YAML 1.2 reads it (1.1 had read 1e-3 and 2.5e0 as text; probe SPACE)
    assert space_from("params:\n  switch_to_topology: {float: [1e-3, 2.5e0], "
                      "grid: [1e-3]}\n").params[0].grid == (0.001,)
    assert space_from("params:\n  defer_threshold: {int: [10, 100], step: 10, "
                      "grid: [20, 100]}\n").params[0].grid == (20, 100)


def test_a_space_file_named_as_a_shipped_space_with_other_content_is_refused(tmp_path):
    """Its rows would have carried the shipped space's name, and `space = 'vwarp'` mixed the
    two spaces' studies (probe SP); a file copied from a shipped space still loads."""
    impostor = tmp_path / "impostor.yaml"
    impostor.write_text("name: vwarp\nparams:\n  mapping: {value: vwarp}\n  w: [1, 2]\n")
    with pytest.raises(ConfigError, match=r"is named 'vwarp', as a shipped space is, with "
                                          r"other content"):
        load_space(impostor)
    copy = tmp_path / "vwarp.yaml"
    copy.write_text(Path(__file__).resolve().parent.parent.joinpath(
        "search_spaces", "vwarp.yaml").read_text())
    assert load_space(copy).name == "vwarp"


def test_the_policy_space_runs_each_algorithms_shipped_policy():
    """The `policy` space had named policies/bfs-h100.json: a sweep of it over BFS and SSSP
    was refused whole, though an SSSP policy ships (probe CR). ``{algorithm}`` in its file
    is the study's algorithm; BFS's studies keep their keys (the narrowed space is the
    same)."""
    from tuner.tuning.plan import load_spaces
    from tuner.tuning.spec import StudySpec

    specs = [StudySpec(graph="rmat:scale=8,seed=1,weights=random", algorithm=a,
                       device="h100", space="policy") for a in ("bfs", "sssp")]
    spaces = load_spaces(specs)
    for spec in specs:
        space = spaces[spec.space_ref]
        assert dict(space.fixed)["policy"] == f"policies/{spec.algorithm}-h100.json"
    text = Path(load_space("policy").source).read_text().replace("{algorithm}", "bfs")
    assert spaces[specs[0].space_ref].digest == parse_space(parse_yaml(text)).digest
    with pytest.raises(ConfigError, match="policies/cc-h100.json' does not exist"):
        load_spaces([StudySpec(graph="rmat:scale=8,seed=1", algorithm="cc", device="h100",
                               space="policy")])


def test_the_algorithm_placeholder_is_named_in_conditions_too(tmp_path):
    """``{algorithm}`` in a ``when:`` value had been left as written, so the condition never
    held and its knob was dropped without a word (1 configuration tried, exit 0), though the
    same file naming bfs searched it (probe SPACES)."""
    from tuner.tuning.plan import applicable_to

    path = tmp_path / "when.yaml"
    path.write_text("""name: when
params:
  policy: {choices: ["policies/{algorithm}-h100.json"]}
  policy_t1:
    float: [0.5, 2.0]
    grid: [0.5, 1.0, 2.0]
    when: {policy: "policies/{algorithm}-h100.json"}
""")
    space = load_space(str(path)).for_algorithm(applicable_to("bfs"), "bfs")
    assert [p.name for p in space.params] == ["policy", "policy_t1"]
    assert {c.get("policy_t1") for c in space.configs()} == {0.5, 1.0, 2.0}


def test_an_integer_range_is_narrowed_per_algorithm_as_choices_are(tmp_path):
    """``unroll: {int: [1, 8]}`` had spent every PageRank trial on refused configurations
    (6 of 6 failed), where ``unroll: {choices: [1, 2, 4, 8]}`` was narrowed to 1 (probe
    SPACES); a range no value of which applies is refused, naming it."""
    from tuner.tuning.plan import applicable_to

    path = tmp_path / "ranges.yaml"
    path.write_text("name: ranges\nparams:\n  mapping: {choices: [thread, vwarp]}\n"
                    "  unroll: {int: [1, 8]}\n")
    space = load_space(str(path))
    (unroll,) = [p for p in space.for_algorithm(applicable_to("pagerank"), "pagerank").params
                 if p.name == "unroll"]
    assert (unroll.low, unroll.high) == (1, 1)
    (bfs,) = [p for p in space.for_algorithm(applicable_to("bfs"), "bfs").params
              if p.name == "unroll"]
    assert (bfs.low, bfs.high) == (1, 8)
    path.write_text("name: ranges\nparams:\n  mapping: {choices: [thread, vwarp]}\n"
                    "  unroll: {int: [2, 8]}\n")
    with pytest.raises(ConfigError, match=r"ranges.yaml:4: .*unroll.*pagerank"):
        load_space(str(path)).for_algorithm(applicable_to("pagerank"), "pagerank")
    # a grid none of whose values applies is refused too, not dropped for the range's
    # values the user never listed (probe CR4)
    path.write_text("name: ranges\nparams:\n  mapping: {choices: [thread, vwarp]}\n"
                    "  unroll: {int: [1, 8], grid: [2, 4]}\n")
    with pytest.raises(ConfigError, match=r"ranges.yaml:4: .*unroll.*pagerank"):
        load_space(str(path)).for_algorithm(applicable_to("pagerank"), "pagerank")


def test_a_space_named_by_its_file_says_so_not_a_name_key_it_lacks(tmp_path):
    """`my space.yaml` without `name:` had been refused at "my space.yaml:2: name: name must
    be a simple word", a key and line the file does not have (probe NAMES)."""
    path = tmp_path / "my space.yaml"
    path.write_text("description: x\nparams:\n  mapping: {choices: [thread]}\n")
    with pytest.raises(ConfigError) as refused:
        load_space(str(path))
    text = str(refused.value)
    assert "with no `name:` key it is the file's, 'my space'" in text and ":2:" not in text


def test_a_knob_whose_conditions_never_hold_together_is_named_as_such():
    # it had read "chunk=2 is rejected by the simulator ... the knob is never active", though
    # the simulator rejected nothing (probe SPACE)
    space = space_from("params:\n  mapping: [vwarp, thread]\n"
                       "  donate_threshold: {choices: [4, 8], when: {mapping: thread}}\n"
                       "  chunk: {choices: [2, 4], when: {mapping: vwarp, donate_threshold: 4}}\n")
    with pytest.raises(ConfigError, match=r"test.yaml:4: space 'test': chunk can never be set: "
                                          r"its `when` \(mapping: vwarp, donate_threshold: 4\) "
                                          "never holds"):
        space.validate()


def test_a_condition_on_a_ranges_inner_value_is_probed_with_it():
    # the probe gave a range knob only its ends: `when: {w: 8}` on w in 1..32 had been
    # refused as never holding (review CR10)
    space = space_from("fixed: {mapping: vwarp}\nparams:\n"
                       "  w: {int: [1, 32], powers_of_two: true}\n"
                       "  chunk: {choices: [1, 4, 16], when: {w: 8}}\n")
    space.validate()


def test_a_condition_is_probed_with_the_knobs_own_spelling_of_its_value():
    # `when: {w: 8.0}` had probed w=8.0, which the simulator refuses: the sampler draws 8
    for w in ("{choices: [1, 8, 32]}", "{int: [1, 32], powers_of_two: true}"):
        space_from(f"fixed: {{mapping: vwarp}}\nparams:\n  w: {w}\n"
                   "  chunk: {choices: [1, 4], when: {w: 8.0}}\n").validate()


def test_the_grid_sampler_says_a_stepped_float_range_has_too_many_steps():
    p = space_from("params:\n  switch_to_topology: {float: [0.01, 1.0], step: 0.01}\n"
                   ).params[0]
    with pytest.raises(ConfigError, match="has 100 steps; give it `grid: \\[...\\]`"):
        p.grid_values()


def test_a_condition_on_a_float_ranges_value_holds_as_the_samplers_draw_it():
    # 0.3 of a 0.1-stepped range had been accepted and never held (the sampler draws
    # 0.30000000000000004), the knob it conditions never searched (reviews CR11, CR12)
    space = space_from("params:\n  driven: [temporal]\n"
                       "  switch_to_topology: {float: [0.1, 0.7], step: 0.1}\n"
                       "  switch_on: {choices: [vertices, edges], "
                       "when: {switch_to_topology: [0.3, 0.7]}}\n")
    space.validate()
    steps = space.params[1].drawable_values()
    assert steps[2] == 0.1 + 2 * 0.1 and steps[-1] == 0.7  # Optuna's, the last at `high`
    switch_on = space.params[2]
    assert all(switch_on.active({"driven": "temporal", "switch_to_topology": v})
               for v in (steps[2], steps[-1], 0.3, 0.7))
    assert not switch_on.active({"driven": "temporal", "switch_to_topology": 0.4})
    # a grid's values as written too
    gridded = space_from("params:\n  driven: [temporal]\n"
                         "  switch_to_topology: {float: [0.1, 0.5], step: 0.1, grid: [0.1, 0.3]}"
                         "\n  switch_on: {choices: [edges], when: {switch_to_topology: 0.3}}\n")
    assert gridded.params[2].active({"driven": "temporal", "switch_to_topology": 0.3})
    # a range without a step: tpe and random never draw the value, its grid or not (CR13)
    for extra in ("", ", log: true, grid: [0.02, 0.3]"):
        with pytest.raises(ConfigError, match="a float range without a `step`: tpe and random"):
            space_from("params:\n  switch_to_topology: {float: [0.02, 1.5]" + extra + "}\n"
                       "  switch_on: {choices: [vertices], when: {switch_to_topology: 0.3}}\n")
    # and choices are told apart to their last bits (a tolerance had merged 1.0, 1.0000000001)
    close = space_from("params:\n  x: {choices: [1.0, 1.0000000001]}\n"
                       "  switch_on: {choices: [edges], when: {x: 1.0}}\n")
    assert not close.params[1].active({"x": 1.0000000001})
