# shell: running POSIX shell scripts (npm scripts, Makefile recipes, CI steps).
# Shipped with sbx (`include shell`). Interactive startup files in ${HOME} (.bashrc,
# .profile) are NOT allowed: people keep tokens in them, and non-interactive shells do not
# read them.

include base

# The shells themselves, as /bin/sh and as the merged-/usr target (sh -> dash on Debian).
exec /{bin,usr/bin}/{sh,bash,dash}
# PATH search: the shell tries each PATH directory; admitted only while the file is absent.
probe /{bin,sbin,usr/bin,usr/sbin,usr/local/bin,usr/local/sbin}/*
# System-wide startup files read by login shells (bash -l, sh -l).
read /etc/profile
# Fragments sourced by /etc/profile.
read /etc/profile.d/*
# System-wide bashrc read by interactive bash.
read /etc/bash.bashrc
# Prompts and `read` from the controlling terminal (absent in CI).
read /dev/tty
# Messages to the controlling terminal.
write /dev/tty
# Core utilities that build and test scripts commonly run. Add others explicitly.
exec /{bin,usr/bin}/{cat,cp,mv,rm,ls,ln,mkdir,rmdir,touch,chmod,env,echo,printf,test,true,false,sed,grep,head,tail,sort,uniq,tr,cut,wc,basename,dirname,readlink,realpath,mktemp,date,uname,which,xargs,find,tee,sleep,expr,id}
