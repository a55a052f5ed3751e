# python: the CPython interpreter from the distribution or pyenv.
# Shipped with sbx (`include python`). ${HOME}/.pyenv holds interpreters only; pip's config
# (${HOME}/.config/pip, ${HOME}/.pypirc) can hold index tokens and is not allowed.

include base

# pip's entry scripts (a venv's bin/pip, /usr/bin/pip3, pyenv's versions): the identity of
# `pip` for rights bound to it (an index token in pip.conf). A build backend or setup.py that
# pip starts runs as python on its own script, not as pip.
program pip /**/bin/pip{,3,3.[0-9]*}
# pip runs itself as `python .../pip/__pip-runner__.py install ...` to fill a build
# environment (build isolation): that is pip too.
program pip /**/site-packages/pip/__pip-runner__.py

# The interpreter as installed by the distribution or built into /usr/local.
exec /usr/{,local/}bin/python3*
# Python reads its own executable to find the C library's version (platform.libc_ver: the
# wheel tags pip and uv compute, once per interpreter when uv's cache is cold).
read /usr/{,local/}bin/python3*
# The standard library and site-packages of the distribution interpreter.
read /usr/lib/python3*/**
# The standard library of a /usr/local build, and pip installs into it.
read /usr/local/lib/python3*/**
# Debian's python helper modules.
read /usr/share/python3/**
# Startup looks for a venv marker next to the interpreter; admitted only while absent.
probe /usr/{,local/}bin/pyvenv.cfg
# Startup looks for a venv marker one level up; admitted only while absent.
probe /usr/{,local/}pyvenv.cfg
# Startup looks for a build-directory marker next to the interpreter; admitted while absent.
probe /usr/{,local/}bin/pybuilddir.txt
# pyenv, wherever PYENV_ROOT puts it (${HOME}/.pyenv when unset, as pyenv decides; a CI
# image's /root/.pyenv or /opt/pyenv while HOME is another directory). Its shims are shell
# scripts that find and run the selected interpreter. Its shims, commands and plugins'
# commands run...
exec ${PYENV_ROOT}/{shims,libexec,plugins/*/bin}/*
# ...and the interpreters...
exec ${PYENV_ROOT}/versions/*/bin/*
# ...and everything in it is read: interpreters, standard libraries, hooks, version files.
read ${PYENV_ROOT}/**
# pyenv looks for hooks and optional files in its tree; admitted only while absent.
probe ${PYENV_ROOT}/**
# pyenv looks for hook directories in the system's configuration places.
probe /{etc,usr/etc,usr/local/etc}/pyenv.d/**
# pip (the distro module) asks lsb_release for the distribution, for its user agent.
exec /usr/bin/lsb_release
# ...which is a Python script.
read /usr/bin/lsb_release
# pytest 8+ makes its cache directory as tempfile.mkdtemp(prefix="pytest-cache-files-") in
# the project's root, then renames it to .pytest_cache: a run that found .pytest_cache in
# place (a second CI run in the same checkout) never shows the temp name.
create ${CWD}/**/pytest-cache-files-????????
# Byte-code caches next to the project's modules (directory and files).
write ${CWD}/**/__pycache__
# Byte-code files are written to a temporary name first.
write ${CWD}/**/__pycache__/*
# ...and renamed over the final name (the source of a rename is a delete).
delete ${CWD}/**/__pycache__/*
# pip opens the nearest existing directory on the way to its cache (${HOME} on the first run,
# then ~/.cache, then ~/.cache/pip) to check its owner: the directories themselves, whose
# content is a list of names, not the files in them.
# See: docs/real-world.md pip (second run on a machine where ~/.cache exists)
read ${HOME}/.cache
# On a fresh HOME (no ~/.cache yet) that nearest directory is HOME itself: its list of names,
# not the files in it. See: tests/ecosystems.rs pip S3 (recorded warm, enforced cold)
read ${HOME}
# The same check once pip's cache directory exists.
read ${HOME}/.cache/pip
# pip's download and wheel cache: HTTP responses for public packages and wheels it built,
# the tool's own store whether this run finds it warm or cold (a later run reads back what an
# earlier one stored). Not its config (~/.config/pip) nor other ~/.cache directories.
# Poisoning risk: a process of the workload may replace a cached wheel that later installs
# reuse without building. See: docs/real-world.md pip (a warm wheel cache)
own ${HOME}/.cache/pip
# On a fresh HOME pip creates ~/.cache itself (the directory only; a mkdir of an existing
# directory is a write of it).
write ${HOME}/.cache
