// Shims for FFmpeg 5.1 macros that Swift cannot import. Provides no stable API.
#ifndef LIVEFILTER_CFFMPEG_SHIM_H
#define LIVEFILTER_CFFMPEG_SHIM_H

#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>
#include <libavutil/avutil.h>
#include <libavutil/aes.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libavutil/time.h>
#include <errno.h>
#include <string.h>

static inline int lf_averror(int e) { return AVERROR(e); }
static inline int lf_averror_eof(void) { return AVERROR_EOF; }
static inline int lf_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int lf_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int lf_averror_patchwelcome(void) { return AVERROR_PATCHWELCOME; }
static inline int lf_averror_exit(void) { return AVERROR_EXIT; }
static inline int lf_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int lf_averror_encoder_not_found(void) { return AVERROR_ENCODER_NOT_FOUND; }
static inline int lf_averror_stream_not_found(void) { return AVERROR_STREAM_NOT_FOUND; }
static inline int lf_averror_http_not_found(void) { return AVERROR_HTTP_NOT_FOUND; }
static inline int64_t lf_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline AVRational lf_time_base_q(void) { return AV_TIME_BASE_Q; }

static inline const char *lf_err2str(int code, char *buf, size_t size) {
    return av_make_error_string(buf, size, code);
}

/// The frame's plane pointers and strides, as arrays Swift can index.
static inline uint8_t *lf_frame_data(const AVFrame *f, int plane) { return f->data[plane]; }
static inline int lf_frame_linesize(const AVFrame *f, int plane) { return f->linesize[plane]; }

/// sws_scale from one packed source plane set to an AVFrame, with the tuples kept on the C side.
static inline int lf_sws_scale_frames(struct SwsContext *c, const AVFrame *src, AVFrame *dst) {
    return sws_scale(c, (const uint8_t *const *)src->data, src->linesize, 0, src->height,
                     dst->data, dst->linesize);
}
/// sws_scale between single packed planes (e.g. rgb24 buffers owned by Swift).
static inline int lf_sws_scale_packed(struct SwsContext *c,
                                      const uint8_t *src, int srcStride, int srcH,
                                      uint8_t *dst, int dstStride) {
    const uint8_t *s[4] = { src, NULL, NULL, NULL };
    int ss[4] = { srcStride, 0, 0, 0 };
    uint8_t *d[4] = { dst, NULL, NULL, NULL };
    int ds[4] = { dstStride, 0, 0, 0 };
    return sws_scale(c, s, ss, 0, srcH, d, ds);
}
/// sws_scale from an AVFrame to a packed plane owned by Swift.
static inline int lf_sws_scale_to_packed(struct SwsContext *c, const AVFrame *src,
                                         uint8_t *dst, int dstStride) {
    uint8_t *d[4] = { dst, NULL, NULL, NULL };
    int ds[4] = { dstStride, 0, 0, 0 };
    return sws_scale(c, (const uint8_t *const *)src->data, src->linesize, 0, src->height, d, ds);
}
/// sws_scale from a packed plane owned by Swift to an AVFrame.
static inline int lf_sws_scale_from_packed(struct SwsContext *c, const uint8_t *src, int srcStride,
                                           int srcH, AVFrame *dst) {
    const uint8_t *s[4] = { src, NULL, NULL, NULL };
    int ss[4] = { srcStride, 0, 0, 0 };
    return sws_scale(c, s, ss, 0, srcH, dst->data, dst->linesize);
}

/// The stream's display-matrix rotation in degrees counter-clockwise, or 0 when there is none.
static inline double lf_stream_rotation(const AVStream *st) {
    size_t size = 0;
    const uint8_t *m = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (!m || size < 9 * sizeof(int32_t)) return 0;
    double r = av_display_rotation_get((const int32_t *)m);
    return r != r ? 0 : r;  /* NaN -> 0 */
}

/// Copies the stream's display matrix (nine int32, row-major) into `out`; 0 when there is none.
static inline int lf_stream_display_matrix(const AVStream *st, int32_t out[9]) {
    size_t size = 0;
    const uint8_t *m = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (!m || size < 9 * sizeof(int32_t)) return 0;
    memcpy(out, m, 9 * sizeof(int32_t));
    return 1;
}

static inline int lf_channel_layout_default(AVChannelLayout *l, int channels) {
    av_channel_layout_default(l, channels);
    return 0;
}

/// Interrupt state: `stop` aborts blocking I/O at once; a non-zero `deadline` (av_gettime_relative
/// microseconds) aborts an operation that outlives it, e.g. a server trickling one byte a second,
/// which a per-read timeout (rw_timeout) never catches.
typedef struct { volatile int stop; volatile int64_t deadline; } lf_interrupt_state;

static int lf_interrupt_cb(void *opaque) {
    const lf_interrupt_state *s = (const lf_interrupt_state *)opaque;
    return s && (s->stop || (s->deadline && av_gettime_relative() > s->deadline));
}
static inline void lf_set_interrupt(AVFormatContext *ctx, lf_interrupt_state *state) {
    ctx->interrupt_callback.callback = lf_interrupt_cb;
    ctx->interrupt_callback.opaque = (void *)state;
}
/// Arms the deadline `micros` from now (0 disarms).
static inline void lf_interrupt_arm(lf_interrupt_state *s, int64_t micros) {
    s->deadline = micros > 0 ? av_gettime_relative() + micros : 0;
}
static inline int lf_interrupt_expired(const lf_interrupt_state *s) {
    return s->deadline && av_gettime_relative() > s->deadline;
}

static inline void lf_log_quiet(int level) { av_log_set_level(level); }

#endif
