/* sk_test_devkafka: the control port of a seckill-devkafka (deploy/devkafka/devkafka.c):
 * one command line, one "ok" or "err <why>" answer. Shared by the order and consumer
 * tests that break the dev Kafka on purpose. */
#ifndef SK_TEST_DEVKAFKA_H
#define SK_TEST_DEVKAFKA_H

/** @brief Sends `line` (e.g. "errors produce 2 MSG_SIZE_TOO_LARGE") to the control
 *  address "host:port". @returns 0 on "ok", -1 otherwise (the answer on stderr). */
int sk_test_devkafka_control(const char *control, const char *line);

#endif
