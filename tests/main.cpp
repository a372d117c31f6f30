// The single translation unit that compiles Catch2's main (the header is slow).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
