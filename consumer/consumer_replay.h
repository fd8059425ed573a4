/* consumer_replay: `seckill-consumer replay`, the way back for dead letters (issue 32
 * item 7). Reads the dead-letter topic from its start up to the end it had when the
 * command started, picks the letters asked for (by event, by error, or all), and
 * produces each one's key and value unchanged to the orders topic, on the partition it
 * came from (its source.partition header), so the consumer sees it as a new delivery of
 * the same order: its idempotent insert (ON CONFLICT DO NOTHING on the order id) makes a
 * second replay, or the replay of an order that did land, change nothing.
 * A letter is never altered: a replayed message keeps its MAC, and one dead-lettered for
 * a bad MAC is never replayed (re-signing would launder a forged order), nor is a
 * truncated copy (its bytes are gone; the source topic still holds it).
 * --dry-run lists what would be sent and sends nothing. Main thread only. */
#ifndef CONSUMER_REPLAY_H
#define CONSUMER_REPLAY_H

#include "consumer_loop.h"

#include <sk_config.h>
#include <stdint.h>
#include <stdio.h>

typedef struct consumer_replay_opts {
    uint64_t event_id;  /* 0: any event */
    const char *error;  /* NULL: any error (the letter's "error" header) */
    int all;            /* --all: every letter (neither filter given) */
    int dry_run;
    long long wait_ms;  /* how long to read the DLQ up to its end at most */
} consumer_replay_opts;

/** @brief Parses the arguments after `replay` (argv[0] is the first of them).
 *  @returns 0, or 2 with the reason in err (bad usage). */
int consumer_replay_parse(int argc, char **argv, consumer_replay_opts *o, char *err,
                          size_t errsz);

/** @brief The usage lines of `replay`. */
void consumer_replay_usage(FILE *out);

/** @brief Runs the replay: one line per letter on out, then a summary.
 *  @returns 0 (every chosen letter delivered, or listed with dry_run), or 1 (Kafka
 *  failed or timed out: logged; letters already sent stay sent, a rerun is harmless). */
int consumer_replay_run(const consumer_cfg *cfg, const sk_cfg_kv *kafka,
                        const consumer_replay_opts *o, FILE *out);

#endif
