#include <png.h>

// Macros Swift cannot import.
static const unsigned int lf_png_format_rgba = PNG_FORMAT_RGBA;
static const int lf_png_image_version = PNG_IMAGE_VERSION;
