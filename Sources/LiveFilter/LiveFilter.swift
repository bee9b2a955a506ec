// The library in one import: filters, media I/O types and the job API.
@_exported import Filters
@_exported import MediaIO
@_exported import Pipeline
@_exported import HLS
