#!/usr/bin/env bash
# The current releases of the package managers the ecosystem tests run (tests/ecosystems.rs,
# row `ci`), installed with their ordinary clients into the build directory:
#
#   $DEST/venv        Debian's python3 -m venv, then pip install -U pip pytest uv setuptools wheel
#   $DEST/wheels      pip, setuptools and wheel as wheel files: the tests copy them into the
#                     project's wheelhouse, so that `pip install --no-index` (build isolation)
#                     and `uv pip install --offline` find a build backend without network
#   $DEST/npm         npm install --prefix: npm (the newest line this node supports), pnpm, yarn
#   $DEST/versions.txt  what was installed (`tool version` lines; the tests print them)
#
# DEST is $SBX_ECO_TOOLS, else ${CARGO_TARGET_DIR:-target}/eco-tools. Needs the network (PyPI,
# the npm registry); the tests themselves run offline. Idempotent: a re-run upgrades to the
# newest releases (a few registry queries when nothing changed). SBX_ECO_TOOLS_FROZEN=1 keeps
# what is installed and asks no registry.
set -euo pipefail
cd "$(dirname "$0")/.."

dest=${SBX_ECO_TOOLS:-${CARGO_TARGET_DIR:-target}/eco-tools}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
start=$SECONDS

if [ -n "${SBX_ECO_TOOLS_FROZEN:-}" ] && [ -s "$dest/versions.txt" ]; then
  echo "eco-tools: frozen, kept $dest"
  exit 0
fi

# Node: npm 12 needs node >= 22; Debian 12's node 20 runs the npm 11 line. pnpm and yarn:
# yarn's `latest` is classic yarn 1.x, what most CI still runs. In the background, while pip
# works (both wait on the registries more than on the CPU).
node_major=$(node -p 'process.versions.node.split(".")[0]')
npm_spec=npm@latest
if [ "$node_major" -lt 22 ]; then
  npm_spec=npm@11
fi
npm install -s --prefix "$dest/npm" --no-audit --no-fund --update-notifier=false \
  "$npm_spec" pnpm@latest yarn@latest &
npm_job=$!

# Python: a venv of Debian's interpreter (the one python3-venv serves).
py=/usr/bin/python3
if [ ! -x "$dest/venv/bin/python" ]; then
  "$py" -m venv "$dest/venv"
fi
vpy="$dest/venv/bin/python"
pip=("$vpy" -m pip --disable-pip-version-check -q)
"${pip[@]}" install -U pip pytest uv setuptools wheel
# The build backend as files, for offline installs with build isolation (pip, uv): the
# installed versions, fetched only when one is missing.
specs=$("$vpy" -c 'from importlib.metadata import version
print(" ".join(f"{n}=={version(n)}" for n in ("pip", "setuptools", "wheel")))')
for spec in $specs; do
  if ! ls "$dest/wheels/${spec%%==*}-${spec##*==}-"*.whl >/dev/null 2>&1; then
    rm -rf "$dest/wheels"
    # shellcheck disable=SC2086 # one argument per spec
    "${pip[@]}" download --only-binary :all: -d "$dest/wheels" $specs
    break
  fi
done
wait "$npm_job"

bin="$dest/npm/node_modules/.bin"
{
  "$vpy" -c 'import platform, sys
from importlib.metadata import version
print("python", platform.python_version(), f"({sys.argv[1]})")
for n in ("pip", "pytest", "setuptools", "wheel"):
    print(n, version(n))' "$py"
  echo "uv $("$dest/venv/bin/uv" --version | cut -d' ' -f2)"
  echo "node $(node --version | tr -d v)"
  echo "npm $("$bin/npm" --version)"
  echo "pnpm $("$bin/pnpm" --version)"
  echo "yarn $("$bin/yarn" --version)"
} >"$dest/versions.txt.new"
mv "$dest/versions.txt.new" "$dest/versions.txt"
echo "eco-tools: $(tr '\n' ',' <"$dest/versions.txt" | sed 's/,$//; s/,/, /g') in $dest ($((SECONDS - start)) s)"
