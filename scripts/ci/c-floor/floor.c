/* The plain-C floor of the benchmark issue: decode (libmpg123 for .mp3, libavformat + libavcodec for
 * .m4a, libsndfile otherwise: the decoders naviscan uses) + libebur128 integrated loudness + a
 * 1024-point FFTW spectrum of the mono mix at 30 frames/s of the source rate; no resampling, no
 * tempo, no silence. Prints each file's integrated loudness.
 *   cc -O2 floor.c -o floor $(pkg-config --cflags --libs libmpg123 sndfile libebur128 fftw3f libavformat libavcodec libavutil) -lm
 *   ./floor FILE... */
#include <ebur128.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <fftw3.h>
#include <math.h>
#include <mpg123.h>
#include <sndfile.h>
#include <stdio.h>
#include <string.h>

#define N 1024
static float window_[N], ring[N], *input;
static fftwf_complex *output;
static fftwf_plan plan;
static long filled, sinceFrame, hop;
static double sink;

static void feed(ebur128_state *st, const float *x, long frames, int channels) {
    ebur128_add_frames_float(st, x, frames);
    for (long i = 0; i < frames; i++) {
        float m = 0;
        for (int c = 0; c < channels; c++) m += x[i * channels + c];
        ring[filled++ % N] = m / channels;
        if (++sinceFrame < hop) continue;
        sinceFrame = 0;
        for (int k = 0; k < N; k++) input[k] = ring[(filled + k) % N] * window_[k];
        fftwf_execute(plan);
        for (int k = 0; k <= N / 2; k++) sink += output[k][0] * output[k][0] + output[k][1] * output[k][1];
    }
}

/* Decodes an MP4 (AAC, ALAC) through libavcodec, interleaving its planar or packed samples into float. */
static ebur128_state *decode_av(const char *path) {
    AVFormatContext *fmt = NULL;
    if (avformat_open_input(&fmt, path, NULL, NULL) < 0 || avformat_find_stream_info(fmt, NULL) < 0) {
        fprintf(stderr, "%s: cannot open\n", path);
        return NULL;
    }
    const AVCodec *codec = NULL;
    int stream = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
    AVCodecContext *ctx = avcodec_alloc_context3(codec);
    avcodec_parameters_to_context(ctx, fmt->streams[stream]->codecpar);
    avcodec_open2(ctx, codec, NULL);
    int channels = ctx->ch_layout.nb_channels;
    hop = ctx->sample_rate / 30;
    ebur128_state *st = ebur128_init(channels, ctx->sample_rate, EBUR128_MODE_I);
    AVPacket *packet = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    static float buffer[65536];
    while (av_read_frame(fmt, packet) >= 0) {
        if (packet->stream_index == stream && avcodec_send_packet(ctx, packet) == 0) {
            while (avcodec_receive_frame(ctx, frame) == 0) {
                int n = frame->nb_samples, planar = av_sample_fmt_is_planar(frame->format);
                enum AVSampleFormat f = av_get_packed_sample_fmt(frame->format);
                for (int i = 0; i < n; i++)
                    for (int c = 0; c < channels; c++) {
                        const uint8_t *base = frame->extended_data[planar ? c : 0];
                        long k = planar ? i : (long)i * channels + c;
                        float v = f == AV_SAMPLE_FMT_FLT ? ((const float *)base)[k]
                                : f == AV_SAMPLE_FMT_S16 ? ((const int16_t *)base)[k] / 32768.0f
                                : f == AV_SAMPLE_FMT_S32 ? ((const int32_t *)base)[k] / 2147483648.0f
                                : (float)((const double *)base)[k];
                        buffer[i * channels + c] = v;
                    }
                feed(st, buffer, n, channels);
            }
        }
        av_packet_unref(packet);
    }
    av_frame_free(&frame);
    av_packet_free(&packet);
    avcodec_free_context(&ctx);
    avformat_close_input(&fmt);
    return st;
}

int main(int argc, char **argv) {
    input = fftwf_alloc_real(N);
    output = fftwf_alloc_complex(N / 2 + 1);
    plan = fftwf_plan_dft_r2c_1d(N, input, output, FFTW_ESTIMATE);
    for (int k = 0; k < N; k++) window_[k] = 0.5f - 0.5f * cosf(2 * (float)M_PI * k / N);
    mpg123_init();
    for (int a = 1; a < argc; a++) {
        const char *path = argv[a];
        size_t len = strlen(path);
        ebur128_state *st = NULL;
        filled = sinceFrame = 0;
        if (len > 4 && strcmp(path + len - 4, ".mp3") == 0) {
            int err, channels, encoding;
            long rate;
            mpg123_handle *h = mpg123_new(NULL, &err);
            mpg123_param(h, MPG123_ADD_FLAGS, MPG123_FORCE_FLOAT, 0.);
            if (mpg123_open(h, path) != MPG123_OK) { fprintf(stderr, "%s: cannot open\n", path); continue; }
            mpg123_getformat(h, &rate, &channels, &encoding);
            hop = rate / 30;
            st = ebur128_init(channels, rate, EBUR128_MODE_I);
            static unsigned char buffer[65536];
            size_t done;
            int r;
            while ((r = mpg123_read(h, buffer, sizeof buffer, &done)) == MPG123_OK || r == MPG123_NEW_FORMAT || done > 0) {
                feed(st, (float *)buffer, (long)(done / sizeof(float) / channels), channels);
                if (r != MPG123_OK && r != MPG123_NEW_FORMAT) break;
            }
            mpg123_close(h);
            mpg123_delete(h);
        } else if (len > 4 && strcmp(path + len - 4, ".m4a") == 0) {
            if (!(st = decode_av(path))) continue;
        } else {
            SF_INFO info = {0};
            SNDFILE *f = sf_open(path, SFM_READ, &info);
            if (!f) { fprintf(stderr, "%s: cannot open\n", path); continue; }
            hop = info.samplerate / 30;
            st = ebur128_init(info.channels, info.samplerate, EBUR128_MODE_I);
            static float buffer[4096 * 8];
            sf_count_t got;
            while ((got = sf_readf_float(f, buffer, 4096)) > 0) feed(st, buffer, got, info.channels);
            sf_close(f);
        }
        double lufs = 0;
        ebur128_loudness_global(st, &lufs);
        printf("%s %.2f LUFS\n", path, lufs);
        ebur128_destroy(&st);
    }
    fprintf(stderr, "(spectrum checksum %g)\n", sink);
    return 0;
}
