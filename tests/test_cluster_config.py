"""cluster.yaml and clusters/onprem.yaml pass Ray's own launcher validation offline (the
private `prepare_config` + `validate_config` that `ray up` runs; Ray is pinned to 2.60 in
pyproject for this), a typo fails it, and the secure defaults hold on every node."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

pytest.importorskip("ray")
from ray.autoscaler._private.commands import _bootstrap_config  # noqa: E402
from ray.autoscaler._private.util import prepare_config  # noqa: E402
from ray.autoscaler._private.util import validate_config  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CONFIGS = ["cluster.yaml", "clusters/onprem.yaml"]


def load(name: str) -> dict:
    return yaml.safe_load((REPO / name).read_text())


@pytest.mark.parametrize("name", CONFIGS)
def test_ray_validates_the_config(name):
    cfg = load(name)
    prepared = prepare_config(copy.deepcopy(cfg))
    validate_config(prepared)
    if cfg["provider"]["type"] == "local":  # the local provider's bootstrap is offline too
        _bootstrap_config(copy.deepcopy(cfg), no_config_cache=True)


@pytest.mark.parametrize("typo", [("setup_comands", "setup_commands"),
                                  ("max_worker", "max_workers")])
def test_a_typo_fails_validation(typo):
    wrong, right = typo
    cfg = load("cluster.yaml")
    cfg[wrong] = cfg.pop(right)
    with pytest.raises(Exception, match=wrong) as err:
        validate_config(prepare_config(cfg))
    assert type(err.value).__name__ == "ValidationError"


@pytest.mark.parametrize("name", CONFIGS)
def test_secure_defaults_on_every_node(name):
    cfg = load(name)
    starts = cfg["head_start_ray_commands"] + cfg["worker_start_ray_commands"]
    assert all("RAY_AUTH_MODE=token" in c for c in starts)  # explicit on every node
    head = " ".join(cfg["head_start_ray_commands"])
    assert "--dashboard-host=127.0.0.1" in head and "--num-cpus=0" in head
    assert cfg["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    assert cfg["file_mounts"]["~/warpsweep"] == "."  # the checked-out version, installed
    assert any("-e ~/warpsweep" in c for c in cfg["setup_commands"])
    text = (REPO / name).read_text()
    assert "RAY_AUTH_TOKEN=" not in text  # the token itself never in the repository
