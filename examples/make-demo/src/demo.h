#ifndef DEMO_H
#define DEMO_H

/* Sum of 1..n. */
long demo_sum(long n);
/* A greeting for `name` into buf (at most len bytes). */
void demo_greet(char *buf, unsigned long len, const char *name);

#endif
