// Captures FFmpeg's network and playlist warnings (a 404 segment, a refused protocol) so the
// CLI can report each as one line, while everything else stays quiet. Provides no stable API.
#ifndef LIVEFILTER_LOG_H
#define LIVEFILTER_LOG_H

/** Installs the capturing log callback; `verbose` also prints FFmpeg's warnings as usual. */
void lf_log_capture(int verbose);

/** Captured lines of one input (a run's): they wait here, not with other inputs'. */
typedef struct lf_log_sink lf_log_sink;
lf_log_sink *lf_log_sink_new(void);
/** Called after a line is added to a sink, on the thread that logged it (outside the lock). */
typedef void (*lf_log_notify)(void *context);
/** `notify(context)` after each line added to `sink` (NULL: nothing); set before routing to it. */
void lf_log_sink_set_notify(lf_log_sink *sink, lf_log_notify notify, void *context);
/** Only once no thread routes to it any more. */
void lf_log_sink_free(lf_log_sink *sink);

/** Sends the lines FFmpeg logs on this thread from now on to `sink` (NULL: to the lines no input
    owns); returns the previous route, to restore. */
lf_log_sink *lf_log_route(lf_log_sink *sink);

/** Copies the oldest line captured for `sink` (NULL: owned by no input) into out; returns 0 when there is none. */
int lf_log_sink_next(lf_log_sink *sink, char *out, int size);

/** Copies the oldest captured line no input owns into out; returns 0 when there is none. */
int lf_log_next(char *out, int size);

/** Whether FFmpeg's RTMP server, on this thread, took a publisher with another app or stream name
    than its URL's since the last call (the flag is cleared). Needs the capturing callback. */
int lf_log_take_rtmp_refusal(void);

/** Hides `secret` (copied; at least 4 bytes) from every line FFmpeg logs from now on. */
void lf_log_add_secret(const char *secret);

#endif
