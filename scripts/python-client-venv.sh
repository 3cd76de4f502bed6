#!/usr/bin/env bash
# Creates the venv tests/python_client.rs runs the official Kubernetes Python client from:
# <target>/python-client (CARGO_TARGET_DIR or ./target), with the versions pinned in
# crates/kube-fake-apiserver/tests/python/requirements.txt. Does nothing when the venv already
# holds exactly those pins. Needs python3 (with venv) and access to PyPI; exits non-zero otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
venv=${1:-$target/python-client}
req=$root/crates/kube-fake-apiserver/tests/python/requirements.txt
mkdir -p "$(dirname "$venv")"
# Test binaries may call this concurrently: one installs, the others wait and find it done.
exec 9>"$venv.lock"
flock 9
if [ -x "$venv/bin/python" ] && cmp -s "$req" "$venv/.requirements"; then
    exit 0
fi
python3 -m venv --clear "$venv"
"$venv/bin/python" -m pip install --quiet --no-input --disable-pip-version-check -r "$req"
cp "$req" "$venv/.requirements"
echo "python-client-venv: $("$venv/bin/python" -c 'import kubernetes; print("kubernetes", kubernetes.__version__)') in $venv"
