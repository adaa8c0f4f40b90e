#!/usr/bin/env bash
# Prepare this machine for the real Ray cluster launcher over loopback SSH
# (tests/test_cluster_launcher.py): Debian's openssh-server and rsync, host keys, an sshd on
# 127.0.0.1 and 127.0.0.2 port 22, a key pair authorised for this user, the Python on PATH with
# RAY_AUTH_MODE=token in ~/.bashrc for SSH login shells, and a Ray token in ~/.ray/auth_token.
#
#   bash ci/sshd_loopback.sh &&
#       WARPSWEEP_LAUNCHER_TEST=1 python -m pytest tests/test_cluster_launcher.py
#
# Idempotent. Exits 1 with one line saying why when the machine cannot do it (not root and
# the packages missing, no apt-get, sshd refuses to start, the key is not accepted, ...).
# Meant for a disposable CI machine: it starts an sshd that accepts the key as this user.
set -uo pipefail

KEY=${WARPSWEEP_LAUNCHER_KEY:-$HOME/.ssh/warpsweep_ci}
PYTHON=${PYTHON:-python}
SSH_OPTS=(-i "$KEY" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
          -o IdentitiesOnly=yes -o ConnectTimeout=5 -o LogLevel=ERROR)

fail() { echo "ci/sshd_loopback.sh: $*" >&2; exit 1; }
say() { echo "ci/sshd_loopback.sh: $*"; }
run_quiet() { local log; log=$("$@" 2>&1) || { echo "$log" | tail -5 >&2; return 1; }; }

# 1. packages
if ! [ -x /usr/sbin/sshd ] || ! command -v rsync >/dev/null || ! command -v ssh >/dev/null; then
    [ "$(id -u)" = 0 ] || fail "openssh-server/rsync missing and not root: cannot install them"
    command -v apt-get >/dev/null || fail "openssh-server/rsync missing and no apt-get"
    say "installing openssh-server rsync (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    run_quiet timeout 300 apt-get update -qq || fail "apt-get update failed"
    run_quiet timeout 300 apt-get install -y -qq --no-install-recommends openssh-server rsync \
        || fail "apt-get install openssh-server rsync failed"
fi

# 2. an sshd listening on both loopback addresses (one already serving them is used as is)
port_open() { timeout 3 bash -c "exec 3<>/dev/tcp/$1/22" 2>/dev/null; }
if ! port_open 127.0.0.1 || ! port_open 127.0.0.2; then
    [ "$(id -u)" = 0 ] || fail "no sshd on 127.0.0.1:22 and 127.0.0.2:22, not root to start one"
    run_quiet ssh-keygen -A || fail "ssh-keygen -A (host keys) failed"
    mkdir -p /run/sshd && chmod 755 /run/sshd
    SSHD_OPTS=(-o ListenAddress=127.0.0.1 -o ListenAddress=127.0.0.2
               -o PasswordAuthentication=no -o PermitRootLogin=prohibit-password)
    run_quiet /usr/sbin/sshd -t "${SSHD_OPTS[@]}" || fail "sshd -t: the configuration is refused"
    run_quiet /usr/sbin/sshd "${SSHD_OPTS[@]}" || fail "sshd did not start"
    for _ in $(seq 50); do port_open 127.0.0.1 && port_open 127.0.0.2 && break; sleep 0.1; done
    port_open 127.0.0.1 && port_open 127.0.0.2 || fail "sshd started but port 22 does not answer"
    say "sshd started on 127.0.0.1:22 and 127.0.0.2:22"
fi

# 3. a key pair for the launcher, authorised for this user
mkdir -p "$HOME/.ssh" && chmod 700 "$HOME/.ssh"
if ! [ -f "$KEY" ]; then
    run_quiet ssh-keygen -q -t ed25519 -N '' -C warpsweep-launcher-ci -f "$KEY" \
        || fail "ssh-keygen of $KEY failed"
fi
touch "$HOME/.ssh/authorized_keys" && chmod 600 "$HOME/.ssh/authorized_keys"
grep -qxF "$(cat "$KEY.pub")" "$HOME/.ssh/authorized_keys" \
    || cat "$KEY.pub" >> "$HOME/.ssh/authorized_keys"

# 4. SSH login shells (ray exec / submit / down run `bash --login -i`) find this Python and
#    use token auth; only shells started by sshd are touched
PYBIN=$("$PYTHON" -c 'import os, sys; print(os.path.dirname(sys.executable))') \
    || fail "$PYTHON does not run"
"$PYTHON" -c 'import ray, tuner' 2>/dev/null \
    || fail "$PYTHON cannot import ray and tuner: pip install -e . first"
[ -x "$PYBIN/python3" ] || fail "no python3 next to $PYTHON (the cluster's setup runs python3)"
#    (a block already there is rewritten in place: lines appended after it, such as the venv
#    that onprem.yaml's setup puts on PATH, must stay later in the file)
BEGIN='# >>> warpsweep-launcher-ci >>>'
END='# <<< warpsweep-launcher-ci <<<'
LINE="if [ -n \"\${SSH_CONNECTION:-}\" ]; then export PATH=$PYBIN:\$PATH RAY_AUTH_MODE=token; fi"
touch "$HOME/.bashrc"
if grep -qxF "$BEGIN" "$HOME/.bashrc"; then
    awk -v b="$BEGIN" -v e="$END" -v l="$LINE" '
        $0 == b { print; print l; skip = 1; next }
        $0 == e { skip = 0 }
        !skip' "$HOME/.bashrc" > "$HOME/.bashrc.warpsweep-ci" \
        && cat "$HOME/.bashrc.warpsweep-ci" > "$HOME/.bashrc" && rm -f "$HOME/.bashrc.warpsweep-ci"
else
    printf '%s\n' "$BEGIN" "$LINE" "$END" >> "$HOME/.bashrc"
fi

# 5. the Ray token that clusters/onprem.yaml mounts on every node
RAY_AUTH_MODE=token run_quiet "$PYTHON" -m ray.scripts.scripts get-auth-token --generate \
    || fail "ray get-auth-token --generate failed"
[ -s "$HOME/.ray/auth_token" ] || fail "no $HOME/.ray/auth_token after ray get-auth-token"
chmod 600 "$HOME/.ray/auth_token"

# 6. the key logs in on both addresses; the login shell has a python3 with Ray, and rsync
USER_NAME=$(id -un)
for ip in 127.0.0.1 127.0.0.2; do
    check='python3 -c "import ray" && command -v rsync >/dev/null && echo found'
    out=$(timeout 30 ssh "${SSH_OPTS[@]}" "$USER_NAME@$ip" \
          "bash --login -c -i 'source ~/.bashrc; $check; echo mode=\$RAY_AUTH_MODE'" \
          2>&1 </dev/null) || fail "ssh $USER_NAME@$ip with $KEY failed: $(echo "$out" | tail -1)"
    grep -q "^found" <<<"$out" \
        || fail "the login shell on $ip has no python3 that imports ray, or no rsync"
    grep -q "^mode=token" <<<"$out" || fail "the login shell on $ip has no RAY_AUTH_MODE=token"
done
say "ready: $USER_NAME@127.0.0.1 and @127.0.0.2 accept $KEY; login shells use $PYBIN"
