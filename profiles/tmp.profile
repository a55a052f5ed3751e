# tmp: scratch files under ${TMPDIR} (/tmp unless set). Shipped with sbx (`include tmp`).
# Other users' files in a shared /tmp are also reachable through this glob: set TMPDIR to a
# private directory in CI when that matters, and never HOME or the project directory (these
# rules would then cover them). `sbx learn` adds this snippet when it shortens the profile and
# the recorded TMPDIR was private (docs/learning.md section 8).

# Reading back temporary files and directories.
read ${TMPDIR}/**
# Creating and writing temporary files and directories (mkstemp, mkdtemp).
write ${TMPDIR}/**
# Removing and renaming them when done.
delete ${TMPDIR}/**
