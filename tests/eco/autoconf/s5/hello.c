#include "config.h"
#include <stdio.h>
#include "banner.h"
#include "greet.h"

int main(void) {
    printf("%s %s\n", BANNER, greeting());
    return 0;
}
