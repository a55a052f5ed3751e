# git: running git commands (status, rev-parse, describe) in the project checkout.
# Shipped with sbx (`include git`). ${HOME}/.git-credentials and credential helpers are not
# allowed: a build rarely needs them; a project that does must allow them explicitly.

include base

# git and its helpers (git-remote-https talks to the remote), the identity of `git` for
# rights bound to it (a remote's credentials, the remote host).
program git /usr/{,local/}bin/git
# The helpers in git's exec path.
program git /usr/{lib,local/libexec}/git-core/*

# The git binary (distribution package or a /usr/local build).
exec /usr/{,local/}bin/git
# git runs its helpers (git-remote-http, git-upload-pack...) from its exec path.
exec /usr/lib/git-core/*
# The exec path of a /usr/local build.
exec /usr/local/libexec/git-core/*
# Helpers are also read (scripts run through their interpreter).
read /usr/lib/git-core/**
# Helpers of a /usr/local build.
read /usr/local/libexec/git-core/**
# Templates for git init and clone.
read /usr/{,local/}share/git-core/**
# System-wide configuration.
read /etc/gitconfig
# The user's identity and aliases (read even by git status).
read ${HOME}/.gitconfig
# The XDG location of the user's configuration, ignore and attributes files.
read ${HOME}/.config/git/{config,ignore,attributes}
