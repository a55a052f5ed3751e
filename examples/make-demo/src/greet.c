#include <stdio.h>

#include "demo.h"
#include "version.h"

void demo_greet(char *buf, unsigned long len, const char *name)
{
    snprintf(buf, len, "hello, %s, from v%s", name, DEMO_VERSION);
}
