#include "lf_log.h"

#include <libavutil/log.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define RING 64
#define LINE 320

static char ring[RING][LINE];
static char partial[LINE];
static unsigned head = 0, tail = 0;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static int verbose_output = 0;

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

static void callback(void *avcl, int level, const char *fmt, va_list vl) {
    if (avcl && fmt && (!strncmp(fmt, "Unexpected stream", 17) || !strncmp(fmt, "App field", 9))) {
        const AVClass *c = *(const AVClass **)avcl;
        /* rtmpproto logs on its URLContext. */
        if (c && c->class_name && (!strcmp(c->class_name, "URLContext") || !strcmp(c->class_name, "rtmp"))) rtmp_refused = 1;
    }
    if (verbose_output && level <= AV_LOG_WARNING) {
        va_list copy;
        va_copy(copy, vl);
        av_log_default_callback(avcl, level, fmt, copy);
        va_end(copy);
    }
    if (level > AV_LOG_WARNING || !avcl) return;
    const AVClass *cls = *(const AVClass **)avcl;
    if (!cls || !cls->class_name || !wanted(cls->class_name)) return;
    char line[LINE];
    vsnprintf(line, sizeof line, fmt, vl);
    size_t n = strlen(line);
    pthread_mutex_lock(&mutex);
    /* FFmpeg builds some lines from several calls ("Packet corrupt (…)" then ".\n"): keep a
       fragment without a newline and report it with the rest, as one line. */
    if (n == 0 || (line[n - 1] != '\n' && n < sizeof line - 1)) {
        strncat(partial, line, sizeof partial - strlen(partial) - 1);
        pthread_mutex_unlock(&mutex);
        return;
    }
    if (partial[0]) {
        char joined[LINE];
        snprintf(joined, sizeof joined, "%s%s", partial, line);
        partial[0] = 0;
        memcpy(line, joined, sizeof line);
        n = strlen(line);
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    if (n == 0) { pthread_mutex_unlock(&mutex); return; }
    /* Some messages span lines ("…unspecified size\nConsider increasing…"): one line each. */
    for (size_t i = 0; i < n; i++) if (line[i] == '\n' || line[i] == '\r') line[i] = ' ';
    memcpy(ring[head % RING], line, n + 1);
    head++;
    if (head - tail > RING) tail = head - RING;
    pthread_mutex_unlock(&mutex);
}

void lf_log_capture(int verbose) {
    verbose_output = verbose;
    av_log_set_level(AV_LOG_WARNING);
    av_log_set_callback(callback);
}

int lf_log_next(char *out, int size) {
    int found = 0;
    pthread_mutex_lock(&mutex);
    if (tail != head) {
        strncpy(out, ring[tail % RING], (size_t)size - 1);
        out[size - 1] = 0;
        tail++;
        found = 1;
    }
    pthread_mutex_unlock(&mutex);
    return found;
}
