// pagoda: command-line front end. Parses flags and wires library objects; no logic here.
#include <cstdio>
int main(int argc, char** argv) {
  std::fprintf(stderr, "pagoda: not yet wired\n");
  return 1;
}
