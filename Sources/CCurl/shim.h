#ifndef LIVEFILTER_CCURL_SHIM_H
#define LIVEFILTER_CCURL_SHIM_H
// libcurl for the HLS client (HTTPS, HTTP/2 and keep-alive, as Debian builds it: OpenSSL, nghttp2).
// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift cannot call:
// one typed wrapper per kind of argument.
#include <curl/curl.h>

typedef size_t (*lf_curl_data_callback)(char *data, size_t size, size_t count, void *user);
typedef int (*lf_curl_prereq_callback)(void *user, char *primary_ip, char *local_ip, int primary_port, int local_port);

static inline CURLcode lf_curl_set_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode lf_curl_set_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode lf_curl_set_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode lf_curl_set_data_callback(CURL *curl, CURLoption option, lf_curl_data_callback callback) {
    return curl_easy_setopt(curl, option, callback);
}
static inline CURLcode lf_curl_set_prereq_callback(CURL *curl, lf_curl_prereq_callback callback) {
    return curl_easy_setopt(curl, CURLOPT_PREREQFUNCTION, callback);
}
static inline long lf_curl_response_code(CURL *curl) {
    long code = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    return code;
}
static inline void *lf_curl_private(CURL *curl) {
    char *value = NULL;
    curl_easy_getinfo(curl, CURLINFO_PRIVATE, &value);
    return value;
}
static inline CURLMcode lf_curl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
/// The `CURLMsg` of a finished transfer: its easy handle and result.
static inline CURL *lf_curl_message_handle(CURLMsg *message) { return message->easy_handle; }
static inline CURLcode lf_curl_message_result(CURLMsg *message) { return message->data.result; }
static inline int lf_curl_message_is_done(CURLMsg *message) { return message->msg == CURLMSG_DONE; }
/// What a write callback returns to pause its transfer (the bytes are offered again on resume).
static inline size_t lf_curl_write_pause(void) { return CURL_WRITEFUNC_PAUSE; }
static inline int lf_curl_prereq_abort(void) { return CURL_PREREQFUNC_ABORT; }
static inline CURLcode lf_curl_resume(CURL *curl) { return curl_easy_pause(curl, CURLPAUSE_CONT); }
#endif
