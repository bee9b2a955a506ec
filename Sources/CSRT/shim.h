// libsrt (Haivision's SRT, Debian's libsrt-gnutls-dev): the SRT listener of a live channel.
#ifndef LIVEFILTER_CSRT_SHIM_H
#define LIVEFILTER_CSRT_SHIM_H
#include <srt/srt.h>
#include <sys/socket.h>
#include <netdb.h>
#endif
