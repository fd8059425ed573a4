/* sc_accepted: the order ids seckill-bench got a 202 for (accepted.txt, one decimal id
 * a line), loaded sorted for seckill-check. Pure apart from reading the file. */
#ifndef SC_ACCEPTED_H
#define SC_ACCEPTED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct sc_ids {
    uint64_t *v;      /* sorted, distinct; owned (sc_ids_free) */
    size_t n;         /* distinct ids */
    size_t repeated;  /* lines naming an id already seen: the same id promised twice */
    size_t bad_lines; /* lines that are not a decimal id (blank lines are skipped) */
} sc_ids;

/** @brief Reads ids from f into *out (zeroed first). @returns 0, or -1 out of memory. */
int sc_ids_read(FILE *f, sc_ids *out);

/** @brief Reads the file at path. @returns 0, or -1 with a message in errstr. */
int sc_ids_load(const char *path, sc_ids *out, char *errstr, size_t errstr_size);

/** @brief 1 if id is in ids (binary search). */
int sc_ids_contains(const sc_ids *ids, uint64_t id);

void sc_ids_free(sc_ids *ids);

#endif
