#include "lf_log.h"

#include <libavutil/log.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#define RING 64
#define LINE 320

/* Where captured lines wait: one per input (a run's), and one for lines no input owns. */
struct lf_log_sink {
    char ring[RING][LINE];
    char partial[LINE];
    unsigned head, tail;
    /* Called (outside the lock) after a line is added: whoever reports them need not poll. */
    lf_log_notify notify;
    void *notify_context;
};

static lf_log_sink unowned;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static int verbose_output = 0;

/* av_log's callback is process-wide; the lines that matter here (tcp, tls, http, the RTMP server)
   are logged synchronously by the call our input made (open, probe, read) on the thread that made
   it, so the thread's route names the input they belong to. */
static _Thread_local lf_log_sink *route = NULL;

lf_log_sink *lf_log_sink_new(void) { return calloc(1, sizeof(lf_log_sink)); }

void lf_log_sink_free(lf_log_sink *sink) { free(sink); }

void lf_log_sink_set_notify(lf_log_sink *sink, lf_log_notify notify, void *context) {
    pthread_mutex_lock(&mutex);
    sink->notify = notify;
    sink->notify_context = context;
    pthread_mutex_unlock(&mutex);
}

lf_log_sink *lf_log_route(lf_log_sink *sink) {
    lf_log_sink *previous = route;
    route = sink;
    return previous;
}

/* Only these sources speak of the network and playlists; decoders' complaints are counted elsewhere. */
static int wanted(const char *name) {
    static const char *names[] = { "hls", "HTTP", "http", "tcp", "TLS", "tls", "URLContext", "AVFormatContext" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i])) return 1;
    return 0;
}

/* FFmpeg's RTMP server takes a publisher whatever app or stream name it gives, with a warning:
   the warning, on the thread that is opening the input, is how a wrong stream key is refused. */
static _Thread_local int rtmp_refused = 0;

int lf_log_take_rtmp_refusal(void) {
    int refused = rtmp_refused;
    rtmp_refused = 0;
    return refused;
}

/* Secret values (a stream key, a passphrase) that no line FFmpeg logs may show: its RTMP server
   names the key it expected when a publisher gives another. */
#define SECRETS 64
static char *secrets[SECRETS];
static int secret_count = 0;

void lf_log_add_secret(const char *secret) {
    if (!secret || strlen(secret) < 4) return;
    pthread_mutex_lock(&mutex);
    int known = 0;
    for (int i = 0; i < secret_count; i++) if (!strcmp(secrets[i], secret)) known = 1;
    if (!known && secret_count < SECRETS) {
        char *copy = strdup(secret);
        if (copy) secrets[secret_count++] = copy;
    }
    pthread_mutex_unlock(&mutex);
}

/* Replaces every registered secret in line (NUL-terminated, size bytes) with "***". Called with the mutex held. */
static void hide_secrets(char *line, size_t size) {
    for (int i = 0; i < secret_count; i++) {
        size_t len = strlen(secrets[i]);
        char *at;
        while ((at = strstr(line, secrets[i])) != NULL) {
            size_t rest = strlen(at + len);
            memmove(at + 3, at + len, rest + 1);  /* len >= 4 > 3: the line only shrinks */
            memcpy(at, "***", 3);
        }
    }
    (void)size;
}

static void callback(void *avcl, int level, const char *fmt, va_list vl) {
    /* A publisher with another app or stream name: the line names both keys (the channel's real
       one, and what the caller tried, maybe another channel's), so it is replaced whole. */
    int names_keys = 0;
    if (avcl && fmt && (!strncmp(fmt, "Unexpected stream", 17) || !strncmp(fmt, "App field", 9))) {
        const AVClass *c = *(const AVClass **)avcl;
        /* rtmpproto logs on its URLContext. */
        if (c && c->class_name && (!strcmp(c->class_name, "URLContext") || !strcmp(c->class_name, "rtmp"))) {
            rtmp_refused = 1;
            names_keys = 1;
        }
    }
    if (verbose_output && level <= AV_LOG_WARNING && level <= av_log_get_level()) {
        /* FFmpeg's own format (its "[class @ 0x…]" prefix), with the secrets hidden. */
        char shown[1024];
        int prefix = 1;
        va_list copy;
        va_copy(copy, vl);
        av_log_format_line2(avcl, level, fmt, copy, shown, sizeof shown, &prefix);
        va_end(copy);
        if (names_keys) snprintf(shown, sizeof shown, "[rtmp] a publisher's app or stream key is not the URL's (both hidden)\n");
        pthread_mutex_lock(&mutex);
        hide_secrets(shown, sizeof shown);
        pthread_mutex_unlock(&mutex);
        fputs(shown, stderr);
    }
    if (level > AV_LOG_WARNING || !avcl) return;
    const AVClass *cls = *(const AVClass **)avcl;
    if (!cls || !cls->class_name || !wanted(cls->class_name)) return;
    lf_log_sink *sink = route ? route : &unowned;
    char line[LINE];
    if (names_keys) snprintf(line, sizeof line, "a publisher's app or stream key is not the URL's (both hidden)\n");
    else vsnprintf(line, sizeof line, fmt, vl);
    size_t n = strlen(line);
    pthread_mutex_lock(&mutex);
    /* FFmpeg builds some lines from several calls ("Packet corrupt (…)" then ".\n"): keep a
       fragment without a newline and report it with the rest, as one line. */
    if (n == 0 || (line[n - 1] != '\n' && n < sizeof line - 1)) {
        strncat(sink->partial, line, sizeof sink->partial - strlen(sink->partial) - 1);
        pthread_mutex_unlock(&mutex);
        return;
    }
    if (sink->partial[0]) {
        char joined[LINE];
        snprintf(joined, sizeof joined, "%s%s", sink->partial, line);
        sink->partial[0] = 0;
        memcpy(line, joined, sizeof line);
        n = strlen(line);
    }
    hide_secrets(line, sizeof line);
    n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    if (n == 0) { pthread_mutex_unlock(&mutex); return; }
    /* Some messages span lines ("…unspecified size\nConsider increasing…"): one line each. */
    for (size_t i = 0; i < n; i++) if (line[i] == '\n' || line[i] == '\r') line[i] = ' ';
    memcpy(sink->ring[sink->head % RING], line, n + 1);
    sink->head++;
    if (sink->head - sink->tail > RING) sink->tail = sink->head - RING;
    lf_log_notify notify = sink->notify;
    void *context = sink->notify_context;
    pthread_mutex_unlock(&mutex);
    if (notify) notify(context);
}

void lf_log_capture(int verbose) {
    verbose_output = verbose;
    av_log_set_level(AV_LOG_WARNING);
    av_log_set_callback(callback);
}

int lf_log_sink_next(lf_log_sink *sink, char *out, int size) {
    if (!sink) sink = &unowned;
    int found = 0;
    pthread_mutex_lock(&mutex);
    if (sink->tail != sink->head) {
        strncpy(out, sink->ring[sink->tail % RING], (size_t)size - 1);
        out[size - 1] = 0;
        sink->tail++;
        found = 1;
    }
    pthread_mutex_unlock(&mutex);
    return found;
}

int lf_log_next(char *out, int size) { return lf_log_sink_next(NULL, out, size); }
