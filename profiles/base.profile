# base: what nearly every dynamically linked Linux program touches while starting up.
# Shipped with sbx (`include base`). Every rule says why it is needed. Nothing here is
# secret: no home directory, no /etc/shadow, no keys. Debian and others merge /usr, so both
# /lib and /usr/lib spellings are listed (sbx checks the path as written AND where it leads).

# The dynamic loader's cache of library locations (ld.so reads it at every exec).
read /etc/ld.so.cache
# ld.so looks for a preload list at every start; admitted only while it does not exist.
probe /etc/ld.so.preload
# Shared libraries, the loader itself and gconv modules, under every usual spelling.
read /lib/**
# The x86_64 loader lives in /lib64 (ld-linux-x86-64.so.2).
read /lib64/**
# Shared libraries, locale archive (/usr/lib/locale) and gconv under merged /usr.
read /usr/lib/**
# The loader and libraries on distributions that use lib64.
read /usr/lib64/**
# Message catalogs and locale aliases used by gettext and setlocale.
read /usr/share/locale/**
# Debian links /usr/share/locale/locale.alias here; glibc reads it through that link.
read /etc/locale.alias
# Character-set conversion tables used by iconv and setlocale.
read /usr/share/i18n/**
# Which sources (files, dns, systemd) name lookups use; read by getpwuid, getaddrinfo.
read /etc/nsswitch.conf
# User names for the uid (getpwuid: ls -l, whoami, node's os.userInfo). Hashes live in
# /etc/shadow, which is not allowed.
read /etc/passwd
# Group names (getgrgid, id, ls -l).
read /etc/group
# The local time zone: /etc/localtime is a symlink into the zoneinfo database.
read /etc/localtime
# Where /etc/localtime and TZ point.
read /usr/share/zoneinfo/**
# The null device: discarded output and empty input.
read /dev/null
# Discarded output.
write /dev/null
# Random numbers for hash seeds and crypto (most programs use getrandom, some open these).
read /dev/urandom
# Same as /dev/urandom on modern kernels.
read /dev/random
# The program's own memory map: glibc, allocators, V8 and Go runtimes read it.
read /proc/self/maps
# Own status (thread count, memory limits); read by runtimes and ps-like code.
read /proc/self/status
# Own stat line (start time, CPU times).
read /proc/self/stat
# Own cgroup: runtimes size their heaps and thread pools from the cgroup limits.
read /proc/self/cgroup
# Own mount table: used to find the cgroup filesystem.
read /proc/self/mountinfo
# Own auxiliary vector (hardware capabilities).
read /proc/self/auxv
# Listing own open descriptors (closefrom fallbacks, shells, test harnesses).
read /proc/self/fd
# Total and free memory (libuv, glibc malloc tuning, sysconf(_SC_PHYS_PAGES)).
read /proc/meminfo
# CPU model and count (sysconf fallbacks, os.cpus()).
read /proc/cpuinfo
# CPU times (os.cpus(), load reporting).
read /proc/stat
# Online and possible CPUs: glibc's get_nprocs and thread pools size themselves from these.
read /sys/devices/system/cpu/**
# Transparent huge page mode, read by allocators (jemalloc, V8).
read /sys/kernel/mm/transparent_hugepage/**

# glibc's getaddrinfo (AI_ADDRCONFIG) and node's os/dns code ask the kernel which addresses
# the host has over a NETLINK_ROUTE socket: a read-only dump unless the process is privileged.
bind netlink route
# The same dump request, sent to the kernel (netlink port 0).
send netlink route
# The cgroup limits themselves (cgroup v1 and v2), read to size thread pools and heaps:
# libuv and V8, Rust's available_parallelism (cargo, uv), Go, the JVM.
read /sys/fs/cgroup/**
# The distribution's name and version: pip's and npm's user agents, Python's platform and
# distro modules, build scripts choosing packages.
read /etc/{os-release,lsb-release,debian_version,redhat-release,alpine-release}
# OpenSSL built into /usr/local (pyenv's and other source-built Pythons) looks for its
# configuration there; admitted only while it does not exist.
probe /usr/local/ssl/openssl.cnf

# The kernel's overcommit policy: glibc's malloc reads it the first time it gives a heap's
# memory back (so one run of a program reads it and the next may not), V8 to size its heap.
# See: docs/real-world.md (git gc read it in one run of three).
read /proc/sys/vm/overcommit_memory

# The system's MIME type table: Python's mimetypes (pip, http.server), Perl's and other
# HTTP clients load it when they first guess a type, not on every run.
# See: docs/real-world.md (pip-sdist's second run read it, its first did not).
read /etc/mime.types

# Launchers: programs that only start the step's real programs (the CI shell of `bash -e {0}`
# or `sh -c`, make and its recipes' shells, env/time/nice-style wrappers). At the start of an
# exec chain they do not count for rights bound to programs: `bash -c 'cargo build'` keeps
# cargo's rights and learns `by cargo`, never `by bash,cargo`. A shell that runs after
# another program (an install script's `sh`, below npm) is no launcher there: it and what it
# starts lose npm's rights. A launcher holds no bound right of its own unless a `by` list
# names it. See: docs/profile-format.md "Rights bound to programs".
launcher /{,usr/,usr/local/}bin/{sh,bash,dash,zsh,ksh,mksh}
# Wrappers that run the command they are given.
launcher /{,usr/,usr/local/}bin/{env,time,nice,nohup,timeout,stdbuf,ionice,setsid,taskset,chrt,flock,xargs}
# make runs each recipe through a shell.
launcher /{,usr/,usr/local/}bin/{make,gmake}
