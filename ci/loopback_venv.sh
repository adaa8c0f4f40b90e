#!/usr/bin/env bash
# Offline stand-in for clusters/onprem.yaml's install step on a loopback CI node, run by `ray up`
# as a setup command: a venv that sees the packages of the `python3` on PATH (Ray, numpy, ...
# are installed there already; that Python may itself be a venv), with the file-mounted checkout
# ~/warpsweep first on its import path, and `warpsweep` and `ray` entry points run by the venv's
# Python, so the head, the driver and every Ray worker run the mounted code. No network, under a
# second (`pip install -e` would fetch setuptools from PyPI for its isolated build).
#
#   bash ~/warpsweep/ci/loopback_venv.sh [VENV] [CHECKOUT]     # defaults ~/venv ~/warpsweep
#
# Made once: head and worker share one home on a loopback cluster, and the worker's setup runs
# while the head runs from the venv (with ~/venv/bin first on PATH by then).
set -euo pipefail
venv=${1:-$HOME/venv}
checkout=$(cd "${2:-$HOME/warpsweep}" && pwd)
[ -f "$venv/.warpsweep-launcher-test" ] && exit 0
sites=$(python3 -c 'import json, site; print(json.dumps(site.getsitepackages()))')
python3 -m venv --without-pip "$venv"
"$venv/bin/python" - "$checkout" "$sites" <<'PY'
import json
import os
import sys
import sysconfig

checkout, sites = sys.argv[1], json.loads(sys.argv[2])
with open(os.path.join(sysconfig.get_paths()["purelib"], "warpsweep-loopback.pth"), "w") as f:
    f.write(checkout + "\n")  # before the sites below: the mounted code wins over an install
    f.writelines(f"import site; site.addsitedir({d!r})\n" for d in sites)
for name, module in (("warpsweep", "tuner.cli"), ("ray", "ray.scripts.scripts")):
    path = os.path.join(sys.prefix, "bin", name)
    with open(path, "w") as f:
        f.write(f"#!{sys.executable}\nimport sys\nfrom {module} import main\nsys.exit(main())\n")
    os.chmod(path, 0o755)
PY
touch "$venv/.warpsweep-launcher-test"
