# uv: the uv Python package and project manager. Shipped with sbx (`include uv`, added by
# `sbx learn` when the trace ran uv). Its config (${HOME}/.config/uv/uv.toml) can name an
# index with credentials: only probed here.

include python

# uv's binary (a venv's or pip's bin/uv, the standalone installer's ~/.local/bin/uv, a
# distribution package): the identity of `uv` for rights bound to it.
program uv /**/bin/{uv,uvx}

# uv's cache (wheels, sdists, built wheels, the interpreter index), UV_CACHE_DIR's default:
# the tool's own store, warm or cold. Installs hard-link or copy from it.
read ${HOME}/.cache/uv/**
# ...written by uv alone. Poisoning risk: a wheel planted here is what later installs put
# into every venv (uv checks hashes only where the lockfile or --require-hashes asks).
own ${HOME}/.cache/uv by uv
# uv's data: the Python interpreters and tools it installs, run and read by everything.
read ${HOME}/.local/share/uv/**
# ...installed by uv alone (same risk for interpreters).
own ${HOME}/.local/share/uv by uv
# uv asks the project's virtual environment's interpreter about itself (a venv's python is
# a link to an interpreter other rules allow) and caches the answer: a run recorded with a
# warm cache never shows it.
exec ${CWD}/.venv/bin/python{,3,3.[0-9]*}
# uv looks for its user config; admitted only while it does not exist.
probe ${HOME}/.config/uv/uv.toml
