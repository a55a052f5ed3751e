#include <stdio.h>

#include "demo.h"
#include "version.h"

int main(void)
{
    char buf[64];
    demo_greet(buf, sizeof buf, "sbx");
    printf("%s (demo %s on %s) sum=%ld\n", buf, DEMO_VERSION, DEMO_MACHINE, demo_sum(10));
    return 0;
}
