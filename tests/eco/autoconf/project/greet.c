#include "config.h"
#include "greet.h"

const char *greeting(void) { return "hello from " PACKAGE_STRING; }
