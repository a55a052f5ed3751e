#include "config.h"
#include <stdio.h>
#include "greet.h"

int main(void) {
    printf("%s\n", greeting());
    return 0;
}
