/* cfloor.c -- the C floor of the cykafka benchmark (bench/README.md).
 *
 * What a competent C programmer writes to push N values through librdkafka:
 * a tight loop over rd_kafka_producev() with RD_KAFKA_MSG_F_COPY, serving
 * delivery reports (a dr_msg_cb that counts outcomes) only when the queue is
 * full (rd_kafka_poll(rk, 100), then retry), and rd_kafka_flush() at the end.
 * Like librdkafka's examples/producer.c it names the topic per message
 * (RD_KAFKA_V_TOPIC); the local option cfloor.rkt=true uses a topic handle
 * (RD_KAFKA_V_RKT) instead, which skips a topic lookup per message,
 * cfloor.keys=N gives message i the key "key-<i % N>" (the keyed lines), and
 * cfloor.file=PATH takes the values from the lines of PATH instead of random
 * bytes (message i is line i % lines, without its newline; SIZE is ignored):
 * the floor for a file's own bytes, e.g. the JSON of a Parquet file's rows.
 *
 * Usage: cfloor BOOTSTRAP TOPIC COUNT SIZE [key=value ...]
 *   key=value pairs are librdkafka configuration, except cfloor.* options.
 * Prints one JSON line: {"msgs", "seconds", "cpu_seconds", "delivered", "failed",
 * "queue_full", "librdkafka"}.  One warm-up message (connection, metadata) is
 * produced and flushed before the clock starts; it is not counted.
 *
 * Built by bench/run.py against the librdkafka that cykafka's extension loads
 * (the one in the confluent-kafka wheel), with Debian's headers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <librdkafka/rdkafka.h>

static long long delivered, failed;
static char first_error[512];

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    (void)opaque;
    if (m->err) {
        if (!failed)
            snprintf(first_error, sizeof first_error, "%s", rd_kafka_err2str(m->err));
        failed++;
    } else {
        delivered++;
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void die(const char *what, const char *why) {
    fprintf(stderr, "cfloor: %s: %s\n", what, why);
    exit(2);
}

int main(int argc, char **argv) {
    char errstr[512];
    if (argc < 5) {
        fprintf(stderr, "usage: %s BOOTSTRAP TOPIC COUNT SIZE [key=value ...]\n", argv[0]);
        return 2;
    }
    const char *topic = argv[2];
    long long count = atoll(argv[3]);
    size_t size = (size_t)atoll(argv[4]);
    int use_rkt = 0;
    long nkeys = 0;
    const char *file = NULL;

    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof errstr))
        die("bootstrap.servers", errstr);
    for (int i = 5; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq)
            die(argv[i], "expected key=value");
        *eq = '\0';
        if (!strcmp(argv[i], "cfloor.rkt")) {
            use_rkt = !strcmp(eq + 1, "true") || !strcmp(eq + 1, "1");
            continue;
        }
        if (!strcmp(argv[i], "cfloor.keys")) {
            nkeys = atol(eq + 1);
            continue;
        }
        if (!strcmp(argv[i], "cfloor.file")) {
            file = eq + 1;
            continue;
        }
        if (rd_kafka_conf_set(conf, argv[i], eq + 1, errstr, sizeof errstr))
            die(argv[i], errstr);
    }
    rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk)
        die("rd_kafka_new", errstr);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);

    /* Distinct payloads, like rows of a file: a ring of up to 65536 values of
     * SIZE pseudo-random bytes, message i pointing at slot i % ring; or (cfloor.file)
     * the file's lines, read whole before the clock starts. */
    size_t ring = count < 65536 ? (size_t)(count > 0 ? count : 1) : 65536;
    char *data = NULL;
    char **starts = NULL;
    size_t *lens = NULL;
    if (file) {
        FILE *f = fopen(file, "rb");
        if (!f)
            die(file, "cannot open");
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        data = malloc((size_t)n + 1);
        if (!data || fread(data, 1, (size_t)n, f) != (size_t)n)
            die(file, "cannot read");
        fclose(f);
        ring = 0;
        for (long i = 0; i < n; i++)
            ring += data[i] == '\n';
        if (!ring)
            die(file, "no lines");
        starts = malloc(ring * sizeof *starts);
        lens = malloc(ring * sizeof *lens);
        if (!starts || !lens)
            die("malloc", "lines");
        char *p = data;
        for (size_t k = 0; k < ring; k++) {
            char *nl = memchr(p, '\n', (size_t)(data + n - p));
            starts[k] = p;
            lens[k] = (size_t)(nl - p);
            p = nl + 1;
        }
    } else {
        data = malloc(ring * (size ? size : 1));
        if (!data)
            die("malloc", "payload");
        unsigned int seed = 12345;
        for (size_t i = 0; i < ring * size; i++)
            data[i] = (char)rand_r(&seed);
    }

    /* Keys "key-<k>", built before the clock starts like the payloads. */
    char (*keys)[24] = NULL;
    if (nkeys > 0) {
        keys = malloc((size_t)nkeys * sizeof *keys);
        if (!keys)
            die("malloc", "keys");
        for (long k = 0; k < nkeys; k++)
            snprintf(keys[k], sizeof keys[k], "key-%ld", k);
    }

    /* Warm-up: connect and learn the topic's metadata before the clock starts. */
    rd_kafka_resp_err_t err = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE("warm-up", 7), RD_KAFKA_V_END);
    if (err)
        die("warm-up produce", rd_kafka_err2str(err));
    rd_kafka_flush(rk, 30000);
    if (delivered != 1)
        die("warm-up delivery", failed ? first_error : "no delivery report in 30 s");
    delivered = failed = 0;

    long long queue_full = 0;
    double c0 = cpu(), t0 = now();
    for (long long i = 0; i < count; i++) {
        size_t slot = (size_t)(i % (long long)ring);
        char *v = starts ? starts[slot] : data + slot * size;
        size_t vlen = starts ? lens[slot] : size;
        const char *key = keys ? keys[i % nkeys] : NULL;
        size_t keylen = key ? strlen(key) : 0;
        for (;;) {
            if (use_rkt)
                err = rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt),
                                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                        RD_KAFKA_V_KEY(key, keylen),
                                        RD_KAFKA_V_VALUE(v, vlen), RD_KAFKA_V_END);
            else
                err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                        RD_KAFKA_V_KEY(key, keylen),
                                        RD_KAFKA_V_VALUE(v, vlen), RD_KAFKA_V_END);
            if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                break;
            queue_full++;
            rd_kafka_poll(rk, 100);
        }
        if (err)
            die("produce", rd_kafka_err2str(err));
    }
    while (rd_kafka_outq_len(rk) > 0)
        rd_kafka_flush(rk, 1000);
    double t1 = now(), c1 = cpu();

    printf("{\"msgs\": %lld, \"seconds\": %.6f, \"cpu_seconds\": %.6f, \"delivered\": %lld, "
           "\"failed\": %lld, \"queue_full\": %lld, \"librdkafka\": \"%s\", "
           "\"first_error\": \"%s\"}\n",
           count, t1 - t0, c1 - c0, delivered, failed, queue_full, rd_kafka_version_str(),
           first_error);
    fflush(stdout);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    free(data);
    free(starts);
    free(lens);
    free(keys);
    return 0;
}
