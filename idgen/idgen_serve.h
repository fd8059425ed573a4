/* idgen_serve: `idgen serve` (idgen_serve.c). */
#ifndef IDGEN_SERVE_H
#define IDGEN_SERVE_H

/** @brief Runs the service until SIGTERM or SIGINT. argv[0] is "serve".
 *  @returns the exit status: 0 stopped cleanly, 1 could not listen, 2 bad configuration. */
int idgen_serve_main(int argc, char **argv);

#endif
