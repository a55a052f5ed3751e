//! Integration tests: real processes under real ptrace.
