#ifndef NAVISCAN_CFFMPEG_SHIM_H
#define NAVISCAN_CFFMPEG_SHIM_H
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>

/* FFmpeg's error codes are function-like macros (AVERROR(EAGAIN), FFERRTAG), which Swift does not
   import: these constants give Swift their values. */
static const int naviscan_averror_eof = AVERROR_EOF;
static const int naviscan_averror_eagain = AVERROR(EAGAIN);
static const int naviscan_averror_invaliddata = AVERROR_INVALIDDATA;
static const int naviscan_averror_decoder_not_found = AVERROR_DECODER_NOT_FOUND;
static const int naviscan_averror_stream_not_found = AVERROR_STREAM_NOT_FOUND;
static const int naviscan_averror_enoent = AVERROR(ENOENT);
static const int naviscan_averror_eacces = AVERROR(EACCES);
#endif
