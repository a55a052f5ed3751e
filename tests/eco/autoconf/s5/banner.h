/* S5's new header: one more source file, included by hello.c (no Makefile change). */
#ifndef BANNER_H
#define BANNER_H
#define BANNER "[hello]"
#endif
