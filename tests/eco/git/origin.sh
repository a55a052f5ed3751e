#!/bin/sh
# Create the source repository of the git workload in DEST (tests/ecosystems.rs): commits on
# main, a branch with a commit of its own, a tag; with --more (scenario S5) one more commit on
# main. HOME must hold a .gitconfig with user.name and user.email.
#
# Usage: origin.sh DEST [--more]
set -eu
dest=${1:?usage: origin.sh DEST [--more]}
git init -q -b main "$dest"
cd "$dest"
commit() { git add -A && git commit -q -m "$1"; }
printf '# eco\n\nA small project.\n' > README.md
commit 'initial commit'
mkdir src
printf 'int main(void) { return 0; }\n' > src/main.c
commit 'add main.c'
git checkout -q -b feature
printf 'feature work\n' > FEATURE
commit 'feature'
git checkout -q main
printf '1.0\n' > VERSION
commit 'release 1.0'
git tag v1.0
if [ "${2:-}" = --more ]; then
    printf 'news\n' > NEWS
    commit 'one more commit'
fi
