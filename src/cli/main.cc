#include "command.h"

int main(int argc, char** argv) { return kstacklab::cli::Main(argc, argv); }
